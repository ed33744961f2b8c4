"""Indexing events as types, shared by the indexer, the CLI (``index --progress``), the indexing service,
the app and ``serve`` (Server-Sent Events).

Each event is a small dataclass; ``to_json``/``event_from_json`` cross the process and socket
boundaries, so no front end reads a dict by string key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


@dataclass
class Progress:
    """Work in progress: ``scanning`` (files), ``embedding`` (vectors, one per dense piece) or
    ``queued`` (waiting for a bulk embedding slot: ``message`` says for whom, ``wait_seconds`` how long)."""

    kind: ClassVar[str] = "progress"
    state: str  # scanning | embedding
    files_done: int = 0
    files_total: int = 0
    vectors_done: int = 0
    vectors_total: int = 0
    message: str = ""
    wait_seconds: float | None = None  # queued: roughly how long until this job's turn (None: unknown)


@dataclass
class Committed:
    """A new index version is on disk and searchable (after the lexical phase, and at each vector
    commit while embedding). Counts describe that version."""

    kind: ClassVar[str] = "commit"
    files: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks whose every dense piece has a vector
    vectors_missing: int = 0  # dense pieces still without a vector
    static_missing: int = 0  # chunks without a static-tier vector
    version: str = ""


@dataclass
class Done:
    """A run finished (also when nothing changed): what the indexer reports and the ``done`` event.

    ``skipped`` counts the files left out and ``skipped_reasons`` counts them by reason; the run itself
    also keeps every file and its reason (``skipped_files``) and whether it merged segments, which
    stay in the process (``wire=False``: not in the JSON of an event).
    """

    kind: ClassVar[str] = "done"
    files: int = 0
    chunks: int = 0
    seconds: float = 0.0
    embedder: str = "none"
    degraded: bool = False
    degraded_reason: str | None = None
    changed: int = 0
    removed: int = 0
    embedded: int = 0
    vectors_missing: int = 0
    static_missing: int = 0
    static: str = ""  # the static tier's model id ("" when there is none)
    newly_embedded: int = 0
    skipped: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cancelled: bool = False
    preempted: bool = False  # stopped embedding early because newer work was waiting
    wrote: bool = False
    skipped_files: dict[str, str] = field(default_factory=dict, metadata={"wire": False})
    merged: bool = field(default=False, metadata={"wire": False})

    def count_skipped(self) -> None:
        """Set ``skipped`` and ``skipped_reasons`` from ``skipped_files`` (at the end of a run)."""
        reasons: dict[str, int] = {}
        for why in self.skipped_files.values():
            kind = why.split(" (", 1)[0].split(":", 1)[0]
            reasons[kind] = reasons.get(kind, 0) + 1
        self.skipped, self.skipped_reasons = len(self.skipped_files), reasons


@dataclass
class Failed:
    """A run stopped with an error the user can act on."""

    kind: ClassVar[str] = "error"
    message: str = ""


@dataclass
class Cancelled:
    """A run was cancelled (a newer request made it obsolete, or the user asked)."""

    kind: ClassVar[str] = "cancelled"
    message: str = "indexing cancelled"


Event = Progress | Committed | Done | Failed | Cancelled
_TYPES: dict[str, type[Any]] = {t.kind: t for t in (Progress, Committed, Done, Failed, Cancelled)}


def event_to_json(event: Event) -> dict[str, Any]:
    """``{"event": kind, ...fields}``: one JSON line of ``index --progress`` or one SSE message."""
    data = asdict(event)
    for f in fields(event):
        if not f.metadata.get("wire", True):
            del data[f.name]
    return {"event": event.kind, **data}


def event_from_json(obj: Any) -> Event | None:
    """Parse one event object; unknown kinds or shapes give None (never raises)."""
    if not isinstance(obj, dict):
        return None
    cls = _TYPES.get(str(obj.get("event")))
    if cls is None:
        return None
    names = {f.name: f for f in fields(cls) if f.metadata.get("wire", True)}
    try:
        return cls(**{k: v for k, v in obj.items() if k in names})  # type: ignore[no-any-return]
    except TypeError:
        return None
