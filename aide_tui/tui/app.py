"""The aide-tui Textual app: search as you type, preview at the hit, the index kept live underneath.

The app is thin: a :class:`~aide_tui.host.workspace.Workspace` opens, indexes, reloads and watches the
workspace, and its events (from background threads) become typed messages posted to the widget that
presents them (index events to the index line, the embedder's readiness to the status line); they
bubble on to the :class:`~aide_tui.tui.screens.search.SearchScreen`, which searches again when the
index changed. The UI thread only renders: searching runs on the search loop's thread, previews in
thread workers, indexing in a subprocess. The user's ``[keys]`` table becomes the app's keymap.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

import aide_tui
from aide_tui.core.appstate import AppState
from aide_tui.core.config import Settings
from aide_tui.core.live import LiveEvent
from aide_tui.host.workspace import Workspace
from aide_tui.tui import keys
from aide_tui.tui.messages import EmbedderLoaded, live_message
from aide_tui.tui.screens.search import MODES, SearchScreen
from aide_tui.tui.widgets import IndexBar, StatusLine

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
        sharing a process). ConfigError when the ``[keys]`` table names an unknown command or a bad key."""
        super().__init__()
        self.keymap = keys.check_keymap(settings.keys.as_dict())
        self.calm_gc = calm_gc
        self.root = Path(root)
        self.settings = settings
        self.app_state = AppState(self.root)
        self.live = Workspace(
            self.root, settings, self._live_event, watch=watch, index=start_index, front_end="app"
        )
        self.main_screen = SearchScreen(
            self.live, settings, self.app_state, limit=limit, show_timing=show_timing, clock=clock
        )
        self._targets: tuple[IndexBar, StatusLine] | None = None  # who presents the live events
        self._closing_live = False
        if self.app_state.theme and self.app_state.theme in self.available_themes:
            self.theme = self.app_state.theme

    # -- lifecycle ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def on_mount(self) -> None:
        self.set_keymap(self.keymap)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        if self.calm_gc:
            calm_garbage_collector()
            favour_the_ui_thread()

    @on(SearchScreen.Mounted)
    def _screen_mounted(self) -> None:
        """The main screen is up: its widgets present the live workspace's events from now on."""
        screen = self.main_screen
        self._targets = (screen.query_one(IndexBar), screen.query_one(StatusLine))
        self.live.priority = screen.browser.looked_at  # the files of the shown results are embedded first
        self.live.start()

    @on(IndexBar.RebuildWanted)
    def _rebuild_wanted(self) -> None:
        """The index on disk cannot be read: the live workspace rebuilds it."""
        self.live.reindex(rebuild=True)

    def on_unmount(self) -> None:
        self._closing_live = True
        self.live.close()

    def _live_event(self, event: LiveEvent) -> None:
        """From the live workspace's threads: the event's message goes to the widget presenting it."""
        message = live_message(event)
        if self._closing_live or message is None or self._targets is None:
            return
        bar, status = self._targets
        (status if isinstance(message, EmbedderLoaded) else bar).post_message(message)

    def _theme_changed(self, theme: Any) -> None:
        try:
            self.app_state.save_theme(str(theme.name))
        except OSError:
            pass

    async def action_quit(self) -> None:
        """Quit (ctrl+q, Textual's binding and the key table's); the query joins the history and is
        remembered as the last one."""
        self.main_screen.query_box.remember()
        self.exit()

    def get_key_display(self, binding: Binding) -> str:
        """Keys as the key table writes them (``F10``, ``^r``, ``↓``), remapped ones included."""
        return binding.key_display or keys.key_display(binding.key)

    # -- palette -----------------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Command palette entries from the key table (with the keys in effect), then Textual's own."""
        main = self.main_screen
        live = keys.live_keys(self.keymap)
        for command in keys.COMMANDS:
            if not command.palette or (
                command.action in keys.SHARED_STORE_ACTIONS and not self.live.store.all_workspaces
            ):
                continue
            shown = keys.keys_display(live[command.id])
            action = command.action

            def run(action: str = action) -> None:
                self.call_later(main.run_action, action)

            yield SystemCommand(command.palette, f"{command.help} ({shown})" if shown else command.help, run)
        yield from super().get_system_commands(screen)
