"""Typed messages: the live workspace's events (posted from its threads), search and lookup answers.

Every message is a dataclass; :func:`live_message` wraps a core event into its message. A queued
:class:`IndexProgress` is replaced by a newer one, so a flood of progress never clogs the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from aide_tui.core.events import Cancelled, Committed, Done, Failed, Progress
from aide_tui.core.live import (
    EmbedderReady,
    FilesChanged,
    LiveEvent,
    Opened,
    Reloaded,
    ReloadFailed,
    WatchFailed,
)
from aide_tui.tui.lookup import Choice, Line, Places
from aide_tui.tui.search_loop import SearchAnswer


@dataclass
class IndexProgress(Message):
    """Scanning or embedding progress."""

    event: Progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IndexProgress)


@dataclass
class IndexCommitted(Message):
    """A new index version is on disk (the app reloads it; :class:`IndexReloaded` follows)."""

    event: Committed


@dataclass
class IndexDone(Message):
    """An indexing run finished."""

    event: Done


@dataclass
class IndexFailed(Message):
    """An indexing run stopped with an error."""

    event: Failed


@dataclass
class IndexCancelled(Message):
    """An indexing run was cancelled."""

    event: Cancelled


@dataclass
class IndexOpened(Message):
    """The index was opened at start (or found missing / unreadable)."""

    event: Opened


@dataclass
class IndexReloaded(Message):
    """The searcher now answers from a newly committed version."""

    event: Reloaded


@dataclass
class IndexReloadFailed(Message):
    """A committed version could not be loaded; searches keep the previous one."""

    event: ReloadFailed


@dataclass
class EmbedderLoaded(Message):
    """The query embedder is ready (or failed: ``event.error``)."""

    event: EmbedderReady


@dataclass
class WorkspaceChanged(Message):
    """The watcher saw changes; a reindex was requested."""

    event: FilesChanged


@dataclass
class WatchStopped(Message):
    """File watching stopped with an error."""

    event: WatchFailed


@dataclass
class SearchDone(Message):
    """The search loop's answer (still wanted when it was sent)."""

    answer: SearchAnswer


@dataclass
class PlacesFound(Message):
    """The answer of ``d``/``r`` (request ``seq``: the screen drops one that a newer key overtook)."""

    seq: int
    places: Places


@dataclass
class NamesChosen(Message):
    """The names ``d`` and ``r`` take on ``line`` (request ``seq``: an older one is dropped)."""

    seq: int
    line: Line
    definition: Choice
    references: Choice


_WRAP: dict[type, type[Message]] = {
    Progress: IndexProgress,
    Committed: IndexCommitted,
    Done: IndexDone,
    Failed: IndexFailed,
    Cancelled: IndexCancelled,
    Opened: IndexOpened,
    Reloaded: IndexReloaded,
    ReloadFailed: IndexReloadFailed,
    EmbedderReady: EmbedderLoaded,
    FilesChanged: WorkspaceChanged,
    WatchFailed: WatchStopped,
}


def live_message(event: LiveEvent) -> Message | None:
    """The message for a live workspace event (None for an unknown type)."""
    cls = _WRAP.get(type(event))
    return cls(event) if cls is not None else None  # type: ignore[call-arg]
