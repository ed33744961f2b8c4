"""Index files read in place: memory-mapped after the safety checks, verified block by block as read.

A reader of a big index must not pay for the whole of it: a one-shot search maps the files it needs and
touches only the rows a query reads (a term's postings, the candidates' chunks). Every file's size and
CRC-32 is in the manifest, and a file over one block (64 KiB) also has a CRC-32 per block there; a block
is checked the first time a reader touches it, so damage is still never silent, and it costs what the
query reads. The safety rules are those of :mod:`aide_tui.core.safeio`: regular files of ours only,
never through a symlink, exactly the size the manifest says.
"""

from __future__ import annotations

import mmap
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.safeio import UnsafeFile, npy_header, open_regular

BLOCK = 1 << 16  # bytes per checksummed block of a big file (a check costs ~20 µs)
ALONGSIDE_BYTES = 1 << 20  # a pass over more unchecked bytes than this verifies them on another thread
VERIFY_WINDOW = 1 << 20  # ... a window at a time, released once checked
RELEASE_BYTES = 16 << 20  # a pass over more than this drops its pages from the resident set as it goes


@dataclass(frozen=True)
class FileSum:
    """What the manifest records of one file: its size, its CRC-32, and one CRC-32 per block when it is
    bigger than a block (empty otherwise)."""

    size: int
    crc: int
    blocks: tuple[int, ...] = ()

    def to_json(self) -> list[Any]:
        return [self.size, self.crc, list(self.blocks)] if self.blocks else [self.size, self.crc]

    @classmethod
    def of(cls, data: bytes | memoryview) -> FileSum:
        """The sums of ``data`` as it is written."""
        view = memoryview(data)
        blocks = (
            tuple(zlib.crc32(view[i : i + BLOCK]) for i in range(0, len(view), BLOCK))
            if len(view) > BLOCK
            else ()
        )
        return cls(len(view), zlib.crc32(view), blocks)

    @classmethod
    def from_json(cls, v: Any) -> FileSum | None:
        """The manifest's entry (None when malformed)."""
        if (
            not isinstance(v, list)
            or len(v) not in (2, 3)
            or not all(type(x) is int and x >= 0 for x in v[:2])
        ):
            return None
        blocks: tuple[int, ...] = ()
        if len(v) == 3:
            if not isinstance(v[2], list) or not all(type(x) is int and x >= 0 for x in v[2]):
                return None
            blocks = tuple(v[2])
            if len(blocks) != -(-v[0] // BLOCK):
                return None
        elif v[0] > BLOCK:
            return None
        return cls(v[0], v[1], blocks)


class MappedFile:
    """One index file mapped read-only; :meth:`view` checks the blocks it returns (each once)."""

    def __init__(self, path: Path, expect: FileSum, where: str) -> None:
        self.where = where
        self.sums = expect
        try:
            with open_regular(path) as (fd, st):
                if st.st_size != expect.size:
                    raise IndexCorrupt(f"index file {where} has the wrong size; rebuilding")
                self._mm: mmap.mmap | bytes = (
                    mmap.mmap(fd, expect.size, prot=mmap.PROT_READ) if expect.size else b""
                )
        except FileNotFoundError:
            raise IndexCorrupt(f"index file {where} is missing; rebuilding") from None
        except UnsafeFile as exc:
            raise IndexCorrupt(f"index file {where} cannot be trusted ({exc}); rebuilding") from None
        except OSError as exc:
            raise IndexCorrupt(
                f"index file {where} cannot be read ({exc.strerror or exc}); rebuilding"
            ) from None
        self.buffer = memoryview(self._mm)
        n_blocks = len(expect.blocks)
        self._checked = np.zeros(max(n_blocks, 1), bool)
        self._unchecked = n_blocks
        self._all_checked = not n_blocks
        self._lock = threading.Lock()  # two readers checking one block must not count it twice
        if not n_blocks:  # a small file is checked whole, now
            if zlib.crc32(self.buffer) != expect.crc:
                raise IndexCorrupt(f"index file {where} is damaged (checksum mismatch); rebuilding")
            self._checked[:] = True

    def __len__(self) -> int:
        return self.sums.size

    def check(self, lo: int, hi: int) -> None:
        """Verify the blocks holding bytes [lo, hi) (IndexCorrupt when one does not match). A long pass
        drops the pages it read from the resident set as it goes (they stay in the page cache)."""
        if self._all_checked or hi <= lo:
            return
        first, last = lo // BLOCK, (hi - 1) // BLOCK
        if first == last:  # the common case: a few rows inside one block
            if self._checked[first]:
                return
            todo = np.asarray([first])
        else:
            todo = np.flatnonzero(~self._checked[first : last + 1]) + first
        long_pass = len(todo) * BLOCK > RELEASE_BYTES
        self._check_blocks(todo.tolist(), long_pass)
        if long_pass:
            self.release(lo, hi)

    def check_spans(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """Verify the blocks holding the bytes of every span [lo[i], hi[i]) (many short spans at once: the
        terms a lookup compares), each block once; what lies outside the file is not checked (a reader
        must not read it)."""
        if self._all_checked or not len(lo):
            return
        size = self.sums.size
        lo = np.clip(np.asarray(lo, np.int64), 0, size)
        hi = np.clip(np.asarray(hi, np.int64), lo, size)
        todo = np.zeros(len(self._checked), bool)
        short = hi - lo <= BLOCK  # a span no longer than a block lies in at most two
        some = short & (hi > lo)
        todo[lo[some] // BLOCK] = True
        todo[(hi[some] - 1) // BLOCK] = True
        for a, b in zip(lo[~short].tolist(), hi[~short].tolist(), strict=True):
            self.check(a, b)
        todo &= ~self._checked
        if todo.any():
            self._check_blocks(np.flatnonzero(todo).tolist(), False)

    def _check_blocks(self, todo: list[int], long_pass: bool) -> None:
        for b in todo:
            if self._checked[b]:  # another reader checked it meanwhile
                continue
            # the sum outside the lock (two threads verify a file's blocks side by side), the count in it
            if zlib.crc32(self.buffer[b * BLOCK : (b + 1) * BLOCK]) != self.sums.blocks[b]:
                raise IndexCorrupt(f"index file {self.where} is damaged (checksum mismatch); rebuilding")
            with self._lock:
                if not self._checked[b]:
                    self._checked[b] = True
                    self._unchecked -= 1
            if long_pass and (b + 1) * BLOCK % RELEASE_BYTES == 0:
                self.release(b * BLOCK + BLOCK - RELEASE_BYTES, (b + 1) * BLOCK)
        self._all_checked = self._unchecked <= 0

    @property
    def unchecked_bytes(self) -> int:
        """About how many bytes are still to be verified (0 once every block is)."""
        return 0 if self._all_checked else self._unchecked * BLOCK

    def release(self, lo: int = 0, hi: int | None = None) -> None:
        """Drop the pages of bytes [lo, hi) from this process's resident set (a no-op when unmapped)."""
        mm = self._mm
        if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        hi = self.sums.size if hi is None else min(hi, self.sums.size)
        start = max(0, lo) // mmap.PAGESIZE * mmap.PAGESIZE
        if hi > start:
            try:
                mm.madvise(mmap.MADV_DONTNEED, start, hi - start)
            except (OSError, ValueError):
                pass

    def check_all(self) -> None:
        self.check(0, self.sums.size)

    def view(self, lo: int = 0, hi: int | None = None) -> memoryview:
        """Bytes [lo, hi), verified."""
        hi = self.sums.size if hi is None else hi
        self.check(lo, hi)
        return self.buffer[lo:hi]


class MappedArray:
    """A ``.npy`` array of a :class:`MappedFile`: rows are verified before they are read."""

    def __init__(self, f: MappedFile) -> None:
        self.file = f
        try:
            shape, dtype, fortran, offset = npy_header(bytes(f.view(0, min(len(f), 4096))))
        except ValueError as exc:
            raise IndexCorrupt(f"index file {f.where} is not a valid array ({exc}); rebuilding") from None
        count = int(np.prod(shape)) if shape else 1
        if fortran or offset + count * dtype.itemsize != len(f):
            raise IndexCorrupt(f"index file {f.where} is not a valid array (size); rebuilding")
        self.offset = offset
        self.shape = shape
        self.dtype = dtype
        self.raw: np.ndarray = np.frombuffer(f.buffer, dtype=dtype, count=count, offset=offset).reshape(shape)
        self.row_bytes = int(dtype.itemsize * (int(np.prod(shape[1:])) if len(shape) > 1 else 1))

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def rows(self, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi), verified."""
        lo, hi = max(lo, 0), min(hi, len(self))
        if hi > lo:
            self.file.check(self.offset + lo * self.row_bytes, self.offset + hi * self.row_bytes)
        return self.raw[lo:hi]

    def ranges(self, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        """Rows ``[lo[i], hi[i])`` of every range end to end, verified (one call for the postings of a
        query's terms: a call per term was a third of a long query's BM25 on a many-segment index)."""
        f, raw, at, size = self.file, self.raw, self.offset, self.row_bytes
        checked = f.unchecked_bytes == 0
        parts = []
        for a, b in zip(lo, hi, strict=True):
            if b > a:
                if not checked:
                    f.check(at + a * size, at + b * size)
                parts.append(raw[a:b])
        return np.concatenate(parts) if parts else raw[:0].copy()

    def all(self) -> np.ndarray:
        """The whole array, verified."""
        self.file.check_all()
        return self.raw

    @contextmanager
    def read_while_verified(self) -> Iterator[np.ndarray]:
        """The whole array to read unverified while another thread checks every block (both sides
        release the GIL: a one-shot scan of the static tier costs the product, not product + CRC), and
        this one too once the body is done; on leaving, IndexCorrupt when a block did not match, so
        what the body computed is never used."""
        if self.file.unchecked_bytes <= ALONGSIDE_BYTES:
            yield self.all()
            return
        failed: list[IndexCorrupt] = []
        windows = iter(range(0, len(self.file), VERIFY_WINDOW))  # claimed by both sides (next() is atomic)

        def verify() -> None:  # a window at a time, each dropped from the resident set once checked
            f = self.file
            try:
                for lo in windows:
                    f.check(lo, lo + VERIFY_WINDOW)
                    f.release(lo, lo + VERIFY_WINDOW)
            except IndexCorrupt as exc:
                failed.append(exc)

        checker = threading.Thread(target=verify, name="aide-verify", daemon=True)
        checker.start()
        try:
            yield self.raw
        finally:
            verify()  # the body is done: check what the other thread has not reached yet, alongside it
            checker.join()
        if failed:
            raise failed[0]

    def release_rows(self, lo: int, hi: int) -> None:
        """Drop rows [lo, hi)'s pages from the resident set (after a pass over them)."""
        self.file.release(self.offset + lo * self.row_bytes, self.offset + hi * self.row_bytes)

    def spans(self, ids: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """This pointer table's ``[lo, hi)`` of each of ``ids`` (int64), read through :meth:`take`; None
        when an id or a pointer is out of place (a damaged file: the caller says which)."""
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) + 1 >= len(self)):
            return None
        lo, hi = self.take(ids).astype(np.int64), self.take(ids + 1).astype(np.int64)
        if ids.size and (bool(np.any(lo < 0)) or bool(np.any(hi < lo)) or int(hi.max()) > n_rows):
            return None
        return lo, hi

    def take(self, idx: np.ndarray | Sequence[int]) -> np.ndarray:
        """``array[idx]`` for row numbers ``idx`` (each block they fall in verified)."""
        idx = np.asarray(idx, np.int64)
        if idx.size == 0:
            return self.raw[:0].copy()
        if self.file.sums.blocks and self.file.unchecked_bytes:
            starts = self.offset + idx * self.row_bytes
            # a set, not np.unique: that imports numpy.ma (9 ms of a one-shot search)
            blocks = set((starts // BLOCK).tolist()) | set(((starts + self.row_bytes - 1) // BLOCK).tolist())
            for b in sorted(blocks):
                self.file.check(b * BLOCK, b * BLOCK + 1)
        return np.asarray(self.raw[idx])


def open_array(seg_dir: Path, files: dict[str, FileSum], name: str, where: str) -> MappedArray:
    """The named ``.npy`` of a segment (IndexCorrupt when the manifest does not list it)."""
    sums = files.get(name)
    if sums is None:
        raise IndexCorrupt(f"index segment {where} lacks {name}; rebuilding")
    return MappedArray(MappedFile(seg_dir / name, sums, f"{where}/{name}"))


def open_file(seg_dir: Path, files: dict[str, FileSum], name: str, where: str) -> MappedFile:
    """The named raw file of a segment (IndexCorrupt when the manifest does not list it)."""
    sums = files.get(name)
    if sums is None:
        raise IndexCorrupt(f"index segment {where} lacks {name}; rebuilding")
    return MappedFile(seg_dir / name, sums, f"{where}/{name}")
