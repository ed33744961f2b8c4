"""The main screen: it wires the query box, the results, the preview, the index line and the status line
to the live workspace, and runs the commands of the key table.

Its state is reactive (``mode``, ``everywhere``, ``preview_visible``, ``ready``); searches run on a
:class:`~aide_tui.tui.search_loop.SearchLoop` (one thread, the latest query wins); the preview schedules
its own renders and the index line presents the index events.

Keys are Textual bindings (ids from :mod:`aide_tui.tui.keys`). The screen's commands are priority
bindings: they act when the key arrives, while letters typed just before may still wait in the query
box's queue. So what a command does with the query runs after the box has taken those letters
(:meth:`_after_typing`), and a command on results typed before the results of the current query are
painted waits for them ("typed against" those results) instead of acting on the old ones.

``d``/``r`` replace the list by the definitions or references of the name on the line the preview
shows (looked up in a worker, :mod:`aide_tui.tui.lookup`); the list they replaced goes on a stack that
the back key (backspace, ctrl+o) pops, cursor and preview line included. A new query, mode or scope
empties the stack; while a looked-up list is shown, a fresh answer to the same query (a new index
version) does not replace it.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input

from aide_tui.core.appstate import AppState
from aide_tui.core.config import MODES, Settings
from aide_tui.core.search.response import Hit, SearchResponse
from aide_tui.core.storekind import SHARED_STORE, NeedsSharedStore
from aide_tui.core.textsafe import printable
from aide_tui.host.workspace import Workspace
from aide_tui.tui import keys
from aide_tui.tui.hitactions import (
    editor_command,
    home_path,
    location_text,
    vimgrep_text,
    wrap_path,
    write_atomically,
)
from aide_tui.tui.lookup import NO_GRAPH_SHORT, Choice, Line, choices, look_up
from aide_tui.tui.messages import (
    EmbedderLoaded,
    IndexOpened,
    IndexReloaded,
    NamesChosen,
    PlacesFound,
    SearchDone,
)
from aide_tui.tui.screens.ask import AskScreen
from aide_tui.tui.screens.modals import ConfirmScreen, HistoryScreen
from aide_tui.tui.search_loop import SearchAnswer, SearchLoop, SearchRequest
from aide_tui.tui.widgets import (
    HelpScreen,
    IndexBar,
    Preview,
    PreviewBody,
    QueryInput,
    ResultsList,
    StatusLine,
)
from aide_tui.tui.widgets.footer import FittingFooter
from aide_tui.tui.widgets.preview import code_line_of, preview_key

EMPTY_NOTE = "Type to search; results update as you type."
FOOTER_NAME = 24  # a longer name is cut in the footer's d / r labels


@dataclass
class SavedList:
    """A results list as the back key restores it: rows, labels, cursor, the preview's line, the status."""

    hits: list[Hit]
    labels: list[str | None] | None
    places: bool
    cursor: int | None
    query: str | None
    message: str
    status: tuple[int | None, float | None, str | None]
    line: int | None  # the line the preview showed (None: the hit's best line)


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
        self.show_timing = show_timing
        self.clock = clock
        self.modes = MODES if settings.embedding.backend != "none" else ("bm25", "dense")
        mode = state.workspace.mode or settings.search.mode
        self.set_reactive(SearchScreen.mode, mode if mode in self.modes else "bm25")
        self.set_reactive(SearchScreen.preview_visible, state.workspace.preview)
        self.loop = SearchLoop(self._search, self._answered, limit)
        self._deferred: list[tuple[str, Callable[[], Any]]] = []  # (typed against, action)
        self._looked_at: tuple[str, ...] = ()
        self._back: list[SavedList] = []  # the lists d / r replaced, the latest last
        self._lookup_seq = 0  # the latest d / r request (an older answer is dropped)
        self._peek_seq = 0  # the latest request for the names d / r take (shown in the footer)
        self._chosen: NamesChosen | None = None  # those names, for the line the preview shows

    def compose(self) -> ComposeResult:
        yield QueryInput(
            placeholder='Search code…  (path:GLOB lang:NAME "phrase"; ↑ previous queries)',
            id="query",
            select_on_focus=False,
        )
        with Horizontal(id="main"):
            yield ResultsList(id="results")
            yield Preview(self.live.root, id="preview")
        live = self.live
        clock = self.clock if self.show_timing else None
        yield IndexBar(
            live.root, shared=live.store.shared, index_enabled=live.index_enabled, clock=clock, id="indexbar"
        )
        yield StatusLine(self.settings.embedding.backend, show_timing=self.show_timing, id="status")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.loop.start()
        self.set_focus(self.query_box)
        self._show_mode()
        self.query_one(IndexBar).set_state("opening index…")
        self.set_class(not self.preview_visible, "-no-preview")
        tui = self.settings.tui
        if tui.remember_query and tui.history and self.state.workspace.last_query:
            self.query_box.set_text(self.state.workspace.last_query)
        self.query_one(ResultsList).set_hits([], message=EMPTY_NOTE)
        self.post_message(self.Mounted())

    def on_unmount(self) -> None:
        self.loop.stop()

    @property
    def query_box(self) -> QueryInput:
        return self.query_one("#query", QueryInput)

    # -- state ---------------------------------------------------------------------------------------

    def watch_mode(self) -> None:
        self._show_mode()
        self.state.workspace.mode = self.mode
        self._save_state()
        self._search_again()

    def watch_everywhere(self) -> None:
        self._show_mode()
        self._search_again()

    def watch_preview_visible(self, visible: bool) -> None:
        self.set_class(not visible, "-no-preview")
        if not visible and self._zone() == "preview":
            self.set_focus(self.query_one(ResultsList))
        self.state.workspace.preview = visible
        self._save_state()
        if visible:
            self.query_one(Preview).request(self.query_one(ResultsList).selected_hit)

    def watch_ready(self, ready: bool) -> None:
        if ready:
            self.request_search()

    def _show_mode(self) -> None:
        self.query_one(StatusLine).mode = f"{self.mode} · all workspaces" if self.everywhere else self.mode

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The scope letter is a command only with a shared store, and the back key only with a list to
        go back to (else each is a key for the query: backspace then deletes a letter)."""
        if action == "back":
            return bool(self._back)
        return not (action == "toggle_scope" and parameters and not self.live.store.all_workspaces)

    def _zone(self) -> str:
        focused = self.focused
        if focused is None or isinstance(focused, Input):
            return "query"
        if isinstance(focused, ResultsList):
            return "list"
        if isinstance(focused, PreviewBody):
            return "preview"
        return "other"

    # -- searching -----------------------------------------------------------------------------------

    def _search(self, query: str, limit: int, mode: str, everywhere: bool) -> SearchResponse:
        """The search loop's thread calls this."""
        return self.live.search(query, limit=limit, mode=mode, all_workspaces=everywhere, prefix=True)

    def _answered(self, answer: SearchAnswer) -> None:
        """From the search loop's thread: the answer goes to the UI thread as a message."""
        self.post_message(SearchDone(answer))

    @on(Input.Changed, "#query")
    def _query_changed(self) -> None:
        self._forget_places()
        self.request_search()

    def request_search(self) -> None:
        """Search the query in the box (an empty query clears the results at once)."""
        query = self.query_box.value
        if not query.strip():
            self.loop.forget()
            self._paint(SearchAnswer(SearchRequest(0, query, self.mode), _nothing(query, self.mode)))
            return
        if self.ready:
            self.loop.submit(query, self.mode, self.everywhere)

    def _search_again(self) -> None:
        """The same query in another mode or scope: a new answer, not a refresh of the shown one."""
        self.query_one(ResultsList).shown_query = None
        self._forget_places()
        self.request_search()

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        answer = message.answer
        if answer.request.key != (self.query_box.value, self.mode, self.everywhere):
            return
        if self._back:  # a looked-up list is shown: the answer waits under it (labels included)
            base = self._back[0]
            if answer.labels is not None and base.hits is answer.response.results:
                base.labels = answer.labels
            return
        if answer.labels is not None:
            self.query_one(ResultsList).set_labels(answer.response.results, answer.labels)
        else:
            self._paint(answer)

    def _paint(self, answer: SearchAnswer) -> None:
        resp, query = answer.response, answer.request.query
        results = self.query_one(ResultsList)
        same_query = query == results.shown_query
        cursor = self._cursor_after(results, resp.results) if same_query else 0
        labels = carried_labels(results.hits, results.labels, resp.results) if same_query else None
        note = self._empty_note(answer)
        before, after = results.selected_hit, resp.results[cursor] if resp.results else None
        if before is None or after is None or preview_key(before) != preview_key(after):
            self._forget_chosen()  # another hit: its preview lands and the names are worked out again
        results.set_hits(resp.results, cursor, note, query=query, labels=labels)
        self._looked_at = tuple(dict.fromkeys(h.path for h in resp.results[:20]))
        self.query_one(StatusLine).show_response(resp if query.strip() else None)
        preview = self.query_one(Preview)
        if not resp.results:
            preview.clear(note)
        elif self.preview_visible:
            # same query, newer index: the selection's preview at once; typing: wait for a pause
            preview.request(results.selected_hit, settle=not same_query)
        deferred, self._deferred = self._deferred, []
        for typed_against, action in deferred:
            if typed_against == query:
                action()

    def _cursor_after(self, results: ResultsList, hits: list[Hit]) -> int:
        """Where the cursor goes when the same query is answered again (a newer index version: vectors
        arrived, an edit re-ranked the list). A row the user chose (moved to, or browses from the list
        or the preview) stays selected where it moved, so what they look at and what ``e``/``d`` act on
        do not change under them; a selection left where the answer put it follows the new first row,
        as a fresh search would show it."""
        selected = results.selected_hit
        if selected is None or not (results.chosen or self._zone() in ("list", "preview")):
            return 0
        at = (selected.path, selected.start_line)
        where = [i for i, h in enumerate(hits) if (h.path, h.start_line) == at]
        return where[0] if where else min(results.cursor or 0, max(0, len(hits) - 1))

    def _empty_note(self, answer: SearchAnswer) -> str:
        resp, query = answer.response, answer.request.query
        if resp.results:
            return ""
        if not query.strip():
            return EMPTY_NOTE
        if resp.error or answer.error:
            return resp.error or answer.error or ""
        if answer.request.mode == "dense" and self.settings.embedding.backend == "none":
            return "dense mode needs an embedder (none configured)"
        return resp.no_results or "no results"  # hybrid says why nothing answers, with a hint

    def _after_typing(self, action: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``action`` once the query box has taken the keys typed before this one."""
        self.query_box.call_later(action, *args, **kwargs)

    def _when_painted(self, action: Callable[[], Any]) -> None:
        """Run ``action`` now, or once the results of the query in the box are painted."""
        query = self.query_box.value
        if query.strip() and query != self.query_one(ResultsList).shown_query:
            self._deferred.append((query, action))
        else:
            action()

    def _on_results(self, action: Callable[[], Any]) -> None:
        """A command on the results: after the keys before it, on the results they were typed against."""
        self._after_typing(self._when_painted, action)

    @on(ResultsList.Moved)
    def _moved(self) -> None:
        self._forget_chosen()
        if self.preview_visible:
            self.query_one(Preview).request(self.query_one(ResultsList).selected_hit)

    # -- the live workspace (index events are presented by the index line; here: search again) ------

    @on(IndexOpened)
    @on(IndexReloaded)
    def _index_loaded(self, message: IndexOpened | IndexReloaded) -> None:
        self.query_one(StatusLine).show_index(message.event.status)
        if self.ready:
            self.request_search()
        self.ready = True

    @on(IndexBar.RebuildWanted)
    def _rebuild_wanted(self) -> None:
        self.live.reindex(rebuild=True)

    @on(EmbedderLoaded)
    def _embedder_loaded(self) -> None:
        if self.mode != "bm25":
            self.request_search()

    def looked_at(self) -> list[str]:
        """Files of the shown results (called from indexing threads): their vectors come first."""
        return list(self._looked_at)

    # -- history -------------------------------------------------------------------------------------

    def record_query(self) -> None:
        """Add the query to the workspace history (unless ``[tui] history = false``)."""
        if self.settings.tui.history and self.state.record(
            self.query_box.value, self.settings.tui.history_size
        ):
            self._save_state()

    def remember(self) -> None:
        """On quitting: the query joins the history and is remembered as the last one."""
        self.record_query()
        if self.settings.tui.history:
            self.state.workspace.last_query = self.query_box.value.strip()
            self._save_state()

    def _save_state(self) -> None:
        try:
            self.state.save()
        except OSError as exc:
            self.notify(f"cannot save the app state: {exc.strerror or exc}", severity="warning")

    # -- commands (the key table's actions) ------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        """Next/previous result; in the preview: scroll; on an empty query: recall previous queries."""
        self._after_typing(self._move, delta, self._zone())

    def _move(self, delta: int, zone: str) -> None:
        box = self.query_box
        if zone == "preview":
            self.query_one(PreviewBody).scroll_relative(y=delta, animate=False, immediate=True)
        elif zone == "query" and (box.recalling or (delta < 0 and not box.value)):
            box.recall(self.state.workspace.history, delta)
        else:
            self._when_painted(lambda: self.query_one(ResultsList).move(delta))

    def action_page(self, direction: int) -> None:
        """PgUp/PgDn: the preview when it has focus, else the results by a page."""
        if self._zone() == "preview":
            body = self.query_one(PreviewBody)
            (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)
            return
        self._on_results(lambda: self.query_one(ResultsList).page(direction))

    def action_enter(self) -> None:
        """From the query or the list: focus the preview (the query joins the history)."""
        zone = self._zone()
        if zone == "query":
            self._after_typing(self.query_box.leave_recall)
            self._after_typing(self.record_query)
        if zone in ("query", "list"):
            self.set_focus(
                self.query_one(PreviewBody) if self.preview_visible else self.query_one(ResultsList)
            )

    def action_escape(self) -> None:
        """Back to the query; during history recall, back to the empty query."""
        self._after_typing(self.query_box.leave_recall, clear=True)
        self.set_focus(self.query_box)

    def action_clear_or_quit(self) -> None:
        """ctrl+c, as fzf: clear a non-empty query (and focus it), else quit."""
        self.set_focus(self.query_box)
        self._after_typing(self._clear_or_quit)

    async def _clear_or_quit(self) -> None:
        box = self.query_box
        if box.value:
            box.leave_recall()
            box.set_text("")
        else:
            await self.app.run_action("app.quit")

    def action_clear_query(self) -> None:
        """ctrl+u in the list or the preview: clear the query and focus it."""
        self.set_focus(self.query_box)
        self._after_typing(self.query_box.set_text, "")

    def action_focus_query(self) -> None:
        """Focus the query box."""
        self.set_focus(self.query_box)

    def action_open_editor(self) -> None:
        """Open the selected hit in $VISUAL/$EDITOR at the line the preview shows (``+LINE path``)."""
        self._on_results(self._open_editor)

    def _selected(self) -> Hit | None:
        hit = self.query_one(ResultsList).selected_hit
        if hit is None:
            self.notify("nothing selected", severity="warning")
        return hit

    def _open_editor(self) -> None:
        hit = self._selected()
        if hit is None:
            return
        cmd = editor_command(hit, self.live.root, self.query_one(Preview).line_for(hit), os.environ)
        if isinstance(cmd, str):
            self.notify(cmd, severity="warning")
            return
        self.record_query()
        try:
            with self.app.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify("cannot open an editor from this terminal", severity="warning")
        except OSError as exc:
            self.notify(f"cannot run {cmd[0]!r}: {exc.strerror or exc}", severity="error")
        self.app.refresh()

    def action_copy_location(self) -> None:
        """Copy ``path:line`` of the line the preview shows (OSC 52, works over SSH)."""
        self._on_results(self._copy_location)

    def _copy_location(self) -> None:
        hit = self._selected()
        if hit is None:
            return
        self.record_query()
        text = location_text(hit, self.live.root, self.query_one(Preview).line_for(hit))
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {text}", timeout=2)

    def action_next_match(self, direction: int) -> None:
        """Step the preview to the next (``n``) or previous (``N``) line with a query term."""
        if not self.query_one(Preview).step_match(direction):
            self.notify("no query-term matches in the preview", timeout=2)

    # -- definitions and references (d, r, back) --------------------------------------------------------

    def action_definition(self) -> None:
        """The definition of the name on the line the preview shows (several: listed)."""
        self._on_results(lambda: self._look_up("definitions"))

    def action_references(self) -> None:
        """The references of the name on the line the preview shows, listed."""
        self._on_results(lambda: self._look_up("references"))

    def _look_up(self, what: str) -> None:
        status = self.query_one(StatusLine)
        hit = self.query_one(ResultsList).selected_hit
        if not self.ready:
            status.say("the index is not loaded yet")
        elif hit is None:
            status.say(f"nothing selected: {what} of which name?")
        elif not self.live.store.symbol_graph:
            status.say(NO_GRAPH_SHORT)
        else:
            line = self._line_of(hit)
            chosen = self._chosen
            choice = None  # the name the footer shows for this line, when it was worked out for it
            if chosen is not None and chosen.line == line:
                choice = chosen.definition if what == "definitions" else chosen.references
            self._lookup_seq += 1
            status.say(f"looking up {what}…")
            self._run_lookup(self._lookup_seq, what, hit, line, choice)

    def _line_of(self, hit: Hit) -> Line:
        """The line ``d``/``r`` read for ``hit``: the one the preview shows (its code only: the names of
        its strings and comments are not candidates)."""
        preview = self.query_one(Preview)
        number = preview.line_for(hit)
        code = preview.code_line(hit, number)
        return Line(hit.path, number, code if code is not None else "", tuple(hit.query_terms))

    @work(thread=True, group="lookup")
    def _run_lookup(self, seq: int, what: str, hit: Hit, line: Line, choice: Choice | None) -> None:
        live = self.live
        if not line.code:
            line = replace(line, code=code_line_of(hit, line.number))
        if choice is None:
            chosen = choices(line, live.line_symbols)
            choice = chosen[0] if what == "definitions" else chosen[1]
        self.post_message(PlacesFound(seq, look_up(choice, line, live.definitions, live.references)))

    # -- the names d and r take, shown in the footer before either is pressed --------------------------

    @on(Preview.Landed)
    def _landed(self) -> None:
        """The preview shows a line: work out the names ``d`` and ``r`` take there (for the footer)."""
        self._forget_chosen()
        hit, shown = self.query_one(ResultsList).selected_hit, self.query_one(Preview).shown
        if (
            self.ready
            and self.live.store.symbol_graph
            and hit is not None
            and shown is not None
            and (shown.key == preview_key(hit))
        ):
            self._run_peek(self._peek_seq, hit, self._line_of(hit))

    def _forget_chosen(self) -> None:
        """The selection or the line shown changed: the footer's d / r names are stale."""
        self._peek_seq += 1
        if self._chosen is not None:
            self._chosen = None
            self.refresh_bindings()

    @work(thread=True, group="peek")
    def _run_peek(self, seq: int, hit: Hit, line: Line) -> None:
        if not line.code:
            line = replace(line, code=code_line_of(hit, line.number))
        d, r = choices(line, self.live.line_symbols)
        self.post_message(NamesChosen(seq, line, d, r))

    @on(NamesChosen)
    def _names_chosen(self, message: NamesChosen) -> None:
        if message.seq == self._peek_seq:
            self._chosen = message
            self.refresh_bindings()

    def footer_description(self, action: str) -> str | None:
        """The footer's label of ``d`` and ``r``: with the name each takes on the line the preview
        shows (``def Session``, ``refs Session``); None: the binding's own."""
        chosen = self._chosen
        if chosen is None or action not in ("screen.definition", "screen.references"):
            return None
        choice = chosen.definition if action == "screen.definition" else chosen.references
        if choice.name is None:
            return None
        name = printable(choice.name)
        name = name if len(name) <= FOOTER_NAME else name[: FOOTER_NAME - 1] + "…"
        return f"{'def' if action == 'screen.definition' else 'refs'} {name}"

    @on(PlacesFound)
    def _places_found(self, message: PlacesFound) -> None:
        if message.seq != self._lookup_seq:
            return
        places, status, results = message.places, self.query_one(StatusLine), self.query_one(ResultsList)
        if places.problem:
            status.say(places.problem)
            return
        here = [(h.path, h.start_line) for h in results.hits]
        if results.places and here == [(h.path, h.start_line) for h in places.hits]:
            status.say(f"already here: {places.summary}")
            return
        self._back.append(self._saved())
        results.set_hits(places.hits, 0, query=self.query_box.value, labels=places.labels, places=True)
        status.show_places(places.summary)
        self._show_selected()
        self.refresh_bindings()

    def _saved(self) -> SavedList:
        results, preview = self.query_one(ResultsList), self.query_one(Preview)
        hit, shown = results.selected_hit, preview.shown
        same = hit is not None and shown is not None and shown.key == preview_key(hit)
        line = shown.current_line if same and shown is not None else None
        return SavedList(results.hits, results.labels, results.places, results.cursor, results.shown_query,
                         results.message, self.query_one(StatusLine).snapshot(), line)  # fmt: skip

    def action_back(self) -> None:
        """Back to the list that d / r replaced: its rows, cursor and preview line."""
        self._after_typing(self._go_back)

    def _go_back(self) -> None:
        if not self._back:
            self.query_one(StatusLine).say("nothing to go back to")
            return
        saved = self._back.pop()
        self._lookup_seq += 1
        results = self.query_one(ResultsList)
        results.set_hits(saved.hits, saved.cursor, saved.message, query=saved.query, labels=saved.labels,
                         places=saved.places)  # fmt: skip
        self.query_one(StatusLine).restore(saved.status)
        self._show_selected(saved.line, saved.message)
        self.refresh_bindings()

    def _show_selected(self, line: int | None = None, note: str = "") -> None:
        preview, hit = self.query_one(Preview), self.query_one(ResultsList).selected_hit
        if hit is None:
            preview.clear(note)
        elif self.preview_visible:
            preview.request(hit, current=line)

    def _forget_places(self) -> None:
        """A new query, mode or scope: the looked-up lists are gone (and a lookup on its way dropped)."""
        if self._back or self.query_one(StatusLine).places:
            self._back.clear()
            self.refresh_bindings()
        self._lookup_seq += 1

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

    def action_toggle_preview(self) -> None:
        """Hide or show the preview; the list takes the full width (remembered)."""
        self.preview_visible = not self.preview_visible

    def action_history(self) -> None:
        """Pick a previous query from a searchable list."""

        def picked(query: str | None) -> None:
            if query is not None:
                self.query_box.set_text(query)
                self.set_focus(self.query_box)

        self.app.push_screen(HistoryScreen(self.state.workspace.history), picked)

    def action_write_results(self) -> None:
        """Write the current results as ``path:line:col:text`` lines (vim's :cfile) and copy them."""
        self._on_results(self._write_results)

    def _write_results(self) -> None:
        hits = self.query_one(ResultsList).hits
        if not hits:
            self.notify("no results to write", severity="warning")
            return
        self.record_query()
        text = vimgrep_text(hits, self.live.root)
        target = self.state.results_file()
        try:
            write_atomically(target, text)
        except OSError as exc:
            self.notify(f"cannot write {target}: {exc.strerror or exc}", severity="error")
            return
        self.app.copy_to_clipboard(text)
        # a toast is at most 60 cells or half the screen, less its padding and edge
        width = max(20, min(60, self.app.size.width // 2) - 3)
        where = wrap_path(home_path(target), width)
        self.notify(f"{len(hits)} results (vim :cfile, copied) in\n{where}", timeout=8)

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
            self.app.install_screen(AskScreen(self.live, self.settings.answer), "ask")
        screen = self.app.get_screen("ask")
        if isinstance(screen, AskScreen):
            screen.ask_about(self.query_box.value)
        self.app.push_screen("ask")

    def action_help(self) -> None:
        """Show the keys in effect."""
        live = keys.live_keys(getattr(self.app, "keymap", {}))
        self.app.push_screen(HelpScreen(keys.help_rows(lambda c: live[c.id])))


def carried_labels(
    old: list[Hit], labels: list[str | None] | None, new: list[Hit]
) -> list[str | None] | None:
    """The labels of ``old`` rows for the same hits among ``new`` (a newer index answering the same query:
    its rows keep their labels instead of showing their chunks' symbols until they are labelled again);
    None when nothing carries over."""
    if labels is None:
        return None
    known = {_label_key(h): label for h, label in zip(old, labels, strict=False)}
    carried = [known.get(_label_key(h), h.symbol) for h in new]
    return carried if any(k in known for k in map(_label_key, new)) else None


def _label_key(hit: Hit) -> tuple[object, ...]:
    """What a row's label depends on (the definition at the hit's best line)."""
    return (hit.path, hit.start_line, hit.end_line, hit.symbol, hit.text, tuple(hit.query_terms),
            hit.best_piece, hit.workspace)  # fmt: skip


def _nothing(query: str, mode: str) -> SearchResponse:
    return SearchResponse(query=query, results=[], mode=mode)
