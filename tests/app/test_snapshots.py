"""Snapshots of what is on screen (pytest-textual-snapshot); update with ``pytest --snapshot-update``.

They show the rows (ranks, score, symbol; at 120 and 80 columns with and without the preview), the
preview landed on the hit's best line with the query terms marked, the help at 120×40 and 40×12, the
layout without the preview and the degraded status; and every other state a person sees: the app as it
opens, no results, a ``lang:`` error, dense mode without an embedder, the ``d``/``r`` lists and the way
back, the history and the rebuild question, indexing with both tiers (the static tier's table, the
transformer's vectors, writing the index, queued behind another workspace), and the ask mode streaming,
failed and without a model server. Each waits for the state it shows (the answer to the query typed,
nothing on its way) and hides times, rates and the cursor's blink.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from apphelpers import index_bar, preview, query_box, results, shown_query, status, wait_for
from model_server import ModelServer, pieces
from snapshot_app import build
from textual.pilot import Pilot

from aide_tui.core.events import Progress
from aide_tui.core.index.budget import Wait
from aide_tui.core.live import EmbedderReady, Reloaded
from aide_tui.core.status import IndexStatus
from aide_tui.tui.app import AideApp
from aide_tui.tui.screens.ask import AskScreen
from aide_tui.tui.screens.modals import ConfirmScreen, HistoryScreen
from aide_tui.tui.widgets import HelpScreen, Preview, QueryInput
from aide_tui.tui.widgets.answer import AnswerView, CitationList
from aide_tui.tui.widgets.footer import LookupFooter

# one worker for them all (pytest -n): they share the fixed workspace whose path the pictures show
pytestmark = pytest.mark.xdist_group("snapshots")


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


# -- every state a person sees (issue 30): each waits for the state it shows, then settles ------------


def _footer(app: AideApp) -> LookupFooter:
    return app.main_screen.query_one(LookupFooter)


def _settled(app: AideApp) -> bool:
    """Nothing on its way: no search running or waiting, the preview shows the selected row (or the list
    has none), its rows are labelled, and the footer's d / r names for the line shown were worked out."""
    hit, shown = results(app).selected_hit, preview(app).shown
    if app.main_screen.loop.busy or not results(app).labelled:
        return False
    if hit is None:
        return True
    return shown is not None and shown.hit == hit and _footer(app).names is not None


async def _settle(pilot: Pilot[Any], app: AideApp) -> None:
    await wait_for(pilot, lambda: _settled(app), "the screen to settle")
    await pilot.pause(0.2)  # the footer's recompose and the last repaint
    await wait_for(pilot, lambda: _settled(app), "the screen to stay settled")


async def _started(pilot: Pilot[Any], app: AideApp) -> None:
    await wait_for(pilot, lambda: app.main_screen.ready, "startup")
    query_box(app).cursor_blink = False  # a blinking cursor would make the picture flaky


async def _typed(pilot: Pilot[Any], app: AideApp, query: str) -> None:
    """Type ``query`` and wait for its own answer (rows or a note)."""
    await _started(pilot, app)
    await pilot.press(*query)
    await wait_for(pilot, lambda: shown_query(app) == query, f"the answer to {query!r}")
    await _settle(pilot, app)


def _typing(app: AideApp, query: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _typed(pilot, app, query)

    return run_before


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120", "80"])
def test_empty(snap_compare: Any, size: tuple[int, int]) -> None:
    """The app as it opens: the hint in the list and the preview, the index line ready."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        await wait_for(pilot, lambda: index_bar(app).label == "ready", "the index line")
        await _settle(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_no_results(snap_compare: Any) -> None:
    """A query nothing answers: the list says so, the preview is cleared, the status line counts 0."""
    app = build()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_typing(app, "zzyzx"))


def test_unknown_lang_error(snap_compare: Any) -> None:
    """``lang:`` with a language the index does not know: the error in the list and the status line."""
    app = build()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_typing(app, "lang:klingon send"))


def test_dense_without_an_embedder(snap_compare: Any) -> None:
    """F2 to dense with no embedder configured: the list says what dense mode needs."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        await pilot.press(*"backoff")
        await wait_for(pilot, lambda: shown_query(app) == "backoff", "the bm25 answer")
        app.main_screen.mode = "dense"  # as F2 does, without its toast
        await wait_for(pilot, lambda: shown_query(app) == "backoff", "the dense answer")
        await wait_for(pilot, lambda: "needs an embedder" in results(app).message, "the note")
        await _settle(pilot, app)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def _to_line(pilot: Pilot[Any], app: AideApp, query: str, text: str) -> None:
    """Type ``query``, select the row whose chunk holds ``text``, focus the preview and step to the
    line with ``text`` (``n`` between the query's matches)."""
    await _typed(pilot, app, query)
    rows = [i for i, h in enumerate(results(app).hits) if text in h.text]
    assert rows, f"no row holds {text!r}"
    results(app).select(rows[0])
    await pilot.press("enter")
    await _settle(pilot, app)
    for _ in range(10):
        hit = results(app).selected_hit
        assert hit is not None
        if text in preview(app).line_text(hit, preview(app).line_for(hit)):
            break
        await pilot.press("n")
        await wait_for(pilot, lambda: _settled(app) and preview(app).shown is not None, "the next match")
        await _settle(pilot, app)
    hit = results(app).selected_hit
    assert hit is not None and text in preview(app).line_text(hit, preview(app).line_for(hit))


async def _looked_up(pilot: Pilot[Any], app: AideApp, key: str, summary: str) -> None:
    await pilot.press(key)
    await wait_for(pilot, lambda: results(app).places and summary in status(app).plain, summary)
    await _settle(pilot, app)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120", "80"])
def test_definitions_list(snap_compare: Any, size: tuple[int, int]) -> None:
    """``d`` on a call of ``backoff_delays``: its definition listed, the preview at it, the status line
    says what the list is."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _to_line(pilot, app, "backoff_delays attempts", "for delay in backoff_delays(attempts)")
        await _looked_up(pilot, app, "d", "definition of backoff_delays")

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_references_list(snap_compare: Any) -> None:
    """``r`` on ``def send``: the references of ``send`` listed, each row its line's text."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _to_line(pilot, app, "send", "def send(self, request)")
        await _looked_up(pilot, app, "r", "of send")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_back_after_a_lookup(snap_compare: Any) -> None:
    """``d`` then backspace: the search results again, cursor and preview line as they were."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _to_line(pilot, app, "backoff_delays attempts", "for delay in backoff_delays(attempts)")
        await _looked_up(pilot, app, "d", "definition of backoff_delays")
        await pilot.press("backspace")
        await wait_for(pilot, lambda: not results(app).places and not results(app).back, "the list before")
        await wait_for(
            pilot, lambda: " result" in status(app).plain, f"the count again: {status(app).plain!r}"
        )
        await _settle(pilot, app)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_history(snap_compare: Any) -> None:
    """ctrl+r: the previous queries, newest first, filtered as you type."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        for query in ("parse_header", "follow redirects", "backoff"):
            query_box(app).memory.record(query)  # type: ignore[union-attr]
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), "the history")
        await wait_for(pilot, lambda: len(app.screen.shown) == 3, "its entries")  # type: ignore[attr-defined]
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_rebuild_asks_first(snap_compare: Any) -> None:
    """R in the list: the confirmation before a rebuild from scratch."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _typed(pilot, app, "backoff")
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.main_screen.focused is results(app), "the list focused")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# -- indexing: the live workspace's events, fed through the app's own path (deterministic counts) ------

TIERS = IndexStatus(state="partial", files=5, chunks=40, embedded=8, embedder="openai:test-model",
                    vectors_missing=96, static_missing=25, static="static-m2v1-256")  # fmt: skip


def _indexing(
    app: AideApp, events: list[Any], label: str, *shown: str
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Wait for the dead embedder's probe, then feed the embedder's readiness and ``events`` as the live
    workspace would; wait until the index line reads ``label`` and the status line shows ``shown``."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        await wait_for(pilot, lambda: status(app).embedder_error is not None, "the embedder probe")
        app._live_event(EmbedderReady("openai:test-model"))
        for event in events:
            app._live_event(event)
        await wait_for(pilot, lambda: index_bar(app).label == label, f"the index line {label!r}")
        await wait_for(pilot, lambda: all(s in status(app).plain for s in shown), f"the status line {shown}")
        await wait_for(pilot, lambda: "degraded" not in status(app).plain, "the embedder ready")
        await _settle(pilot, app)

    return run_before


def test_indexing_the_static_tier(snap_compare: Any) -> None:
    """The static tier's table is distilled: the index line says so; the status line counts the chunks
    the static tier has still to embed and the transformer's vectors to go."""
    app = build("tiers")
    distilling = Progress("distilling", message="static tier: distilling the word-piece table 3/8")
    label = "distilling static tier: distilling the word-piece table 3/8"
    run = _indexing(
        app, [Reloaded(TIERS), distilling], label, "25 chunks to go (static tier)", "96 vectors to go"
    )
    assert snap_compare(app, terminal_size=(120, 40), run_before=run)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120", "80"])
def test_indexing_the_transformer(snap_compare: Any, size: tuple[int, int]) -> None:
    """The transformer embeds: its count and bar on the index line, the vectors to go on the status line
    (the static tier is done)."""
    app = build("tiers")
    done_static = dataclasses.replace(TIERS, static_missing=0)
    embedding = Progress("embedding", vectors_done=24, vectors_total=120)
    run = _indexing(app, [Reloaded(done_static), embedding], "embedding 24/120 vectors", "96 vectors to go")
    assert snap_compare(app, terminal_size=size, run_before=run)


def test_writing_the_index(snap_compare: Any) -> None:
    """Every file read: the index is written (no bar, no ETA of 0:00)."""
    app = build("tiers")
    label = "writing the index of 5 files: chunks, BM25 rows, symbol graph"
    writing = Progress("indexing", files_done=5, files_total=5)
    run = _indexing(app, [Reloaded(TIERS), writing], label, "25 chunks to go")
    assert snap_compare(app, terminal_size=(120, 40), run_before=run)


def test_queued_behind_another_workspace(snap_compare: Any) -> None:
    """The bulk embedding slot is another workspace's: the index line says whose and that this one waits."""
    app = build("tiers")
    wait = Wait(holders=["/home/dev/monorepo"], ahead=1, left=48_000)
    queued = Progress("queued", vectors_total=96, message=wait.message(1, 60.0))
    label = f"queued {wait.message(1, 60.0)}"
    assert snap_compare(
        app, terminal_size=(120, 40), run_before=_indexing(app, [Reloaded(TIERS), queued], label)
    )


# -- the ask mode (F7) against a real loopback model server --------------------------------------------


def _asked(
    app: AideApp, done: Callable[[AskScreen], bool], what: str
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen")
        screen = app.screen
        assert isinstance(screen, AskScreen)
        screen.query_one(QueryInput).cursor_blink = False
        await pilot.press(*"how are redirects followed?", "enter")
        await wait_for(pilot, lambda: done(screen), what)
        excerpt = screen.query_one(CitationList).selected_excerpt
        shown = lambda: screen.query_one(Preview).shown  # noqa: E731
        await wait_for(pilot, lambda: excerpt is None or shown() is not None, "the excerpt's preview")
        await pilot.pause(0.2)

    return run_before


def test_ask_streaming(snap_compare: Any) -> None:
    """An answer caught mid-stream: its first words, the excerpts it may cite, the line about the run."""
    with ModelServer("hold") as server:
        app = build(answer_url=server.url)

        def half_way(screen: AskScreen) -> bool:
            """Exactly the pieces the server sent before it holds (half of them)."""
            if not server.requests:
                return False
            parts = pieces(server.answer_for(server.requests[-1].body))
            sent = "".join(parts[: max(1, len(parts) // 2)])
            return screen.streaming and screen.query_one(AnswerView).answer == sent

        try:
            assert snap_compare(
                app, terminal_size=(120, 40), run_before=_asked(app, half_way, "half the answer")
            )
        finally:
            server.release()


FAILING_PORT = 38417


def test_ask_failed(snap_compare: Any) -> None:
    """The model server fails mid-answer: what came, and the error under it."""
    with ModelServer("stream_error", port=FAILING_PORT) as server:  # the error names the server's URL
        app = build(answer_url=server.url)

        def failed(screen: AskScreen) -> bool:
            view = screen.query_one(AnswerView)
            return not screen.streaming and view.note_is_error and "crashed" in view.note

        assert snap_compare(app, terminal_size=(120, 40), run_before=_asked(app, failed, "the failure"))


def test_ask_without_a_model_server(snap_compare: Any) -> None:
    """No model server answers: one line says how to start one."""
    app = build()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _started(pilot, app)
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen")
        screen = app.screen
        assert isinstance(screen, AskScreen)
        screen.query_one(QueryInput).cursor_blink = False
        await wait_for(pilot, lambda: screen.setup_hint is not None, "the probe")
        await wait_for(pilot, lambda: screen.query_one(AnswerView).note_is_error, "the hint shown")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
