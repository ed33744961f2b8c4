"""A misspelt name finds what the right spelling finds; plain words and the word being typed stay as typed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.search.spelling import corrected

FILES = {
    "pkg/models.py": '''
        class Headers:
            """A case-insensitive multi-dict of header fields."""

            def get_list(self, key):
                return [v for k, v in self._list if k == key]
    ''',
    "pkg/response.py": '''
        class Response:
            def raise_for_status(self):
                """Raise when the status code is an error."""
                if self.status_code >= 400:
                    raise RuntimeError(self.status_code)
    ''',
    "pkg/transport.py": '''
        class HTTPTransport:
            """Sends requests over a connection pool; redirects are followed by the client."""

            def handle_request(self, request):
                return self.pool.send(request)
    ''',
    "pkg/theme.py": '''
        class Theme:
            """Colours for the terminal: a theme maps style names to styles."""
    ''',
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    root = Path(indexed_bm25(tmp_path_factory.mktemp("spell") / "ws", FILES))
    return Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))


@pytest.mark.parametrize(
    ("query", "fixed", "found"),
    [
        ("Hedaers", "Headers", "class Headers"),
        ("raise_for_sttaus", "raise_for_status", "class Response"),
        ("HTTPTrasnport", "HTTPTransport", "class HTTPTransport"),
        ("Headers.get_lsit", None, "class Headers > def get_list"),  # "lsit": too short to guess
        ("Response.raise_for_stauts", "Response.raise_for_status", "class Response"),
    ],
)
def test_a_misspelt_name_finds_its_definition(searcher: Searcher, query: str, fixed: str, found: str) -> None:
    resp = searcher.search(query, limit=3, mode="bm25")
    assert resp.corrected == fixed
    if fixed is not None:
        assert resp.results[0].symbol == found
        assert resp.to_json()["corrected"] == fixed


def test_known_words_plain_words_and_the_word_being_typed_stay_as_typed(searcher: Searcher) -> None:
    stats = searcher.retriever.term_stats
    assert corrected("Headers", stats) is None  # known
    assert corrected("theme", stats) is None  # known, though its stem ("them") is a stopword, never indexed
    # a plain word among others may be one the code does not use: "tweaks" is not "weaks"
    assert corrected("small tweaks to sending requets", stats) is None
    assert corrected("requets", stats) == "request"  # alone, it is the whole query (a swap: "reque-ts")
    assert corrected("HTTPTrasnport Headers.get", stats, typing=True) == "HTTPTransport Headers.get"
    assert corrected("Headers.get HTTPTrasnp", stats, typing=True) is None  # still being typed
    resp = searcher.search("Hedaers", limit=3, mode="bm25")
    assert "corrected" not in searcher.search("Headers", limit=3, mode="bm25").to_json()
    assert resp.results and "corrected" in resp.to_json()


def test_as_you_type_the_last_word_is_fixed_only_once_nothing_begins_with_it(searcher: Searcher) -> None:
    assert searcher.search("HTTPTra", limit=3, mode="bm25", prefix=True).corrected is None  # completes
    typo = searcher.search("HTTPTrasnport", limit=3, mode="bm25", prefix=True)
    assert typo.corrected == "HTTPTransport" and typo.results[0].symbol == "class HTTPTransport"
