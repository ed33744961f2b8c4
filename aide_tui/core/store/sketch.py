"""Sign sketches of vectors: one bit a value (is it above zero), and the rows nearest a query by Hamming
distance between sketches: the static tier's prefilter on a big index.

A sketch is stored word-major, ``(words, rows)`` little-endian uint64, so that a query's distances are
a few passes over contiguous memory (3 ms for 475k rows of 256 values, against 5 ms for a 64-dimension
projection's product and 4 ms more to pick its best rows). Measured on the monorepo's static tier
(200 queries, docs/benchmarks.md): the 8,192 rows nearest by sketch hold the exact top 10 chunks
with recall .993; a 64-dimension projection's best 4,096 held .965.
"""

from __future__ import annotations

import numpy as np

from aide_tui.core.store.quantize import is_packed, unpack

WORD_BITS = 64
SKETCH_WINDOW = 32768  # packed rows unpacked at a time while sketching
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def words_for(dim: int) -> int:
    """Words of a sketch of ``dim`` values."""
    return (dim + WORD_BITS - 1) // WORD_BITS


def sketch(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float vectors, or packed rows (quantize.py), as their ``(words_for(d), n)`` sketch: bit
    ``j`` of word ``w`` of row ``i`` is set when value ``64 * w + j`` is above zero."""
    v = np.asarray(vectors)
    if is_packed(v):
        parts = [_sketch(unpack(v[lo : lo + SKETCH_WINDOW])) for lo in range(0, len(v), SKETCH_WINDOW)]
        return np.concatenate(parts, axis=1) if parts else np.zeros((0, 0), np.uint64)
    return _sketch(v)


def _sketch(v: np.ndarray) -> np.ndarray:
    n, d = v.shape
    words = words_for(d)
    bits = np.zeros((n, words * 8), np.uint8)
    bits[:, : (d + 7) // 8] = np.packbits(v > 0, axis=1, bitorder="little")
    return np.ascontiguousarray(bits.view("<u8").T).astype(np.uint64, copy=False)


def distances(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """(n,) uint16 Hamming distances between a ``(words, n)`` sketch and one query's ``(words,)``."""
    words, n = rows.shape
    out = np.zeros(n, np.uint16)
    buf = np.empty(n, np.uint64)
    count = np.empty(n, np.uint8)
    for w in range(words):
        np.bitwise_xor(rows[w], query[w], out=buf)
        _popcount(buf, count)
        out += count
    return out


def _popcount(words: np.ndarray, out: np.ndarray) -> None:
    """The set bits of each uint64 of ``words`` into uint8 ``out``."""
    if hasattr(np, "bitwise_count"):  # numpy 2
        np.bitwise_count(words, out=out)
    else:
        out[:] = _POPCOUNT8[words.view(np.uint8)].reshape(len(words), 8).sum(axis=1, dtype=np.uint8)


def nearest(dist: np.ndarray, k: int) -> np.ndarray:
    """Ascending indices of the ``k`` smallest of ``dist`` (every index when ``k >= len(dist)``); of the
    rows tied at the cut, the first ones."""
    n = len(dist)
    if k >= n:
        return np.arange(n)
    if k <= 0:
        return np.zeros(0, np.int64)
    counts = np.cumsum(np.bincount(dist))
    cut = int(np.searchsorted(counts, k))  # the k-th smallest distance
    inside = np.flatnonzero(dist <= cut)
    extra = len(inside) - k  # rows at the cut past the k-th: the last of them go
    if extra:
        tied = np.flatnonzero(dist[inside] == cut)
        inside = np.delete(inside, tied[len(tied) - extra :])
    return inside
