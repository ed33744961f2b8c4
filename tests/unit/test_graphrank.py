"""The symbol graph in ranking: imports resolved to indexed files, one-hop neighbours of the best files,
the hop list, the centrality prior, and identifier queries left alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search import graphrank as G
from aide_tui.core.search.searcher import Searcher

FILES = {
    "app/api.py": """
        from .storage import save_record
        from app import audit


        def handle_upload(payload):
            \"\"\"Accept an uploaded payload from the web form.\"\"\"
            audit.log_event("upload", payload)
            return save_record(payload)
    """,
    "app/storage.py": """
        def save_record(record):
            \"\"\"Write the record to disk.\"\"\"
            with open("db", "a") as fh:
                fh.write(str(record))
    """,
    "app/audit.py": """
        def log_event(kind, data):
            \"\"\"Append an audit line.\"\"\"
            print(kind, data)
    """,
    "app/unrelated.py": """
        def render_page(title):
            \"\"\"Render an uploaded page title.\"\"\"
            return title
    """,
    "web/main.ts": """
        import { helper } from "./util.js";
        import express from "express";
        export function start() { return helper(); }
    """,
    "web/util.ts": "export function helper() { return 1; }\n",
    "cmd/run.go": """
        package main

        import "example.com/tool/internal/store"

        func main() { store.Open() }
    """,
    "internal/store/store.go": "package store\n\nfunc Open() {}\n",
}


def workspace(root: Path) -> Path:
    for rel, body in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body).lstrip("\n"))
    return root


def searcher(root: Path, **search: object) -> Searcher:
    settings = load_settings(root, {"embedding": {"backend": "none"}, "search": dict(search)})
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    return s


def test_imports_resolve_to_indexed_files(tmp_path: Path) -> None:
    s = searcher(workspace(tmp_path / "ws"))
    files = s.retriever.path_parts
    assert G.resolve_import(".storage.save_record", "app/api.py", files) == ["app/storage.py"]
    assert G.resolve_import("app.audit", "app/api.py", files) == ["app/audit.py"]
    assert G.resolve_import("os.path", "app/api.py", files) == []
    assert G.resolve_import("./util.js", "web/main.ts", files) == ["web/util.ts"]
    assert G.resolve_import("express", "web/main.ts", files) == []
    assert G.resolve_import("example.com/tool/internal/store", "cmd/run.go", files) == [
        "internal/store/store.go"
    ]
    graph = s.retriever.graph
    assert G.links(graph, files, "app/api.py") == {
        "app/storage.py": 2.0,
        "app/audit.py": 2.0,
    }  # import + call
    assert G.neighbours(graph, files, ["app/api.py", "app/storage.py"]) == {"app/audit.py": 1.0}
    assert G.links(graph, files, "cmd/run.go") == {"internal/store/store.go": 2.0}


def test_a_relative_import_leads_into_its_own_folder_an_absolute_one_anywhere_it_is_read(
    tmp_path: Path,
) -> None:
    """Resolved imports are kept by module, language and (for a relative import only) the importer's
    folder: ``from .util import f`` in two packages leads each to its own ``util.py``, whichever is
    followed first."""
    root = tmp_path / "ws"
    for pkg in ("alpha", "beta"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "util.py").write_text("def f():\n    return 1\n")
        (root / pkg / "main.py").write_text("from .util import f\nimport gamma.tools\n")
    (root / "gamma").mkdir()
    (root / "gamma" / "tools.py").write_text("def tool():\n    return 2\n")
    s = searcher(root)
    graph, files = s.retriever.graph, s.retriever.path_parts
    for first, second in (("alpha", "beta"), ("beta", "alpha")):
        graph.memo.clear()
        for pkg in (first, second):
            assert set(G.links(graph, files, f"{pkg}/main.py")) == {f"{pkg}/util.py", "gamma/tools.py"}
    ranks = G.file_rank(graph, files, {})
    assert ranks["alpha/util.py"] == ranks["beta/util.py"] > ranks["alpha/main.py"]


def test_every_files_call_links_at_once_are_each_files_links_one_by_one(tmp_path: Path) -> None:
    """``call_edges`` (the indexer's way to draw every file's call links) gives, for any cap on the
    names followed and on their definitions, the links read one file at a time: a file's first called
    names, each defined in 1 to ``max_defs`` other files, 1 split over those files."""
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    defs = {"one": ["a"], "two": ["a", "b"], "three": ["a", "b", "c"], "own": ["d"]}
    for f in "abcd":
        names = [n for n, where in defs.items() if f in where]
        (root / "pkg" / f"{f}.py").write_text("".join(f"def {n}():\n    return 0\n\n" for n in names))
    for i, calls in enumerate(["one two three", "three two one own", "own one", "two", "nothing one"]):
        body = "".join(f"    {c}()\n" for c in calls.split())
        (root / "pkg" / f"caller{i}.py").write_text(f"def run{i}():\n{body}")
    (root / "pkg" / "d.py").write_text("def own():\n    one()\n    own()\n    return 0\n")
    s = searcher(root)
    view = s.retriever.view
    assert view is not None
    graph = view.graph
    paths = sorted(graph.paths())
    index = {p: i for i, p in enumerate(paths)}
    for max_calls in (1, 2, 400):
        for max_defs in (1, 2, 3):
            src, dst, w = graph.call_edges(index, max_calls, max_defs)
            got: dict[tuple[str, str], float] = {}
            for a, b, x in zip(src.tolist(), dst.tolist(), w.tolist(), strict=True):
                got[(paths[a], paths[b])] = got.get((paths[a], paths[b]), 0.0) + x
            want: dict[tuple[str, str], float] = {}
            for p in paths:
                for where in graph.definition_paths(graph.called_names(p)[:max_calls]).values():
                    if p not in where and 0 < len(where) <= max_defs:
                        for q in where:
                            want[(p, q)] = want.get((p, q), 0.0) + 1.0 / len(where)
            assert got == want, (max_calls, max_defs)
    assert graph.call_edges(index, 400, 3)[0].size  # the workspace draws links at all


def test_hops_bring_in_the_files_the_best_files_use(tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws")
    query = "accept an uploaded payload from the web form, to disk"
    plain = searcher(root).search(query, mode="bm25")
    hopped = searcher(root, hop_weight=0.25, hop_files=1).search(query, mode="bm25")
    assert plain.results[0].path == "app/api.py"
    by_path = {h.path: h for h in hopped.results}
    assert "hop" in by_path["app/storage.py"].ranks and "hop" not in by_path["app/unrelated.py"].ranks
    before = [h.path for h in plain.results].index("app/storage.py")
    assert [h.path for h in hopped.results].index("app/storage.py") < before
    # identifier queries never use the graph (symbol R@1 stays exact)
    ident = searcher(root, hop_weight=5.0, centrality=5.0).search("save_record", mode="bm25")
    assert ident.results[0].path == "app/storage.py" and "hop" not in ident.results[0].ranks


def test_centrality_ranks_the_most_used_file_highest(tmp_path: Path) -> None:
    s = searcher(workspace(tmp_path / "ws"))
    graph = s.retriever.graph
    ranks = G.file_rank(graph, s.retriever.path_parts, graph.memo)
    assert max(ranks.values()) == 1.0
    assert ranks["app/storage.py"] > ranks["app/unrelated.py"] and ranks["app/audit.py"] > ranks["app/api.py"]
    assert G.file_rank(graph, s.retriever.path_parts, graph.memo) is ranks  # once per loaded version
    # every file's links at once (the indexer's way) give the ranks of following each file's links
    view = s.retriever.view
    assert view is not None

    class OneFileAtATime:
        memo: dict[str, object] = {}
        imports_of, called_names = view.graph.imports_of, view.graph.called_names
        definition_paths, paths = view.graph.definition_paths, view.graph.paths

    assert G.file_rank(OneFileAtATime(), s.retriever.path_parts, {}) == G.file_rank(
        view.graph, s.retriever.path_parts, {}
    )


def test_the_prior_is_stored_with_the_version_carried_over_an_edit_and_recomputed_when_many_files_are_new(
    tmp_path: Path,
) -> None:
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.store.segments import read_manifest

    root = workspace(tmp_path / "ws")
    s = searcher(root)
    stored = read_manifest(index_dir_for(root)).meta.rank_file
    assert stored and (index_dir_for(root) / stored).is_file()  # the indexer computed it: no reader does
    first = G.file_rank(s.retriever.graph, s.retriever.path_parts, s.retriever.graph.memo)
    assert max(first.values()) == 1.0 and first["app/storage.py"] > first["app/unrelated.py"]
    (root / "app/audit.py").write_text(
        'def log_event(kind, data):\n    """Append a line."""\n    return kind\n'
    )
    Indexer(root, s.settings).run()
    s.refresh()
    graph = s.retriever.graph
    assert read_manifest(index_dir_for(root)).meta.rank_file == stored  # an edit: the same prior
    assert G.file_rank(graph, s.retriever.path_parts, graph.memo) == first
    for i in range(3):
        (root / f"app/extra{i}.py").write_text("from .storage import save_record\n\nsave_record(1)\n")
    Indexer(root, s.settings).run()
    s.refresh()
    graph = s.retriever.graph
    again = G.file_rank(graph, s.retriever.path_parts, graph.memo)
    assert read_manifest(index_dir_for(root)).meta.rank_file != stored
    assert again != first and "app/extra0.py" in again
    (root / "app/extra0.py").write_text("from .storage import save_record\n")
    Indexer(root, s.settings).run()  # one version later no reader can be on one that names it: retired
    assert not (index_dir_for(root) / stored).exists()
