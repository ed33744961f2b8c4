"""The state of a workspace's index, as ``aide-tui status``, the app's status line and ``serve`` show it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class IndexStatus:
    """What the index holds and whether its dense side is usable."""

    state: str  # missing | corrupt | ready | partial
    files: int = 0
    chunks: int = 0
    embedded: int = 0
    embedder: str = "none"
    degraded: bool = False
    degraded_reason: str | None = None
    last_indexed: str | None = None
    vectors_missing: int = 0
    static_missing: int = 0  # chunks without a static-tier vector
    static: str = ""  # the static tier's model id ("" when there is none)
    size_bytes: int = 0
    skipped: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The contract's ``status --json`` object plus ``vectors_missing``, ``size_bytes``, ``skipped``."""
        out: dict[str, Any] = {
            "state": self.state,
            "files": self.files,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "embedder": self.embedder,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "last_indexed": self.last_indexed,
            "vectors_missing": self.vectors_missing,
            "static_missing": self.static_missing,
            "static": self.static or None,
            "size_bytes": self.size_bytes,
            "skipped": self.skipped,
        }
        if self.error:
            out["error"] = self.error
        return out
