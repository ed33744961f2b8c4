"""What the app remembers of a workspace between runs (the core's :class:`~aide_tui.core.appstate.AppState`):
the search mode, whether the preview is shown, the query history and the last query. A state file that
cannot be written is said (``warn``), never raised: the app goes on."""

from __future__ import annotations

from collections.abc import Callable

from aide_tui.core.appstate import AppState
from aide_tui.core.config import TuiSettings


class WorkspaceMemory:
    """The workspace's remembered state, with the ``[tui]`` rules (``history = false``: no query kept)."""

    def __init__(self, state: AppState, tui: TuiSettings, warn: Callable[[str], None]) -> None:
        self.state = state
        self.tui = tui
        self.warn = warn

    @property
    def history(self) -> list[str]:
        """Previous queries, oldest first."""
        return self.state.workspace.history

    @property
    def last_query(self) -> str:
        """The query to reopen with ('' unless ``[tui] remember_query`` and a history)."""
        tui = self.tui
        return (self.state.workspace.last_query or "") if tui.remember_query and tui.history else ""

    def record(self, query: str) -> None:
        """Add ``query`` to the history (unless ``[tui] history = false``)."""
        if self.tui.history and self.state.record(query, self.tui.history_size):
            self.save()

    def remember(self, query: str) -> None:
        """On quitting: ``query`` joins the history and is remembered as the last one."""
        self.record(query)
        if self.tui.history:
            self.state.workspace.last_query = query.strip()
            self.save()

    def keep_mode(self, mode: str) -> None:
        self.state.workspace.mode = mode
        self.save()

    def keep_preview(self, visible: bool) -> None:
        self.state.workspace.preview = visible
        self.save()

    def save(self) -> None:
        try:
            self.state.save()
        except OSError as exc:
            self.warn(f"cannot save the app state: {exc.strerror or exc}")
