"""The main screen: it wires the query box, the browser (results list and preview), the index line, the
status line and the footer to the live workspace, and runs the commands of the key table.

Its own state is what the search depends on, as reactives (``mode``, ``everywhere``, ``preview_visible``,
``ready``), bound into the widgets that show them; everything else lives on the widget that shows it
(:mod:`aide_tui.tui.widgets.browser` says where). Searches run on a
:class:`~aide_tui.tui.search_loop.SearchLoop` (one thread, the latest query wins); the preview schedules
its own renders and the index line presents the index events.

Keys are Textual bindings (ids from :mod:`aide_tui.tui.keys`). The screen's commands are priority
bindings: they act when the key arrives, while letters typed just before may still wait in the query
box's queue. So what a command does with the query runs after the box has taken those letters
(``call_later`` on the box), and a command on results typed before the results of the current query
are painted waits for them (:meth:`Browser.when_typed`).

``d``/``r`` replace the list by the definitions or references of the name on the line the preview
shows; the list they replaced goes on the list's back stack, which the back key (backspace, ctrl+o)
pops, cursor and preview line included. A new query, mode or scope empties the stack; while a
looked-up list is shown, a fresh answer to the same query (a new index version) does not replace it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input

from aide_tui.core.appstate import AppState
from aide_tui.core.config import MODES, Settings
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.storekind import SHARED_STORE, NeedsSharedStore
from aide_tui.host.workspace import Workspace
from aide_tui.tui import commands, keys
from aide_tui.tui.memory import WorkspaceMemory
from aide_tui.tui.messages import EmbedderLoaded, IndexOpened, IndexReloaded, SearchDone
from aide_tui.tui.screens.ask import AskScreen
from aide_tui.tui.screens.modals import ConfirmScreen, HistoryScreen
from aide_tui.tui.search_loop import SearchAnswer, SearchLoop, SearchRequest
from aide_tui.tui.widgets import HelpScreen, IndexBar, PreviewBody, QueryInput, ResultsList, StatusLine
from aide_tui.tui.widgets.browser import Browser, empty_note, focus_zone
from aide_tui.tui.widgets.footer import LookupFooter

LABELS_AFTER_PAINT = 0.5  # seconds the rows' labelling waits for their paint, at most


class SearchScreen(Screen[None]):
    """Query, results beside (or above) the preview, index line, status line, footer."""

    BINDINGS: ClassVar[list[BindingType]] = list(keys.screen_bindings())
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (16, "-tall")]

    class Mounted(Message):
        """The screen and its widgets are up (the app starts the live workspace then)."""

    mode: reactive[str] = reactive("bm25", init=False)
    everywhere: reactive[bool] = reactive(False, init=False)  # every workspace of a shared collection
    preview_visible: reactive[bool] = reactive(True, init=False)
    ready: reactive[bool] = reactive(False, init=False)  # an index was opened (or found missing)

    def __init__(
        self,
        live: Workspace,
        settings: Settings,
        state: AppState,
        *,
        limit: int = 50,
        show_timing: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.live = live
        self.settings = settings
        self.state = state
        self.memory = WorkspaceMemory(state, settings.tui, lambda text: self.notify(text, severity="warning"))
        self._restored: str | None = None  # the last query put back at start, while it is untouched
        self.show_timing = show_timing
        self.clock = clock
        self.modes = MODES if settings.embedding.backend != "none" else ("bm25", "dense")
        mode = state.workspace.mode or settings.search.mode
        self.set_reactive(SearchScreen.mode, mode if mode in self.modes else "bm25")
        self.set_reactive(SearchScreen.preview_visible, state.workspace.preview)

        def search(query: str, limit: int, mode: str, everywhere: bool) -> SearchResponse:  # its thread's
            return live.search(query, limit=limit, mode=mode, all_workspaces=everywhere, prefix=True,
                               hints=False)  # fmt: skip

        def deliver(answer: SearchAnswer) -> None:  # from its thread: to the UI thread as a message
            self.post_message(SearchDone(answer))

        self.loop = SearchLoop(search, deliver, limit, paint_wait=LABELS_AFTER_PAINT)
        self.query_box = QueryInput(
            self.memory,
            placeholder='Search code…  (path:GLOB lang:NAME "phrase"; ↑ previous queries)',
            id="query",
            select_on_focus=False,
        )
        self.status = StatusLine(settings.embedding.backend, show_timing=show_timing, id="status")
        self.footer = LookupFooter()
        self.browser = Browser(live, self.query_box, self.status, self.footer, id="main")

    def compose(self) -> ComposeResult:
        live = self.live
        yield self.query_box
        yield self.browser.data_bind(SearchScreen.ready, SearchScreen.preview_visible)
        clock = self.clock if self.show_timing else None
        yield IndexBar(
            live.root, shared=live.store.shared, index_enabled=live.index_enabled, clock=clock, id="indexbar"
        )
        yield self.status.data_bind(SearchScreen.mode, SearchScreen.everywhere)
        yield self.footer

    def on_mount(self) -> None:
        self.loop.start()
        self.set_focus(self.query_box)
        self.query_one(IndexBar).set_state("opening index…")
        self.set_class(not self.preview_visible, "-no-preview")
        if self.memory.last_query:
            self.query_box.set_text(self.memory.last_query)
            self._restored = self.memory.last_query
        self.post_message(self.Mounted())

    async def on_key(self, event: events.Key) -> None:
        """Keys typed while the app was starting (before the query box had the focus) were sent to the
        screen: they are the start of a query, not lost. The query box takes every printable key it
        has the focus for, so only those reach here; a last query restored meanwhile, never seen, is
        replaced by what was typed."""
        box = self.query_box
        if self.focused is not box or not event.is_printable or not event.character:
            return
        if self._restored is not None and box.value == self._restored:
            box.set_text("")
        self._restored = None
        event.stop()
        await box.take_key(event)

    def on_unmount(self) -> None:
        self.loop.stop()

    # -- state ---------------------------------------------------------------------------------------

    def watch_mode(self) -> None:
        self.memory.keep_mode(self.mode)
        self.browser.start_over()
        self.request_search()

    def watch_everywhere(self) -> None:
        self.browser.start_over()
        self.request_search()

    def watch_preview_visible(self, visible: bool) -> None:
        self.set_class(not visible, "-no-preview")
        if not visible and focus_zone(self.focused) == "preview":
            self.set_focus(self.query_one(ResultsList))
        self.memory.keep_preview(visible)

    def watch_ready(self, ready: bool) -> None:
        if ready:
            self.request_search()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The scope letter is a command only with a shared store, and the back key only with a list to
        go back to (else each is a key for the query: backspace then deletes a letter)."""
        if action == "back":
            return bool(self.browser.results.back)
        return not (action == "toggle_scope" and parameters and not self.live.store.all_workspaces)

    # -- searching -----------------------------------------------------------------------------------

    @on(Input.Changed, "#query")
    def _query_changed(self) -> None:
        self.browser.typed()
        self.request_search()

    def request_search(self) -> None:
        """Search the query in the box (an empty query clears the results at once)."""
        query = self.query_box.value
        if not query.strip():
            self.loop.forget()
            empty = SearchAnswer(
                SearchRequest(0, query, self.mode), SearchResponse(query, [], mode=self.mode)
            )
            self.browser.show_answer(empty, empty_note(empty, self.settings.embedding.backend))
        elif self.ready:
            self.loop.submit(query, self.mode, self.everywhere)

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        answer = message.answer
        if answer.request.key == (self.query_box.value, self.mode, self.everywhere):
            self.browser.take_answer(answer, empty_note(answer, self.settings.embedding.backend))
            if answer.labels is None:  # its rows are labelled once they are drawn (not while)
                self.browser.results.after_paint(partial(self.loop.painted, answer.request.seq))

    @on(IndexOpened)
    @on(IndexReloaded)
    @on(EmbedderLoaded)
    def _index_changed(self, message: IndexOpened | IndexReloaded | EmbedderLoaded) -> None:
        """A version of the index was opened or loaded (the status line says what it holds; search
        again), or the query embedder is ready (search again, unless BM25 alone answers)."""
        if isinstance(message, EmbedderLoaded):
            if self.mode != "bm25":
                self.request_search()
            return
        self.status.show_index(message.event.status)
        if self.ready:
            self.request_search()
        self.ready = True

    # -- commands (the key table's actions) ------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        """Next/previous result; in the preview: scroll; on an empty query: recall previous queries."""
        self.query_box.call_later(self._move, delta, focus_zone(self.focused))

    def _move(self, delta: int, zone: str) -> None:
        box = self.query_box
        if zone == "preview":
            self.query_one(PreviewBody).scroll_relative(y=delta, animate=False, immediate=True)
        elif zone == "query" and (box.recalling or (delta < 0 and not box.value)):
            box.recall(delta)
        else:
            results = self.browser.results
            results.when_showing(box.value, lambda: results.move(delta))

    def action_page(self, direction: int) -> None:
        """PgUp/PgDn: the preview when it has focus, else the results by a page."""
        if focus_zone(self.focused) == "preview":
            body = self.query_one(PreviewBody)
            (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)
        else:
            self.browser.when_typed(lambda: self.browser.results.page(direction))

    def action_enter(self) -> None:
        """From the query or the list: focus the preview (the query joins the history)."""
        zone = focus_zone(self.focused)
        if zone == "query":
            self.query_box.call_later(self.query_box.leave_recall)
            self.query_box.call_later(self.query_box.record)
        if zone in ("query", "list"):
            self.set_focus(self.query_one(PreviewBody) if self.preview_visible else self.browser.results)

    def action_escape(self) -> None:
        """Back to the query; during history recall, back to the empty query."""
        self.query_box.call_later(self.query_box.leave_recall, clear=True)
        self.set_focus(self.query_box)

    def action_clear_or_quit(self) -> None:
        """ctrl+c, as fzf: clear a non-empty query (and focus it), else quit."""
        self.set_focus(self.query_box)
        self.query_box.call_later(self.query_box.clear_or_quit)

    def action_clear_query(self) -> None:
        """ctrl+u in the list or the preview: clear the query and focus it."""
        self.set_focus(self.query_box)
        self.query_box.call_later(self.query_box.set_text, "")

    def action_open_editor(self) -> None:
        """Open the selected hit in $VISUAL/$EDITOR at the line the preview shows (``+LINE path``)."""
        self.browser.on_selection(
            lambda hit, line: commands.open_editor(self.app, self.live.root, hit, line, self.query_box.record)
        )

    def action_copy_location(self) -> None:
        """Copy ``path:line`` of the line the preview shows (OSC 52, works over SSH)."""
        self.browser.on_selection(
            lambda hit, line: commands.copy_location(
                self.app, self.live.root, hit, line, self.query_box.record
            )
        )

    def action_write_results(self) -> None:
        """Write the current results as ``path:line:col:text`` lines (vim's :cfile) and copy them."""
        self.browser.when_typed(
            lambda: commands.write_results(
                self.app,
                self.live.root,
                self.browser.results.hits,
                self.state.results_file(),
                self.query_box.record,
            )  # fmt: skip
        )

    def action_next_match(self, direction: int) -> None:
        """Step the preview to the next (``n``) or previous (``N``) line with a query term."""
        if not self.browser.preview.step_match(direction):
            self.notify("no query-term matches in the preview", timeout=2)

    def action_definition(self) -> None:
        """The definition of the name on the line the preview shows (several: listed)."""
        self.browser.when_typed(lambda: self.browser.look_up("definitions"))

    def action_references(self) -> None:
        """The references of the name on the line the preview shows, listed."""
        self.browser.when_typed(lambda: self.browser.look_up("references"))

    def action_back(self) -> None:
        """Back to the list that d / r replaced: its rows, cursor and preview line."""
        self.query_box.call_later(self.browser.go_back)

    def action_cycle_mode(self) -> None:
        """Cycle the search mode and search again (remembered for this workspace)."""
        modes = self.modes
        self.mode = modes[(modes.index(self.mode) + 1) % len(modes)] if self.mode in modes else modes[0]
        self.notify(f"search mode: {self.mode}", timeout=2)

    def action_toggle_scope(self, letter: bool = False) -> None:
        """Search this workspace or every workspace of the shared collection (Milvus store)."""
        try:
            self.live.store.require_all_workspaces("all workspaces", f"{SHARED_STORE} (see the README)")
        except NeedsSharedStore as exc:
            self.notify(str(exc), severity="warning")
            return
        self.everywhere = not self.everywhere
        self.notify("searching all workspaces" if self.everywhere else "searching this workspace", timeout=2)

    def action_history(self) -> None:
        """Pick a previous query from a searchable list."""

        def picked(query: str | None) -> None:
            if query is not None:
                self.query_box.set_text(query)
                self.set_focus(self.query_box)

        self.app.push_screen(HistoryScreen(self.memory.history), picked)

    def action_reindex(self) -> None:
        """Update the index now."""
        self.query_one(IndexBar).set_state("reindexing", "requested")
        self.live.reindex()

    def action_rebuild(self) -> None:
        """Rebuild the index from scratch, after a confirmation (the running job is cancelled)."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.query_one(IndexBar).set_state("rebuilding", "from scratch")
                self.live.reindex(rebuild=True)

        question = "Rebuild the index from scratch?\nVectors are recomputed (the cache is kept)."
        self.app.push_screen(ConfirmScreen(question), answered)

    def action_ask(self) -> None:
        """Ask the code (F7): the ask screen, the query as its question (F7 there: back here)."""
        if not self.app.is_screen_installed("ask"):
            ask = AskScreen(self.live, self.settings.answer, show_timing=self.show_timing)
            self.app.install_screen(ask, "ask")
        screen = self.app.get_screen("ask")
        if isinstance(screen, AskScreen):
            screen.ask_about(self.query_box.value)
        self.app.push_screen("ask")

    def action_help(self) -> None:
        """Show the keys in effect."""
        live = keys.live_keys(getattr(self.app, "keymap", {}))
        self.app.push_screen(HelpScreen(keys.help_rows(lambda c: live[c.id])))
