"""A batch built into a finished segment by a cold build's helper process, and where helpers write.

The indexer hands it to the local writer, which moves the segment into place and commits it
(parallel.py runs the helpers; local_writer.py commits their work).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from aide_tui.core.index.reading import BatchNotes
from aide_tui.core.store.records import FileRecord


def staging_dir(index_dir: Path, pid: int | None = None) -> Path:
    """Where the indexer with ``pid`` (default: this process) lets helpers write unfinished segments."""
    return index_dir / f".staging-{os.getpid() if pid is None else pid}"


@dataclass
class Built:
    """A batch read and written: the segment (None when no file of it had new content), the files'
    records, and what the indexer adds before committing (cached vectors by piece key)."""

    segment: dict[str, object] | None
    records: dict[str, FileRecord]
    same: dict[str, FileRecord]
    gone: set[str]
    notes: BatchNotes
    piece_keys: list[str] = field(default_factory=list)  # each piece's embedding-cache key, in row order
    piece_files: list[str] = field(default_factory=list)  # each piece's file
    piece_owners: list[int] = field(default_factory=list)  # each piece's chunk row
    static_id: str = ""
    size: int = 0
