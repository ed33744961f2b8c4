"""Issue 15 in the app: query history (XDG state, recall, ctrl+r, dedupe, cap, opt-out), remembered mode,
layout, query and theme, and the results written as vimgrep lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apphelpers import (
    bm25_settings,
    indexed,
    make_app,
    preview,
    query_box,
    results,
    search,
    shown_query,
    wait_for,
)

from aide_tui.core.appstate import AppState, add_to_history
from aide_tui.tui.screens.modals import HistoryScreen


@pytest.fixture
def _isolated_state(tmp_path: Path) -> Path:
    """The XDG state folder tests/conftest.py points the app at."""
    return tmp_path / "xdg-state"


async def _session(root: Path, queries: list[str], **tui: object) -> None:
    """Open the app, type each query and press enter (it joins the history), quit with ctrl+q."""
    app = make_app(root, bm25_settings(root, **tui))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        for q in queries:
            await search(pilot, app, q)
            await pilot.press("enter")
        await pilot.press("escape", "ctrl+q")


async def test_history_survives_a_restart_and_recalls_newest_first(
    workspace: Path, _isolated_state: Path
) -> None:
    await _session(workspace, ["parse_header", "backoff", "redirects"])
    assert not (workspace / ".aide" / "state.json").exists()
    assert list(_isolated_state.rglob("state.json"))  # in the XDG state folder, not the workspace
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        assert query_box(app).value == ""
        await pilot.press("up")
        assert query_box(app).value == "redirects"
        await pilot.press("up", "up")
        assert query_box(app).value == "parse_header"
        await pilot.press("up")  # the oldest stays
        assert query_box(app).value == "parse_header"
        await pilot.press("down")
        assert query_box(app).value == "backoff"
        await pilot.press("down", "down")
        assert query_box(app).value == ""
        # recalled queries search like typed ones
        await pilot.press("up")
        await wait_for(pilot, lambda: shown_query(app) == "redirects", "results of the recalled query")


async def test_history_skips_duplicates_and_is_capped(workspace: Path) -> None:
    await _session(workspace, ["alpha", "beta", "alpha", "gamma", "delta"], history_size=3)
    assert AppState(workspace).workspace.history == ["alpha", "gamma", "delta"]
    assert add_to_history(["a", "b"], "a") == ["b", "a"]


async def test_history_false_records_nothing(workspace: Path, _isolated_state: Path) -> None:
    await _session(workspace, ["parse_header secret_query_words"], history=False)
    for f in _isolated_state.rglob("*"):
        if f.is_file():
            assert "secret_query_words" not in f.read_text(errors="replace")
    assert AppState(workspace).workspace.history == []


async def test_ctrl_r_searches_the_history(workspace: Path) -> None:
    await _session(workspace, ["parse_header", "backoff_delays", "redirects"])
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), "the history list")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.shown == ["redirects", "backoff_delays", "parse_header"]
        await pilot.press(*"back")
        await pilot.pause()
        assert screen.shown == ["backoff_delays"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: shown_query(app) == "backoff_delays", "the picked query's results")


async def test_mode_layout_and_query_are_remembered(workspace: Path) -> None:
    settings = bm25_settings(workspace, remember_query=True)
    app = make_app(workspace, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        await pilot.press("f2", "f3", "ctrl+q")
    app = make_app(workspace, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        assert app.main_screen.mode == "dense"
        assert not app.main_screen.preview_visible and not preview(app).display
        assert query_box(app).value == "parse_header"


async def test_theme_is_remembered(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        app.theme = "nord"
        await pilot.pause(0.1)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)):
        assert app.theme == "nord"


async def test_results_are_written_as_vimgrep_lines(workspace: Path, _isolated_state: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "backoff")
        await pilot.press("f4")
        target = AppState(workspace).results_file()
        assert target.is_file() and target.is_relative_to(_isolated_state)
        text = target.read_text()
        assert app.clipboard == text
        lines = text.splitlines()
        assert len(lines) == len(results(app).hits)
        for line in lines:
            m = re.fullmatch(r"(.+?):(\d+):(\d+):(.*)", line)
            assert m, line
            path, number = Path(m[1]), int(m[2])
            assert path.is_absolute() and path.is_file()
            assert path.read_text().splitlines()[number - 1].strip() == m[4]
        assert "backoff" in lines[0].lower()
