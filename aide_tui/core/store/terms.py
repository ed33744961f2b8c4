"""A segment's term dictionary: its terms sorted (prefix lookups), and a hash index (exact lookups).

On disk (files of the segment)::

    terms.bin       the terms' UTF-8 bytes, sorted bytewise (the order of their code points)
    term_off.npy    (t + 1,) uint32 (int64 before): term i is terms.bin[off[i]:off[i + 1]]
    term_hash.npy   (t,) uint32: the CRC-32 of each term's bytes, sorted
    term_hid.npy    (t,) int32: the term id of each sorted hash

A lookup of a query's terms is one ``searchsorted`` over the hashes, then a comparison of the few
candidates' bytes (a CRC-32 collision costs one more comparison, never a wrong term). Nothing is read
whole: a reader touches the hash array (4 bytes a term) and the probed terms only.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import cached_property

import numpy as np

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.store.mapped import MappedArray, MappedFile


def term_bytes(term: str) -> bytes:
    return term.encode("utf-8", "surrogatepass")


def sort_terms(terms: Iterable[str]) -> list[str]:
    """Distinct terms in the dictionary's order (by their UTF-8 bytes)."""
    return sorted(set(terms), key=term_bytes)


def encode_terms(terms: Sequence[str]) -> dict[str, bytes | np.ndarray]:
    """The dictionary's files for ``terms`` (already in :func:`sort_terms` order)."""
    raw = [term_bytes(t) for t in terms]
    off = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(b) for b in raw], out=off[1:])
    hashes = np.fromiter((zlib.crc32(b) for b in raw), np.uint32, len(raw))
    order = np.argsort(hashes, kind="stable")
    return {
        "terms.bin": b"".join(raw),
        "term_off.npy": off,
        "term_hash.npy": hashes[order],
        "term_hid.npy": order.astype(np.int32),
    }


FEW_TERMS = 6  # up to this many terms found by hash are read one by one (less numpy set-up)
SAMPLE_EVERY = 64  # terms per in-memory sample entry of a dictionary (prefix lookups bisect it first)


class HashedTerms:
    """Terms as a dictionary looks them up (their UTF-8 bytes and CRC-32s), made once for every segment
    asked (a file's called names are looked up in each segment of a version)."""

    __slots__ = ("raw", "crc")

    def __init__(self, raw: list[bytes], crc: np.ndarray) -> None:
        self.raw = raw
        self.crc = crc

    @classmethod
    def of(cls, terms: Sequence[str]) -> HashedTerms:
        raw = [term_bytes(t) for t in terms]
        return cls(raw, np.fromiter((zlib.crc32(b) for b in raw), np.uint32, len(raw)))


class TermDict:
    """The mapped dictionary of one segment."""

    def __init__(self, blob: MappedFile, off: MappedArray, hashes: MappedArray, hid: MappedArray) -> None:
        self.blob = blob
        self.off = off
        self.n = len(off) - 1
        self._hashes = hashes
        self._hid = hid
        if any(len(a.shape) != 1 for a in (off, hashes, hid)):
            raise IndexCorrupt(f"index file {blob.where} has tables of the wrong shape; rebuilding")
        if len(hashes) != self.n or len(hid) != self.n:
            raise IndexCorrupt(f"index file {blob.where} disagrees with its hash index; rebuilding")

    def term_at(self, i: int) -> bytes:
        lo, hi = (int(x) for x in self.off.rows(i, i + 2))
        return bytes(self.blob.view(lo, hi))

    def term(self, i: int) -> str:
        return self._decoded([self.term_at(i)])[0]

    def _decoded(self, raw: Iterable[bytes | memoryview]) -> list[str]:
        """Terms' bytes as text; IndexCorrupt for bytes that are not UTF-8 (a dictionary whose checksum
        holds but whose bytes no writer made: a crafted or a damaged-then-resummed index)."""
        try:
            return [bytes(b).decode("utf-8", "surrogatepass") for b in raw]
        except UnicodeDecodeError:
            raise IndexCorrupt(
                f"index file {self.blob.where} holds a term that is not UTF-8; rebuilding"
            ) from None

    def terms(self, lo: int, hi: int) -> list[str]:
        """Terms ``lo`` to ``hi`` (ids), decoded."""
        if hi <= lo:
            return []
        off = self.off.rows(lo, hi + 1)
        base = int(off[0])
        blob = bytes(self.blob.view(base, int(off[-1])))
        rel = (off - base).tolist()
        return self._decoded(blob[rel[k] : rel[k + 1]] for k in range(hi - lo))

    def terms_at(self, ids: np.ndarray) -> list[str]:
        """The terms of ``ids``, decoded (the whole dictionary verified once, then read in place)."""
        off = self.off.all()
        blob = self.blob.view()
        ids = np.asarray(ids, np.int64)
        spans = zip(off[ids].tolist(), off[ids + 1].tolist(), strict=True)
        return self._decoded(blob[lo:hi] for lo, hi in spans)

    def terms_of(self, ids: np.ndarray) -> list[str]:
        """The terms of ``ids`` (valid ids), decoded; only the blocks holding them are checked."""
        ids = np.asarray(ids, np.int64)
        starts, ends = self.off.take(ids), self.off.take(ids + 1)
        if not ids.size:
            return []
        if int(starts.min()) < 0 or bool((ends < starts).any()) or int(ends.max()) > len(self.blob):
            raise IndexCorrupt(f"index file {self.blob.where}: a term's offsets lie outside it; rebuilding")
        self.blob.check_spans(starts, ends)
        buf = self.blob.buffer
        spans = zip(starts.tolist(), ends.tolist(), strict=True)
        return self._decoded(buf[lo:hi] for lo, hi in spans)

    def ids(self, terms: Sequence[str] | HashedTerms) -> np.ndarray:
        """The id of each term (-1 when this segment does not hold it); ``terms`` may come hashed
        (:class:`HashedTerms`: one hashing for every segment asked)."""
        asked = terms if isinstance(terms, HashedTerms) else HashedTerms.of(terms)
        raw = asked.raw
        out = np.full(len(raw), -1, np.int64)
        if not self.n or not raw:
            return out
        hashes, hid = self._hashes.all(), self._hid.all()
        lo = hashes.searchsorted(asked.crc, "left")
        hi = hashes.searchsorted(asked.crc, "right")
        found = np.flatnonzero(hi > lo)
        if len(found) <= FEW_TERMS:  # a query's few words: a verified read of each candidate
            for k in found.tolist():
                for j in range(int(lo[k]), int(hi[k])):
                    tid = int(hid[j])
                    if 0 <= tid < self.n and self.term_at(tid) == raw[k]:
                        out[k] = tid
                        break
            return out
        # many (the names a file calls): every candidate (nearly always one a term), the offsets of all
        # read in one call, the blocks holding their bytes checked at once, then each one compared
        per = (hi - lo)[found]
        which = np.repeat(found, per)
        slots = np.repeat(lo[found] - per.cumsum() + per, per) + np.arange(int(per.sum()), dtype=np.int64)
        tids = hid[slots].astype(np.int64)
        sane = (tids >= 0) & (tids < self.n)
        which, tids = which[sane], tids[sane]
        starts, ends = self.off.take(tids), self.off.take(tids + 1)
        self.blob.check_spans(starts, ends)
        buf, size = self.blob.buffer, len(self.blob)
        for k, tid, a, b in zip(which.tolist(), tids.tolist(), starts.tolist(), ends.tolist(), strict=True):
            term = raw[k]
            if out[k] < 0 and b - a == len(term) and 0 <= a <= b <= size and buf[a:b] == term:
                out[k] = tid
        return out

    def prefix_range(self, prefix: str) -> tuple[int, int]:
        """Ids [lo, hi) of the terms that start with ``prefix``."""
        p = term_bytes(prefix)
        return self._bisect(p), self._bisect(p + b"\xff")

    def warm(self) -> None:
        """Build the in-memory sample that prefix lookups bisect first (a long-lived reader's warm-up)."""
        _ = self._sample

    @cached_property
    def _sample(self) -> list[bytes]:
        """Every ``SAMPLE_EVERY``-th term (what a prefix lookup bisects first, in memory)."""
        off = self.off.all()
        starts, ends = off[0 : self.n : SAMPLE_EVERY].tolist(), off[1 : self.n + 1 : SAMPLE_EVERY].tolist()
        blob = self.blob.view()
        return [bytes(blob[lo:hi]) for lo, hi in zip(starts, ends, strict=True)]

    def _bisect(self, key: bytes) -> int:
        """The first id whose term is not below ``key``: among the sampled terms in memory, then in the
        block of ``SAMPLE_EVERY`` ids that holds it."""
        k = bisect_left(self._sample, key)
        lo, hi = max(0, (k - 1) * SAMPLE_EVERY + 1), min(self.n, k * SAMPLE_EVERY)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.term_at(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo
