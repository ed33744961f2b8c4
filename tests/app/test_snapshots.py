"""Snapshots of what is on screen (pytest-textual-snapshot); update with ``pytest --snapshot-update``.

They show the rows (ranks, score, symbol; at 120 and 80 columns with and without the preview), the
preview landed on the hit's best line with the query terms marked, the help at 120×40 and 40×12, the
layout without the preview and the degraded status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from apphelpers import preview, query_box, results, shown_query, status, wait_for
from snapshot_app import build
from textual.pilot import Pilot

from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import HelpScreen


def _with_results(app: AideApp, query: str, *keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.main_screen.ready, "startup")
        query_box(app).cursor_blink = False  # a blinking cursor would make the picture flaky
        await pilot.press(*query)
        await wait_for(pilot, lambda: shown_query(app) == query and bool(results(app).hits), "results")
        if keys:
            await pilot.press(*keys)
        await wait_for(
            pilot,
            lambda: (
                preview(app).shown is not None
                and results(app).selected_hit is not None
                and preview(app).shown.path == results(app).selected_hit.path
                and preview(app).shown.start_line == results(app).selected_hit.start_line
            ),
            "the preview",
        )
        await wait_for(pilot, lambda: results(app).labelled, "the rows labelled")
        await pilot.pause(0.2)

    return run_before


def test_results_and_preview_wide(snap_compare: Any) -> None:
    """120×40: rows with ranks, score and symbol beside the preview landed on the best line."""
    app = build()
    assert snap_compare(
        app, terminal_size=(120, 40), run_before=_with_results(app, "follow redirects", "down")
    )


def test_narrow_layout(snap_compare: Any) -> None:
    """80×24: the preview moves below the list."""
    app = build()
    assert snap_compare(app, terminal_size=(80, 24), run_before=_with_results(app, "parse_header"))


def test_preview_hidden(snap_compare: Any) -> None:
    """F3: the list takes the full width."""
    app = build()
    run = _with_results(app, "backoff")

    async def run_before(pilot: Pilot[Any]) -> None:
        await run(pilot)
        await pilot.press("f3")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(100, 20), run_before=run_before)


@pytest.mark.parametrize(
    ("size", "with_preview"),
    [((120, 40), True), ((120, 40), False), ((80, 24), True), ((80, 24), False)],
    ids=["120-preview", "120-no-preview", "80-preview", "80-no-preview"],
)
def test_rows(snap_compare: Any, size: tuple[int, int], with_preview: bool) -> None:
    """Issue 23 #3: rows give the symbol the room there is (the whole qualified name when it fits, else
    cut from the left after the directories gave way), with and without the preview."""
    app = build("rows")
    run = _with_results(app, "keepalive connections")

    async def run_before(pilot: Pilot[Any]) -> None:
        await run(pilot)
        if not with_preview:
            await pilot.press("f3")
            await wait_for(pilot, lambda: app.main_screen.has_class("-no-preview"), "the list alone")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def _help(app: AideApp) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.main_screen.ready, "startup")
        query_box(app).cursor_blink = False
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        await pilot.pause(0.2)

    return run_before


def test_help_wide(snap_compare: Any) -> None:
    """F1 at 120×40: every key on screen."""
    app = build()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_help(app))


def test_help_small(snap_compare: Any) -> None:
    """F1 at 40×12: the help fills the terminal and scrolls."""
    app = build()
    assert snap_compare(app, terminal_size=(40, 12), run_before=_help(app))


def test_degraded_status(snap_compare: Any) -> None:
    """A dead embedding server: degraded and its reason in the status line, BM25 results still shown."""
    app = build("degraded")

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: status(app).embedder_error is not None, "the embedder probe to fail")
        await _with_results(app, "backoff")(pilot)
        await wait_for(pilot, lambda: "degraded" in status(app).plain, "degraded status")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
