"""A pasted error line ("ValueError: ...") finds where it is raised: the message is looked for verbatim
among the keyword lists' chunks, a value the program filled in breaking only the words around it.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.query import error_message
from aide_tui.core.search.searcher import Searcher

FILES = {
    "pkg/align.py": """
        def align(frame, spindle, log, retries=3):
            log.debug("aligning %s", spindle.name)
            for attempt in range(retries):
                frame.reset()
                offset = frame.measure() - spindle.measure()
                if abs(offset) < frame.tolerance:
                    break
                log.info("attempt %d: offset %.3f", attempt, offset)
                frame.shift(-offset)
            else:
                raise ValueError("the spindle could not be aligned with the frame")
            if spindle.name in frame.taken:
                raise ValueError(f"spindle {spindle.name} is already mounted on this frame")
            log.debug("mounting %s", spindle.name)
            return frame.mount(spindle)
    """,
    # the message's words, many times over in a short chunk: what BM25 alone puts first
    "pkg/checks.py": """
        def spindle_fits(spindle, frame):
            # Could the spindle be aligned with the frame? The frame could align a spindle, a
            # spindle could align with a frame; a ValueError says the spindle could not.
            try:
                return frame.aligned(spindle) and spindle.aligned(frame)
            except ValueError:
                return False
    """,
    "pkg/cache.py": """
        import logging

        log = logging.getLogger(__name__)


        def refresh(cache, spindles):
            if cache.stale():
                log.warning("the spindle cache is stale, rebuilding it now")
                cache.rebuild(spindles)
            return cache
    """,
    # dates and times, the digits a pasted log line starts with
    "pkg/schedule.py": """
        WINDOWS = [
            ("2024-05-01", "12:00:03", 123), ("2024-05-01", "12:00:05", 125),
            ("2024-05-02", "12:00:03", 123), ("2024-05-03", "12:01:03", 123),
        ]


        def next_window(now):
            return min(w for w in WINDOWS if w > now)
    """,
    "docs/spindles.md": """
        # Spindles and frames

        A spindle must be aligned with the frame before it is mounted on the frame. A spindle that
        could not be aligned is refused: align the spindle with the frame, then mount the spindle.
    """,
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return indexed_bm25(tmp_path / "ws", FILES)


def _first(root: Path, query: str, **search: object) -> tuple[str, int, dict[str, int | None]]:
    settings = load_settings(root, {"embedding": {"backend": "none"}, "search": search})
    hit = Searcher(root, settings).search(query, limit=5, mode="bm25").results[0]
    return hit.path, hit.start_line, hit.ranks


def test_the_raising_line_comes_first_and_keyword_ranking_alone_does_not_put_it_there(root: Path) -> None:
    query = "ValueError: the spindle could not be aligned with the frame"
    path, _, ranks = _first(root, query)
    assert path == "pkg/align.py" and ranks.get("message") == 1
    assert _first(root, query, message_weight=0)[0] != "pkg/align.py"  # the lever is what moves it


def test_the_row_and_the_preview_say_the_hit_holds_the_error_message(root: Path) -> None:
    from aide_tui.tui.widgets.preview import why
    from aide_tui.tui.widgets.results import rank_tags

    settings = load_settings(root, {"embedding": {"backend": "none"}})
    searcher = Searcher(root, settings)
    query = "ValueError: the spindle could not be aligned with the frame"
    hit = searcher.search(query, mode="bm25").results[0]
    assert hit.path == "pkg/align.py" and "error message #1" in why(hit) and "M1" in rank_tags(hit).split()
    prose = searcher.search("the spindle could not be aligned with the frame", mode="bm25").results
    assert prose and not any("error message" in why(h) for h in prose)  # not an error line: no such list


def test_a_message_with_a_value_filled_in_still_finds_its_format_string(root: Path) -> None:
    path, _, ranks = _first(root, "ValueError: spindle left_7 is already mounted on this frame")
    assert path == "pkg/align.py" and ranks.get("message") == 1


def test_a_pasted_log_line_finds_its_log_call_whatever_its_date(root: Path) -> None:
    for line in (
        "2024-05-01 12:00:03,123 WARNING the spindle cache is stale, rebuilding it now",
        "WARNING:pkg.cache:the spindle cache is stale, rebuilding it now",
        "[WARNING] the spindle cache is stale, rebuilding it now",
    ):
        path, _, ranks = _first(root, line)
        assert path == "pkg/cache.py" and ranks.get("message") == 1, line
        assert ranks.get("bm25") == 1, line  # the date's digits are not looked for (schedule.py has them)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ValueError: the spindle could not be aligned", "the spindle could not be aligned"),
        (
            "django.core.exceptions.ValidationError: Enter a valid email address.",
            "Enter a valid email address.",
        ),
        ("TypeError: x.map is not a function", "x.map is not a function"),
        ("UserWarning: this will go away soon", "this will go away soon"),
        ("Error: Cannot find module './config'", "Cannot find module './config'"),  # throw new Error
        ("Uncaught TypeError: Cannot read properties of undefined", "Cannot read properties of undefined"),
        ('Exception in thread "main" java.lang.IllegalStateException: queue is full', "queue is full"),
        ("WARNING:django.request:Not Found: /favicon.ico", "Not Found: /favicon.ico"),
        ("2024-05-01T12:00:03Z ERROR cannot reach the database", "cannot reach the database"),
        ("[INFO] starting the scheduler loop", "starting the scheduler loop"),
        ("error[E0425]: cannot find value `x` in this scope", "cannot find value `x` in this scope"),
        ("fatal: not a git repository", "not a git repository"),
        ("error handling in the parser", None),  # prose: a lower-case level needs its colon
        ("ValueError: bad value", None),  # two words: what BM25 and the symbol list are for
        ("fix: remove dead code", None),  # a commit subject, not an error
        ("Error handling: how are retries done", None),  # prose that merely starts with a word
    ],
)
def test_which_queries_read_as_an_error_line(text: str, message: str | None) -> None:
    assert error_message(text) == message
