"""The main screen: it owns the search state (query, mode, painted results, selection, history recall)
and routes every key itself, in the order the keys arrive.

Key order matters: Textual hands a key to the focused widget's own queue, so a key typed after
``enter`` could still land in the query box, and ``down`` could act before the query box took the
letters typed just before it. The app therefore passes each key here first (``route_key``, on the
app's single queue): letters are inserted into the query at once, focus moves at once, and a key that
acts on results (``down``, ``e``, ``y``) typed before the results of the current query are painted
waits for them ("typed against" those results) instead of acting on the old ones.
"""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType, NoBinding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input

from aide_tui.core.appstate import AppState
from aide_tui.core.config import Settings
from aide_tui.core.errors import IndexMissing, IndexProblem
from aide_tui.core.search.hitlines import hit_best_line, hit_file, hit_root, shown_path, vimgrep_line
from aide_tui.core.search.response import Hit, SearchResponse
from aide_tui.core.status import IndexStatus
from aide_tui.host.workspace import Workspace
from aide_tui.tui import keys
from aide_tui.tui.messages import (
    EmbedderLoaded,
    IndexCancelled,
    IndexCommitted,
    IndexDone,
    IndexFailed,
    IndexOpened,
    IndexProgress,
    IndexReloaded,
    IndexReloadFailed,
    SearchDone,
    WatchStopped,
    WorkspaceChanged,
)
from aide_tui.tui.screens.modals import ConfirmScreen, HistoryScreen
from aide_tui.tui.widgets import HelpScreen, IndexBar, Preview, PreviewBody, ResultsList, StatusLine
from aide_tui.tui.widgets.preview import PreviewData, preview_key, render_preview

MODES = ("hybrid", "bm25", "dense")
PREVIEW_SETTLE = 0.12  # seconds without new results before a typing-driven preview is rendered


class PreviewReady(Message):
    """A preview rendered by the worker."""

    def __init__(self, data: PreviewData) -> None:
        super().__init__()
        self.data = data


class SearchThread:
    """One long-lived thread that runs searches handed to it (no thread start per keystroke)."""

    def __init__(self, run: Callable[[int, str, str, bool], None]) -> None:
        self.run = run
        self.jobs: queue.SimpleQueue[tuple[int, str, str, bool] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="aide-search", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def submit(self, job: tuple[int, str, str, bool]) -> None:
        self.jobs.put(job)

    def stop(self) -> None:
        self.jobs.put(None)

    def _loop(self) -> None:
        while (job := self.jobs.get()) is not None:
            self.run(*job)


class QueryInput(Input):
    """The query box (its printable keys are inserted by the screen's key routing)."""


class SearchScreen(Screen[None]):
    """Query, results beside (or above) the preview, index line, status line, footer."""

    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings())
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (16, "-tall")]

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
        self.limit = limit
        self.show_timing = show_timing
        self.clock = clock
        self.has_embedder = settings.embedding.backend != "none"
        self.modes = MODES if self.has_embedder else ("bm25", "dense")
        mode = state.workspace.mode or settings.search.mode
        self.mode = mode if mode in self.modes else "bm25"
        self.preview_visible = state.workspace.preview
        self.everywhere = False  # search every workspace of the shared collection (Milvus store)
        # Observable search state (tests and benchmarks read it).
        self.painted_query: str | None = None  # the query whose results are on screen
        self.response: SearchResponse | None = None
        self.ready = False  # the index was opened (or found missing): searches can run
        self.embedder_ready = False
        self.embedder_error: str | None = None
        self.embedder_id: str | None = None
        self.index_runs_done = 0  # finished runs whose index is loaded and whose results are painted
        self._runs_finished = 0
        self._index_degraded: str | None = None
        self._resp_degraded: str | None = None
        self._seq = 0
        self._in_flight = False
        self._wanted = False
        self._deferred: list[tuple[str, Callable[[], Any]]] = []
        self._history_pos: int | None = None
        self._recalled: str | None = None
        self._preview_in_flight = False
        self._preview_job: tuple[Hit, int | None, Any] | None = None
        self.last_results_file: Path | None = None
        self.painted_before: str | None = None
        self._looked_at: tuple[str, ...] = ()
        self._rebuilt_unreadable = False
        self._preview_timer: Timer | None = None
        self._searcher = SearchThread(self._search)

    def on_unmount(self) -> None:
        self._searcher.stop()

    # -- widgets -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield QueryInput(
            placeholder='Search code…  (path:GLOB lang:NAME "phrase"; ↑ previous queries)',
            id="query",
            select_on_focus=False,
        )
        with Horizontal(id="main"):
            yield ResultsList(id="results")
            yield Preview(id="preview")
        yield IndexBar(id="indexbar")
        yield StatusLine(id="status")
        yield Footer()

    @property
    def query_input(self) -> QueryInput:
        return self.query_one("#query", QueryInput)

    @property
    def results(self) -> ResultsList:
        return self.query_one(ResultsList)

    @property
    def preview(self) -> Preview:
        return self.query_one(Preview)

    @property
    def index_bar(self) -> IndexBar:
        return self.query_one(IndexBar)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def on_mount(self) -> None:
        self._searcher.start()
        self.set_focus(self.query_input)
        self.status.show_timing = self.show_timing
        self._show_mode()
        self.status.embedder = self.settings.embedding.backend
        self.index_bar.set_state("opening index…")
        self.set_class(not self.preview_visible, "-no-preview")
        if self.settings.tui.remember_query and self.settings.tui.history and self.state.workspace.last_query:
            self.query_input.value = self.state.workspace.last_query
            self.query_input.cursor_position = len(self.query_input.value)
        self.results.set_hits([], message="Type to search; results update as you type.")

    # -- key routing (called by the app for every key, in arrival order) ---------------------------

    def _focus_zone(self) -> str:
        focused = self.focused
        if focused is None or isinstance(focused, Input):
            return "query"
        if focused is self.results:
            return "list"
        if isinstance(focused, PreviewBody) or focused in self.preview.walk_children():
            return "preview"
        return "other"

    async def route_key(self, event: events.Key) -> bool:
        """Handle ``event`` now if it is ours; False lets Textual dispatch it as usual."""
        zone = self._focus_zone()
        if zone == "other":
            return False
        key = event.key
        command = keys.ANY_KEYS.get(key)
        if command is None and zone != "query":
            command = keys.BROWSE_KEYS.get(key)
            if command is not None and command.action in keys.SHARED_STORE_ACTIONS and not self.live.shared:
                command = None  # a letter for the query when there is no shared store to act on
        if command is not None:
            await self.run_action(command.action)
            return True
        query = self.query_input
        if event.is_printable and event.character:
            if zone != "query":
                self.set_focus(query)
            selection = query.selection
            if selection.is_empty:
                query.insert_text_at_cursor(event.character)
            else:
                query.replace(event.character, *selection)
            return True
        if zone != "query" and key in ("backspace", "ctrl+h"):
            self.set_focus(query)
            query.action_delete_left()
            return True
        if zone == "query" and (action := _input_action(query, key)) is not None:
            # the query box's own editing keys (backspace, ctrl+u, arrows, ...) run here too: left to
            # Textual they would wait in the box's queue while the letters typed after them went in
            await query.run_action(action)
            return True
        return False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Footer: keys that only act in the list or preview are shown only there."""
        if action in keys.BROWSE_ACTIONS:
            return self._focus_zone() in ("list", "preview")
        return True

    @on(events.DescendantFocus)
    def _focus_moved(self) -> None:
        self.refresh_bindings()

    # -- searching ---------------------------------------------------------------------------------

    def _pending(self) -> bool:
        """Whether the query on screen has no painted results yet (keys on results must wait)."""
        return self.query_input.value != self.painted_query and bool(self.query_input.value.strip())

    def _when_painted(self, action: Callable[[], Any]) -> None:
        """Run ``action`` now, or once the results of the current query are painted."""
        if self._pending():
            self._deferred.append((self.query_input.value, action))
        else:
            action()

    @on(Input.Changed, "#query")
    def _query_changed(self, event: Input.Changed) -> None:
        current = event.value == self.query_input.value  # not a stale event of an earlier recall
        if self._history_pos is not None and current and event.value != self._recalled:
            self._history_pos = None  # an edit ends history recall
        self.request_search()

    def request_search(self) -> None:
        """Search the current query now; if a search is running, right after it (latest query wins)."""
        self._seq += 1
        query = self.query_input.value
        if not query.strip():
            empty = SearchResponse(query=query, results=[], mode=self.mode)
            self._paint(SearchDone(self._seq, query, self.mode, empty))
            return
        if not self.ready:
            return  # the opened index starts the search
        if self._in_flight:
            self._wanted = True
            return
        self._in_flight, self._wanted = True, False
        self._searcher.submit((self._seq, query, self.mode, self.everywhere))

    def _search(self, seq: int, query: str, mode: str, everywhere: bool) -> None:
        """Answer one query (the search thread) and post the answer to the screen."""
        resp: SearchResponse | None = None
        error, missing = None, False
        try:
            resp = self.live.search(query, limit=self.limit, mode=mode, all_workspaces=everywhere)
        except IndexMissing:
            error, missing = "no index yet: indexing…", True
        except IndexProblem as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - the search thread must outlive any bad answer
            error = f"search failed: {exc.__class__.__name__}: {exc}"
        if resp is None:
            resp = SearchResponse(query=query, results=[], mode=mode)
        self.post_message(SearchDone(seq, query, mode, resp, error, missing, everywhere))

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        self._in_flight = False
        if (message.query, message.mode, message.everywhere) == (
            self.query_input.value,
            self.mode,
            self.everywhere,
        ):
            self._paint(message)
        if self._wanted or (self.query_input.value != self.painted_query and self.query_input.value.strip()):
            self._wanted = False
            self.request_search()

    def _paint(self, message: SearchDone) -> None:
        resp, query = message.response, message.query
        results = self.results
        cursor = 0
        selected = results.selected_hit
        if query == self.painted_query and selected is not None:  # same query, newer index: stay put
            at = (selected.path, selected.start_line)
            where = [i for i, h in enumerate(resp.results) if (h.path, h.start_line) == at]
            cursor = where[0] if where else min(results.cursor or 0, max(0, len(resp.results) - 1))
        self.painted_before = self.painted_query
        note = self._empty_note(query, message)
        results.set_hits(resp.results, cursor, note)
        self.painted_query = query
        self.response = resp
        self._looked_at = tuple(dict.fromkeys(h.path for h in resp.results[:20]))
        self._resp_degraded = resp.degraded_reason if resp.degraded else None
        self.status.query_error = resp.error
        self.status.results = len(resp.results) if query.strip() else None
        self.status.took_ms = resp.took_ms if query.strip() else None
        self._update_degraded()
        if not resp.results:
            self.preview.clear(note)
        elif query == self.painted_before:
            self._request_preview()  # same query, newer index: the selection's preview at once
        else:
            self._preview_soon()  # typing: wait for a pause, the next key makes this preview moot
        deferred, self._deferred = self._deferred, []
        for typed_against, action in deferred:
            if typed_against == query:
                action()

    def _empty_note(self, query: str, message: SearchDone) -> str:
        if message.response.results:
            return ""
        if not query.strip():
            return "Type to search; results update as you type."
        if message.response.error:
            return message.response.error
        if message.error:
            return message.error
        if message.mode == "dense" and not self.has_embedder:
            return "dense mode needs an embedder (none configured)"
        return "no results"

    # -- preview -----------------------------------------------------------------------------------

    @on(ResultsList.Moved)
    def _moved(self, message: ResultsList.Moved) -> None:
        if self._preview_timer is None:
            self._request_preview()

    def _preview_soon(self) -> None:
        """Render the preview once typing pauses for :data:`PREVIEW_SETTLE` seconds (the lexer would
        otherwise compete with the next keystroke's frame for the interpreter)."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_SETTLE, self._preview_settled)

    def _preview_settled(self) -> None:
        self._preview_timer = None
        self._request_preview()

    def _request_preview(self, current: int | None = None) -> None:
        """Render the selected hit's preview unless it is already shown (one render at a time; the
        latest request wins)."""
        hit = self.results.selected_hit
        if hit is None or not self.preview_visible:
            return
        shown = self.preview.shown
        if current is None and shown is not None and shown.key == preview_key(hit):
            return
        window = shown.window if shown is not None and current is not None else None
        self._preview_job = (hit, current, window)
        if not self._preview_in_flight:
            self._next_preview()

    def _next_preview(self) -> None:
        job, self._preview_job = self._preview_job, None
        if job is None:
            return
        hit, current, window = job
        styles = self.preview.styles_for_render(self.app.current_theme.dark)
        width = max(self.preview.body.size.width, 40)
        self._preview_in_flight = True
        self._render_preview(hit, styles, width, current, window)

    @work(thread=True, group="preview")
    def _render_preview(self, hit: Hit, styles: Any, width: int, current: int | None, window: Any) -> None:
        self.post_message(PreviewReady(render_preview(self.live.root, hit, styles, width, current, window)))

    @on(PreviewReady)
    def _preview_ready(self, message: PreviewReady) -> None:
        self._preview_in_flight = False
        hit = self.results.selected_hit
        if self._preview_job is None and hit is not None and preview_key(hit) == message.data.key:
            self.preview.show(message.data)
        self._next_preview()

    # -- index events ------------------------------------------------------------------------------

    def _apply_status(self, st: IndexStatus) -> None:
        status = self.status
        status.files, status.chunks, status.embedded = st.files, st.chunks, st.embedded
        status.vectors_missing = st.vectors_missing
        status.size_bytes = st.size_bytes
        status.last_indexed = str(st.last_indexed)[11:19] if st.last_indexed else None
        if self.embedder_id is None:
            status.embedder = st.embedder if st.embedder != "none" else self.settings.embedding.backend
        self._index_degraded = st.degraded_reason
        self._update_degraded()

    def _update_degraded(self) -> None:
        self.status.degraded_reason = self.embedder_error or self._resp_degraded or self._index_degraded

    def _show_mode(self) -> None:
        self.status.mode = f"{self.mode} · all workspaces" if self.everywhere else self.mode

    @on(IndexOpened)
    def _opened(self, message: IndexOpened) -> None:
        ev = message.event
        self.ready = True
        self._apply_status(ev.status)
        if ev.missing:
            self.index_bar.set_state("no index yet", "building…" if self.live.index_enabled else "")
        elif (
            ev.error and self.live.shared and not ev.corrupt
        ):  # unreachable or busy: a rebuild would not help
            self.index_bar.set_state("error", ev.error, error=True)
        elif ev.error:
            self._rebuild_unreadable(ev.error)
        elif self.index_bar.total == 0 and self.index_bar.state.startswith("opening"):
            self.index_bar.set_state("ready")
        self.request_search()

    @on(IndexProgress)
    def _progress(self, message: IndexProgress) -> None:
        self.index_bar.progress(message.event, self.clock() if self.show_timing else None)

    @on(IndexCommitted)
    def _committed(self, message: IndexCommitted) -> None:
        pass  # the live workspace reloads it; IndexReloaded follows

    @on(IndexDone)
    def _done(self, message: IndexDone) -> None:
        ev = message.event
        self._runs_finished += 1
        took = f"in {ev.seconds:.1f}s" if self.show_timing else ""
        self.index_bar.set_state("ready", took)

    @on(IndexFailed)
    def _failed(self, message: IndexFailed) -> None:
        self.index_bar.set_state("error", message.event.message, error=True)

    @on(IndexCancelled)
    def _cancelled(self, message: IndexCancelled) -> None:
        self.index_bar.set_state("cancelled", message.event.message)

    @on(IndexReloaded)
    def _reloaded(self, message: IndexReloaded) -> None:
        self.ready = True
        self._apply_status(message.event.status)
        if self.index_bar.state in ("no index yet", "opening index…"):
            self.index_bar.set_state("ready")
        self.index_runs_done = self._runs_finished
        self.request_search()

    @on(IndexReloadFailed)
    def _reload_failed(self, message: IndexReloadFailed) -> None:
        reason = f"cannot load the new index: {message.event.message}"
        if self.live.shared:  # a shared store's rows are not ours to drop on a failed read
            self.index_bar.set_state("error", reason, error=True)
            return
        self._rebuild_unreadable(reason)

    def _rebuild_unreadable(self, reason: str) -> None:
        """An index on disk that cannot be read is rebuilt once per session (the reader's message
        promises it); after that, or without indexing, the error stays on screen."""
        if self.live.index_enabled and not self._rebuilt_unreadable:
            self._rebuilt_unreadable = True
            self.index_bar.set_state("rebuilding", reason.removesuffix("; rebuilding"))
            self.live.reindex(rebuild=True)
            return
        self.index_bar.set_state("error", reason, error=True)

    @on(EmbedderLoaded)
    def _embedder_loaded(self, message: EmbedderLoaded) -> None:
        ev = message.event
        self.embedder_ready = ev.error is None and ev.embedder_id is not None
        self.embedder_error = ev.error
        self.embedder_id = ev.embedder_id
        if ev.embedder_id:
            self.status.embedder = ev.embedder_id
        self._update_degraded()
        if self.mode != "bm25":
            self.request_search()

    @on(WorkspaceChanged)
    def _workspace_changed(self, message: WorkspaceChanged) -> None:
        n = len(message.event.paths)
        self.index_bar.set_state("reindexing", f"{n} changed file{'s' if n != 1 else ''}")

    @on(WatchStopped)
    def _watch_stopped(self, message: WatchStopped) -> None:
        self.index_bar.set_state("watch error", message.event.message, error=True)

    def looked_at(self) -> list[str]:
        """Files of the shown results (called from indexing threads): their vectors come first."""
        return list(self._looked_at)

    # -- history -----------------------------------------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        return self.settings.tui.history

    def record_query(self, query: str | None = None) -> None:
        """Add the query to the workspace history (unless ``[tui] history = false``)."""
        if not self.history_enabled:
            return
        query = self.query_input.value if query is None else query
        if self.state.record(query, self.settings.tui.history_size):
            self._save_state()

    def _save_state(self) -> None:
        try:
            self.state.save()
        except OSError as exc:
            self.notify(f"cannot save the app state: {exc.strerror or exc}", severity="warning")

    def _recall(self, delta: int) -> None:
        """Shell-style recall: ``delta`` -1 = older, +1 = newer (past the newest: empty query)."""
        history = self.state.workspace.history
        if not history:
            return
        pos = len(history) - 1 if self._history_pos is None else self._history_pos + delta
        if self._history_pos is None and delta > 0:
            return
        if pos >= len(history):
            self._history_pos, self._recalled = None, None
            self._set_query("")
            return
        pos = max(0, pos)
        self._history_pos, self._recalled = pos, history[pos]
        self._set_query(history[pos])

    def _set_query(self, text: str) -> None:
        query = self.query_input
        query.value = text
        query.cursor_position = len(text)

    # -- actions -----------------------------------------------------------------------------------

    def action_quit(self) -> None:
        """Quit (the query joins the history and is remembered as the last one)."""
        self.record_query()
        if self.history_enabled:
            self.state.workspace.last_query = self.query_input.value.strip()
            self._save_state()
        self.app.exit()

    def action_move(self, delta: int) -> None:
        """Next/previous result; in the preview: scroll; on an empty query: recall previous queries."""
        zone = self._focus_zone()
        if zone == "preview":
            self.preview.body.scroll_relative(y=delta, animate=False, immediate=True)
            return
        if zone == "query" and (self._history_pos is not None or (delta < 0 and not self.query_input.value)):
            self._recall(delta)
            return
        self._when_painted(lambda: self.results.move(delta))

    def action_page(self, direction: int) -> None:
        """PgUp/PgDn: the preview when it has focus, else the results by a page."""
        if self._focus_zone() == "preview":
            body = self.preview.body
            (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)
            return
        self._when_painted(lambda: self.results.page(direction))

    def action_enter(self) -> None:
        """From the query or the list: focus the preview (the query joins the history)."""
        zone = self._focus_zone()
        if zone == "query":
            self._history_pos = None
            self.record_query()
        if zone in ("query", "list"):
            self.set_focus(self.preview.body if self.preview_visible else self.results)

    def action_escape(self) -> None:
        """Back to the query; during history recall, back to the empty query."""
        if self._history_pos is not None:
            self._history_pos, self._recalled = None, None
            self._set_query("")
        self.set_focus(self.query_input)

    def action_focus_query(self) -> None:
        """Focus the query box."""
        self.set_focus(self.query_input)

    def action_focus_results(self) -> None:
        """Focus the results list."""
        self.set_focus(self.results)

    def action_focus_preview(self) -> None:
        """Focus the preview."""
        if self.preview_visible:
            self.set_focus(self.preview.body)

    def current_line(self, hit: Hit) -> int:
        """The line ``e``/``y`` use: where the preview landed (or stepped to), else the best line."""
        shown = self.preview.shown
        if shown is not None and shown.key == preview_key(hit):
            return shown.current_line
        return hit_best_line(hit).line

    def action_open_editor(self) -> None:
        """Open the selected hit in $VISUAL/$EDITOR at its best line (``+LINE path``)."""
        self._when_painted(self._open_editor)

    def _open_editor(self) -> None:
        from textual.app import SuspendNotSupported

        hit = self.results.selected_hit
        if hit is None:
            self.notify("nothing selected", severity="warning")
            return
        root = hit_root(hit, self.live.root)
        if root is None or (root != self.live.root and hit_file(hit, self.live.root) is None):
            self.notify(f"{shown_path(hit)} is not on this machine", severity="warning")
            return
        self.record_query()
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        cmd = [*shlex.split(editor), f"+{self.current_line(hit)}", str(root / hit.path)]
        try:
            with self.app.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify("cannot open an editor from this terminal", severity="warning")
        except OSError as exc:
            self.notify(f"cannot run {editor!r}: {exc.strerror or exc}", severity="error")
        self.app.refresh()

    def action_copy_location(self) -> None:
        """Copy ``path:line`` of the selected hit's best line (OSC 52, works over SSH)."""
        self._when_painted(self._copy_location)

    def _copy_location(self) -> None:
        hit = self.results.selected_hit
        if hit is None:
            self.notify("nothing selected", severity="warning")
            return
        self.record_query()
        root = hit_root(hit, self.live.root)
        path = hit.path if root == self.live.root else str(root / hit.path) if root else shown_path(hit)
        text = f"{path}:{self.current_line(hit)}"
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {text}", timeout=2)

    def action_next_match(self, direction: int) -> None:
        """Step the preview to the next (``n``) or previous (``N``) line with a query term."""
        shown = self.preview.shown
        if shown is None or not shown.match_lines:
            self.notify("no query-term matches in the preview", timeout=2)
            return
        lines = shown.match_lines
        cur = shown.current_line
        if direction > 0:
            nxt = next((n for n in lines if n > cur), lines[0])
        else:
            nxt = next((n for n in reversed(lines) if n < cur), lines[-1])
        self._request_preview(current=nxt)

    def action_cycle_mode(self) -> None:
        """Cycle the search mode and search again (remembered for this workspace)."""
        modes = self.modes
        self.mode = modes[(modes.index(self.mode) + 1) % len(modes)] if self.mode in modes else modes[0]
        self._show_mode()
        self.state.workspace.mode = self.mode
        self._save_state()
        self.notify(f"search mode: {self.mode}", timeout=2)
        self.painted_query = None
        self.request_search()

    def action_toggle_scope(self) -> None:
        """Search this workspace or every workspace of the shared collection (Milvus store)."""
        if not self.live.shared:
            self.notify('all workspaces needs a shared store: store.backend = "milvus" (see the README)',
                        severity="warning")  # fmt: skip
            return
        self.everywhere = not self.everywhere
        self._show_mode()
        self.notify("searching all workspaces" if self.everywhere else "searching this workspace", timeout=2)
        self.painted_query = None
        self.request_search()

    def action_toggle_preview(self) -> None:
        """Hide or show the preview; the list takes the full width (remembered)."""
        self.preview_visible = not self.preview_visible
        self.set_class(not self.preview_visible, "-no-preview")
        if not self.preview_visible and self._focus_zone() == "preview":
            self.set_focus(self.results)
        self.state.workspace.preview = self.preview_visible
        self._save_state()
        if self.preview_visible:
            self._request_preview()

    def action_history(self) -> None:
        """Pick a previous query from a searchable list."""

        def picked(query: str | None) -> None:
            if query is not None:
                self._set_query(query)
                self.set_focus(self.query_input)

        self.app.push_screen(HistoryScreen(self.state.workspace.history), picked)

    def action_write_results(self) -> None:
        """Write the current results as ``path:line:col:text`` lines (vim's :cfile) and copy them."""
        self._when_painted(self._write_results)

    def _write_results(self) -> None:
        hits = self.results.hits
        if not hits:
            self.notify("no results to write", severity="warning")
            return
        self.record_query()
        roots = [hit_root(h, self.live.root) for h in hits]
        lines = [
            vimgrep_line(str(r / h.path) if r else shown_path(h), h) for r, h in zip(roots, hits, strict=True)
        ]
        text = "\n".join(lines) + "\n"
        target = self.state.results_file()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {target}: {exc.strerror or exc}", severity="error")
            return
        self.app.copy_to_clipboard(text)
        self.last_results_file = target
        self.notify(f"{len(lines)} results (vim :cfile, copied) in {target}", timeout=8)

    def action_reindex(self) -> None:
        """Update the index now."""
        self.index_bar.set_state("reindexing", "requested")
        self.live.reindex()

    def action_rebuild(self) -> None:
        """Rebuild the index from scratch, after a confirmation (the running job is cancelled)."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.index_bar.set_state("rebuilding", "from scratch")
                self.live.reindex(rebuild=True)

        self.app.push_screen(
            ConfirmScreen("Rebuild the index from scratch?\nVectors are recomputed (the cache is kept)."),
            answered,
        )

    def action_help(self) -> None:
        """Show the keys."""
        self.app.push_screen(HelpScreen())


def _input_action(box: Input, key: str) -> str | None:
    """The action ``box`` binds to ``key`` (cursor moves and edits), or None."""
    try:
        bindings = box._bindings.get_bindings_for_key(key)
    except NoBinding:
        return None
    return bindings[0].action if bindings else None
