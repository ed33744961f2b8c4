"""The symbol graph: extraction from the chunker's parse, its place in the index (atomic, incremental,
merged), ``defs``/``refs`` precision against ``rg -w`` on a real tree, the CLI and the MCP tools."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import write_workspace

from aide_tui.core.chunk.chunker import chunk_file_multi
from aide_tui.core.config import Settings, load_settings
from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.model import FileGraph
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.search.symbols import split_name
from aide_tui.core.store.segments import load_view, read_index, read_manifest

REPO = Path(__file__).resolve().parents[2]


def graph_of(path: str, text: str) -> FileGraph:
    out: list[FileGraph] = []
    chunk_file_multi(path, textwrap.dedent(text).lstrip("\n"), (1500, 600), [], graph=out)
    return out[0]


def settings(root: Path, **index: object) -> Settings:
    return load_settings(root, {"embedding": {"backend": "none"}, "index": dict(index)})


def index(root: Path, rebuild: bool = False, **kw: object) -> None:
    Indexer(root, settings(root, **kw)).run(rebuild=rebuild)


def searcher(root: Path) -> Searcher:
    s = Searcher(root, settings(root))
    s.refresh()
    return s


PY = '''
    """Module doc mentioning parse_header and Client."""
    import os.path as osp
    from .helpers import parse_header, format_headers as fmt

    LIMIT = 10


    class Client(Base):
        timeout = 5

        @property
        def send(self, request):
            # parse_header in a comment is no reference
            value = parse_header(request.line)
            text = "parse_header in a string is none either"
            return self.transport.send(value, osp.join("a", text), LIMIT)


    def helper(x):
        y = x + LIMIT
        return Client(y).send(y)
'''


def test_python_definitions_references_and_imports_come_from_the_parse() -> None:
    g = graph_of("pkg/client.py", PY)
    defs = {(d.qualname, d.kind, d.line, d.col) for d in g.defs}
    assert {
        ("LIMIT", "variable", 5, 1),
        ("Client", "class", 8, 7),
        ("Client.timeout", "attribute", 9, 5),
        ("Client.send", "method", 12, 9),
        ("helper", "function", 19, 5),
    } <= defs
    refs = {(r.name, r.kind, r.line) for r in g.refs}
    assert ("parse_header", "import", 3) in refs and ("fmt", "import", 3) not in refs
    assert ("format_headers", "import", 3) in refs and ("path", "import", 2) in refs
    assert ("parse_header", "call", 14) in refs
    assert ("send", "call", 16) in refs and ("transport", "attr", 16) in refs
    assert ("Base", "name", 8) in refs and ("property", "name", 11) in refs
    assert ("LIMIT", "name", 16) in refs and ("LIMIT", "name", 20) in refs
    assert ("Client", "call", 21) in refs and ("send", "call", 21) in refs
    # comments, strings and docstrings are not references; locals and parameters are not either
    assert not {(n, line) for n, _, line in refs} & {("parse_header", 1), ("parse_header", 13),
                                                      ("parse_header", 15)}  # fmt: skip
    assert not {n for n, _, _ in refs} & {"value", "text", "request", "x", "y", "self"}
    assert g.imports == ["os.path", ".helpers.parse_header", ".helpers.format_headers"]


def test_each_position_holds_its_name() -> None:
    text = textwrap.dedent(PY).lstrip("\n") + "\nnon_ascii = 'é'; x = non_ascii.upper()  # é\n"
    g = graph_of("pkg/client.py", text)
    lines = text.split("\n")
    for item in [*g.defs, *g.refs]:
        assert lines[item.line - 1][item.col - 1 :].startswith(item.name), item
    assert any(r.name == "upper" for r in g.refs)  # a column after a non-ASCII character


def test_a_deeply_nested_expression_keeps_its_graph() -> None:
    # sympy's resolvent_lookup.py: a sum of a thousand terms is a tree a thousand levels deep, which a
    # recursive walk could not follow ("symbol graph failed (RecursionError)")
    text = "from .poly import y\n\nTABLE = " + " + ".join(["y"] * 900) + "\n\ndef use():\n    return TABLE\n"
    notes: list[str] = []
    graph: list[FileGraph] = []
    chunk_file_multi("pkg/resolvent.py", text, (1500,), notes, graph=graph)
    assert notes == []
    names = {(r.name, r.kind, r.line) for r in graph[0].refs}
    assert ("y", "name", 3) in names and ("TABLE", "name", 6) in names
    assert {d.name for d in graph[0].defs} == {"TABLE", "use"}


def test_other_languages_skip_comments_and_strings() -> None:
    go = graph_of(
        "cli/cmd.go",
        """
        package cli

        import (
            "fmt"
            ctx "context"
        )

        // Run calls helper, says this comment
        func (c *Command) Run(a string) error {
            fmt.Println("helper in a string")
            return helper(c.Name)
        }

        func helper(n string) error { return nil }
    """,
    )
    assert {(d.qualname, d.line) for d in go.defs} >= {("Command.Run", 9), ("helper", 14)}
    refs = {(r.name, r.kind, r.line) for r in go.refs}
    assert ("helper", "call", 11) in refs and ("Println", "call", 10) in refs and ("Name", "attr", 11) in refs
    assert not any(r.name == "helper" and r.line in (8, 10, 14) for r in go.refs)
    assert go.imports == ["fmt", "context"]
    ts = graph_of(
        "src/app.ts",
        """
        import { Router } from "./router";
        const r = require('./legacy');
        export function render(title: string): string {
          return `render ${title}`; // render
        }
    """,
    )
    assert ("Router", "import", 1) in {(r.name, r.kind, r.line) for r in ts.refs}
    assert ts.imports == ["./router", "./legacy"]
    assert not [r for r in ts.refs if r.name == "render"]  # the definition, a template string, a comment
    assert graph_of("docs/a.md", "# Client\n\nClient() is called here\n") == FileGraph()


def _defs_refs(s: Searcher, name: str) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    d = s.definitions(name)
    r = s.references(name)
    return [(x.path, x.line, x.col) for x in d.locations], [(x.path, x.line, x.col) for x in r.locations]


def test_graph_is_committed_with_the_segment_and_checksummed(workspace: Path) -> None:
    index(workspace)
    manifest = read_manifest(index_dir_for(workspace))
    seg = manifest.segments[0]
    assert {"g_defs.npy", "g_refs.npy", "g_meta.json"} <= set(seg.files)
    data = read_index(index_dir_for(workspace))
    assert "src/httpclient/client.py" in data.graph.paths
    view = load_view(index_dir_for(workspace))
    assert [(p, d.qualname) for p, d in view.graph.definitions("send")] == [
        ("src/httpclient/client.py", "Client.send")
    ]
    # a flipped byte in the graph is damage like any other: detected when read, never searched
    path = index_dir_for(workspace) / seg.name / "g_defs.npy"
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x20
    path.write_bytes(bytes(raw))
    s = Searcher(workspace, settings(workspace))
    s.refresh()  # read when a lookup first needs it
    with pytest.raises(IndexCorrupt, match="g_defs.npy is damaged"):
        s.definitions("send")
    index(workspace, rebuild=True)
    assert searcher(workspace).definitions("send").total == 1


def test_a_renamed_function_leaves_no_stale_definition_or_reference(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    index(root)
    s = searcher(root)
    assert s.definitions("backoff_delays").total == 1 and s.references("backoff_delays").total == 1
    retry = root / "src/httpclient/retry.py"
    retry.write_text(retry.read_text().replace("backoff_delays", "delays_for"))
    (root / "src/httpclient/extra.py").write_text("from .retry import delays_for\n\nprint(delays_for(2))\n")
    index(root)  # incremental: a delta segment over the first
    s = searcher(root)
    assert len(read_manifest(index_dir_for(root)).segments) == 2
    assert s.definitions("backoff_delays").total == 0 and s.references("backoff_delays").total == 0
    incremental = {n: _defs_refs(s, n) for n in ("delays_for", "with_retries", "Client", "send", "time")}
    assert incremental["delays_for"] == (
        [("src/httpclient/retry.py", 6, 5)],
        [
            ("src/httpclient/extra.py", 1, 20),
            ("src/httpclient/extra.py", 3, 7),
            ("src/httpclient/retry.py", 14, 18),
        ],
    )
    rebuilt_root = tmp_path / "copy"
    shutil.copytree(root, rebuilt_root, ignore=shutil.ignore_patterns(".aide"))
    index(rebuilt_root, rebuild=True)
    rebuilt = {n: _defs_refs(searcher(rebuilt_root), n) for n in incremental}
    assert incremental == rebuilt
    index(root, max_segments=1)  # a merge folds the segments into one base: the same answers
    (root / "src/httpclient/extra.py").write_text("from .retry import delays_for\n")
    index(root, max_segments=1)
    assert len(read_manifest(index_dir_for(root)).segments) == 1
    s = searcher(root)
    assert _defs_refs(s, "delays_for")[1] == [
        ("src/httpclient/extra.py", 1, 20),
        ("src/httpclient/retry.py", 14, 18),
    ]
    assert s.definitions("backoff_delays").total == 0


def test_has_references_says_what_references_would_list(tmp_path: Path) -> None:
    """The app's footer asks only whether a name on the line has references: the same answer as listing
    them, over two segments, a file whose only use was deleted, and either case."""
    root = write_workspace(tmp_path / "ws")
    index(root)
    (root / "src/httpclient/extra.py").write_text("from .retry import backoff_delays\n\nbackoff_delays(2)\n")
    index(root)
    retry = root / "src/httpclient/retry.py"
    retry.write_text(retry.read_text().replace("backoff_delays(", "delays_for("))
    (root / "src/httpclient/extra.py").unlink()  # the only other use goes: its rows are dead, not gone
    index(root)
    view = load_view(index_dir_for(root))
    g = view.graph
    assert len(read_manifest(index_dir_for(root)).segments) >= 2
    names = {n for p in g.paths() for n in [r.name for r in g.references_in(p)]}
    names |= {"backoff_delays", "delays_for", "nothing_at_all", "send", "Send", "SEND"}
    assert len(names) > 20
    for name in sorted(names):
        for exact in (True, False):
            assert g.has_references(name, exact) == bool(g.references(name, exact)), (name, exact)
    assert not g.has_references("nothing_at_all") and g.has_references("delays_for")
    used = next(n for n in sorted(names) if g.has_references(n) and n.upper() not in names)
    assert not g.has_references(used.upper()) and g.has_references(used.upper(), False)  # any case


def test_definition_paths_kept_for_the_version_answer_as_a_fresh_look(tmp_path: Path, monkeypatch) -> None:
    """A version keeps each name's definition files once asked (a file's links ask for hundreds): asked
    again in other company, in another order, or after the memo was full and started again, the answer
    and its order are a fresh view's; a file deleted since is in neither."""
    from aide_tui.core.store import graphview

    root = write_workspace(tmp_path / "ws")
    index(root)
    (root / "src/httpclient/extra.py").write_text("def backoff_delays(n):\n    return n\n")
    index(root)
    (root / "src/httpclient/extra.py").unlink()
    (root / "src/httpclient/more.py").write_text("def backoff_delays(n):\n    return [n]\n")
    index(root)
    idx = index_dir_for(root)
    assert len(read_manifest(idx).segments) >= 2
    g = load_view(idx).graph
    names = sorted({d.name for p in g.paths() for d in g.definitions_in(p)} | {"nothing_at_all"})
    assert len(names) > 10 and "backoff_delays" in names
    monkeypatch.setattr(graphview, "DEFINED_MEMO", 7)
    for asked in (names[:5], names[3:], names[::-1], ["nothing_at_all", *names[::2]], names):
        got = g.definition_paths(asked)
        fresh = load_view(idx).graph.definition_paths(asked)
        assert got == fresh and list(got) == list(fresh), asked
    where = g.definition_paths(["backoff_delays"])["backoff_delays"]
    assert "src/httpclient/more.py" in where and "src/httpclient/extra.py" not in where
    assert "nothing_at_all" not in g.definition_paths(names)


@pytest.mark.skipif(shutil.which("rg") is None, reason="needs ripgrep")
def test_references_name_only_lines_that_hold_the_name_as_rg_does(tmp_path: Path) -> None:
    """On a real tree (this project's own core), every reference line is a line ``rg -w NAME`` finds,
    and nearly all of rg's lines that are code (not a comment, a docstring or the definition) are."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "aide_tui" / "core", root / "core", ignore=shutil.ignore_patterns("__pycache__"))
    index(root)
    s = searcher(root)
    # names of functions, classes and methods (a local variable or a parameter is not a reference)
    names = ["Chunk", "tokenize", "IndexCorrupt", "read_manifest", "refresh", "GraphTable", "Settings",
             "load_view", "to_json"]  # fmt: skip
    for name in names:
        refs = s.references(name, limit=100_000)
        ours = {(loc.path, loc.line) for loc in refs.locations}
        out = subprocess.run(["rg", "-n", "-w", "--no-heading", "--with-filename", name, "."], cwd=root,
                             capture_output=True, text=True, check=False).stdout  # fmt: skip
        rg: dict[tuple[str, int], str] = {}
        for row in out.splitlines():
            p, line, text = row.split(":", 2)
            rg[(p.removeprefix("./"), int(line))] = text
        assert ours and ours <= set(rg), (name, sorted(ours - set(rg))[:5])
        for loc in refs.locations:
            assert re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", loc.text), loc
        defs = {(loc.path, loc.line) for loc in s.definitions(name).locations}
        code = {k for k, text in rg.items() if k not in defs and not _prose(text, name)}
        assert len(ours & code) >= 0.95 * len(code), (name, sorted(code - ours)[:8])


def _prose(text: str, name: str) -> bool:
    """A line where ``name`` stands only in a comment or a string (as far as one line can tell)."""
    s = text.strip()
    if s.startswith(("#", '"""', "'''", "``")) or not re.search(r"[=(:)\[\]]|\bdef\b|\bimport\b", s):
        return True
    code = re.sub(r"#.*$", "", re.sub(r"\"[^\"]*\"|'[^']*'", '""', s))
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", code) is None


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd, check=False)  # fmt: skip


def test_cli_defs_and_refs(workspace: Path) -> None:
    (workspace / "src/httpclient/mock.py").write_text("class Mock:\n    def send(self):\n        return 1\n")
    out = run_cli("defs", "--path", str(workspace), "parse_header", "--embedder", "none", cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "src/httpclient/headers.py:4:5:def parse_header(line: str) -> tuple[str, str]:\n"
    out = run_cli("defs", "--path", str(workspace), "send", "--json", "--embedder", "none")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["ambiguous"] is True and got["total"] == 2
    assert "send is ambiguous: 2 definitions" in got["note"]
    assert [d["qualname"] for d in got["definitions"]] == ["Client.send", "Mock.send"]
    out = run_cli("defs", "--path", str(workspace), "Mock.send", "--json", "--embedder", "none")
    assert json.loads(out.stdout)["ambiguous"] is False and json.loads(out.stdout)["total"] == 1
    out = run_cli("refs", "--path", str(workspace), "send", "--embedder", "none", cwd=workspace)
    assert out.returncode == 0 and "note: send is ambiguous" in out.stderr
    assert out.stdout == "src/httpclient/client.py:25:29:response = self.send(response.next_request())\n"
    out = run_cli("refs", "--path", str(workspace), "no_such_name", "--embedder", "none")
    assert out.returncode == 1 and out.stdout == "" and "no references of no_such_name" in out.stderr
    out = run_cli("refs", "--path", str(workspace), "not a name", "--embedder", "none")
    assert out.returncode == 2 and "not an identifier" in out.stderr
    out = run_cli("refs", "--path", str(workspace), "send", "--store", "milvus", "--embedder", "none")
    assert out.returncode == 2 and "local store only" in out.stderr


EXPRESS_LIKE = """
    var compileETag = require('./utils').compileETag;
    var app = exports = module.exports = {};

    app.listen = function listen() {
      var server = http.createServer(this);
      return server.listen.apply(server, arguments);
    };

    res.send = function send(body) {
      return this.end(body);
    };

    exports.compileETag = function(val) {
      return compileETag(val);
    };

    Router.prototype.dispatch = async (req, res) => {
      return req;
    };

    exports.Client = class {
      close() {
        return 1;
      }
    };

    defineGetter(req, 'hostname', function hostname() {
      return this.host;
    });

    module.exports = function query(options) {
      return options;
    };

    module.exports = {
      parse: function (str) {
        return str;
      },
      format: (obj) => String(obj),
      stringify(obj) {
        return JSON.stringify(obj);
      },
      version,
    };
"""


def test_js_functions_assigned_to_members_and_exports_are_definitions() -> None:
    g = graph_of("lib/response.js", EXPRESS_LIKE)
    defs = {(d.qualname, d.line, d.kind) for d in g.defs}
    assert {
        ("app.listen", 4, "function"), ("res.send", 9, "function"), ("exports.compileETag", 13, "function"),
        ("Router.dispatch", 17, "function"), ("exports.Client", 21, "class"),
        ("exports.Client.close", 22, "method"),
        ("req.hostname", 27, "property"), ("module.exports.query", 31, "function"),
        ("module.exports.parse", 36, "method"), ("module.exports.format", 39, "method"),
        ("module.exports.stringify", 40, "method"),
    } <= defs, defs  # fmt: skip
    # the require line imports compileETag: a reference, not a definition
    assert not [d for d in g.defs if d.name == "compileETag" and d.line == 1]
    assert ("compileETag", "import", 1) in {(r.name, r.kind, r.line) for r in g.refs}
    assert not [d for d in g.defs if d.name == "version"]  # shorthand: exports a name defined elsewhere
    listen = next(d for d in g.defs if d.name == "listen")
    assert (listen.col, listen.end_line) == (5, 7)  # app.|listen, to the closing "};"
    pieces = chunk_file_multi("lib/response.js", textwrap.dedent(EXPRESS_LIKE), (1500, 300), [])[1]
    labels = [c.symbol for c in pieces]  # every function a piece of its own, labelled with its member
    assert "function app.listen" in labels and "function exports.compileETag" in labels, labels


ESLINT_LIKE = """
    "use strict";
    module.exports = {
        meta: { type: "layout" },
        create(context) {
            const sourceCode = context.sourceCode;

            /**
             * Reports a missing semicolon.
             */
            function checkForSemicolon(node) {
                if (!sourceCode.getLastToken(node)) {
                    context.report({ node });
                }
            }

            const reportIfEmpty = (node) => {
                checkForSemicolon(node);
            };

            return {
                VariableDeclaration: checkForSemicolon,
                "Program:exit"() {
                    reportIfEmpty(null);
                },
            };
        },
    };
"""

UMD_LIKE = """
    ;(function () {
      var VERSION = '4.17.21';

      function baseClone(value, bitmask) {
        function cloneLeaf(leaf) {
          return leaf;
        }
        return cloneLeaf(value);
      }

      var root = typeof self == 'object' && self;
      root._ = { baseClone: baseClone };
    }.call(this));
"""

LUA_NESTED = """
    local M = {}

    function M.render(items)
      local function escape(text)
        return text
      end
      return escape(items)
    end

    return M
"""


def test_functions_declared_in_a_js_or_lua_function_body_are_definitions() -> None:
    """The helpers a JS closure declares (an ESLint rule's ``create``, a factory) are definitions, as a
    Python function's inner ``def`` is: ``defs``, the symbol list and the chunk's defined names see
    them. What is not a declaration stays out: a local ``const`` value, an object literal's handlers."""
    g = graph_of("lib/rules/semi.js", ESLINT_LIKE)
    defs = {(d.qualname, d.line, d.kind) for d in g.defs}
    assert {("module.exports.create.checkForSemicolon", 10, "function"),
            ("module.exports.create.reportIfEmpty", 16, "function")} <= defs, defs  # fmt: skip
    assert not {d.name for d in g.defs} & {"sourceCode", "VariableDeclaration", "Program:exit"}
    chunks = chunk_file_multi("lib/rules/semi.js", textwrap.dedent(ESLINT_LIKE).lstrip("\n"), (1500,), [])[0]
    assert {"create", "checkForSemicolon", "reportIfEmpty"} <= set(chunks[0].defines)
    g = graph_of("lua/m.lua", LUA_NESTED)
    assert ("M.render.escape", 4, "function") in {(d.qualname, d.line, d.kind) for d in g.defs}


def test_functions_in_an_iife_are_units_of_their_own() -> None:
    """A UMD or IIFE wrapper is no unit, so the functions in it were nothing: lodash.js (17k lines, a
    few hundred functions) had no definition and no chunk a symbol. They are units now, their own
    helpers definitions of theirs."""
    g = graph_of("lodash.js", UMD_LIKE)
    defs = {(d.qualname, d.line, d.kind) for d in g.defs}
    assert {("baseClone", 4, "function"), ("baseClone.cloneLeaf", 5, "function")} <= defs, defs
    assert not [d for d in g.defs if d.name in ("VERSION", "root")]  # values in the wrapper: not units
    pieces = chunk_file_multi("lodash.js", textwrap.dedent(UMD_LIKE).lstrip("\n"), (1500, 300), [])[1]
    assert "function baseClone" in [c.symbol for c in pieces]


def test_an_arrow_function_whose_body_starts_on_the_next_line_holds_it() -> None:
    """``export const make = (options) =>`` then ``Effect.gen(function* () {`` on the next line: the unit
    ended on the arrow's line, so the functions in its body became top-level definitions."""
    ts = (
        "export const make = (options: Options) =>\n  Effect.gen(function* () {\n"
        "    function helper(x: number) {\n      return x + 1\n    }\n    return { helper }\n  })\n\n"
        "export function after() {\n  return 1\n}\n"
    )
    defs = {(d.qualname, d.line, d.end_line) for d in graph_of("src/make.ts", ts).defs}
    assert {("make", 1, 7), ("make.helper", 3, 5), ("after", 9, 11)} <= defs, defs
    # the body is the expression: a call chain after its first bracket, a curried arrow's own body; a
    # line that starts another statement is not part of it
    js = (
        "const next = i =>\n  items[i].load().then(r => {\n    return r\n  });\n\n"
        "const rel = (ctx, id) =>\n  id\n    .split('!')\n    .join('!')\n\n"
        "const fork = (rt) =>\n  (self) => {\n    return rt.run(self)\n  }\n\n"
        "const double = x =>\n  x * 2\nconsole.log(double(2), [\n  1,\n])\n"
    )
    spans = {(d.qualname, d.line, d.end_line) for d in graph_of("src/util.js", js).defs}
    assert {("next", 1, 4), ("rel", 6, 9), ("fork", 11, 14), ("double", 16, 17)} <= spans, spans


def test_a_name_bound_in_a_main_block_is_no_definition() -> None:
    """``console = Console()`` in rich's ``if __name__ == "__main__":`` demos was a module variable
    of segment.py, _wrap.py, highlighter.py ...: the query ``console`` found those demos, not
    console.py. A script's names are no module's API; its calls stay references, and a name bound
    beside the guard (``try``/``except`` imports, ``if TYPE_CHECKING``) stays a definition."""
    py = (
        "import sys\n\nif sys.version_info >= (3, 8):\n    Final = object\n\n"
        "def render(text):\n    return text\n\n"
        'if __name__ == "__main__":\n    console = Console()\n    render(console)\n'
    )
    g = graph_of("rich/segment.py", py)
    assert {d.name for d in g.defs} == {"Final", "render"}, g.defs
    # the guard's ``else:`` is what an import runs; a guard inside a ``try`` is one too
    other = (
        'if __name__ == "__main__":\n    demo = 1\nelse:\n    LOGGER = make()\n\n'
        'try:\n    if __name__ == "__main__":\n        tried = 2\nexcept ImportError:\n    pass\n'
    )
    log = graph_of("pkg/log.py", other)
    chunk_names = {n for c in chunk_file_multi("pkg/log.py", other, (1500,), [])[0] for n in c.defines}
    assert {d.name for d in log.defs} == chunk_names == {"LOGGER"}, (log.defs, chunk_names)
    assert ("render", 11) in {(r.name, r.line) for r in g.refs}
    chunks = chunk_file_multi("rich/segment.py", py, (1500,), [])[0]
    assert "console" not in {n for c in chunks for n in c.defines}, chunks


CPP_DECLARED = """
    struct Forward;

    static int helper(int x);

    template <typename T>
    struct holder {
        using value_type = T;
        void reset();
        int size() const { return n; }
        int n;
    };

    using IntVec = std::vector<int>;

    static int helper(int x) {
        return x + 1;
    }

    struct Forward {
        int a;
    };

    typedef struct _HashTable HashTable;

    Widget::Widget(int x)
        : x_(x),
          y_(x)
    {
    }
"""


def test_a_c_declaration_is_not_the_definition_and_a_cpp_alias_is_one() -> None:
    """A prototype or a forward declaration outside a class (Pillow's ``getcolors32(...);`` above its
    body) came first for its name and sent ``defs`` to a line without code; the definition is the one
    with a body. ``using X = ...`` (pybind11's ``exactly_one_t``) defines a type, as ``typedef`` does."""
    g = graph_of("src/holder.cpp", CPP_DECLARED)
    defs = [(d.name, d.line) for d in g.defs]
    assert ("helper", 15) in defs and ("helper", 3) not in defs, defs
    assert ("Forward", 19) in defs and ("Forward", 1) not in defs, defs
    # a class's member declarations stay definitions (a template's body may be where no anchor finds it)
    assert {("value_type", 7), ("IntVec", 13), ("size", 9), ("reset", 8)} <= set(defs), defs
    # a typedef names a type; a constructor's initializer lines are not where its body starts
    assert {("HashTable", 23), ("Widget", 25)} <= set(defs), defs
    assert not {"x_", "y_"} & {name for name, _ in defs}  # its initializers define nothing


def test_an_out_of_line_template_member_is_a_definition_of_its_class() -> None:
    """``void Stack<T>::push(...)`` below its ``template <typename T>`` line defines ``push`` in ``Stack``
    (the template's arguments were read as no name, so no anchor: the body belonged to nothing)."""
    cpp = (
        "template <typename T>\nvoid Stack<T>::push(const T& item) {\n    items_.push_back(item);\n}\n\n"
        "template <typename K, typename V>\nstd::vector<K> Table<K, V>::keys() const {\n"
        "    return ks_;\n}\n\n"
        "template <typename D>\nobject object_api<D>::operator()(Args &&...args) const {\n"
        "    return call();\n}\n"
    )
    g = graph_of("src/stack.cpp", cpp)
    # a call operator keeps the name it had inside a class (``operator``, as a search types it)
    assert {("push", 2), ("keys", 7), ("operator", 12)} <= {(d.name, d.line) for d in g.defs}, g.defs
    chunks = chunk_file_multi("src/stack.cpp", cpp, (1500,), [])[0]
    assert chunks[0].symbol == "function Stack::push" and {"push", "keys"} <= set(chunks[0].defines), chunks
    # a templated qualified call going on from the lines above, or in a macro's body, defines nothing
    cont = (
        "#define CALL_IT(x) \\\n  Registry<int>::flush()\n\n"
        "template <typename T, typename R = store<\n    T, Tuple<T>::size()>>\nR optimize(const T& x)\n{\n"
        "    return R(x);\n}\n\n"
        "auto preferred(P&& p)\n    -> decltype(f(p,\n                typename traits<P>::type()))\n{\n"
        "    return f(p);\n}\n"
    )
    spans = {(d.name, d.line, d.end_line) for d in graph_of("src/opt.cpp", cont).defs}
    assert {("optimize", 6, 9), ("preferred", 11, 16)} <= spans, spans
    assert not {"flush", "size", "type"} & {name for name, _, _ in spans}, spans
    # both rules are C and C++'s: a Rust impl's generics and paths stay as they were
    rust = "impl<T: fmt::Display + ?Sized, A: Alloc> fmt::Display for Box<T, A> {\n    fn fmt(&self) {}\n}\n"
    assert [d.qualname for d in graph_of("src/boxed.rs", rust).defs] == ["Display for Box<T, A>.fmt"]


def test_a_cpp_header_named_h_is_read_as_cpp() -> None:
    """``.h`` is C's and C++'s: pybind11's headers were read as C, whose structs hold no members, so
    ``cpp_function::dispatcher`` and every other inline member defined nothing (204 definitions in
    pybind11.h now, 77 before). A header that writes a class, a namespace, a template, an access label or
    ``std::`` is C++; a C header stays C."""
    cpp = (
        "namespace detail {\nclass cpp_function {\npublic:\n"
        "    static int dispatcher(int x) {\n        return x;\n    }\n};\n}\n"
    )
    g = graph_of("include/pybind11.h", cpp)
    assert "detail.cpp_function.dispatcher" in {d.qualname for d in g.defs}, g.defs
    assert chunk_file_multi("include/pybind11.h", cpp, (1500,), [])[0][0].language == "cpp"
    c = "/* the class of an image */\ntypedef struct ImagingInstance *Imaging;\nextern Imaging New(int x);\n"
    assert chunk_file_multi("Imaging.h", c, (1500,), [])[0][0].language == "c"


def test_a_header_passes_a_c_or_a_cpp_language_filter(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_workspace(root, {
        "include/holder.h": "namespace util {\nclass Holder {\npublic:\n    int capybara() {}\n};\n}\n",
        "src/image.h": "typedef struct Image *ImagePtr;\nextern int capybara_count(ImagePtr im);\n",
        "src/image.c": "int capybara_count(ImagePtr im) {\n    return 0;\n}\n",
    })  # fmt: skip
    Indexer(root, settings(root)).run()
    searcher = Searcher(root, settings(root))

    def paths(query: str) -> set[str]:
        return {h.path for h in searcher.search(query, limit=10).results}

    assert paths("lang:cpp capybara") == {"include/holder.h", "src/image.h"}  # a header may be either
    assert paths("lang:c capybara") == {"include/holder.h", "src/image.h", "src/image.c"}


def test_every_name_of_a_swift_case_line_is_a_member() -> None:
    swift = "enum Token {\n    case plus, minus, number(Int, (Int, Int))\n    case a = 1, b = 2 // raw\n}\n"
    defs = {(d.qualname, d.line) for d in graph_of("Token.swift", swift).defs}
    assert {
        ("Token.plus", 2),
        ("Token.minus", 2),
        ("Token.number", 2),
        ("Token.a", 3),
        ("Token.b", 3),
    } <= defs
    assert not [d for d in defs if d[0].startswith("Token.plus.")], defs


def test_defs_on_a_js_workspace_find_member_assignments_not_imports(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "utils.js").write_text(
        "'use strict';\n\n" + "/**\n * Compile ETag.\n */\n\n"
        "exports.compileETag = function(val) {\n  return val;\n};\n"
    )
    (root / "lib" / "application.js").write_text(
        "var compileETag = require('./utils').compileETag;\nvar app = exports = module.exports = {};\n\n"
        "app.listen = function listen() {\n  return compileETag(1);\n};\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIDE_EMBEDDER": "none"}

    def defs(name: str) -> list[tuple[str, int, str]]:
        out = subprocess.run([sys.executable, "-m", "aide_tui", "defs", "--json", "--path", str(root), name],
                             capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
        assert out.returncode in (0, 1), out.stderr
        return [(d["path"], d["line"], d["text"].strip()) for d in json.loads(out.stdout)["definitions"]]

    assert defs("compileETag") == [("lib/utils.js", 7, "exports.compileETag = function(val) {")]
    assert defs("listen") == [("lib/application.js", 4, "app.listen = function listen() {")]
    assert defs("app.listen") == defs("listen")


SESSION_LIB = "class Session:\n    def execute(self):\n        return 1\n"
SESSION_EXAMPLE = "from lib.orm.session import Session as _S\n\nSession = sessionmaker(bind=None)\n"


def test_definitions_list_library_classes_before_example_variables(tmp_path: Path) -> None:
    """Issue 33 #5: ``defs Session`` listed ten ``Session = sessionmaker(...)`` of ``examples/`` before
    ``class Session``, and its note read "Session, Session, Session, ...". Library code comes before
    examples and tests, classes and functions before assignments; the note names each once."""
    files = {f"examples/demo_{i}/env.py": SESSION_EXAMPLE for i in range(10)}
    files |= {"tests/test_session.py": "def Session():\n    return 2\n", "lib/orm/session.py": SESSION_LIB,
              "lib/orm/state.py": "Session = None  # filled in later\n"}  # fmt: skip
    root = write_workspace(tmp_path / "ws", files)
    index(root)
    ans = searcher(root).definitions("Session")
    order = [(d.path, d.kind) for d in ans.locations]
    assert order[:2] == [("lib/orm/session.py", "class"), ("lib/orm/state.py", "variable")]
    assert {p for p, _ in order[2:12]} == {f"examples/demo_{i}/env.py" for i in range(10)}
    assert order[12:] == [("tests/test_session.py", "function")]
    assert ans.note == (
        "Session is ambiguous: 13 definitions (class Session, variable Session ×11, function Session)"
    )
    out = run_cli("defs", "--path", str(root), "Session", "--embedder", "none", cwd=root)
    assert out.stdout.splitlines()[0] == "lib/orm/session.py:1:7:class Session:", out.stdout
    assert "variable Session ×11" in out.stderr and "Session, Session" not in out.stderr


def test_unicode_identifiers_are_looked_up(tmp_path: Path) -> None:
    """Issue 32 #8: ``defs ñandú``, ``函数`` and ``Ωmega`` exited 2 "not an identifier" although Python
    (and JavaScript) allow them and the graph holds them."""
    py = "def ñandú():\n    return 1\n\n\nclass Ωmega:\n    pass\n\n\ndef 函数(x):\n    return ñandú() + x\n"
    root = write_workspace(tmp_path / "ws", {"uni.py": py, "web/uni.js": "function ñandú() { return 1; }\n"})
    index(root)
    for name, want in (("ñandú", {"uni.py:1:5", "web/uni.js:1:10"}), ("函数", {"uni.py:9:5"}),
                       ("Ωmega", {"uni.py:5:7"})):  # fmt: skip
        out = run_cli("defs", "--path", str(root), name, "--embedder", "none", cwd=root)
        assert out.returncode == 0, out.stderr
        assert {":".join(line.split(":")[:3]) for line in out.stdout.splitlines()} == want
    out = run_cli("refs", "--path", str(root), "ñandú", "--embedder", "none", cwd=root)
    assert out.returncode == 0 and out.stdout.startswith("uni.py:10:12:"), out.stderr
    assert split_name("Client.ñandú") == ("ñandú", ["Client"]) and split_name("not a name") is None


def test_graph_rows_are_two_bytes_a_value_unless_a_value_needs_four(tmp_path: Path) -> None:
    """A segment whose paths, names, lines and columns fit 16 bits stores its graph's rows as uint16; a
    definition past line 65,535 keeps the segment's rows at int32, and both answer the same lookups (the
    merge of the two segments too)."""
    root = write_workspace(tmp_path / "ws")
    index(root)
    idx = index_dir_for(root)

    def graph_dtypes() -> set[tuple[str, str]]:
        seg_names = [s.name for s in read_manifest(idx).segments]
        return {
            (n, str(np.load(idx / s / n, mmap_mode="r").dtype))
            for s in seg_names
            for n in ("g_defs.npy", "g_refs.npy")
        }

    assert graph_dtypes() == {("g_defs.npy", "uint16"), ("g_refs.npy", "uint16")}
    big = root / "src/httpclient/far.py"
    big.write_text("x = 1\n" * 70_000 + "def far_away():\n    return backoff_delays()\n")
    index(root)
    assert ("g_defs.npy", "int32") in graph_dtypes()
    s = searcher(root)
    assert _defs_refs(s, "far_away")[0] == [("src/httpclient/far.py", 70_001, 5)]
    assert ("src/httpclient/far.py", 70_002, 12) in _defs_refs(s, "backoff_delays")[1]
    assert s.definitions("backoff_delays").total == 1
    index(root, rebuild=True)
    s = searcher(root)
    assert _defs_refs(s, "far_away")[0] == [("src/httpclient/far.py", 70_001, 5)]


def test_reference_rows_store_no_name_and_segments_written_before_still_read(tmp_path: Path) -> None:
    """A reference row's name is the run of ``g_ref_ptr`` it falls in, so ``g_refs.npy`` keeps four
    columns; a segment written before (five columns, the name second) answers every lookup the same."""
    from aide_tui.core.store.graphfiles import MappedGraph, encode_graph
    from aide_tui.core.store.graphtable import GraphTable
    from aide_tui.core.store.mapped import FileSum, MappedArray, MappedFile
    from aide_tui.core.store.segment_write import npy_bytes

    files = {"a.py": graph_of("a.py", PY), "b.py": graph_of("b.py", "import a\nCLIENT = a.Client(a.LIMIT)\n")}
    table = GraphTable.from_files(files)
    payloads = encode_graph(table, [0, 1], 2)
    refs = payloads["g_refs.npy"]
    assert isinstance(refs, np.ndarray) and refs.shape == (len(table.refs), 4)
    ptr = np.asarray(payloads["g_ref_ptr.npy"], np.int64)
    old = dict(payloads)
    old["g_refs.npy"] = np.insert(refs, 1, np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)), axis=1)

    def graph(where: Path, data: dict[str, bytes | np.ndarray]) -> MappedGraph:
        where.mkdir()
        sums = {}
        for n, v in data.items():
            raw = v if isinstance(v, bytes) else npy_bytes(v)
            (where / n).write_bytes(raw)
            sums[n] = FileSum.of(raw)
        return MappedGraph(str(where), list(files), lambda n: MappedArray(MappedFile(where / n, sums[n], n)),
                           lambda n: MappedFile(where / n, sums[n], n))  # fmt: skip

    new_g, old_g = graph(tmp_path / "new", payloads), graph(tmp_path / "old", old)

    def answers(g: MappedGraph) -> object:
        by_name = {g.names.term(n): [g.reference(r) for r in g.reference_rows(n)] for n in range(g.names.n)}
        by_path = [[g.reference(r) for r in g.references_in(p)] for p in range(2)]
        t = g.to_table(lambda p: True)
        return by_name, by_path, g.calls_by_path().tolist(), g.called_name_ids(1), t.names, t.refs.tolist()

    got = answers(new_g)
    assert got == answers(old_g)
    by_name = got[0]
    assert isinstance(by_name, dict)
    assert [(p, r.kind, r.line) for p, r in by_name["parse_header"]] == [(0, "import", 3), (0, "call", 14)]
    assert {p for p, _ in by_name["Client"]} == {0, 1}


def test_reference_pointers_that_go_back_are_refused(tmp_path: Path) -> None:
    """A reference row's name is bisected out of ``g_ref_ptr``: a table that goes back (a writer's bug,
    checksummed as written) is refused as a corrupt index, never read as other names."""
    from aide_tui.core.store.graphfiles import MappedGraph, encode_graph
    from aide_tui.core.store.graphtable import GraphTable
    from aide_tui.core.store.mapped import FileSum, MappedArray, MappedFile
    from aide_tui.core.store.segment_write import narrowed_offsets, npy_bytes

    payloads = narrowed_offsets(encode_graph(GraphTable.from_files({"a.py": graph_of("a.py", PY)}), [0], 1))
    ptr = np.asarray(payloads["g_ref_ptr.npy"]).copy()
    t = int(np.argmax(np.diff(ptr.astype(np.int64))))  # a name with references: swap its ends
    ptr[t], ptr[t + 1] = ptr[t + 1], ptr[t]
    payloads["g_ref_ptr.npy"] = ptr
    raw = {n: v if isinstance(v, bytes) else npy_bytes(v) for n, v in payloads.items()}
    for n, data in raw.items():
        (tmp_path / n).write_bytes(data)
    sums = {n: FileSum.of(data) for n, data in raw.items()}
    g = MappedGraph("seg", ["a.py"], lambda n: MappedArray(MappedFile(tmp_path / n, sums[n], n)),
                    lambda n: MappedFile(tmp_path / n, sums[n], n))  # fmt: skip
    for read in (lambda: g.references_in(0), g.calls_by_path, lambda: g.to_table(lambda p: True)):
        with pytest.raises(IndexCorrupt, match="g_ref_ptr"):
            read()
