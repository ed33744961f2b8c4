"""The Textual app on the real sample workspace: search, preview, indexing, watching, degraded embedders."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from apphelpers import indexed, make_app, search, wait_for
from loopback_server import LoopbackServer
from textual.widgets import Input
from textual.worker import WorkerState

from aide_tui.core.config import load_settings
from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import HelpScreen, PreviewBody, ResultsList


async def test_typing_a_query_lists_the_defining_file_first(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.focused, Input)
        await indexed(pilot, app)
        await pilot.press(*"parse_header")
        await wait_for(pilot, lambda: app.results_query == "parse_header" and bool(app.results.hits))
        assert app.query_input.value == "parse_header"
        assert app.results.hits[0].path == "src/httpclient/headers.py"
        assert app.results.option_count == len(app.results.hits)


def _marked_lines(app: AideApp) -> list[int]:
    """Line numbers the preview marks as part of the hit (gutter marker ▌)."""
    data = app.preview.shown
    assert data is not None
    out = []
    for line in data.body.plain.splitlines():
        number, _, rest = line.strip().partition(" ")
        if rest.startswith("▌"):
            out.append(int(number))
    return out


async def test_moving_the_selection_updates_the_preview(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "redirects")
        hits = app.results.hits
        assert len(hits) >= 2
        for index in (0, 1):
            if index:
                await pilot.press("down")
            hit = hits[index]
            assert app.results.selected_hit is hit
            await wait_for(
                pilot, lambda h=hit: app.preview.shown is not None and app.preview.shown.path == h.path
            )
            shown = app.preview.shown
            assert shown is not None
            assert (shown.start_line, shown.end_line) == (hit.start_line, hit.end_line)
            assert _marked_lines(app) == list(range(hit.start_line, hit.end_line + 1))
            assert hit.path in shown.title.plain


async def test_progress_bar_completes_during_a_cold_index(workspace: Path) -> None:
    assert not (workspace / ".aide").exists()
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        bar = app.index_bar.bar
        assert bar.total and bar.progress == bar.total
        assert app.index_bar.state == "ready"
        assert "5 files" in app.status.plain


async def test_an_edited_file_becomes_findable_while_running(workspace: Path) -> None:
    app = make_app(workspace, watch=True)
    target = workspace / "src/httpclient/retry.py"
    original = target.read_text()
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "jitter_quantum")
        assert app.results.hits == []

        def found() -> bool:
            return any(h.path == "src/httpclient/retry.py" for h in app.results.hits)

        for attempt in range(4):  # rewrite if the watcher was not yet registered when the file changed
            target.write_text(original + f"\n\ndef jitter_quantum(n):\n    return n * {attempt + 2}\n")
            try:
                await wait_for(pilot, found, "the edited function in the results", steps=200)
                break
            except AssertionError:
                continue
        assert found()
        assert app.results.hits[0].path == "src/httpclient/retry.py"


async def test_a_dead_embedder_shows_degraded_and_search_still_answers(workspace: Path) -> None:
    with LoopbackServer(dim=8) as srv:
        url = srv.url
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": url, "timeout": 2.0}})
    app = make_app(workspace, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        assert app.results.hits[0].path == "src/httpclient/headers.py"
        await wait_for(pilot, lambda: "degraded" in app.status.plain, "degraded in the status line")
        assert app.status_info.degraded_reason


async def test_typing_stays_live_while_the_embedding_server_hangs(workspace: Path) -> None:
    with LoopbackServer(dim=8) as srv:
        settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": srv.url}})
        app = make_app(workspace, settings)
        async with app.run_test(size=(120, 40)) as pilot:
            await indexed(pilot, app)
            await wait_for(pilot, lambda: app.embedder_ready, "the embedder")
            srv.set_mode("hang")
            sent = len(srv.requests)
            await pilot.press(*"send")
            await wait_for(pilot, lambda: len(srv.requests) > sent, "the search to reach the server")

            def blocked() -> bool:
                return any(w.group == "search" and w.state == WorkerState.RUNNING for w in app.workers)

            assert blocked()
            await pilot.press("s")
            assert app.query_input.value == "sends"  # the UI took the key while the search is stuck
            assert blocked() and app.results_query != "sends"
            srv.set_mode("normal")
            srv.release()
            await wait_for(pilot, lambda: app.results_query == "sends", "results after the release")
            assert not (app.last_response and app.last_response.degraded)


async def test_keys(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results = app.main_screen.query_one(ResultsList)
        assert len(results.hits) >= 3

        # Selection moves from the query box.
        assert results.highlighted == 0
        await pilot.press("ctrl+n")
        assert results.highlighted == 1
        await pilot.press("ctrl+j")
        assert results.highlighted == 2
        await pilot.press("ctrl+k")
        assert results.highlighted == 1
        await pilot.press("up")
        assert results.highlighted == 0
        assert isinstance(app.focused, Input) and app.query_input.value == "return"

        # enter → preview; escape → query; / from the list → query.
        await pilot.press("enter")
        assert isinstance(app.focused, PreviewBody)
        await pilot.press("escape")
        assert isinstance(app.focused, Input)
        results.focus()
        await pilot.pause()
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        assert app.query_input.value == "return"

        # m cycles the mode (shown in the status line); typed into the query it is just text.
        await pilot.press("enter")
        assert app.mode == "hybrid"
        await pilot.press("m")
        assert app.mode == "bm25" and app.status.plain.lstrip().startswith("bm25")
        await pilot.press("m")
        assert app.mode == "dense"
        await pilot.press("m")
        assert app.mode == "hybrid"

        # y copies path:line of the selection.
        await wait_for(pilot, lambda: app.results_query == "return")
        hit = results.selected_hit
        assert hit is not None
        await pilot.press("y")
        assert app.clipboard == f"{hit.path}:{hit.start_line}"

        # ? opens the help listing the keys; escape closes it.
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        assert isinstance(app.screen, HelpScreen)
        help_text = app.screen.plain
        for key in ("ctrl+n", "ctrl+k", "enter", "escape", "ctrl+p", "$EDITOR", "copy", "hybrid", "rebuild"):
            assert key in help_text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), "the help to close")

        # In the query box, the letter keys are text.
        await pilot.press("escape", "m", "q")
        assert app.query_input.value == "returnmq" and app.mode == "hybrid"


async def test_command_palette_offers_the_actions(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Search mode: cycle",
            "Reindex now",
            "Rebuild index",
            "Open in editor",
            "Copy location",
        ):
            assert title in titles
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: app.screen is not app.main_screen, "the command palette")
        await pilot.press("escape")


async def test_e_opens_the_editor_at_the_hit_line(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setenv("EDITOR", "myedit --wait")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setattr("aide_tui.tui.app.subprocess.run", lambda cmd, check: calls.append(cmd))
    app = make_app(workspace)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # headless drivers cannot suspend
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "backoff_delays")
        hit = app.results.selected_hit
        assert hit is not None
        await pilot.press("enter", "e")
        assert calls == [["myedit", "--wait", f"+{hit.start_line}", str(workspace / hit.path)]]
