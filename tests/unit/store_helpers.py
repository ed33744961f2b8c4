"""Real segments written by hand, for tests of the reader (views over known vectors and rows)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from aide_tui.core.bm25 import chunk_terms
from aide_tui.core.model import Chunk
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.part import Part
from aide_tui.core.store.records import FileRecord
from aide_tui.core.store.segment_write import SegmentData, sorted_docs, write_segment
from aide_tui.core.store.terms import sort_terms
from aide_tui.core.store.view import IndexView
from aide_tui.core.tokens import term_counts


def segment_of(chunks: list[Chunk], vectors: np.ndarray | None = None, static: np.ndarray | None = None,
               static_id: str = "") -> SegmentData:  # fmt: skip
    """A segment whose pieces are its chunks (one each), with these transformer / static vectors."""
    counts = [chunk_terms(c, Counter(term_counts(c.text))) for c in chunks]
    terms = sort_terms(t for c in counts for t in c)
    _, docs = sorted_docs(counts, terms)
    _, pdocs = sorted_docs(counts, terms)
    n = len(chunks)
    vecs = np.zeros((n, 0), np.float32) if vectors is None else np.asarray(vectors, np.float32)
    present = np.zeros(n, bool) if vectors is None else np.ones(n, bool)
    graph = GraphTable()
    return SegmentData(list(chunks), list(chunks), np.arange(n), terms, docs, pdocs, vecs, present, graph,
                       static, static_id)  # fmt: skip


def view_of(tmp_path: Path, chunks: list[Chunk], vectors: np.ndarray | None = None,
            static: np.ndarray | None = None, static_id: str = "") -> IndexView:  # fmt: skip
    """A view over one real segment written under ``tmp_path``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    entry = write_segment(tmp_path, segment_of(chunks, vectors, static, static_id))
    files = {c.path: FileRecord(0, 0, "", 0) for c in chunks}
    return IndexView([Part(tmp_path, entry)], [None], files)


def resident_kb(path: Path) -> int:
    """Resident kB of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total, current = 0, None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            current = fields[-1] if len(fields) >= 6 else None
        elif fields and fields[0] == "Rss:" and current == str(path):
            total += int(fields[1])
    return total
