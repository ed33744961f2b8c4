"""Helpers for the app tests: the main screen's widgets (reached through the DOM, as a user sees them),
bounded waits driven by pilot pauses (no wall-clock assertions) and the screen as plain text."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from aide_tui.core.config import Settings, load_settings
from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import IndexBar, Preview, QueryInput, ResultsList, StatusLine

STEP = 0.05
HANG = 180.0  # seconds of waiting before a wait counts as a hang


async def wait_for(
    pilot: Pilot[Any], cond: Callable[[], bool], what: str = "condition", steps: int = 600
) -> None:
    """Pause until ``cond()`` holds; fail after at least ``steps`` pauses and ``HANG`` seconds (a hang
    fails instead of blocking, and a busy machine still gets the time its work needs)."""
    start = time.monotonic()
    done = 0
    while done < steps or time.monotonic() - start < HANG:
        if cond():
            return
        await pilot.pause(STEP)
        done += 1
    raise AssertionError(f"timed out waiting for {what}")


def bm25_settings(root: Path, **tui: Any) -> Settings:
    """Fast settings: no embedder, BM25/symbol/path lists only (``tui``: ``[tui]`` keys)."""
    flags: dict[str, dict[str, Any]] = {"embedding": {"backend": "none"}}
    if tui:
        flags["tui"] = tui
    return load_settings(root, flags)


def make_app(root: Path, settings: Settings | None = None, **kwargs: Any) -> AideApp:
    """An app on ``root`` with BM25-only settings unless given, no watcher unless asked."""
    kwargs.setdefault("watch", False)
    return AideApp(root, settings or bm25_settings(root), **kwargs)


def query_box(app: AideApp) -> QueryInput:
    return app.main_screen.query_one(QueryInput)


def results(app: AideApp) -> ResultsList:
    return app.main_screen.query_one(ResultsList)


def preview(app: AideApp) -> Preview:
    return app.main_screen.query_one(Preview)


def index_bar(app: AideApp) -> IndexBar:
    return app.main_screen.query_one(IndexBar)


def status(app: AideApp) -> StatusLine:
    return app.main_screen.query_one(StatusLine)


def previewing_selection(app: AideApp) -> bool:
    """The preview shows the selected row's hit (not a hit of a query typed on the way to this one)."""
    shown, hit = preview(app).shown, results(app).selected_hit
    return shown is not None and hit is not None and shown.hit == hit


def shown_query(app: AideApp) -> str | None:
    """The query whose results the list shows."""
    return results(app).shown_query


async def indexed(pilot: Pilot[Any], app: AideApp, runs: int = 1) -> None:
    """Wait until ``runs`` indexing runs have finished and their index versions were loaded."""
    await wait_for(pilot, lambda: app.is_mounted and index_bar(app).runs_done >= runs, f"{runs} index run(s)")


async def search(pilot: Pilot[Any], app: AideApp, query: str) -> None:
    """Replace the query by typing ``query`` and wait until its results are painted."""
    await pilot.press("escape")
    query_box(app).value = ""
    await pilot.press(*query)
    await wait_for(pilot, lambda: shown_query(app) == query, f"results for {query!r}")


def screen_text(app: App[Any]) -> list[str]:
    """What the terminal shows, one string per line."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True)
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(update)
    return console.export_text().splitlines()


# -- the app in tmux ------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def tmux(sock: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One tmux command on the private server ``sock``."""
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, timeout=30)


def indexed_in_a_private_home(tmp_path: Path, root: Path) -> str:
    """Index ``root`` (BM25) with configuration, cache and state under ``tmp_path``, as a user would
    from a shell; the ``env …`` prefix that starts the app in tmux with the same home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none"],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    kept = ("PYTHONPATH", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PATH", "HOME")
    return "env " + " ".join(f"{k}={v!r}" for k, v in env.items() if k in kept)
