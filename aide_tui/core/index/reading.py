"""Reading a batch of files into a delta: read (bounded), hash, mask secrets, chunk, cut dense pieces and
take the symbol graph from the same parse. Plain data in, plain data out, so the same code runs in the
indexing process and in a cold build's helper processes (parallel.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from aide_tui.core.index.scan import ContentVerdict, FileEntry, read_entry
from aide_tui.core.index.writer import Delta
from aide_tui.core.store.records import FileRecord, PassedFile


@dataclass
class BatchNotes:
    """What reading a batch found besides its delta: files left out (and why), chunker warnings, and
    the files whose content kept them out (with the stat the scan saw: not read again while it holds)."""

    skipped: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    passed: dict[str, PassedFile] = field(default_factory=dict)


def read_batch(
    entries: Iterable[FileEntry],
    prev: Mapping[str, FileRecord] | None,
    max_bytes: int,
    chunk_budget: int,
    keep_incomplete: bool,
    notes: BatchNotes,
    on_file: Callable[[int, FileEntry], None] | None = None,
    content_rule: Callable[[str, str], str | None] | None = None,
) -> Delta:
    """Read and chunk files the diff could not rule out. A previously indexed file that cannot be read
    any more is dropped; one whose content did not change keeps its rows (with new stat data), unless
    ``keep_incomplete`` is false and its vectors are incomplete (a writer that stores vectors with their
    rows re-reads it). ``on_file(n, entry)`` is called before each file (progress, cancelling);
    ``content_rule(path, text)`` says why a file's content keeps it out (generated output), if it does."""
    delta = Delta()
    for n, entry in enumerate(entries):
        if on_file is not None:
            on_file(n, entry)
        text, raw, why = read_entry(entry, max_bytes, content_rule)
        old = prev.get(entry.rel) if prev is not None else None
        if text is None or raw is None:
            notes.skipped[entry.rel] = why or "unreadable"
            if isinstance(why, ContentVerdict):
                notes.passed[entry.rel] = PassedFile(entry.size, entry.mtime_ns, why)
            if old is not None:
                delta.gone.add(entry.rel)
            continue
        digest = hashlib.sha1(raw).hexdigest()
        delta.size += len(raw)
        if old is not None and old.sha1 == digest and (keep_incomplete or old.vectors >= old.pieces):
            delta.same[entry.rel] = replace(old, size=len(raw), mtime_ns=entry.mtime_ns)
            continue
        if not chunk_into(delta, entry, text, digest, len(raw), chunk_budget, notes) and old is not None:
            delta.gone.add(entry.rel)  # its old rows must not outlive the content they came from
    return delta


def chunk_into(
    delta: Delta, entry: FileEntry, text: str, digest: str, size: int, chunk_budget: int, notes: BatchNotes
) -> bool:
    """Add a file's chunks and dense pieces to ``delta`` (embedded base64 blanked, secrets masked; a
    chunker bug skips the file: False)."""
    # the chunkers load only when a file needs them (a no-op run that re-reads a binary file it skipped
    # before must not pay their import)
    from aide_tui.core.blobs import blank_blobs
    from aide_tui.core.chunk.chunker import chunk_file_multi
    from aide_tui.core.chunk.pieces import PIECE_BUDGET, dense_pieces
    from aide_tui.core.model import FileGraph
    from aide_tui.core.secrets import mask_secrets

    graph: list[FileGraph] = []
    try:
        stored = mask_secrets(blank_blobs(text))
        file_chunks, small = chunk_file_multi(
            entry.rel, stored, (chunk_budget, PIECE_BUDGET), notes.warnings, graph=graph
        )
    except Exception as exc:  # noqa: BLE001 - a chunker bug must not cost the rest of the index
        notes.skipped[entry.rel] = f"chunker failed: {exc.__class__.__name__}: {exc}"
        return False
    base = len(delta.chunks)
    file_pieces = dense_pieces(file_chunks, small)
    delta.pieces.extend((base + i, p) for i, p in file_pieces)
    delta.chunks.extend(file_chunks)
    if graph and (graph[0].defs or graph[0].refs or graph[0].imports):
        delta.graphs[entry.rel] = graph[0]
    delta.records[entry.rel] = FileRecord(size, entry.mtime_ns, digest, chunks=len(file_chunks),
                                          pieces=len(file_pieces))  # fmt: skip
    return True
