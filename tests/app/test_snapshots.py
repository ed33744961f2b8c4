"""Snapshots of the main screen (pytest-textual-snapshot); update with ``pytest --snapshot-update``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from apphelpers import wait_for
from snapshot_app import build
from textual.pilot import Pilot

from aide_tui.tui.app import AideApp


def _with_results(app: AideApp, query: str, *keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.ready, "startup")
        await pilot.press(*query)
        await wait_for(pilot, lambda: app.results_query == query and bool(app.results.hits), "results")
        if keys:
            await pilot.press(*keys)
        await wait_for(
            pilot,
            lambda: (
                app.preview.shown is not None
                and app.results.selected_hit is not None
                and app.preview.shown.path == app.results.selected_hit.path
            ),
            "the preview",
        )
        await pilot.pause()

    return run_before


def test_results_and_preview_wide(snap_compare: Any) -> None:
    """120×40: list beside the preview, second hit selected."""
    app = build()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_with_results(app, "return", "down"))


def test_narrow_layout(snap_compare: Any) -> None:
    """80×24: the preview moves below the list."""
    app = build()
    assert snap_compare(app, terminal_size=(80, 24), run_before=_with_results(app, "parse_header"))


def test_degraded_status(snap_compare: Any) -> None:
    """A dead embedding server: degraded and its reason in the status line, BM25 results still shown."""
    app = build("degraded")

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.embedder_error is not None, "the embedder probe to fail")
        await _with_results(app, "backoff")(pilot)
        await wait_for(pilot, lambda: "degraded" in app.status.plain, "degraded status")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
