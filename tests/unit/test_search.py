"""Ranking mechanisms on small workspaces: symbol list, path list, test demotion, filters, long queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25, texts_read, write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.filters import parse_query
from aide_tui.core.search.rank import query_terms
from aide_tui.core.search.searcher import Searcher

FILES = {
    "pkg/routing.py": '''
        """URL routing."""


        def match_route(path, routes):
            """Find the handler registered for a path."""
            for pattern, handler in routes:
                if pattern == path:
                    return handler
            return None
    ''',
    "pkg/server.py": '''
        """The server calls into the router for every request."""

        from pkg.routing import match_route


        def handle(request, routes):
            """Dispatch one request: match_route decides, match_route again for fallbacks."""
            handler = match_route(request.path, routes) or match_route("/404", routes)
            return handler(request)
    ''',
    "tests/test_routing.py": '''
        from pkg.routing import match_route


        def test_match_route_finds_handler():
            """Find the handler registered for a path."""
            assert match_route("/a", [("/a", 1)]) == 1
    ''',
    "pkg/cli/main.go": """
        package main

        import "fmt"

        func main() {
            fmt.Println("hello")
        }
    """,
}


def searcher(tmp_path: Path, **search: object) -> Searcher:
    root = write_workspace(tmp_path / "ws", FILES)
    settings = load_settings(root, {"embedding": {"backend": "none"}, "search": search} if search else
                             {"embedding": {"backend": "none"}})  # fmt: skip
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    return s


def test_symbol_list_puts_definition_before_heavier_users(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    top = s.search("match_route").results[0]
    assert top.path == "pkg/routing.py" and top.ranks.get("symbol") == 1
    # without the symbol list, BM25 alone prefers the file that repeats the name most
    s.settings = load_settings(s.root, {"embedding": {"backend": "none"}, "search": {"symbol_weight": 0.0}})
    assert s.search("match_route").results[0].path != "pkg/routing.py"


def test_path_list_for_code_like_queries(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    res = s.search("cli/main.go println").results
    assert res[0].path == "pkg/cli/main.go" and res[0].ranks.get("path") == 1


def test_tests_are_demoted_unless_asked_for(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    paths = [h.path for h in s.search("find the handler registered for a path").results]
    assert paths.index("pkg/routing.py") < paths.index("tests/test_routing.py")
    paths = [h.path for h in s.search("test find the handler registered for a path").results]
    assert paths[0] == "tests/test_routing.py"


def test_filters_restrict_results(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    assert {h.path for h in s.search("match_route path:tests/*").results} == {"tests/test_routing.py"}
    assert {h.language for h in s.search("main lang:go").results} == {"go"}
    assert parse_query("foo path:src lang:Python bar").langs == ["python"]


def test_long_pasted_issue_still_finds_the_code(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    issue = (
        "Hi all, after upgrading yesterday our service started returning errors for every request. "
        "I think it is related to how the router works, but I am not sure. Here is the traceback: "
        'Traceback (most recent call last): File "app.py", line 12, in <module> '
        'File "pkg/server.py", line 8, in handle handler = match_route(request.path, routes) '
        "TypeError: 'NoneType' object is not callable. Any idea what could be wrong? Thanks a lot, "
        "we are running version 2.3 on Linux with Python 3.11 and the default configuration. " * 3
    )
    res = s.search(issue).results
    assert res[0].path in ("pkg/server.py", "pkg/routing.py")
    assert {"pkg/server.py", "pkg/routing.py"} <= {h.path for h in res[:3]}
    # the file named in the traceback is found through the path list even though the query is prose
    assert next(h for h in res if h.path == "pkg/server.py").ranks.get("path") == 1
    # a long query keeps its identifiers and weights them double
    terms, weights = query_terms(s.retriever.term_stats, issue, "", 0.0)
    assert "match_route" in terms and weights is not None and weights["match_route"] == 2.0


def test_bad_queries_never_raise(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    for q in ["", "   ", "the of and", "((*[?", "\x00\x1b[31m", "x" * 100_000, "päth:ünïcode 日本語"]:
        assert isinstance(s.search(q).results, list)


def test_diversify_caps_per_file_then_fills() -> None:
    from aide_tui.core.search.rank import diversify

    items = ["a1", "a2", "a3", "b1", "a4", "c1"]
    keys = [i[0] for i in items]
    assert diversify(items, keys, cap=2, window=4) == ["a1", "a2", "b1", "c1", "a3", "a4"]
    assert diversify(items, keys, cap=1, window=10) == ["a1", "b1", "c1", "a2", "a3", "a4"]
    assert diversify(items, keys, cap=9, window=10) == items


def test_quoted_phrase_ranks_verbatim_match(tmp_path: Path) -> None:
    s = searcher(tmp_path)
    # both pkg files mention match_route and handlers; only server.py has the exact phrase
    res = s.search('"match_route decides" handler').results
    assert res[0].path == "pkg/server.py" and res[0].ranks.get("phrase") == 1
    assert s.search('"no chunk contains this phrase" handler').results  # no phrase hit: still answers
    s.settings = load_settings(s.root, {"embedding": {"backend": "none"}, "search": {"phrase_weight": 0.0}})
    assert s.search('"match_route decides" handler').results[0].path != "pkg/server.py"


def test_dense_prefilter_keeps_exact_top_results(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """Past PREFILTER_MIN vectors the projected prefilter answers like an exact scan (recall@10)."""
    import numpy as np
    from store_helpers import view_of

    from aide_tui.core.model import Chunk
    from aide_tui.core.store import view as view_mod

    rng = np.random.default_rng(7)
    n, dim = 6000, 128
    centers = rng.normal(size=(40, dim)).astype(np.float32)
    vecs = centers[rng.integers(0, 40, n)] + 0.6 * rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(f"f{i}.py", 1, 1, "python", None, "", "x") for i in range(n)]
    ix = view_of(tmp_path, chunks, vecs)

    def ranked(q: np.ndarray, prefilter_min: int) -> list[int]:
        monkeypatch.setattr(view_mod, "PREFILTER_MIN", prefilter_min)
        monkeypatch.setattr(view_mod, "PREFILTER_CANDIDATES", 300)
        return ix.dense_ranked_chunks(q, 10)

    recall = []
    for _ in range(20):
        q = vecs[rng.integers(0, n)] + 0.3 * rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        exact, fast = ranked(q, 10**9), ranked(q, 1000)
        recall.append(len(set(exact) & set(fast)) / len(exact))
    assert np.mean(recall) >= 0.95


def _params_module() -> str:
    """A class whose methods pack into two chunks; ``keys`` (no docstring, as in the public eval's
    nl2code corpora) lands in the second chunk, its documented siblings in the first."""
    docs = [
        ("items", "Return all the (key, value) pairs."),
        ("values", "Return all the values, in the order of the keys."),
        ("get", "Return the first value of a key, or the default."),
        ("get_list", "Return every value of a key as a list."),
        ("set", "Return a new instance with one key set to a value."),
        ("add", "Return a new instance with a value appended to a key."),
        ("remove", "Return a new instance without a key."),
        ("merge", "Return a new instance with the entries of both."),
        ("copy", "Return a copy of the multi-dict."),
        ("size", "Return the number of distinct entries."),
    ]
    methods = [
        f'    def {name}(self, *args):\n        """{doc}"""\n'
        f'        result = self._apply("{name}", self._dict, args)\n'
        f'        self._log("{name}", len(result), self._dict, args)\n        return result\n'
        for name, doc in docs
    ]
    methods.append("    def keys(self):\n        return list(self._dict)\n")
    head = 'class Params:\n    """A multi-dict of query parameters."""\n\n    def __init__(self, items):\n'
    return head + "        self._dict = dict(items)\n\n" + "\n".join(methods)


def test_the_method_a_prose_query_names_comes_first_and_its_best_line_is_its_def(tmp_path: Path) -> None:
    """The name field (BM25F-like) lifts the chunk defining ``keys`` over the documented siblings that
    mention keys; the hit's best line follows its best BM25 piece, the ``keys`` method itself."""
    from aide_tui.core.search.hitlines import hit_best_line

    text = _params_module()
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/params.py").write_text(text)
    (root / "pkg/other.py").write_text("def unrelated():\n    return 1\n")
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    def_line = text.split("\n").index("    def keys(self):") + 1
    top = s.search("Return all the keys of the params", mode="bm25").results[0]
    assert top.path == "pkg/params.py" and top.start_line <= def_line <= top.end_line
    assert top.best_piece == (def_line, def_line + 1)
    assert hit_best_line(top).line == def_line
    s.settings = load_settings(root, {"embedding": {"backend": "none"}, "search": {"name_weight": 0.0}})
    top = s.search("Return all the keys of the params", mode="bm25").results[0]
    assert not top.start_line <= def_line <= top.end_line  # without the name field the siblings win


def test_the_symbol_list_reads_defined_names_without_decompressing_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name defined in 40 files: the symbol list checks each definition's exact case from the chunks'
    metadata, so a search decompresses the texts of the hits it shows, not of every definition."""
    files = {f"pkg{i}/setup.py": f"def configure(options):\n    return options + {i}\n" for i in range(40)}
    root = indexed_bm25(tmp_path / "ws", files)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    read = texts_read(monkeypatch)
    hits = Searcher(root, settings).search("configure", limit=5, mode="bm25").results
    assert len(hits) == 5 and all(h.symbol == "def configure" for h in hits)
    assert len(read) <= 5, len(read)
