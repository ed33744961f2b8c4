"""The layering rules of docs/architecture.md, checked on the static import graph: every import
statement counts, inside functions too (a rule that holds only at run time is no rule)."""

from __future__ import annotations

import ast
import re

import pytest
from import_graph import PACKAGE, graph, modules, reachable

G = graph()
CORE = "aide_tui.core."

# Leaf modules of core: any layer may use them, they use nothing but each other.
LEAVES = {
    "appstate", "config", "errors", "events", "filekinds", "languages", "model", "paths", "priority",
    "safeio", "secrets", "status", "storekind", "textsafe", "tokens", "bm25", "watchdog", "httpclient",
}  # fmt: skip

# Per layer of core, the modules it must never import (regular expressions over names below core).
FORBIDDEN = {
    r"embed\..*": r"(chunk|index|search|store|milvus)\b.*|live",
    r"chunk\..*": r"(embed|index|search|store|milvus)\b.*|live",
    r"store\..*": r"(embed|chunk|index|search|milvus)\b.*|live",
    r"search\..*": r"(chunk|index)\b.*|live",
    r"milvus\..*": r"(chunk|index|search)\b.*|live",  # the Milvus format: its retriever and writer live above
    r"index\..*": r"search\b.*|live",
}  # fmt: skip

# Nothing on the search path may import the indexing side, at any depth.
SEARCH_PATH_ROOTS = [
    "aide_tui.core.search.searcher",
    "aide_tui.core.search.stores",
    "aide_tui.core.search.hitlines",
]
INDEXING_SIDE = re.compile(r"aide_tui\.core\.(index\b.*|chunk\b.*)$")


def core_edges() -> list[tuple[str, str]]:
    return [(m[len(CORE):], d[len(CORE):]) for m, ds in G.items() if m.startswith(CORE) for d in ds
            if d.startswith(CORE)]  # fmt: skip


def test_the_graph_is_read() -> None:
    assert "aide_tui.core.search.rank" in G["aide_tui.core.search.searcher"]
    assert len(G) > 80


def test_core_imports_no_front_end() -> None:
    front = ("aide_tui.tui", "aide_tui.cli", "aide_tui.serve", "aide_tui.host")
    bad = [(m, d) for m, ds in G.items() if m.startswith(CORE) for d in ds
           if d.split(".")[0] == "textual" or d.startswith(front)]  # fmt: skip
    assert bad == []


def test_leaves_use_only_leaves() -> None:
    bad = [(m, d) for m, d in core_edges() if m in LEAVES and d not in LEAVES and d.split(".")[0] != "store"]
    # status of the local store lives in store/status.py, so a leaf never reaches a store
    assert bad == []


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_rules(layer: str) -> None:
    banned = re.compile(FORBIDDEN[layer])
    bad = [(m, d) for m, d in core_edges() if re.fullmatch(layer, m) and banned.fullmatch(d)]
    assert bad == []


@pytest.mark.parametrize("start", SEARCH_PATH_ROOTS)
def test_the_search_path_never_reaches_the_indexing_side(start: str) -> None:
    assert sorted(m for m in reachable(G, start) if INDEXING_SIDE.match(m)) == []


def test_no_import_cycles() -> None:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in G.get(v, ()):
            if w not in G or w == v or G.get(w) is None:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(G):
        if v not in index:
            visit(v)
    assert cycles == []


def _imported_names() -> list[tuple[str, str, str]]:
    """(importing module, imported module, name) of every ``from aide_tui... import name``."""
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aide_tui"):
                out += [(name, node.module or "", a.name) for a in node.names]
    return out


def test_no_module_imports_another_modules_private_names() -> None:
    private = [(m, src, n) for m, src, n in _imported_names() if n.startswith("_") and not n.startswith("__")]
    bad = [f"{m} <- {src}.{n}" for m, src, n in private]
    assert bad == []


def test_file_records_and_the_writer_lock_come_from_their_own_module() -> None:
    """Both stores and the indexer share store/records.py; the local format's segments.py is not a way in."""
    shared = {"FileRecord", "writer_lock", "lock_holder", "lock_is_held"}
    home = "aide_tui.core.store.records"
    bad = [f"{m} <- {src}.{n}" for m, src, n in _imported_names()
           if n in shared and src.startswith("aide_tui.core.") and src != home]  # fmt: skip
    assert bad == []


def _attribute_reads(attr: str, owner: str) -> list[str]:
    """Where ``<...>.owner.attr`` is read in the package (``settings.store.backend``, ...)."""
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == attr:
                inner = node.value
                if isinstance(inner, ast.Attribute) and inner.attr == owner:
                    out.append(f"{name}:{node.lineno}")
    return out


def test_the_store_kind_is_asked_never_the_store_name() -> None:
    """Only core/storekind.py reads ``store.backend`` (config.py loads and checks it)."""
    readers = {r.split(":")[0] for r in _attribute_reads("backend", "store")}
    assert readers <= {"aide_tui.core.storekind", "aide_tui.core.config"}


def test_search_modes_are_defined_once() -> None:
    defined = []
    for name, path in modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "MODES" for t in node.targets
            ):
                defined.append(name)
    assert defined == ["aide_tui.core.config"]


def test_commands_parse_call_one_function_and_print() -> None:
    """A command (cli/*_cmd.py) never reads the index files, takes the host lock, talks to a host or
    starts a process itself: the host's and the core's functions do."""
    banned = re.compile(
        r"subprocess|aide_tui\.core\.(store|index|milvus|live)\b.*|aide_tui\.host\.(lock|tenure|locations|client|workspace)"
    )
    bad = [(m, d) for m, ds in G.items() if re.fullmatch(r"aide_tui\.cli\.\w+_cmd", m) for d in ds
           if banned.fullmatch(d)]  # fmt: skip
    assert bad == []


ENGINE_SEAMS = re.compile(r"aide_tui/core/(milvus/|search/milvus\.py|index/milvus_writer\.py|embed/onnx_)")
JSON_ANY = re.compile(r"(dict|Mapping|MutableMapping)\[str, Any\]|list\[Any\]")


def test_any_stays_at_the_json_and_engine_seams() -> None:
    """``Any`` types JSON values (``dict[str, Any]``) and the Milvus / onnxruntime engines; elsewhere the
    package names its types (at most 100 lines, issue 30; 72 when it was set)."""
    lines = []
    for path in sorted(modules().values()):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if ENGINE_SEAMS.match(rel):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("from typing import", "import typing")):
                continue
            if re.search(r"\bAny\b", JSON_ANY.sub("", line)):
                lines.append(f"{rel}:{n}")
    assert len(lines) <= 100, lines
