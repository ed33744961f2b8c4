"""The embedding cache: vectors keyed by piece-text hash, per embedder id, kept across reindexes,
renames, rebuilds and cancelled runs, so finished embedding work is never thrown away.

Layout: ``<state>/cache/embeddings/<slug>/`` holds ``index.json`` (embedder id, dim, and for each
block its files with sizes and CRC32) and blocks ``b<stamp>.npy`` (vectors) + ``b<stamp>.keys``
(one key per line). Saving appends one block and rewrites ``index.json`` atomically; once there are
many blocks (or far more keys than the index uses) they are compacted into one. Every file is
checked against its CRC when loaded: a damaged block is dropped (that work is redone), never used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.model import EMBED_TEXT_VERSION
from aide_tui.core.paths import cache_dir_for, private_dir
from aide_tui.core.safeio import UnsafeFile, parse_npy, read_bounded
from aide_tui.core.store.segments import atomic_write_bytes, npy_bytes

MAX_BLOCKS = 16
MAX_INDEX_BYTES = 64 << 20
MAX_BLOCK_BYTES = 4 << 30


def usable_rows(vectors: np.ndarray) -> np.ndarray:
    """(n,) bool: rows that are finite and not all zero (the only vectors worth storing)."""
    v = np.asarray(vectors, np.float32)
    if v.ndim != 2 or v.shape[0] == 0:
        return np.zeros(v.shape[0] if v.ndim else 0, bool)
    finite = np.isfinite(v).all(axis=1)
    return np.asarray(finite & (np.abs(np.where(np.isfinite(v), v, 0)).sum(axis=1) > 0))


@dataclass
class _Block:
    name: str
    vectors: np.ndarray
    keys: list[str]
    sums: list[list[int]]  # [[size, crc] of the .npy, [size, crc] of the .keys]


class EmbeddingCache:
    """Vectors keyed by piece-text hash for one embedder id and dimension."""

    PRUNE_FLOOR = 1000  # never prune a cache below twice this many keys

    def __init__(self, state: Path, embedder_id: str, dim: int) -> None:
        slug = hashlib.sha1(f"{embedder_id}\0{EMBED_TEXT_VERSION}\0{dim}".encode()).hexdigest()[:16]
        self.dir = cache_dir_for(state) / slug  # created (0700) when the first block is written
        self._state = state
        self.embedder_id = embedder_id
        self.dim = dim
        self._blocks: list[_Block] = []
        self._rows: dict[str, tuple[int, int]] | None = None  # key -> (block, row), loaded lazily
        self._new_keys: list[str] = []
        self._new_vecs: list[np.ndarray] = []
        self._pending: set[str] = set()
        self.dropped: list[str] = []  # why blocks were ignored while loading

    # -- loading -----------------------------------------------------------------------------------

    def _index_blocks(self) -> list[Any]:
        """The block entries ``index.json`` lists for this embedder (empty when absent or not ours)."""
        try:
            index = json.loads(read_bounded(self.dir / "index.json", MAX_INDEX_BYTES))
        except (OSError, ValueError):
            return []
        if not (
            isinstance(index, dict)
            and index.get("embedder") == self.embedder_id
            and index.get("dim") == self.dim
        ):
            return []
        blocks = index.get("blocks")
        return blocks if isinstance(blocks, list) else []

    def _load(self) -> dict[str, tuple[int, int]]:
        if self._rows is not None:
            return self._rows
        rows: dict[str, tuple[int, int]] = {}
        for entry in self._index_blocks():
            block = self._read_block(entry)
            if block is None:
                continue
            b = len(self._blocks)
            self._blocks.append(block)
            for r, key in enumerate(block.keys):
                rows[key] = (b, r)
        self._rows = rows
        return rows

    def _read_block(self, entry: Any) -> _Block | None:
        """A block listed in the index, verified against its sizes and CRCs (None when unusable)."""
        try:
            name, vsum, ksum = entry
            vsize, vcrc, ksize, kcrc = int(vsum[0]), int(vsum[1]), int(ksum[0]), int(ksum[1])
            if not (isinstance(name, str) and name.isalnum()):
                raise ValueError("bad block name")
            vraw = read_bounded(self.dir / f"{name}.npy", MAX_BLOCK_BYTES, expect_size=vsize)
            kraw = read_bounded(self.dir / f"{name}.keys", MAX_BLOCK_BYTES, expect_size=ksize)
            if zlib.crc32(vraw) != vcrc or zlib.crc32(kraw) != kcrc:
                raise ValueError("checksum mismatch")
            vectors = parse_npy(vraw)
            keys = kraw.decode("ascii").split("\n") if kraw else []
            if vectors.dtype != np.float32 or vectors.shape != (len(keys), self.dim):
                raise ValueError("wrong shape")
        except (OSError, UnsafeFile, ValueError, TypeError, IndexError, UnicodeDecodeError) as exc:
            self.dropped.append(f"embedding cache block ignored ({exc.__class__.__name__}: {exc})")
            return None
        return _Block(name, vectors, keys, [[vsize, vcrc], [ksize, kcrc]])

    # -- use ---------------------------------------------------------------------------------------

    def lookup(self, key: str) -> np.ndarray | None:
        """The cached vector for ``key``, or None."""
        hit = self._load().get(key)
        return None if hit is None else self._blocks[hit[0]].vectors[hit[1]]

    def add(self, keys: list[str], vectors: np.ndarray) -> None:
        """Remember new vectors (written by ``save``); non-finite or all-zero rows are never kept."""
        rows = self._load()
        ok = usable_rows(vectors)
        for key, vec, good in zip(keys, vectors, ok, strict=True):
            if good and key not in rows and key not in self._pending:
                self._pending.add(key)
                self._new_keys.append(key)
                self._new_vecs.append(np.asarray(vec, np.float32))

    def save(self, live_keys: set[str] | None = None) -> None:
        """Append the new vectors as a block; compact when blocks pile up, and drop keys the index no
        longer uses once they are most of the cache (only when ``live_keys`` is given)."""
        rows = self._load()
        if self._new_keys:
            block = self._write_block(np.stack(self._new_vecs), list(self._new_keys))
            for r, key in enumerate(block.keys):
                rows[key] = (len(self._blocks), r)
            self._blocks.append(block)
            self._new_keys, self._new_vecs = [], []
            self._pending.clear()
        elif not self._blocks:
            return
        prune = live_keys is not None and len(rows) > 2 * max(len(live_keys), self.PRUNE_FLOOR)
        if prune or len(self._blocks) > MAX_BLOCKS:
            self._compact(live_keys if prune and live_keys is not None else set(rows))
        self._write_index()

    def _compact(self, keep: set[str]) -> None:
        rows = self._load()
        keys = [k for k in rows if k in keep]
        vecs = np.stack([self._blocks[rows[k][0]].vectors[rows[k][1]] for k in keys]) if keys else None
        old = [b.name for b in self._blocks]
        self._blocks = []
        self._rows = {}
        if vecs is not None:
            self._blocks.append(self._write_block(vecs, keys))
            self._rows = {k: (0, r) for r, k in enumerate(keys)}
        self._write_index()
        for name in old:
            for suffix in (".npy", ".keys"):
                with contextlib.suppress(OSError):
                    os.unlink(self.dir / f"{name}{suffix}")

    def _write_block(self, vectors: np.ndarray, keys: list[str]) -> _Block:
        name = f"b{time.time_ns():x}{os.getpid():x}"
        private_dir(self.dir, within=self._state)  # never the state folder (or its workspace) again
        vecs = np.ascontiguousarray(vectors, np.float32)
        vraw, kraw = npy_bytes(vecs), "\n".join(keys).encode("ascii")
        atomic_write_bytes(self.dir / f"{name}.npy", vraw)
        atomic_write_bytes(self.dir / f"{name}.keys", kraw)
        return _Block(name, vecs, keys, [[len(vraw), zlib.crc32(vraw)], [len(kraw), zlib.crc32(kraw)]])

    def _write_index(self) -> None:
        entries = [[b.name, *b.sums] for b in self._blocks]
        index = {"embedder": self.embedder_id, "dim": self.dim, "blocks": entries}
        atomic_write_bytes(self.dir / "index.json", json.dumps(index).encode())
