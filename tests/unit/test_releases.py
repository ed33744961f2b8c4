"""A release number asked for (``what changed in 2.3.1``) finds the section of the release notes that
heads it: looked for as a whole number (not ``2.3.10``, not ``0.13.0.dev2``, not a compare link), in
the release-notes files whatever other words the query has, the heading first. Real files, indexed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.releases import asked_versions, heading_pattern, release_note_files
from aide_tui.core.search.searcher import Searcher


def _section(heading: str, topic: str) -> str:
    items = "\n".join(f"- {topic} item {i}: adjusted the {topic} handling for case {i}." for i in range(14))
    return f"{heading}\n\n### Fixed\n\n{items}\n"


CHANGELOG = "\n".join(
    [
        "# Changelog\n",
        _section("## [2.3.10] - 2024-05-01", "cookie"),
        _section("## [2.3.1] - 2024-02-01", "redirect"),
        _section("## [2.3.0] - 2024-01-01", "timeout"),
        _section("## 1.0.0 (first stable)", "parser"),
        _section("## 0.13.0.dev2 (a pre-release)", "encoding"),
        _section("## 0.13.0 (May 2020)", "stream"),
        "[2.3.10]: https://example.org/compare/v2.3.1...v2.3.10",
        "[2.3.1]: https://example.org/compare/v2.3.0...v2.3.1",
        "[2.3.0]: https://example.org/compare/v1.0.0...v2.3.0",
    ]
)
FILES = {
    "CHANGELOG.md": CHANGELOG,
    "pkg/client.py": """
        RETRY_FACTOR = 2.3  # seconds between two attempts grow by this much

        def send(request, timeout=2.3):
            # what changed: the request is sent again after a redirect
            return request.follow(timeout)
    """,
    "pkg/version.py": """
        __version__ = "7.12.3"
        LEGACY_VERSION = "7.2.3"
        PROTOCOL = "v7.40.1"
    """,
    "pkg/notes.py": """
        def release_notes(version):
            # the notes of a version, read from the changelog
            return open("CHANGELOG.md").read()
    """,
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_bm25(tmp_path_factory.mktemp("releases") / "ws", FILES)


def _first(root: Path, query: str) -> tuple[str, int, int]:
    """The first hit's path and lines."""
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    hits = Searcher(root, settings).search(query, limit=10, mode="bm25").results
    assert hits, query
    return hits[0].path, hits[0].start_line, hits[0].end_line


@pytest.mark.parametrize(
    ("query", "heading"),
    [
        ("what changed in 2.3.1", "## [2.3.1] - 2024-02-01"),
        ("2.3.0", "## [2.3.0] - 2024-01-01"),  # not 2.3.10's section, not the compare links
        ("changelog 0.13.0", "## 0.13.0 (May 2020)"),  # not the pre-release 0.13.0.dev2
        ("release notes for version 1.0.0", "## 1.0.0 (first stable)"),  # digits alone: no term at all
        ("changes in v2.3.10", "## [2.3.10] - 2024-05-01"),
    ],
)
def test_a_release_number_finds_the_section_that_heads_it(root: Path, query: str, heading: str) -> None:
    """The first hit is the chunk holding the heading (small sections share a chunk, as in rich's
    changelog: the first holds 2.3.10 and 2.3.1, the next 2.3.0 and 1.0.0)."""
    line = CHANGELOG.splitlines().index(heading) + 1
    path, start, end = _first(root, query)
    assert path == "CHANGELOG.md" and start <= line <= end, (query, path, start, end, line)


def test_the_numbers_a_query_asks_for() -> None:
    assert asked_versions("what changed in 0.18.0") == ["0.18.0"]
    assert asked_versions("v2.3") == ["2.3"]  # a v says so
    assert asked_versions("changelog 8.1") == ["8.1"]  # and so does a release word
    assert asked_versions("timeout 0.5") == []  # x.y alone is a number, not a release
    assert asked_versions("release 0.13.0.dev2") == ["0.13.0.dev2"]
    assert asked_versions("the client retries 3 times since 2.3.1 when a proxy is set") == []  # in passing


def test_release_note_files_by_name(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    searcher = Searcher(root, settings)
    searcher.refresh()
    assert release_note_files(searcher.retriever.path_parts) == ["CHANGELOG.md"]


@pytest.mark.parametrize(
    ("text", "number", "heads"),
    [
        ("## [7.8.1](https://github.com/o/r/compare/7.8.0...7.8.1) (2023-04-26)", "7.8.1", True),
        ("## [7.8.1](https://github.com/o/r/compare/7.8.0...7.8.1) (2023-04-26)", "7.8.0", False),  # a link
        ("Twisted 24.10.0 (2024-10-28)\n============================\n", "24.10.0", True),  # underlined
        ("v2.17.6\n=======\n", "2.17.6", True),
        ("Version 8.1.7\n-------------\n", "8.1.7", True),
        ("[2.3.1]: https://example.org/compare/v2.3.0...v2.3.1", "2.3.1", False),  # a link reference
        ("- fixed the 2.3.1 regression in the parser", "2.3.1", False),  # a mention, not a heading
        ("## 0.13.0.dev2 (May 12th, 2020)", "0.13.0", False),  # another release
    ],
)
def test_what_heads_a_releases_notes(text: str, number: str, heads: bool) -> None:
    assert bool(heading_pattern(number).search(text)) == heads


def test_a_release_no_chunk_holds_is_said_so(root: Path) -> None:
    """A release number no chunk holds answers low, the first hint naming it (the hits only share the
    question's other words: "changed" is in pkg/client.py). Not one the code holds anywhere (a
    version string in the source, outside any release notes), as written or as the start of a longer
    number (``2.3`` of ``2.3.1``), nor one whose absence cannot be told: a number of single digits
    only has no term to find its chunks by (``4.5.6``)."""
    searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    for query, number in (("what changed in 4.50.6", "4.50.6"), ("changelog v4.50", "4.50"),
                          ("what changed in 0.14.0.dev3", "0.14.0.dev3")):  # fmt: skip
        resp = searcher.search(query, limit=10, mode="bm25")
        assert resp.results and resp.confidence == "low", query
        assert resp.hints[0]["kind"] == "absent" and resp.hints[0]["name"] == number, (query, resp.hints)
    for query in ("what changed in 2.3.1", "changes in v2.3.10", "release 0.13.0.dev2", "what changed",
                  "changelog v2.3", "what changed in 0.13.0.dev3",  # 0.13.0 is held
                  "what changed in 7.12.3", "what changed in 7.2.3",  # pkg/version.py, not the notes
                  "what changed in 4.5.6", "release 7.40",  # v7.40.1
                  "what changed in 4.50.6 path:pkg"):  # a filtered search reads part of the code  # fmt: skip
        resp = searcher.search(query, limit=10, mode="bm25")
        assert all(h["kind"] != "absent" for h in resp.hints), (query, resp.hints)
    assert searcher.search("what changed in 4.50.6", mode="bm25", hints=False).hints == []
