"""What one committed index version records about itself: how it was built and how much it holds.

Both are stored in the manifest as plain JSON objects (``meta`` and ``counts``); these dataclasses are
the typed view of them, parsed and validated once when the manifest is read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from aide_tui.core.errors import IndexCorrupt


def _bad(what: str) -> IndexCorrupt:
    return IndexCorrupt(f"index manifest is malformed ({what}); rebuilding")


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


@dataclass(frozen=True)
class IndexMeta:
    """How a version was built: the settings key, the model of its vectors and why it is degraded."""

    settings: dict[str, Any] = field(default_factory=dict)  # index_settings_key: a change rebuilds
    embedder: str = "none"  # the stored vectors' model id; "none" when the version has no vectors
    dim: int = 0
    skipped: int = 0  # files the scan skipped (binary, huge, unreadable)
    degraded_reason: str | None = None
    static: str = ""  # the static tier's model id ("" when the index has no static tier)
    rank_file: str = ""  # the files' centrality (store/centrality.py), stored beside the manifest
    rank_size: int = 0
    rank_crc: int = 0

    @property
    def has_vectors(self) -> bool:
        return self.embedder != "none"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Any) -> IndexMeta:
        """Validate the manifest's ``meta`` object; IndexCorrupt when a field has the wrong type."""
        if not isinstance(obj, dict):
            raise _bad("meta")
        meta = cls(
            settings=obj.get("settings", {}),
            embedder=obj.get("embedder", "none"),
            dim=obj.get("dim", 0),
            skipped=obj.get("skipped", 0),
            degraded_reason=obj.get("degraded_reason"),
            static=obj.get("static", ""),
            rank_file=obj.get("rank_file", ""),
            rank_size=obj.get("rank_size", 0),
            rank_crc=obj.get("rank_crc", 0),
        )
        ok = (
            isinstance(meta.settings, dict)
            and isinstance(meta.embedder, str)
            and _count(meta.dim)
            and _count(meta.skipped)
            and (meta.degraded_reason is None or isinstance(meta.degraded_reason, str))
            and isinstance(meta.static, str)
            and isinstance(meta.rank_file, str)
            and (not meta.rank_file or (meta.rank_file.startswith("rank-") and "/" not in meta.rank_file))
            and _count(meta.rank_size)
            and _count(meta.rank_crc)
        )
        if not ok:
            raise _bad("meta.settings/embedder/dim/skipped/degraded_reason")
        return meta


@dataclass(frozen=True)
class Counts:
    """How much a version holds, derived from its file records."""

    files: int = 0
    chunks: int = 0
    pieces: int = 0
    embedded: int = 0  # chunks whose every piece has a vector
    vectors_missing: int = 0  # pieces still waiting for a vector
    static_missing: int = 0  # chunks without a static-tier vector (of the index's static model)

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Any) -> Counts:
        """Validate the manifest's ``counts`` object; IndexCorrupt when a count is not a count."""
        if not isinstance(obj, dict) or not all(_count(v) for v in obj.values()):
            raise _bad("counts")
        known = {k: obj[k] for k in cls.__dataclass_fields__ if k in obj}
        return cls(**known)


@dataclass(frozen=True)
class VersionStamp:
    """What a loaded view knows of the version it shows."""

    meta: IndexMeta = field(default_factory=IndexMeta)
    counts: Counts = field(default_factory=Counts)
    generation: str = ""  # the manifest's version id
    written: str = ""
    vocab_key: str = ""  # the segments' names and vocabulary ends: equal keys share a vocabulary
