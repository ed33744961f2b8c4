"""The browser: the results list beside (or above) the preview, and what passes between them.

It shows each answer in both (the rows, the status line's count, the preview of the selected hit once
typing pauses), follows the cursor with the preview, has the footer work out the names ``d`` and ``r``
take on the line the preview lands on, and runs ``d``/``r`` (in a worker, :mod:`aide_tui.tui.lookup`)
and the back key. The state lives on the widgets that show it: the list holds its rows, the query they
answer, the lists ``d``/``r`` replaced and the latest lookup; the preview the line it shows; the
footer the names; the status line what it says of the list.

A command on results typed before the results of the current query are painted waits for them ("typed
against" those results, :meth:`ResultsList.when_showing`) instead of acting on the old ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Input

from aide_tui.core.search.response import Hit
from aide_tui.host.workspace import Workspace
from aide_tui.tui.lookup import NO_GRAPH_SHORT, Choice, Line, choices, look_up
from aide_tui.tui.messages import PlacesFound
from aide_tui.tui.search_loop import SearchAnswer
from aide_tui.tui.widgets.footer import LookupFooter
from aide_tui.tui.widgets.preview import Preview, PreviewBody, code_line_of, preview_key
from aide_tui.tui.widgets.query import QueryInput
from aide_tui.tui.widgets.results import ResultsList, SavedList
from aide_tui.tui.widgets.status import StatusLine

EMPTY_NOTE = "Type to search; results update as you type."


def focus_zone(focused: Widget | None) -> str:
    """Where the focus is: ``query``, ``list``, ``preview`` or ``other``."""
    if focused is None or isinstance(focused, Input):
        return "query"
    if isinstance(focused, ResultsList):
        return "list"
    if isinstance(focused, PreviewBody):
        return "preview"
    return "other"


def empty_note(answer: SearchAnswer, embedder: str) -> str:
    """What the list says when ``answer`` has no rows ('' when it has); ``embedder``: the configured
    backend."""
    resp, query = answer.response, answer.request.query
    if resp.results:
        return ""
    if not query.strip():
        return EMPTY_NOTE
    if resp.error or answer.error:
        return resp.error or answer.error or ""
    if answer.request.mode == "dense" and embedder == "none":
        return "dense mode needs an embedder (none configured)"
    return resp.no_results or "no results"  # hybrid says why nothing answers, with a hint


class Browser(Horizontal):
    """The results list and the preview (see the module docstring). ``ready``: an index was opened;
    ``preview_visible``: the preview is shown (both bound to the screen's)."""

    ready: var[bool] = var(False)
    preview_visible: var[bool] = var(True)

    def __init__(
        self,
        live: Workspace,
        box: QueryInput,
        status: StatusLine,
        footer: LookupFooter,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.live = live
        self.box = box
        self.status = status
        self.footer = footer
        self._looked_at: tuple[str, ...] = ()
        # held, not queried: a preview timer that fires while the app closes still finds them
        self._results = ResultsList(id="results")
        self._preview = Preview(self.live.root, id="preview")

    def compose(self) -> ComposeResult:
        yield self._results
        yield self._preview

    def on_mount(self) -> None:
        self.results.set_hits([], message=EMPTY_NOTE)
        self.preview.hold = lambda: self.box.value != self.results.shown_query

    def typed(self) -> None:
        """The query box changed: a preview waiting for typing to pause waits on."""
        self.results.forget_places()
        self.preview.postpone()

    @property
    def results(self) -> ResultsList:
        return self._results

    @property
    def preview(self) -> Preview:
        return self._preview

    def looked_at(self) -> list[str]:
        """Files of the shown results (called from indexing threads): their vectors come first."""
        return list(self._looked_at)

    # -- answers -------------------------------------------------------------------------------------

    def take_answer(self, answer: SearchAnswer, note: str) -> None:
        """An answer to the query in the box: shown, or its labels put on its rows; while a looked-up
        list is shown it waits under it (labels included)."""
        results = self.results
        if results.back:
            base = results.back[0]
            if answer.labels is not None and base.hits is answer.response.results:
                base.labels, base.labelled = answer.labels, True
        elif answer.labels is not None:
            results.set_labels(answer.response.results, answer.labels)
        else:
            self.show_answer(answer, note)

    def show_answer(self, answer: SearchAnswer, note: str) -> None:
        """Show ``answer`` (``note`` when it has no rows) in the list, the status line and the preview;
        then the commands typed against it run."""
        resp, query = answer.response, answer.request.query
        results, preview = self.results, self.preview
        same_query = query == results.shown_query
        before = results.selected_hit
        keep = focus_zone(self.screen.focused) in ("list", "preview")
        results.show_answer(resp.results, query, note, keep_choice=keep)
        after = results.selected_hit
        if before is None or after is None or preview_key(before) != preview_key(after):
            self.footer.forget()  # another hit: its preview lands and the names are worked out again
        self._looked_at = tuple(dict.fromkeys(h.path for h in resp.results[:20]))
        self.status.show_response(resp if query.strip() else None)
        if not resp.results:
            self.footer.forget(clear=True)
            preview.clear(note, settle=not same_query and bool(query.strip()))
        elif self.preview_visible:
            # same query, newer index: the selection's preview at once; typing: wait for a pause
            preview.request(results.selected_hit, settle=not same_query)
        results.run_waiting()

    def start_over(self) -> None:
        """The same query in another mode or scope: its next answer is a new one, not a refresh."""
        self.results.shown_query = None
        self.results.forget_places()

    def when_typed(self, command: Callable[[], Any]) -> None:
        """A command on the results: after the keys before it, on the results they were typed against."""
        self.box.call_later(lambda: self.results.when_showing(self.box.value, command))

    def on_selection(self, command: Callable[[Hit, int], Any]) -> None:
        """:meth:`when_typed` with the selected hit and the line the preview shows of it."""

        def run() -> None:
            hit = self.results.selected_hit
            if hit is None:
                self.notify("nothing selected", severity="warning")
            else:
                command(hit, self.preview.line_for(hit))

        self.when_typed(run)

    # -- the preview follows the list; the footer names what d / r take ---------------------------------

    @on(ResultsList.Moved)
    def _moved(self) -> None:
        self.footer.forget()
        if self.preview_visible:
            self.preview.request(self.results.selected_hit)

    def watch_preview_visible(self, visible: bool) -> None:
        if visible and self.is_mounted:
            self.preview.request(self.results.selected_hit)

    @on(Preview.Landed)
    def _landed(self) -> None:
        """The preview shows a line: the names ``d`` and ``r`` take there are worked out."""
        hit, shown = self.results.selected_hit, self.preview.shown
        if (
            self.ready
            and self.live.store.symbol_graph
            and hit is not None
            and shown is not None
            and (shown.key == preview_key(hit))
        ):
            self.footer.work_out(hit, self.preview.lookup_line(hit), self.live.line_symbols)
        else:
            self.footer.forget(clear=True)

    # -- definitions and references (d, r, back) --------------------------------------------------------

    def look_up(self, what: str) -> None:
        """The ``definitions`` or ``references`` of the name on the line the preview shows, listed."""
        status, results = self.status, self.results
        hit = results.selected_hit
        if not self.ready:
            status.say("the index is not loaded yet")
        elif hit is None:
            status.say(f"nothing selected: {what} of which name?")
        elif not self.live.store.symbol_graph:
            status.say(NO_GRAPH_SHORT)
        else:
            line = self.preview.lookup_line(hit)
            names = self.footer.names_for(line)  # the name the footer shows, when worked out for this line
            choice = (
                None if names is None else names.definition if what == "definitions" else names.references
            )
            results.lookup += 1
            status.say(f"looking up {what}…")
            self._look_up(results.lookup, what, hit, line, choice)

    @work(thread=True, group="lookup")
    def _look_up(self, seq: int, what: str, hit: Hit, line: Line, choice: Choice | None) -> None:
        live = self.live
        if not line.code:
            line = replace(line, code=code_line_of(hit, line.number))
        if choice is None:
            chosen = choices(line, live.line_symbols)
            choice = chosen[0] if what == "definitions" else chosen[1]
        self.post_message(PlacesFound(seq, look_up(choice, line, live.definitions, live.references)))

    @on(PlacesFound)
    def _places_found(self, message: PlacesFound) -> None:
        results, status, places = self.results, self.status, message.places
        if message.seq != results.lookup:
            return
        if places.problem:
            status.say(places.problem)
            return
        here = [(h.path, h.start_line) for h in results.hits]
        if results.places and here == [(h.path, h.start_line) for h in places.hits]:
            status.say(f"already here: {places.summary}")
            return
        results.show_places(places.hits, places.labels, self.box.value, self._saved())
        status.show_places(places.summary)
        self._show_selected()

    def _saved(self) -> SavedList:
        hit, shown = self.results.selected_hit, self.preview.shown
        same = hit is not None and shown is not None and shown.key == preview_key(hit)
        line = shown.current_line if same and shown is not None else None
        return self.results.saved(self.status.snapshot(), line)

    def go_back(self) -> None:
        """Back to the list that d / r replaced: its rows, cursor and preview line."""
        saved = self.results.go_back()
        if saved is None:
            self.status.say("nothing to go back to")
            return
        self.status.restore(saved.status)
        self._show_selected(saved.line, saved.message)

    def _show_selected(self, line: int | None = None, note: str = "") -> None:
        preview, hit = self.preview, self.results.selected_hit
        if hit is None:
            preview.clear(note)
        elif self.preview_visible:
            preview.request(hit, current=line)
