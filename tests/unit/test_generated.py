"""Generated output is left out by layout and content, not by folder names sources use (issue 33 #1).

Real trees on disk, the scanner's walk and the CLI's ``index --json`` (its ``skipped`` list), and the
user's way back in (a negated ``index.exclude`` pattern)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.index import parallel
from aide_tui.core.index.generated import content_reason, drawn_chars
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.index.scan import Scanner
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import read_index
from aide_tui.serve.jail import SpanRefused, read_span

REPO = Path(__file__).resolve().parents[2]
SPHINX_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Sessions</title></head>\n<body>\n"
    + "<p>The Session establishes conversations with the database.</p>\n" * 40
    + '<div>Created using <a href="http://sphinx.pocoo.org/">Sphinx</a> 7.2.6.</div>\n</body></html>\n'
)
MINIFIED = "!function(e){" + ";".join(f"var a{i}=e.x{i}||{i}" for i in range(400)) + "}(window);\n"


def _w(root: Path, rel: str, data: str = "x = 1\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(data)
    return p


def _sphinx_sdist(root: Path) -> Path:
    """SQLAlchemy's sdist layout: Sphinx sources in doc/build, the rendered site in doc/ around it."""
    _w(root, "lib/sqlalchemy/orm/session.py", "class Session:\n    pass\n")
    _w(root, "doc/build/conf.py", "project = 'SQLAlchemy'\n")
    _w(
        root,
        "doc/build/orm/session_basics.rst",
        "Session Basics\n==============\n\nWhat does the Session do?\n",
    )
    _w(root, "doc/build/Makefile", "html:\n\tsphinx-build -b html . output\n")
    _w(root, "doc/index.html", SPHINX_PAGE)
    _w(root, "doc/orm/session_basics.html", SPHINX_PAGE)
    _w(root, "doc/searchindex.js", 'Search.setIndex({"docnames": ["index"]})\n')
    _w(root, "doc/_static/init.js", "function initDocs() {\n  return 1;\n}\n")
    _w(root, "doc/_modules/index.html", SPHINX_PAGE)
    _w(root, "doc/_templates/layout.html", "{% extends '!layout.html' %}\n{% block footer %}{% endblock %}\n")
    return root


def _index_json(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "aide_tui", "index", "--embedder", "none", "--json", str(root)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _indexed(root: Path) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "aide_tui", "search", "--json", "--no-update", "--path", str(root), "Session"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    return {r["path"] for r in json.loads(out.stdout)["results"]}


def test_sphinx_sources_in_a_build_folder_are_indexed_and_the_rendered_site_is_not(tmp_path: Path) -> None:
    root = _sphinx_sdist(tmp_path / "ws")
    summary = _index_json(root)
    skipped = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert skipped["doc/index.html"] == "generated: an HTML page rendered by Sphinx"
    assert skipped["doc/orm/session_basics.html"] == "generated: an HTML page rendered by Sphinx"
    assert skipped["doc/_static/"].startswith("generated: support files of a rendered docs site")
    assert skipped["doc/_modules/"].startswith("generated: support files")
    assert skipped["doc/searchindex.js"].startswith("generated: support files")
    files = {f.rel for f in Scanner(root).scan().files}
    assert {"doc/build/conf.py", "doc/build/orm/session_basics.rst", "doc/build/Makefile"} <= files
    assert "doc/_templates/layout.html" in files  # a template, not a render: no tool signs it
    found = _indexed(root)
    assert "doc/build/orm/session_basics.rst" in found and "lib/sqlalchemy/orm/session.py" in found
    assert not any(p.endswith(".html") for p in found), found


def test_a_build_on_every_core_leaves_the_rendered_site_out_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helpers of a parallel cold build apply the same content rules as the indexer's own process
    (they read every file of a big tree: SQLAlchemy's 170 rendered pages came back through them)."""
    root = _sphinx_sdist(tmp_path / "ws")
    for i in range(12):  # enough files for several batches
        _w(root, f"lib/sqlalchemy/mod_{i}.py", f"def function_{i}():\n    return {i}\n" * 40)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_BATCH_BYTES", 1_000)
    settings = load_settings(root, {"embedding": {"backend": "none"}, "index": {"build_workers": 2}})
    rep = Indexer(root, settings).run()
    paths = {c.path for c in read_index(index_dir_for(root)).chunks}
    assert "doc/build/orm/session_basics.rst" in paths and "lib/sqlalchemy/mod_11.py" in paths
    assert not any(p.endswith(".html") and not p.startswith("doc/_templates/") for p in paths), paths
    skipped = dict(rep.skipped_files)
    assert skipped.get("doc/orm/session_basics.html") == "generated: an HTML page rendered by Sphinx", skipped


def test_a_negated_exclude_brings_generated_files_back(tmp_path: Path) -> None:
    root = _sphinx_sdist(tmp_path / "ws")
    _w(root, ".aide/config.toml", '[index]\nexclude = ["!doc/_static/", "!doc/index.html"]\n')
    summary = _index_json(root)
    skipped = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert "doc/_static/" not in skipped and "doc/index.html" not in skipped
    assert "doc/orm/session_basics.html" in skipped
    settings = load_settings(root, environ={})
    assert "doc/_static/init.js" in {f.rel for f in Scanner.from_settings(root, settings).scan().files}
    assert "doc/index.html" in _indexed(root)


@pytest.mark.parametrize(
    ("tree", "reason"),
    [
        ({"build/CMakeCache.txt": "CMAKE_BUILD_TYPE:STRING=Release\n", "build/gen/config.h": "#define X 1\n"},
         "CMake build tree"),
        ({"out/build.ninja": "rule cc\n", "out/.ninja_log": "# ninja log v5\n", "out/obj/a.c": "int a;\n"},
         "Ninja build tree"),
        ({"build/lib/pkg/mod.py": "def f(): pass\n", "build/bdist.linux-x86_64/x.py": "y = 2\n"},
         "setuptools build folder"),
        ({"docs/_build/html/.buildinfo": "config: 1\n", "docs/_build/html/index.html": "<p>x</p>\n"},
         "Sphinx HTML output"),
        ({"cache/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n", "cache/a.py": "x = 1\n"},
         "CACHEDIR.TAG"),
    ],
)  # fmt: skip
def test_build_trees_are_told_by_their_markers(tmp_path: Path, tree: dict[str, str], reason: str) -> None:
    root = tmp_path / "ws"
    _w(root, "src/main.py")
    for rel, body in tree.items():
        _w(root, rel, body)
    res = Scanner(root).scan()
    assert [f.rel for f in res.files] == ["src/main.py"]
    rows = [(path, why) for path, why in res.skipped.items() if reason in why]
    assert len(rows) == 1 and rows[0][0].endswith("/"), res.skipped  # one row for the tree


def test_a_build_folder_of_scripts_is_indexed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "build/release.sh", "#!/bin/sh\nmake dist\n")
    _w(root, "build/lib/helpers.py", "def helper():\n    return 1\n")  # lib/ beside a script: not setuptools
    assert {f.rel for f in Scanner(root).scan().files} == {"build/release.sh", "build/lib/helpers.py"}


def test_content_rules() -> None:
    assert content_reason("static/app.js", MINIFIED) is not None
    assert content_reason("static/app.css", "a{b:c}" * 1000) is not None
    compiled = "function f() {\n  return 1;\n}\n" * 100 + "//# sourceMappingURL=app.js.map\n"
    assert content_reason("lib/app.js", compiled) == "generated: compiled output (it links a source map)"
    assert content_reason("lib/app.js.map", '{"version":3,"sources":["a.ts"],"mappings":"AAAA"}') is not None
    # a data or text file that says it is generated and not to be edited
    assert content_reason("schema.json", '// @generated\n{"a": 1}\n')
    assert content_reason("api.yaml", "# Code generated by oapi-codegen. DO NOT EDIT.\nopenapi: 3.0.0\n")
    assert content_reason("NOTICE.txt", "This file was generated by a script; do not edit.\n")
    # generated source code is code: the only definitions of its names (Go's h2_bundle.go, protobuf)
    assert (
        content_reason("api/x.pb.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n")
        is None
    )
    assert (
        content_reason("x_pb2.py", "# Generated by the protocol buffer compiler.  DO NOT EDIT!\nimport x\n")
        is None
    )
    assert content_reason("schema.ts", "// @generated\nexport type A = 1;\n") is None
    # ... unless it is a table of numbers (Go's unicode tables, a lexer's serialized states)
    table = "// Code generated by maketables. DO NOT EDIT.\n\npackage norm\n\nvar nfcValues = [...]uint16{\n"
    table += "".join(
        f"\t0x{i:04x}, 0x{i * 7 % 65536:04x}, 0x{i * 13 % 65536:04x}, 0x{i * 31 % 65536:04x},\n"
        for i in range(500)
    )
    assert content_reason("norm/tables13.0.0.go", table + "}\n") == "generated: a table of numbers"
    page = '<html><head><meta name="generator" content="Docutils 0.20.1: https://docutils.sourceforge.io/" />'
    assert (
        content_reason("doc/a.html", page + "</head></html>")
        == "generated: an HTML page rendered by Docutils 0.20.1: https://docutils.sourceforge.io/"
    )
    # sources that only mention generation, far from the top or without "do not edit", stay
    code = "def f():\n    return 1\n" * 50 + "# the keys are auto-generated; do not edit by hand\n"
    assert content_reason("keys.py", code) is None
    assert content_reason("reqs.txt", "# This file is autogenerated by pip-compile\nrequests==2.0\n") is None
    assert content_reason("app.js", "function f() {\n  return 1;\n}\n" * 200) is None
    assert content_reason("one.js", "module.exports = require('./lib/express');\n") is None
    assert content_reason("page.html", "<html><body><p>hand written</p></body></html>\n") is None


def test_read_span_refuses_what_the_scan_leaves_out_as_generated(tmp_path: Path) -> None:
    root = _sphinx_sdist(tmp_path / "ws")
    settings = load_settings(root, environ={})
    assert (
        "What does the Session do?"
        in read_span(root, settings, "doc/build/orm/session_basics.rst", 1, 9).text
    )
    for rel in ("doc/index.html", "doc/_static/init.js", "doc/searchindex.js"):
        with pytest.raises(SpanRefused, match="generated"):
            read_span(root, settings, rel, 1, 1)


def test_generated_source_code_is_searched_and_its_names_defined(tmp_path: Path) -> None:
    """Go's net/http bundles its HTTP/2 code into ``h2_bundle.go`` under a "Code generated ... DO NOT
    EDIT." banner: left out, half of net/http's names had no definition anywhere (``eval_languages.py``,
    go-http: symbol R@10 .525). Generated source code is indexed; generated data is still left out."""
    root = tmp_path / "ws"
    _w(root, "net/http/h2_bundle.go",
       "// Code generated by golang.org/x/tools/cmd/bundle. DO NOT EDIT.\n\npackage http\n\n"
       "type http2Framer struct {\n\tw io.Writer\n}\n\nfunc (fr *http2Framer) WriteSettings() error {\n"
       "\treturn nil\n}\n")  # fmt: skip
    _w(root, "net/http/server.go", "package http\n\nfunc serve() {\n\tfr := &http2Framer{}\n\t_ = fr\n}\n")
    _w(root, "api/openapi.json", '{"_comment": "Code generated by a tool. DO NOT EDIT.", "http2Framer": 1}\n')
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    done = Indexer(root, settings).run()
    assert "net/http/h2_bundle.go" not in done.skipped_files
    assert "generated" in done.skipped_files["api/openapi.json"]
    hits = Searcher(root, settings).search("http2Framer", limit=5).results
    assert (hits[0].path, hits[0].start_line) == ("net/http/h2_bundle.go", 1)
    assert "api/openapi.json" not in [h.path for h in hits]


def _report(drawn: int, prose: int) -> str:
    svg = '<svg class="terminal" viewBox="0 0 994 635">' + '<text class="r1" x="0" y="20">row</text>' * drawn
    body = "<p>a test ran.</p>" * prose
    return f"<html><head><title>Snapshot Report</title></head><body>{body}{svg}</svg></body></html>"


def test_an_html_page_of_drawings_is_left_out_as_an_svg_file_is(tmp_path: Path) -> None:
    """A page that is mostly inline SVG (a snapshot test's report: the screens it drew) is drawings, as
    an ``.svg`` file is; a page with a few icons, and a small page of drawings (an icon sheet), stay."""
    report = _report(drawn=2000, prose=500)
    assert content_reason("tests/output/snapshot_report.html", report) == (
        "generated: an HTML page of drawings (89 % inline SVG)"
    )
    assert content_reason("docs/index.htm", _report(drawn=200, prose=4000)) is None  # prose with a drawing
    assert content_reason("icons.html", _report(drawn=100, prose=10)) is None  # under 32 KB
    # opening tags never closed are not drawings (and are counted in one pass: 100,000 of them)
    assert content_reason("broken.html", "<p>text</p><svg " * 100_000) is None
    assert drawn_chars("<p>x</p><SVG a>1</svg ><svg>2</SVG>tail") == 27
    assert drawn_chars("<svg>1</svg><svg>open") == 0  # a tag left open: the tags do not pair up
    prose = "<p>" + "a paragraph of prose. " * 1600 + "</p>"
    icon = '<svg viewBox="0 0 8 8"><path d="M0 0h8v8H0z"/></svg>'
    for page in (  # a page of prose is not drawings, whatever its tags look like
        f'<html><body><svg class="logo" href="#l"/>{prose}{icon}</body></html>',  # a self-closing tag
        f"<html><script>const t = '<svg';</script>{prose}{icon}</html>",  # an <svg in a string
        "İ" * 20_000 + f"<svg>{'x' * 11_000}</svg>",  # lower-casing would lengthen the text
    ):
        assert content_reason("page.html", page) is None
    root = tmp_path / "ws"
    _w(root, "src/main.py")
    _w(root, "tests/output/snapshot_report.html", report)
    _w(root, "docs/index.html", _report(drawn=200, prose=4000))
    report_of_run = Indexer(root, load_settings(root, {"embedding": {"backend": "none"}})).run()
    assert "drawings" in report_of_run.skipped_files["tests/output/snapshot_report.html"]
    assert "docs/index.html" not in report_of_run.skipped_files and report_of_run.files == 2
