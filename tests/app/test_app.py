"""The Textual app on the real sample workspace: search, preview, indexing, watching, degraded embedders,
and one test per defect of issue 9 (each failed on the app before the rewrite)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from apphelpers import (
    bm25_settings,
    index_bar,
    indexed,
    make_app,
    preview,
    previewing_selection,
    query_box,
    results,
    screen_text,
    search,
    shown_query,
    status,
    wait_for,
)
from loopback_server import LoopbackServer

from aide_tui.core.config import load_settings
from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.events import Progress
from aide_tui.core.search.searcher import Searcher
from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import HelpScreen, PreviewBody, ResultsList

LONG_FILE = "src/httpclient/pool/connection_pool/internal/manager_impl.py"


def _long_function() -> str:
    body = [f"    step_{i} = configure(step_{i - 1 if i else 0})" for i in range(50)]
    body[44] = "    return drain_keepalive_sockets(step_43)"
    return "def rebalance_connections(pool):\n" + '    """Rebalance."""\n' + "\n".join(body) + "\n"


@pytest.fixture
def deep_workspace(workspace: Path) -> Path:
    """The sample workspace plus a deeply nested file whose interesting line is far into its chunk."""
    target = workspace / LONG_FILE
    target.parent.mkdir(parents=True)
    target.write_text(_long_function())
    return workspace


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


async def test_typing_a_query_lists_the_defining_file_first(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.focused is query_box(app)
        await indexed(pilot, app)
        await pilot.press(*"parse_header")
        await wait_for(pilot, lambda: shown_query(app) == "parse_header" and bool(results(app).hits))
        assert query_box(app).value == "parse_header"
        assert results(app).hits[0].path == "src/httpclient/headers.py"


async def test_moving_the_selection_updates_the_preview(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "redirects")
        hits = results(app).hits
        assert len(hits) >= 2
        for index in (0, 1):
            if index:
                await pilot.press("down")
            hit = hits[index]
            assert results(app).selected_hit is hit
            await wait_for(
                pilot,
                lambda h=hit: (
                    preview(app).shown is not None
                    and (preview(app).shown.path, preview(app).shown.start_line) == (h.path, h.start_line)
                ),
            )
            shown = preview(app).shown
            assert shown is not None
            assert hit.start_line <= shown.current_line <= hit.end_line
            assert hit.path in shown.title.plain


async def test_progress_and_status_during_a_cold_index(workspace: Path) -> None:
    assert not (workspace / ".aide").exists()
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        assert index_bar(app).state == "ready", index_bar(app).label
        # the status line follows the same version in a message of its own: wait for it, then read it
        await wait_for(pilot, lambda: "5 files" in status(app).plain, "the status line's count")
        assert (workspace / ".aide" / ".gitignore").read_text().strip() == "*"


async def test_an_edited_file_becomes_findable_while_running(workspace: Path) -> None:
    app = make_app(workspace, watch=True)
    target = workspace / "src/httpclient/retry.py"
    original = target.read_text()
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "jitter_quantum")
        assert results(app).hits == []

        def found() -> bool:
            return any(h.path == "src/httpclient/retry.py" for h in results(app).hits)

        for attempt in range(4):  # rewrite if the watcher was not yet registered when the file changed
            target.write_text(original + f"\n\ndef jitter_quantum(n):\n    return n * {attempt + 2}\n")
            try:
                await wait_for(pilot, found, "the edited function in the results", steps=200)
                break
            except AssertionError:
                continue
        assert found()
        assert results(app).hits[0].path == "src/httpclient/retry.py"


async def test_a_dead_embedder_shows_degraded_and_search_still_answers(workspace: Path) -> None:
    with LoopbackServer(dim=8) as srv:
        url = srv.url
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": url, "timeout": 2.0}})
    app = make_app(workspace, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        assert results(app).hits[0].path == "src/httpclient/headers.py"
        await wait_for(pilot, lambda: "degraded" in status(app).plain, "degraded in the status line")
        assert status(app).degraded_reason


async def test_typing_stays_live_while_the_embedding_server_hangs(workspace: Path) -> None:
    with LoopbackServer(dim=8) as srv:
        settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": srv.url}})
        app = make_app(workspace, settings)
        async with app.run_test(size=(120, 40)) as pilot:
            await indexed(pilot, app)
            await wait_for(pilot, lambda: status(app).embedder_ready, "the embedder")
            srv.set_mode("hang")
            sent = len(srv.requests)
            await pilot.press(*"send")
            await wait_for(pilot, lambda: len(srv.requests) > sent, "the search to reach the server")

            def blocked() -> bool:
                return app.main_screen.loop.busy  # the search thread is inside the stuck request

            assert blocked()
            await pilot.press("s")
            assert query_box(app).value == "sends"  # the UI took the key while the search is stuck
            assert blocked() and shown_query(app) != "sends"
            srv.set_mode("normal")
            srv.release()
            await wait_for(pilot, lambda: shown_query(app) == "sends", "results after the release")
            assert "degraded" not in status(app).plain


async def test_keys(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results = app.main_screen.query_one(ResultsList)
        assert len(results.hits) >= 3

        # Selection moves from the query box.
        assert results.cursor == 0
        await pilot.press("ctrl+n")
        assert results.cursor == 1
        await pilot.press("ctrl+j")
        assert results.cursor == 2
        await pilot.press("ctrl+k")
        assert results.cursor == 1
        await pilot.press("up")
        assert results.cursor == 0
        assert app.focused is query_box(app) and query_box(app).value == "return"

        # enter → preview; escape → query; / from the list → query.
        await pilot.press("enter")
        assert isinstance(app.focused, PreviewBody)
        await pilot.press("escape")
        assert app.focused is query_box(app)
        results.focus()
        await pilot.pause()
        await pilot.press("slash")
        assert app.focused is query_box(app)
        assert query_box(app).value == "return"

        # F2 (m in the list) cycles the mode; without an embedder hybrid is bm25.
        assert app.main_screen.mode == "bm25"
        await pilot.press("f2")
        assert app.main_screen.mode == "dense" and status(app).plain.lstrip().startswith("dense")
        await pilot.press("enter", "m")
        assert app.main_screen.mode == "bm25"

        # ? opens the help listing the keys; escape closes it.
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        assert isinstance(app.screen, HelpScreen)
        help_text = app.screen.plain
        for key in ("^n", "^k", "^p", "$EDITOR", "copy", "hybrid", "rebuild", "history", "vimgrep"):
            assert key in help_text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), "the help to close")

        # In the query box, the letter keys are text.
        await pilot.press("escape", "m", "q")
        assert query_box(app).value == "returnmq" and app.main_screen.mode == "bm25"


async def test_command_palette_offers_the_actions(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Search mode: cycle",
            "Reindex now",
            "Rebuild index from scratch",
            "Open in editor",
            "Copy location",
            "History",
            "Write results (vimgrep)",
            "Layout: toggle preview",
            "Help: keys",
        ):
            assert title in titles
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: app.screen is not app.main_screen, "the command palette")
        await pilot.press(*"help: keys", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "help from the palette")


# -- issue 9, defect 1: the help is on screen ---------------------------------------------------


@pytest.mark.parametrize("size", [(120, 40), (40, 12)])
async def test_help_is_drawn_on_screen(workspace: Path, size: tuple[int, int]) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        await pilot.pause()
        text = "\n".join(screen_text(app))
        assert "search as" in text and "^q" in text and "quit" in text


# -- defect 4: rows keep what matters; the preview can be hidden ---------------------------------


async def test_rows_keep_file_name_range_ranks_score_and_symbol(deep_workspace: Path) -> None:
    app = make_app(deep_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "drain_keepalive_sockets configure")
        hit = results(app).hits[0]
        assert hit.path == LONG_FILE
        lines = screen_text(app)
        row = next(line for line in lines if "manager_impl.py" in line)
        assert f"manager_impl.py:{hit.start_line}-{hit.end_line}" in row
        assert re.search(r"\bB\d+\b", row) and re.search(r"\b\d\.\d{3}\b", row)
        assert "rebalance_connections" in row


async def test_a_key_hides_the_preview_and_the_list_takes_the_width(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        assert results(app).size.width < 70
        await pilot.press("f3")
        await pilot.pause()
        assert not preview(app).display or preview(app).size.width == 0
        assert results(app).size.width >= 118


# -- defect 5: landing on the hit ------------------------------------------------------------------


async def test_the_preview_lands_on_the_best_line_and_e_y_use_it(
    deep_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    best = _line_of(deep_workspace / LONG_FILE, "drain_keepalive_sockets")
    calls: list[list[str]] = []
    monkeypatch.setenv("EDITOR", "myedit --wait")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setattr("aide_tui.tui.commands.subprocess.run", lambda cmd, check: calls.append(cmd))
    app = make_app(deep_workspace)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # headless drivers cannot suspend
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "drain_keepalive_sockets")
        hit = results(app).hits[0]
        assert hit.path == LONG_FILE and hit.start_line < best - 30
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        await pilot.pause(0.2)
        text = "\n".join(screen_text(app))
        assert f"{best} ▶" in text and "drain_keepalive_sockets" in text  # on screen, marked
        await pilot.press("enter", "y")
        assert app.clipboard == f"{LONG_FILE}:{best}"
        await pilot.press("e")
        assert calls == [["myedit", "--wait", f"+{best}", str(deep_workspace / LONG_FILE)]]


async def test_query_terms_are_highlighted_and_n_steps_between_matches(deep_workspace: Path) -> None:
    app = make_app(deep_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "configure")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        shown = preview(app).shown
        assert shown is not None and len(shown.match_lines) > 3
        match_style = preview(app).body.get_component_rich_style("preview--match")
        first = shown.body.plain.splitlines()[shown.current_row]
        assert "configure" in first
        assert any(s.style == match_style for s in shown.body.spans)
        start = shown.current_line
        await pilot.press("enter", "n")
        await wait_for(pilot, lambda: preview(app).shown is not shown, "the next match")
        nxt = preview(app).shown
        assert nxt is not None and nxt.current_line == min(n for n in shown.match_lines if n > start)
        assert f":{nxt.current_line}" in nxt.title.plain
        await pilot.press("N")
        await wait_for(pilot, lambda: preview(app).shown is not nxt, "the previous match")
        assert preview(app).shown is not None and preview(app).shown.current_line == start


async def test_j_k_and_arrows_scroll_the_focused_preview(deep_workspace: Path) -> None:
    app = make_app(deep_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "configure")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        await pilot.press("enter")
        await pilot.pause(0.1)
        body = preview(app).body
        y0 = body.scroll_y
        await pilot.press("j", "j", "down")
        await pilot.pause()
        assert body.scroll_y == y0 + 3
        await pilot.press("k", "up")
        await pilot.pause()
        assert body.scroll_y == y0 + 1
        assert results(app).cursor == 0


# -- defect 6: keys act in the order typed, on the results they were typed against ----------------


async def test_moves_typed_before_the_results_arrive_apply_to_them(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press(*"return", "down", "down")
        await wait_for(pilot, lambda: shown_query(app) == "return", "the results")
        await pilot.pause(0.2)
        assert len(results(app).hits) >= 3 and results(app).cursor == 2


async def test_a_refreshed_index_keeps_the_selection(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        await pilot.press("down", "down")
        chosen = results(app).selected_hit
        app.live.reindex()
        await indexed(pilot, app, runs=2)
        await pilot.pause(0.2)
        assert results(app).selected_hit is not None
        assert (results(app).selected_hit.path, results(app).selected_hit.start_line) == (
            chosen.path,
            chosen.start_line,
        )


async def test_enter_then_e_opens_the_editor_and_leaves_the_query_alone(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr("aide_tui.tui.commands.subprocess.run", lambda cmd, check: calls.append(cmd))
    app = make_app(workspace)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "backoff_delays")
        await pilot.press("enter", "e")
        assert query_box(app).value == "backoff_delays"
        assert len(calls) == 1


# -- defect 7: printable keys in the list go to the query; R asks; ctrl+q always in the footer ------


async def test_letters_typed_in_the_list_go_to_the_query(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        asked: list[dict[str, object]] = []
        monkeypatch.setattr(app.live, "reindex", lambda **kw: asked.append(kw))
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        await pilot.press("space", "r", "q", "s")
        assert app.is_running
        assert query_box(app).value == "return rqs"
        assert app.focused is query_box(app)
        assert asked == []


async def test_the_scope_key_is_a_letter_without_a_shared_store(workspace: Path) -> None:
    """``a`` switches to all workspaces of a Milvus collection; on the local store it is just a letter."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        await pilot.press("a")
        assert query_box(app).value == "returna"
        await pilot.press("f6")
        await pilot.pause()
        assert not app.main_screen.everywhere and "all workspaces" not in status(app).plain


async def test_R_asks_before_rebuilding(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aide_tui.tui.screens.modals import ConfirmScreen

    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        asked: list[dict[str, object]] = []
        monkeypatch.setattr(app.live, "reindex", lambda **kw: asked.append(kw))
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.main_screen, "the answer")
        assert asked == [] and index_bar(app).state == "ready"
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: asked == [{"rebuild": True}], "the rebuild asked for")
        assert index_bar(app).state == "rebuilding"


async def test_ctrl_q_is_in_the_footer_wherever_the_focus_is(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        for focus in (query_box(app), results(app), preview(app).body):
            app.main_screen.set_focus(focus)
            await wait_for(pilot, lambda: "^q quit" in screen_text(app)[-1], f"^q with {focus} focused")


# -- defect 8: status text ---------------------------------------------------------------------------


async def test_index_line_texts(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(40, 12)) as pilot:
        await indexed(pilot, app)
        index_bar(app).progress(Progress(state="scanning", message="scanning workspace"), None)
        await pilot.pause()
        bar_line = screen_text(app)[-3]
        assert "scanning workspace" in bar_line and "scanning scanning" not in bar_line
        index_bar(app).progress(Progress(state="embedding", vectors_done=10, vectors_total=100), None)
        await pilot.pause()
        assert "embedding 10/100 vectors" in screen_text(app)[-3]


async def test_reindex_requested_shows_no_stale_bar(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        requested: list[bool] = []
        # the run itself would finish at once on this tiny workspace and replace the text under test
        monkeypatch.setattr(app.live, "reindex", lambda **kw: requested.append(True))
        index_bar(app).progress(Progress(state="embedding", vectors_done=10, vectors_total=10), None)
        await pilot.press("f5")
        await pilot.pause()
        assert requested
        line = next(line for line in screen_text(app) if "reindexing" in line)
        assert "requested" in line and "━" not in line


async def test_no_embedder_shows_bm25_not_hybrid(workspace: Path) -> None:
    app = make_app(workspace, bm25_settings(workspace))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        assert status(app).plain.lstrip().startswith("bm25")
        assert "hybrid" not in screen_text(app)[-2]


# -- defect 9: a committed index that fails to load ----------------------------------------------------


async def test_a_failed_reload_is_shown_and_the_app_keeps_running(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(workspace, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")

        def broken(self: Searcher) -> bool:
            raise IndexCorrupt("index manifest is corrupt (test); rebuilding")

        monkeypatch.setattr(Searcher, "refresh", broken)
        for attempt in range(4):
            (workspace / "src/httpclient/new.py").write_text(f"def fresh_{attempt}():\n    pass\n")
            try:
                await wait_for(pilot, lambda: index_bar(app).error, "the reload error", steps=200)
                break
            except AssertionError:
                continue
        assert app.is_running and index_bar(app).error
        assert "corrupt" in "\n".join(screen_text(app))
        await search(pilot, app, "parse_header backoff")  # the previous version still answers
        assert results(app).hits


# -- defect 10: hit lines padded to the pane width -------------------------------------------------


async def test_hit_lines_are_padded_to_the_pane_width(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        shown = preview(app).shown
        assert shown is not None
        width = preview(app).body.size.width
        hit_rows = [line for line in shown.body.plain.splitlines() if "▌" in line[:8] or "▶" in line[:8]]
        assert hit_rows and all(len(line) >= width - 1 for line in hit_rows)


# -- issue 15: mouse ---------------------------------------------------------------------------------


async def test_clicking_a_row_selects_it(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        assert len(results(app).hits) >= 3
        await pilot.click(ResultsList, offset=(5, 3))  # border row 0, rows from 1
        assert results(app).cursor == 2


def test_app_class_is_importable_without_a_terminal() -> None:
    assert AideApp.__name__ == "AideApp"


async def test_an_unreadable_index_is_rebuilt_once(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
    manifest = next((workspace / ".aide").rglob("manifest.json"))
    manifest.write_text("{ not json")  # a real corrupt file on disk
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        assert results(app).hits and results(app).hits[0].path == "src/httpclient/headers.py"
        assert not index_bar(app).error


async def test_an_unknown_language_is_named_in_the_status_line(workspace: Path) -> None:
    """A query error (issue 11: unknown lang:) is shown with the valid names, not as 'no results'."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse lang:klingon")
        await wait_for(pilot, lambda: "klingon" in status(app).plain, "the query error in the status line")
        assert "python" in status(app).plain
        assert any("klingon" in line for line in screen_text(app))
        await search(pilot, app, "parse lang:py")
        await wait_for(pilot, lambda: "klingon" not in status(app).plain, "the error cleared")
        assert results(app).hits


async def test_editing_keys_in_a_burst_act_in_the_order_typed(workspace: Path) -> None:
    """Keys that arrive together (a fast typist, a paste-like burst over SSH) edit the query in order:
    backspace, ctrl+u and the arrows act where they were typed, not after the letters that followed."""
    from textual import events

    def burst(*keys: tuple[str, str | None]) -> None:
        assert app._driver is not None
        for key, char in keys:  # delivered the way the terminal driver delivers them, no pause between
            event = events.Key(key, char)
            event.set_sender(app)
            app._driver.send_message(event)

    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        burst(("a", "a"), ("b", "b"), ("backspace", None), ("c", "c"))
        await wait_for(pilot, lambda: query_box(app).value in ("ac", "ab"), "the burst")
        await pilot.pause(0.1)
        assert query_box(app).value == "ac"
        burst(("ctrl+u", None), ("k", "k"), ("l", "l"), ("left", None), ("x", "x"))
        await wait_for(pilot, lambda: query_box(app).value in ("kxl", "", "kl"), "the second burst")
        await pilot.pause(0.1)
        assert query_box(app).value == "kxl"
        burst(("home", None), ("z", "z"), ("end", None), ("ctrl+w", None), ("q", "q"))
        await pilot.pause(0.3)
        assert query_box(app).value == "q"


# -- issue 23, items 1 and 2 in the app: the word being typed is a prefix; hybrid says why nothing ----


async def test_a_partly_typed_word_already_finds_its_code(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "backoff_del")
        hits = results(app).hits
        assert hits and "backoff_delays" in hits[0].text
        await search(pilot, app, "qzvvx")  # a word no term of the index starts with: nothing
        assert not results(app).hits


async def test_hybrid_gibberish_says_why_nothing_answers(workspace: Path) -> None:
    app = make_app(workspace, load_settings(workspace, {}))  # the packaged encoder: a real dense list
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        vectors_done = lambda: app.main_screen.live.status.vectors_missing == 0  # noqa: E731
        await wait_for(pilot, vectors_done, "every vector", 2400)
        await search(pilot, app, "qxgsplzkqlkn")
        assert not results(app).hits
        shown = " ".join(line.strip(" │") for line in screen_text(app)[2:8])
        assert "no code is close to it in meaning" in shown and "check the spelling" in shown
