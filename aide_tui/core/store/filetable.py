"""The manifest's file records as columns: what a one-shot reader of a big index parses in a few ms.

A manifest used to hold one JSON list per file; on a 28k-file monorepo parsing and checking them was
80 ms of every one-shot search, though a search asks about a handful of files. Here the manifest holds
one list per field (``FIELDS``), checked a column at a time, and a :class:`FileRecord` is made only
when one is asked for; :meth:`FileTable.segment_of` (what a reader asks of every path) makes none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from aide_tui.core.store.records import FileRecord

FIELDS = ("size", "mtime_ns", "sha1", "segment", "chunks", "pieces", "vectors", "embedded")
_COUNTS = ("size", "chunks", "pieces", "vectors", "embedded")  # whole numbers, never negative


class FileTable(Mapping[str, FileRecord]):
    """path → :class:`FileRecord`, read-only, backed by the manifest's columns."""

    def __init__(self, paths: list[str], columns: dict[str, list[Any]]) -> None:
        self._paths = paths
        self._cols = [columns[f] for f in FIELDS]
        self._segment = columns["segment"]
        self._at = dict(zip(paths, range(len(paths)), strict=True))

    def __getitem__(self, path: str) -> FileRecord:
        i = self._at[path]
        size, mtime, sha1, segment, chunks, pieces, vectors, embedded = self._cols
        return FileRecord(
            size[i], mtime[i], sha1[i], segment[i], chunks[i], pieces[i], vectors[i], embedded[i]
        )

    def column(self, name: str) -> list[Any]:
        """One field of every record, in path order (no record made)."""
        return self._cols[FIELDS.index(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._at

    def segment_of(self, path: str) -> int:
        """The segment holding ``path``'s chunks (-1 when the version has no such file)."""
        i = self._at.get(path)
        return -1 if i is None else self._segment[i]

    def segments_of(self, paths: Sequence[str]) -> np.ndarray:
        """:meth:`segment_of` of every path at once, as an int64 array (no Python call per path: a
        reader opening a 28k-file version asks it of every segment's files)."""
        seg = self.__dict__.get("_segment_array")
        if seg is None:  # the table's segments, then -1 for a path it does not hold
            seg = self.__dict__["_segment_array"] = np.asarray([*self._segment, -1], np.int64)
        at = np.fromiter(map(self._at.get, paths, repeat(-1)), np.int64, len(paths))
        out: np.ndarray = seg[at]
        return out

    @classmethod
    def from_json(cls, obj: Any, n_segments: int) -> FileTable | None:
        """The table of a manifest's ``file_table`` member; None when it is malformed in any way (a
        field missing, a column of another length or type, a negative count, a segment out of range,
        a path twice)."""
        if not isinstance(obj, dict) or not isinstance(paths := obj.get("paths"), list):
            return None
        cols: dict[str, list[Any]] = {}
        for name in FIELDS:
            col = obj.get(name)
            if not isinstance(col, list) or len(col) != len(paths):
                return None
            cols[name] = col
        for name, col in (("paths", paths), *cols.items()):  # set(map(type, ...)): no Python call per item
            if not set(map(type, col)) <= ({str} if name in ("paths", "sha1") else {int}):
                return None
        if paths and (
            min(min(cols[n]) for n in _COUNTS) < 0
            or min(cols["segment"]) < 0
            or max(cols["segment"]) >= n_segments
        ):
            return None
        table = cls(paths, cols)
        return table if len(table._at) == len(paths) else None

    @staticmethod
    def to_json(files: Mapping[str, FileRecord]) -> dict[str, list[Any]]:
        """The columns of ``files`` (any mapping of records), as the manifest holds them."""
        recs = list(files.values())
        out: dict[str, list[Any]] = {"paths": list(files)}
        for name in FIELDS:
            out[name] = [getattr(r, name) for r in recs]
        return out


def column(files: Mapping[str, FileRecord], name: str) -> list[Any]:
    """One field of every record of a version's file mapping, in its order (a :class:`FileTable` makes
    no record: a no-op run over a 28k-file version asks this several times)."""
    if isinstance(files, FileTable):
        return files.column(name)
    return [getattr(r, name) for r in files.values()]


def segments_of(files: Mapping[str, Any], paths: Sequence[str], default: int = 0) -> np.ndarray:
    """:func:`segment_of` of every path, as an int64 array."""
    if isinstance(files, FileTable):
        return files.segments_of(paths)
    return np.fromiter((segment_of(files, p, default) for p in paths), np.int64, len(paths))


def segment_of(files: Mapping[str, Any], path: str, default: int = 0) -> int:
    """The segment holding ``path`` in a version's file mapping (a :class:`FileTable` or records with a
    ``segment``; ``default`` for a record without one), -1 when the version has no such file."""
    if isinstance(files, FileTable):
        return files.segment_of(path)
    rec = files.get(path)
    return -1 if rec is None else int(getattr(rec, "segment", default))
