"""The aide-tui Textual app: search as you type, preview at the hit, the index kept live underneath.

The app is thin: a :class:`~aide_tui.host.workspace.Workspace` opens, indexes, reloads and watches the
workspace, and its events (from background threads) become typed messages for the
:class:`~aide_tui.tui.screens.search.SearchScreen`, which owns the search state. The UI thread only
renders: searching and preview rendering run in thread workers, indexing in a subprocess.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

import aide_tui
from aide_tui.core.appstate import AppState
from aide_tui.core.config import Settings
from aide_tui.core.live import LiveEvent
from aide_tui.core.search.response import SearchResponse
from aide_tui.host.workspace import Workspace
from aide_tui.tui.keys import COMMANDS
from aide_tui.tui.messages import live_message
from aide_tui.tui.screens.search import MODES, SearchScreen
from aide_tui.tui.widgets import IndexBar, Preview, ResultsList, StatusLine

__all__ = ["MODES", "AideApp", "css_path"]


def css_path() -> Path:
    """``app.tcss`` from the installed package (wheel) or the repository's top-level ``styles/``."""
    packaged = Path(aide_tui.__file__).parent / "styles" / "app.tcss"
    if packaged.exists():
        return packaged
    return Path(aide_tui.__file__).resolve().parent.parent / "styles" / "app.tcss"


GC_THRESHOLDS = (10_000, 10, 10)
SWITCH_INTERVAL = 0.001  # seconds a thread may hold the GIL while another waits (Python's default: 0.005)


def calm_garbage_collector() -> None:
    """Keep the cyclic garbage collector from stalling keystrokes: the objects alive after start-up
    (Textual, the lexers, the app) are frozen out of its scans, and it runs less often. Profiled:
    full collections of the unfrozen heap took up to 400 ms of a typing session on a loaded machine.
    Reference counting still frees everything that is not part of a cycle."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def favour_the_ui_thread() -> None:
    """A preview rendered in a worker thread holds the interpreter for up to the switch interval each
    time the UI thread wants it back (handling one key wants it several times): 5 ms → 1 ms."""
    sys.setswitchinterval(SWITCH_INTERVAL)


class AideApp(App[None]):
    """Search a workspace as you type; the index builds and follows file changes in the background."""

    CSS_PATH = css_path()
    TITLE = "aide-tui"
    # Shown in the footer wherever the focus is (Textual's own ctrl+q binding is hidden).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "quit", key_display="^q", priority=True),
    ]

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
        calm_gc: bool = False,
    ) -> None:
        """``show_timing=False`` hides times, durations, rates and sizes (deterministic screenshots);
        ``start_index=False`` only opens the existing index (no indexing run at start); ``calm_gc``
        tunes the process-wide garbage collector and GIL switch interval (the real app, not tests
        sharing a process)."""
        super().__init__()
        self.calm_gc = calm_gc
        self.root = Path(root)
        self.settings = settings
        self.app_state = AppState(self.root)
        self.live = Workspace(
            self.root, settings, self._live_event, watch=watch, index=start_index, role="app"
        )
        self.main_screen = SearchScreen(
            self.live, settings, self.app_state, limit=limit, show_timing=show_timing, clock=clock
        )
        self.live.priority = self.main_screen.looked_at
        self._closing_live = False
        if self.app_state.theme and self.app_state.theme in self.available_themes:
            self.theme = self.app_state.theme

    # -- lifecycle ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.live.start()
        if self.calm_gc:
            calm_garbage_collector()
            favour_the_ui_thread()

    def on_unmount(self) -> None:
        self._closing_live = True
        self.live.close()

    def _live_event(self, event: LiveEvent) -> None:
        """From the live workspace's threads: hand the event to the screen as a typed message."""
        if self._closing_live:
            return
        message = live_message(event)
        if message is not None:
            self.main_screen.post_message(message)

    def _theme_changed(self, theme: Any) -> None:
        try:
            self.app_state.save_theme(str(theme.name))
        except OSError:
            pass

    async def on_event(self, event: events.Event) -> None:
        """Keys reach the main screen's router first, in the order they arrive (see SearchScreen)."""
        if (
            isinstance(event, events.Key)
            and not event.is_forwarded
            and self.screen is self.main_screen
            and await self.main_screen.route_key(event)
        ):
            self.app_focus = True
            return
        await super().on_event(event)

    # -- what tests and benchmarks observe -----------------------------------------------------------

    @property
    def query_input(self) -> Any:
        return self.main_screen.query_input

    @property
    def results(self) -> ResultsList:
        return self.main_screen.results

    @property
    def preview(self) -> Preview:
        return self.main_screen.preview

    @property
    def index_bar(self) -> IndexBar:
        return self.main_screen.index_bar

    @property
    def status(self) -> StatusLine:
        return self.main_screen.status

    @property
    def results_query(self) -> str | None:
        return self.main_screen.painted_query

    @property
    def last_response(self) -> SearchResponse | None:
        return self.main_screen.response

    @property
    def mode(self) -> str:
        return self.main_screen.mode

    @property
    def ready(self) -> bool:
        return self.main_screen.ready

    @property
    def embedder_ready(self) -> bool:
        return self.main_screen.embedder_ready

    @property
    def embedder_error(self) -> str | None:
        return self.main_screen.embedder_error

    @property
    def index_runs_done(self) -> int:
        return self.main_screen.index_runs_done

    # -- palette -----------------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Command palette entries from the key table, then Textual's own (themes, screenshot…)."""
        main = self.main_screen
        for command in COMMANDS:
            if command.palette and command.action != "quit":
                action = command.action

                def run(action: str = action) -> None:
                    self.call_later(main.run_action, action)

                yield SystemCommand(command.palette, command.help, run)
        yield from super().get_system_commands(screen)
