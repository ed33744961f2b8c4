"""Helpers for the app tests: bounded waits driven by pilot pauses (no wall-clock assertions)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from aide_tui.core.config import Settings, load_settings
from aide_tui.tui.app import AideApp

STEP = 0.05


async def wait_for(
    pilot: Pilot[Any], cond: Callable[[], bool], what: str = "condition", steps: int = 600
) -> None:
    """Pause until ``cond()`` holds, at most ``steps`` pauses (a hang fails instead of blocking)."""
    for _ in range(steps):
        if cond():
            return
        await pilot.pause(STEP)
    raise AssertionError(f"timed out waiting for {what}")


def bm25_settings(root: Path) -> Settings:
    """Fast settings: no embedder, BM25/symbol/path lists only."""
    return load_settings(root, {"embedding": {"backend": "none"}})


def make_app(root: Path, settings: Settings | None = None, **kwargs: Any) -> AideApp:
    """An app on ``root`` with BM25-only settings unless given, no watcher unless asked."""
    kwargs.setdefault("watch", False)
    return AideApp(root, settings or bm25_settings(root), **kwargs)


async def indexed(pilot: Pilot[Any], app: AideApp, runs: int = 1) -> None:
    """Wait until ``runs`` indexing runs have finished and their results were applied."""
    await wait_for(pilot, lambda: app.index_runs_done >= runs, f"{runs} index run(s)")


async def search(pilot: Pilot[Any], app: AideApp, query: str) -> None:
    """Replace the query by typing ``query`` and wait until its results are painted."""
    app.action_focus_query()
    app.query_input.value = ""
    await pilot.press(*query)
    await wait_for(pilot, lambda: app.results_query == query, f"results for {query!r}")
