"""The seam below the indexer: a store writer takes what the indexer produced and commits it.

The indexer (:mod:`aide_tui.core.index.indexer`) scans, diffs, reads, chunks, masks secrets, takes
cached vectors and embeds; a store never does any of that. A writer keeps the store's side: what the
previous version holds, how a batch becomes rows and a committed version, which pieces still lack a
vector, when to compact. Two stores implement it: the local segments
(:mod:`aide_tui.core.index.local_writer`) and a Milvus collection
(:mod:`aide_tui.core.index.milvus_writer`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from aide_tui.core import bm25 as bm25_mod
from aide_tui.core.chunk.base import CHUNKER_VERSION
from aide_tui.core.chunk.pieces import PIECE_BUDGET
from aide_tui.core.config import Settings
from aide_tui.core.events import Committed, Done, Event
from aide_tui.core.index.embcache import EmbeddingCache
from aide_tui.core.model import EMBED_TEXT_VERSION, GRAPH_VERSION, Chunk, FileGraph
from aide_tui.core.store.records import FileRecord, PassedFile
from aide_tui.core.tokens import TOKENIZER_VERSION, term_counts


def index_settings_key(settings: Settings) -> dict[str, object]:
    """Settings that change what chunks and BM25 rows look like; a change forces a rebuild."""
    return {
        "chunker": CHUNKER_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "budget": settings.index.chunk_budget,
        "piece_budget": PIECE_BUDGET,
        "embed_text": EMBED_TEXT_VERSION,
        "bm25_fields": [bm25_mod.PATH_WEIGHT, bm25_mod.SYMBOL_WEIGHT, bm25_mod.NAME_TF],
        "graph": GRAPH_VERSION,
        "max_file_kb": settings.index.max_file_kb,
        "exclude": list(settings.index.exclude),
        "include_sensitive": settings.index.include_sensitive,
    }


@dataclass
class EmbedderState:
    """The embedder a run uses: None when there is none or it failed (then ``error`` says why)."""

    embedder: Any
    emb_id: str
    dim: int
    error: str | None = None


@dataclass
class Delta:
    """A batch of work for a writer: changed files read and chunked (with the vectors known so far),
    files whose content is the same under new stat data, and files to drop."""

    records: dict[str, FileRecord] = field(default_factory=dict)
    same: dict[str, FileRecord] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    chunks: list[Chunk] = field(default_factory=list)
    pieces: list[tuple[int, Chunk]] = field(default_factory=list)  # (index into chunks, piece)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))  # (pieces, dim)
    present: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # (pieces,): has a vector
    graphs: dict[str, FileGraph] = field(default_factory=dict)  # each changed file's symbol graph
    static: np.ndarray | None = None  # the static tier's vectors (packed rows), when it is ready
    static_id: str = ""
    size: int = 0  # bytes of source read into the batch

    @property
    def empty(self) -> bool:
        return not (self.records or self.same or self.gone)

    def bodies(self) -> tuple[list[Counter[str]], list[Counter[str]]]:
        """Term counts of each chunk's and each piece's text (pieces partition their chunk's lines, so
        each piece is tokenized once and a chunk's counts are the sum of its pieces')."""
        piece_bodies = [term_counts(p.text) for _, p in self.pieces]
        chunk_bodies: list[Counter[str]] = [Counter() for _ in self.chunks]
        for (owner, _), body in zip(self.pieces, piece_bodies, strict=True):
            chunk_bodies[owner].update(body)
        return chunk_bodies, piece_bodies


@dataclass
class MissingPiece:
    """A stored piece without a vector: where the writer keeps it, its text, cache key and file."""

    handle: tuple[int, int]
    text: str
    key: str
    path: str


class RunHooks(Protocol):
    """What a writer may use of the run it serves."""

    report: Done
    targeted: bool  # the run looked at the files a watcher named, not the whole tree
    merge_cap: int | None  # live chunks a merge may read in this run (None: the writer's own bound)
    passed: dict[str, PassedFile]  # files left out for their content: the version keeps them unread

    def emit(self, event: Event) -> None: ...

    def check_cancel(self) -> None: ...

    def should_yield(self) -> bool: ...

    def cache_for(self, emb_id: str, dim: int) -> EmbeddingCache: ...


class StoreWriter(Protocol):
    """A store as the indexer writes it."""

    batch_files: int | None  # commit every this many changed files; None: once per run
    batch_bytes: int | None  # ... or every this many bytes of source read
    inline_vectors: bool  # vectors are written with their rows: the indexer embeds before committing

    def open(
        self, state: Path, rebuild: bool, emb: EmbedderState, run: RunHooks
    ) -> Mapping[str, FileRecord] | None:
        """Begin a run: the records of the files the store holds, or None to build afresh (settings,
        format or embedder changed, a rebuild was asked, nothing is there). Raise IndexProblem when the
        store cannot be written. May set ``emb.error`` and drop the embedder (vectors it cannot take)."""
        ...

    def commit(self, delta: Delta, emb: EmbedderState) -> Committed | None:
        """Write a batch; returns the committed version's counts when a new version is searchable."""
        ...

    def missing(self) -> tuple[list[MissingPiece], dict[str, int]]:
        """The stored pieces still without a vector, and each file's size (small files go first)."""
        ...

    def commit_vectors(
        self, found: Sequence[tuple[MissingPiece, np.ndarray]], emb: EmbedderState
    ) -> Committed:
        """Write vectors computed for missing pieces and commit them."""
        ...

    def compact(self, run: RunHooks) -> Committed | None:
        """Fold the store's parts together when they pile up (giving way to newer work)."""
        ...

    def finish(self, emb: EmbedderState, run: RunHooks) -> Committed | None:
        """End the run: fill the report's counts (and commit what the store keeps per run)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


OpenWriter = Callable[[], StoreWriter]
