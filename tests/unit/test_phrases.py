"""A "double-quoted" span is looked for among the chunks that hold its words as index terms, then
verbatim: whole words, the last one as the start of a word. Every test indexes real files on disk and
asserts what the search returns, after edits too (live rows only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25, texts_read

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.tokens import span_terms

FILES = {
    "pkg/poolers.py": """
        def close_all(conn):
            # the connection poolers are closed here, one at a time
            return conn.close()
    """,
    "pkg/drain.py": """
        def drain(conn):
            # the connection pool is drained before the worker stops
            return conn.drain()
    """,
    "pkg/stamp.py": """
        def touch(entry):
            # update timestamp of the entry when it is read
            entry.stamp = now()
    """,
    "pkg/types.py": """
        def negotiate(response):
            # set the content types a response may carry
            return response.accept
    """,
    "pkg/views.py": """
        def whoami(self):
            owner = self.request.user
            return owner.name
    """,
    "pkg/proxy.py": """
        def pick(proxies, url):
            # choose among the configured proxies by the url's scheme
            return proxies.get(url.scheme)
    """,
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return indexed_bm25(tmp_path / "ws", FILES)


def _phrase_hits(root: Path, query: str) -> set[str]:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    hits = Searcher(root, settings).search(query, limit=20, mode="bm25").results
    return {h.path for h in hits if h.ranks.get("phrase")}


@pytest.mark.parametrize(
    ("query", "paths"),
    [
        ('"connection pool"', {"pkg/drain.py", "pkg/poolers.py"}),  # the last word may go on
        ('"content type" of a response', {"pkg/types.py"}),  # types is indexed typ
        ('"request.user"', {"pkg/views.py"}),  # part of self.request.user
        ('"configured proxies"', {"pkg/proxy.py"}),  # proxies is indexed proxy
        ('"configured prox"', {"pkg/proxy.py"}),  # typed halfway
        ('"date time" of the entry', set()),  # not inside "update timestamp": whole words
        ('"poolers are closed" "connection"', {"pkg/poolers.py"}),  # every span, any order
    ],
)
def test_a_quoted_span_finds_the_chunks_holding_it_with_whole_words(
    root: Path, query: str, paths: set[str]
) -> None:
    assert _phrase_hits(root, query) == paths


def test_an_edit_takes_a_span_away_from_one_file_and_gives_it_to_another(root: Path) -> None:
    (root / "pkg/drain.py").write_text("def drain(conn):\n    return conn.flush()\n")
    (root / "pkg/reuse.py").write_text(
        "def reuse(conn):\n    # put it back in the connection pool\n    return conn\n"
    )
    Indexer(root, load_settings(root, {"embedding": {"backend": "none"}})).run()
    assert _phrase_hits(root, '"connection pool"') == {"pkg/poolers.py", "pkg/reuse.py"}


def test_a_filter_keeps_its_rows_out(root: Path) -> None:
    assert _phrase_hits(root, '"connection pool" path:pkg/drain.py') == {"pkg/drain.py"}


@pytest.mark.parametrize(
    ("span", "all_of", "prefix"),
    [
        ("connection pool", ["connection"], "pool"),
        ("request.user", ["request"], "user"),
        ("is not none", [], "none"),  # stopwords are no terms
        ("file not found", ["file"], "found"),
        ("x", [], ""),  # one letter: nothing to narrow by (every chunk with a query word is read)
    ],
)
def test_the_terms_a_span_asks_for(span: str, all_of: list[str], prefix: str) -> None:
    got_all, any_of, got_prefix = span_terms(span)
    assert (got_all, got_prefix) == (all_of, prefix)
    assert not prefix or prefix in any_of  # the last word whole is one of its forms


def test_every_span_narrows_the_chunks_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two quoted spans: the chunks read verbatim are those holding both spans' words, the second's
    last word as the start of a word too (30 files hold "connection pool", one "drain" beside it)."""
    files = {f"pkg/m{i}.py": f"def f{i}(conn):\n    # the connection pool of worker {i}\n    return conn\n"
             for i in range(30)}  # fmt: skip
    files["pkg/drain.py"] = "def drain(conn):\n    # drain the connection pool first\n    return conn\n"
    root = indexed_bm25(tmp_path / "ws", files)
    read = texts_read(monkeypatch)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    hits = Searcher(root, settings).search('"connection pool" "drain"', limit=1, mode="bm25").results
    assert [h.path for h in hits] == ["pkg/drain.py"] and hits[0].ranks.get("phrase") == 1
    assert len(read) == 1, len(read)  # the one chunk holding both spans' words (then the hit shown)


ENV_FILES = {
    # the words of FORCE_COLOR and TERM are everywhere; the variables are read in one place each
    "pkg/style.py": """
        def force_color(style, color):
            '''Force the color of a style: the color wins over the terminal's color.'''
            return style.with_color(color, force=True)


        def term_width(term):
            '''The width of a term in a glossary.'''
            return len(term)
    """,
    "pkg/palette.py": """
        COLORS = ["red", "green"]


        def color_term(color, term):
            '''A term for a color; force lower case.'''
            return f"{term}:{color}".lower()
    """,
    "pkg/terminal.py": """
        import os


        def color_system():
            if os.environ.get("FORCE_COLOR"):
                return "truecolor"
            return "standard" if os.environ.get("TERM") else None
    """,
}


def test_an_environment_variable_finds_where_it_is_read(tmp_path: Path) -> None:
    root = indexed_bm25(tmp_path / "ws", ENV_FILES)
    searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    for query in ("FORCE_COLOR", "FORCE_COLOR environment variable", "TERM environment variable", "TERM env"):
        hit = searcher.search(query, limit=3, mode="bm25").results[0]
        assert (hit.path, hit.ranks.get("phrase")) == ("pkg/terminal.py", 1), query
    # lower case is a word, not the variable, and a lone acronym is how prose spells a lower-case name
    for plain in ("term", "TERM"):
        assert not any(h.ranks.get("phrase") for h in searcher.search(plain, mode="bm25").results), plain
