"""The aide-tui Textual app: search as you type, preview, background indexing and file watching.

Threading model: the UI thread only renders. Embedder loading, index loading, searching, preview
rendering and file watching run in thread workers; indexing runs in a subprocess driven by
:class:`~aide_tui.core.service.IndexService`, whose events arrive as :class:`IndexEvent` messages.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, OptionList

import aide_tui
from aide_tui.core.config import Settings
from aide_tui.core.events import Cancelled, Done, Event, Failed, Progress
from aide_tui.core.search import Hit, Searcher, SearchResponse
from aide_tui.core.service import IndexService
from aide_tui.core.store import IndexError_, IndexMissing
from aide_tui.tui.widgets import HelpScreen, IndexBar, Preview, PreviewBody, ResultsList, StatusLine
from aide_tui.tui.widgets.indexbar import StatusInfo
from aide_tui.tui.widgets.keys import BROWSE_BINDINGS
from aide_tui.tui.widgets.preview import PreviewData, render_preview

MODES = ("hybrid", "bm25", "dense")
DEBOUNCE = 0.1  # seconds between the last keystroke and the search
PREVIEW_DELAY = 0.05  # seconds the selection must stay put before the preview is rendered


def css_path() -> Path:
    """``app.tcss`` from the installed package (wheel) or the repository's top-level ``styles/``."""
    packaged = Path(aide_tui.__file__).parent / "styles" / "app.tcss"
    if packaged.exists():
        return packaged
    return Path(aide_tui.__file__).resolve().parent.parent / "styles" / "app.tcss"


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


class IndexEvent(Message):
    """An event from the indexing service, posted from its thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        """A queued progress event is superseded by a newer one (a flood never clogs the UI)."""
        return (
            isinstance(message, IndexEvent)
            and isinstance(self.event, Progress)
            and isinstance(message.event, Progress)
        )


class FilesChanged(Message):
    """The watcher saw a batch of relevant changes."""

    def __init__(self, paths: set[str]) -> None:
        super().__init__()
        self.paths = paths


class WatchFailed(Message):
    """The watcher stopped with an error."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class SearchScreen(Screen[None]):
    """The main screen: query, results beside (or above) the preview, progress, status, footer.

    The letter keys are screen bindings: while the query has focus the input consumes printable keys,
    so they only act when the results list or the preview is focused.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: the query box would otherwise take ↑/↓ (scroll), ctrl+k (kill line) and enter.
        Binding("down", "app.move(1)", "select", key_display="↑↓^n^k", priority=True),
        Binding("up", "app.move(-1)", "select", show=False, priority=True),
        Binding("ctrl+n,ctrl+j", "app.move(1)", "next", show=False, priority=True),
        Binding("ctrl+k", "app.move(-1)", "previous", show=False, priority=True),
        Binding("enter", "app.focus_preview", "preview", key_display="⏎", priority=True),
        Binding("pageup", "app.page(-1)", "page up", show=False, priority=True),
        Binding("pagedown", "app.page(1)", "page down", show=False, priority=True),
        Binding("escape", "app.focus_query", "query", key_display="esc"),
        *BROWSE_BINDINGS,
        Binding("f1", "app.help", "help"),
        Binding("ctrl+q", "app.quit", "quit", key_display="^q"),
    ]
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (100, "-wide")]

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="Search code…  (path:GLOB lang:NAME filter)", id="query", select_on_focus=False
        )
        with Horizontal(id="main"):
            yield ResultsList(id="results")
            yield Preview(id="preview")
        yield IndexBar(id="indexbar")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        app = self.app
        assert isinstance(app, AideApp)
        app.screen_ready()

    def on_unmount(self) -> None:
        app = self.app
        assert isinstance(app, AideApp)
        app._shutting_down = True


class AideApp(App[None]):
    """Search a workspace as you type; the index builds and follows file changes in the background."""

    CSS_PATH = css_path()
    TITLE = "aide-tui"

    def __init__(
        self,
        root: Path,
        settings: Settings,
        watch: bool = True,
        *,
        show_timing: bool = True,
        start_index: bool = True,
        clock: Callable[[], float] = time.monotonic,
        limit: int = 50,
    ) -> None:
        """``show_timing=False`` hides times, durations, rates and sizes (deterministic screenshots);
        ``start_index=False`` only opens the existing index (no indexing run at start)."""
        super().__init__()
        self.root = Path(root)
        self.settings = settings
        self.watch_enabled = watch
        self.show_timing = show_timing
        self.start_index = start_index
        self.clock = clock
        self.limit = limit
        self.mode = settings.search.mode
        self.searcher: Searcher | None = None
        self.embedder: Any = None
        self.embedder_error: str | None = None
        self.embedder_id: str | None = None
        self._resp_degraded: str | None = None
        self._index_degraded: str | None = None
        self.index_error: str | None = None
        self.status_info = StatusInfo(mode=self.mode)
        self.service = IndexService(self.root, settings, self._on_service_event)
        self.main_screen = SearchScreen()
        # Observable state (tests, benchmark): the query whose results are painted, and the response.
        self.results_query: str | None = None
        self.last_response: SearchResponse | None = None
        self.index_runs_done = 0  # "done" events fully applied (searcher reloaded, results refreshed)
        self.ready = False  # startup worker finished (searcher exists, even if the index is missing)
        self.embedder_ready = False
        self._seq = 0
        self._preview_seq = 0
        self._debounce: Timer | None = None
        self._preview_timer: Timer | None = None
        self._stop_watch = threading.Event()
        self._shutting_down = False

    # -- lifecycle ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def screen_ready(self) -> None:
        """Start the background work once the main screen's widgets exist."""
        self.query_input.focus()
        self.status.show(self.status_info)
        self.index_bar.show_state("opening index…")
        self._startup()
        if self.start_index:
            self.service.request()
        if self.watch_enabled:
            self._watch()

    def on_unmount(self) -> None:
        self._shutting_down = True
        self._stop_watch.set()
        self.service.close(timeout=3.0)

    @property
    def stopping(self) -> bool:
        """Whether the app is exiting (late worker results are dropped)."""
        return self._shutting_down or self._exit or self._closing

    def _to_ui(self, callback: Callable[..., Any], *args: Any) -> None:
        """From a worker thread: run ``callback`` on the UI thread unless the app is shutting down."""
        if self.stopping:
            return
        try:
            self.call_from_thread(self._guarded, callback, *args)
        except RuntimeError:  # the event loop is gone (app exited while the worker ran)
            pass

    def _guarded(self, callback: Callable[..., Any], *args: Any) -> None:
        if self.stopping:
            return
        try:
            callback(*args)
        except NoMatches:  # widgets already removed during shutdown
            if not self.stopping:
                raise

    # -- widgets -----------------------------------------------------------------------------------

    @property
    def query_input(self) -> Input:
        return self.main_screen.query_one("#query", Input)

    @property
    def results(self) -> ResultsList:
        return self.main_screen.query_one(ResultsList)

    @property
    def preview(self) -> Preview:
        return self.main_screen.query_one(Preview)

    @property
    def index_bar(self) -> IndexBar:
        return self.main_screen.query_one(IndexBar)

    @property
    def status(self) -> StatusLine:
        return self.main_screen.query_one(StatusLine)

    # -- startup: embedder + index, off the UI thread ----------------------------------------------

    @work(thread=True, group="startup")
    def _startup(self) -> None:
        from aide_tui.core.embed.base import EmbedderError
        from aide_tui.core.embed.factory import make_embedder

        try:
            embedder = make_embedder(self.settings)
            error = None
        except EmbedderError as exc:
            embedder, error = None, str(exc)
        searcher = Searcher(self.root, self.settings, None, error)  # BM25 until the embedder is up
        try:
            searcher.refresh()
            missing = None
        except IndexError_ as exc:
            missing = exc
        status = self._read_status()
        self._warm_up()
        self._to_ui(self._startup_done, searcher, missing, status, error)
        if embedder is None:
            return
        try:
            if hasattr(embedder, "load"):
                embedder.load()  # builtin: ~1 s of weights loading
            else:
                _ = embedder.dim  # HTTP: one probe request tells whether the server answers
            emb_id = embedder.id
        except EmbedderError as exc:
            self._to_ui(self._embedder_done, None, str(exc), None)
            return
        self._to_ui(self._embedder_done, embedder, None, emb_id)

    @staticmethod
    def _warm_up() -> None:
        """Import the lexers now so the first preview is not slowed by it (worker thread)."""
        from rich.syntax import Syntax

        Syntax.guess_lexer("warm.py", "def f():\n    pass\n")

    def _startup_done(
        self, searcher: Searcher, missing: IndexError_ | None, status: dict[str, Any], error: str | None
    ) -> None:
        self.ready = True
        self.embedder_error = error
        if self.index_runs_done == 0:  # a finished reindex may already have installed a newer index
            self.searcher = searcher
            self._apply_status(status)
        if missing is not None:
            if isinstance(missing, IndexMissing):
                self.index_bar.show_state("no index yet", "building…" if self.start_index else "")
            else:
                self.index_bar.show_state("error", str(missing), error=True)
        elif not self.service.running:
            self.index_bar.done_state()
        self._search_now()

    def _embedder_done(self, embedder: Any, error: str | None, emb_id: str | None) -> None:
        self.embedder_ready = embedder is not None
        self.embedder = embedder
        self.embedder_error = error
        self.embedder_id = emb_id
        if self.searcher is not None:
            self.searcher.embedder = embedder
            self.searcher.embedder_error = error
        if emb_id is not None:
            self._refresh_status(embedder=emb_id)
        self._update_degraded()
        self._search_now()

    def _read_status(self) -> dict[str, Any]:
        """Index counts for the status line (worker thread: reads the manifest)."""
        from aide_tui.core.status import read_status

        st = read_status(self.root, self.settings.embedding.backend).to_json()
        st["size"] = st["size_bytes"]
        return st

    def _apply_status(self, st: dict[str, Any], done_reason: str | None = None) -> None:
        """Show index counts; ``done_reason`` is the last indexing run's degraded reason."""
        backend = self.settings.embedding.backend
        reason = done_reason
        if reason is None and not self.service.running:
            reason = st.get("degraded_reason")
        self._index_degraded = reason
        written = st.get("last_indexed")
        self._refresh_status(
            files=int(st.get("files") or 0),
            chunks=int(st.get("chunks") or 0),
            embedded=int(st.get("embedded") or 0),
            embedder=self.embedder_id or str(st.get("embedder") or backend),
            last_indexed=(str(written)[11:19] if written else None) if self.show_timing else None,
            size=_human_size(st["size"]) if self.show_timing and st.get("size") else None,
        )
        self._update_degraded()

    def _update_degraded(self) -> None:
        reason = self.embedder_error or self._resp_degraded or self._index_degraded
        self._refresh_status(degraded_reason=reason)

    def _refresh_status(self, **changes: Any) -> None:
        self.status_info = replace(self.status_info, **changes)
        self.status.show(self.status_info)

    # -- searching ---------------------------------------------------------------------------------

    @on(Input.Changed, "#query")
    def _query_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE, self._search_now)

    @on(Input.Submitted, "#query")
    def _query_submitted(self) -> None:
        self.action_focus_preview()

    def _search_now(self) -> None:
        """Start a search for the current query (a newer search makes older results stale)."""
        if self.stopping:
            return
        self._seq += 1
        try:
            query = self.query_input.value
        except NoMatches:  # the timer fired while the screen was being torn down
            return
        if not query.strip():
            self._paint(self._seq, query, SearchResponse(query=query, results=[], mode=self.mode), None)
            return
        if self.searcher is None:
            return  # the startup worker runs the query once the searcher exists
        self._search(self._seq, query, self.mode, self.searcher)

    @work(thread=True, exclusive=True, group="search")
    def _search(self, seq: int, query: str, mode: str, searcher: Searcher) -> None:
        try:
            resp = searcher.search(query, limit=self.limit, mode=mode)
            note = None
        except IndexMissing:
            resp, note = SearchResponse(query=query, results=[], mode=mode), "no index yet: indexing…"
        except IndexError_ as exc:
            resp, note = SearchResponse(query=query, results=[], mode=mode), str(exc)
        self._to_ui(self._paint, seq, query, resp, note)

    def _paint(self, seq: int, query: str, resp: SearchResponse, note: str | None) -> None:
        if seq != self._seq:
            return  # stale: a newer query is in flight
        self.last_response = resp
        self.results.show_hits(resp.results)
        self.results_query = query
        self._resp_degraded = resp.degraded_reason if resp.degraded else None
        self._refresh_status(
            results=len(resp.results) if query.strip() else None,
            took_ms=resp.took_ms if self.show_timing and query.strip() else None,
        )
        self._update_degraded()
        if not resp.results:
            if not query.strip():
                message = "Type to search; results update as you type."
            elif note:
                message = note
            elif mode_needs_embedder(resp.mode) and self.settings.embedding.backend == "none":
                message = "dense mode needs an embedder (none configured)"
            else:
                message = "no results"
            self.preview.clear(message)
        else:
            self._schedule_preview()

    # -- preview -----------------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._schedule_preview()

    def _schedule_preview(self) -> None:
        """Render the preview shortly after the selection settles: typing and fast scrolling repaint
        the list first and never queue a preview per keystroke."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DELAY, self._preview_selected)

    def _preview_selected(self) -> None:
        if self.stopping:
            return
        try:
            self._update_preview(self.results.selected_hit)
        except NoMatches:  # the timer fired while the screen was being torn down
            pass

    def _update_preview(self, hit: Hit | None) -> None:
        if hit is None:
            return
        shown = self.preview.shown
        if shown is not None and (shown.path, shown.start_line, shown.end_line) == (
            hit.path,
            hit.start_line,
            hit.end_line,
        ):
            return
        self._preview_seq += 1
        code = self.preview.query_one(PreviewBody)
        hit_style = code.get_component_rich_style("preview--hit")
        marker = code.get_component_rich_style("preview--marker")
        theme = "ansi_dark" if self.current_theme.dark else "ansi_light"
        width = max(code.size.width, 40)
        self._render_preview(self._preview_seq, hit, hit_style, marker, theme, width)

    @work(thread=True, exclusive=True, group="preview")
    def _render_preview(
        self, seq: int, hit: Hit, hit_style: Any, marker: Any, theme: str, width: int
    ) -> None:
        data = render_preview(self.root, hit, hit_style, marker, theme, width)
        self._to_ui(self._show_preview, seq, data)

    def _show_preview(self, seq: int, data: PreviewData) -> None:
        if seq == self._preview_seq:
            self.preview.show(data)

    # -- indexing ----------------------------------------------------------------------------------

    def _on_service_event(self, event: Event) -> None:
        """Called from the service's thread: hand over to the UI thread as a message."""
        if not self.stopping:
            self.post_message(IndexEvent(event))

    @on(IndexEvent)
    def _index_event(self, message: IndexEvent) -> None:
        if self.stopping:
            return
        event = message.event
        if isinstance(event, Progress):
            self.index_bar.progress(event, self.clock() if self.show_timing else None)
        elif isinstance(event, Done):
            self.index_error = None
            reason = (event.degraded_reason or "embedder unavailable") if event.degraded else None
            took = f"in {event.seconds:.1f}s" if self.show_timing else ""
            self.index_bar.done_state(took)
            self._reload_index(reason)
        elif isinstance(event, Failed):
            self.index_error = event.message
            self.index_bar.show_state("error", self.index_error, error=True)
        elif isinstance(event, Cancelled):
            self.index_bar.show_state("cancelled", event.message)

    @work(thread=True, exclusive=True, group="reload")
    def _reload_index(self, done_reason: str | None) -> None:
        """Load the new index generation into a fresh searcher (in-flight searches keep the old one)."""
        searcher = Searcher(self.root, self.settings, self.embedder, self.embedder_error)
        try:
            searcher.refresh()
        except IndexError_ as exc:
            self._to_ui(self.index_bar.show_state, "error", str(exc), error=True)
            return
        status = self._read_status()
        self._to_ui(self._reloaded, searcher, status, done_reason)

    def _reloaded(self, searcher: Searcher, status: dict[str, Any], done_reason: str | None) -> None:
        searcher.embedder, searcher.embedder_error = self.embedder, self.embedder_error
        self.searcher = searcher
        self._apply_status(status, done_reason)
        self.index_runs_done += 1
        self._search_now()

    # -- watching ----------------------------------------------------------------------------------

    @work(thread=True, group="watch")
    def _watch(self) -> None:
        """Watch the workspace (a thread: filtering thousands of paths must not stall the UI)."""
        from watchfiles import watch

        from aide_tui.core.watch import MAX_GROUP_MS, QUIET_MS, ChangeFilter, changed_paths

        filt = ChangeFilter(self.root, self.settings)
        try:
            for changes in watch(
                self.root,
                watch_filter=None,
                debounce=MAX_GROUP_MS,
                step=QUIET_MS,
                stop_event=self._stop_watch,
                rust_timeout=1000,
                yield_on_timeout=False,
                raise_interrupt=False,
            ):
                paths = changed_paths(filt, changes)
                if paths:
                    self.post_message(FilesChanged(paths))
        except Exception as exc:  # noqa: BLE001 - any watcher failure goes to the status line
            if not self._stop_watch.is_set():
                self.post_message(WatchFailed(f"file watching stopped: {exc}"))

    @on(FilesChanged)
    def _files_changed(self, message: FilesChanged) -> None:
        if self.stopping:
            return
        n = len(message.paths)
        self.index_bar.show_state("reindexing", f"{n} changed file{'s' if n != 1 else ''}")
        self.service.request(priority=self._looked_at())

    @on(WatchFailed)
    def _watch_failed(self, message: WatchFailed) -> None:
        if self.stopping:
            return
        self.index_bar.show_state("watch error", message.message, error=True)

    # -- actions -----------------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        """Move the result selection."""
        self.results.move(delta)

    def action_page(self, direction: int) -> None:
        """PgUp/PgDn: scroll the preview when it has focus, else move the selection by a page."""
        body = self.main_screen.query_one(PreviewBody)
        if self.focused is body:
            (body.scroll_page_down if direction > 0 else body.scroll_page_up)()
        elif self.results.hits:
            (self.results.action_page_down if direction > 0 else self.results.action_page_up)()

    def action_focus_query(self) -> None:
        """Focus the query box."""
        self.query_input.focus()

    def action_focus_preview(self) -> None:
        """Focus the preview (to scroll it or act on the hit)."""
        self.main_screen.query_one(PreviewBody).focus()

    def action_focus_results(self) -> None:
        """Focus the results list."""
        self.results.focus()

    def action_cycle_mode(self) -> None:
        """Cycle the search mode hybrid → bm25 → dense and search again."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)] if self.mode in MODES else MODES[0]
        self._refresh_status(mode=self.mode)
        self.notify(f"search mode: {self.mode}", timeout=2)
        self._search_now()

    def action_reindex(self) -> None:
        """Update the index now."""
        self.index_bar.show_state("reindexing", "requested")
        self.service.request(priority=self._looked_at())

    def _looked_at(self) -> list[str]:
        """Files in the visible results: their vectors are computed first when indexing."""
        try:
            return list(dict.fromkeys(h.path for h in self.results.hits[:20]))
        except NoMatches:
            return []

    def action_rebuild(self) -> None:
        """Rebuild the index from scratch (the workspace config is kept)."""
        self.index_bar.show_state("rebuilding", "from scratch")
        self.service.request(rebuild=True)

    def action_copy_location(self) -> None:
        """Copy ``path:line`` of the selected hit (OSC 52, works over SSH)."""
        hit = self.results.selected_hit
        if hit is None:
            self.notify("nothing selected", severity="warning")
            return
        text = f"{hit.path}:{hit.start_line}"
        self.copy_to_clipboard(text)
        self.notify(f"copied {text}", timeout=2)

    def action_open_editor(self) -> None:
        """Open the selected hit in $VISUAL/$EDITOR at its line (``+LINE path``)."""
        from textual.app import SuspendNotSupported

        hit = self.results.selected_hit
        if hit is None:
            self.notify("nothing selected", severity="warning")
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        cmd = [*shlex.split(editor), f"+{hit.start_line}", str(self.root / hit.path)]
        try:
            with self.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify("cannot open an editor from this terminal", severity="warning")
        except OSError as exc:
            self.notify(f"cannot run {editor!r}: {exc.strerror or exc}", severity="error")
        self.refresh()

    def action_help(self) -> None:
        """Show the keys."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Command palette entries: every action of the app, then Textual's own."""
        yield SystemCommand("Search mode: cycle", "hybrid → bm25 → dense", self.action_cycle_mode)
        yield SystemCommand("Reindex now", "update the index incrementally", self.action_reindex)
        yield SystemCommand(
            "Rebuild index", "from scratch; the workspace config is kept", self.action_rebuild
        )
        yield SystemCommand("Open in editor", "open the selected hit in $EDITOR", self.action_open_editor)
        yield SystemCommand("Copy location", "copy path:line of the selected hit", self.action_copy_location)
        yield SystemCommand("Focus query", "back to the query box", self.action_focus_query)
        yield SystemCommand("Focus preview", "scroll the preview", self.action_focus_preview)
        yield SystemCommand("Focus results", "browse the results list", self.action_focus_results)
        yield SystemCommand("Help: keys", "list every key", self.action_help)
        yield from super().get_system_commands(screen)


def mode_needs_embedder(mode: str) -> bool:
    """Whether ``mode`` can only answer with vectors."""
    return mode == "dense"
