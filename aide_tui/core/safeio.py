"""Reading files we do not trust: regular files only, never through a symlink, bounded in size.

A workspace is often a cloned repository, and it may ship its own ``.aide/`` folder: a manifest
symlinked to ``/dev/zero`` or ``/proc/self/fd/0`` must give a clear error, not a ``MemoryError`` or a
hang. Every read of an index or cache file goes through here.
"""

from __future__ import annotations

import ast
import contextlib
import mmap
import os
import re
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


class UnsafeFile(OSError):
    """A file that is not a plain regular file of ours, or not the size we expect."""


@contextlib.contextmanager
def open_regular(path: Path | str, *, owner: bool = True) -> Iterator[tuple[int, os.stat_result]]:
    """Open ``path`` read-only without following a symlink or blocking on a FIFO; yield (fd, fstat).

    Raises FileNotFoundError, UnsafeFile (a symlink, FIFO, device, directory, or a file owned by
    another user when ``owner``) or another OSError.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise UnsafeFile(f"{path} is a symlink") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is not a regular file")
        if owner and hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise UnsafeFile(f"{path} belongs to another user")
        yield fd, st
    finally:
        os.close(fd)


def read_bounded(path: Path | str, max_bytes: int, *, expect_size: int | None = None,
                 owner: bool = True) -> bytes:  # fmt: skip
    """The whole content of a regular file of at most ``max_bytes`` (or exactly ``expect_size``)."""
    with open_regular(path, owner=owner) as (fd, st):
        limit = max_bytes if expect_size is None else expect_size
        if st.st_size > limit or (expect_size is not None and st.st_size != expect_size):
            raise UnsafeFile(
                f"{path} has {st.st_size} bytes, expected {'at most ' if expect_size is None else ''}{limit}"
            )
        buf = bytearray(st.st_size + 1)  # one byte more: a file that grew meanwhile is noticed
        view = memoryview(buf)
        got = 0
        with os.fdopen(os.dup(fd), "rb", buffering=0) as fh:
            while got < len(buf):
                n = fh.readinto(view[got:])
                if not n:
                    break
                got += n
    if got > limit or got != st.st_size:
        raise UnsafeFile(f"{path} changed size while it was read")
    return bytes(view[:got]) if got < len(buf) else bytes(buf)


def load_npy(path: Path | str, *, expect_size: int, mmap_mode: bool = False) -> np.ndarray:
    """A ``.npy`` array of exactly ``expect_size`` bytes, read or memory-mapped without pickles.

    Raises UnsafeFile or ValueError (not a plain numeric .npy).
    """
    if not mmap_mode:
        return parse_npy(read_bounded(path, expect_size, expect_size=expect_size))
    with open_regular(path) as (fd, st):
        if st.st_size != expect_size:
            raise UnsafeFile(f"{path} has {st.st_size} bytes, expected {expect_size}")
        if expect_size == 0:
            raise ValueError("empty .npy file")
        mm = mmap.mmap(fd, expect_size, prot=mmap.PROT_READ)
    shape, dtype, fortran, offset = npy_header(memoryview(mm)[:4096].tobytes())
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize != expect_size:
        raise ValueError(".npy header disagrees with the file size")
    return np.ndarray(shape, dtype=dtype, buffer=mm, offset=offset, order="F" if fortran else "C")


def release_pages(arr: np.ndarray) -> None:
    """Drop a memory-mapped array's pages from this process's resident set (they stay in the page cache).

    After a pass over the whole file (a checksum, a projection), the pages would otherwise count in the
    reader's RSS for as long as it lives, though queries touch only a few rows; the next access maps
    them back from the page cache. A no-op for arrays in ordinary memory.
    """
    base = _mapping(arr)
    if base is not None and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            base.madvise(mmap.MADV_DONTNEED)


WINDOW_BYTES = 16 << 20  # passes over a memory-mapped file release its pages every 16 MB


def crc32_mapped(arr: np.ndarray) -> int:
    """CRC-32 of the whole file under a memory-mapped array, without leaving it in the resident set."""
    base = _mapping(arr)
    if base is None:
        return zlib.crc32(memoryview(arr.base if arr.base is not None else arr))  # type: ignore[arg-type]
    crc = 0
    view = memoryview(base)
    try:
        for off in range(0, len(base), WINDOW_BYTES):
            crc = zlib.crc32(view[off : off + WINDOW_BYTES], crc)
            release_pages(arr)
    finally:
        view.release()
    return crc


def mapped_row_windows(arr: np.ndarray) -> Iterator[slice]:
    """Row slices of about ``WINDOW_BYTES`` each; after each one a memory-mapped ``arr`` drops its pages."""
    n = len(arr)
    step = max(1, WINDOW_BYTES // max(1, arr.strides[0] if arr.ndim else 1))
    for lo in range(0, n, step):
        yield slice(lo, min(n, lo + step))
        release_pages(arr)


def gather_rows(arr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``arr[rows]`` for ascending ``rows``; a memory-mapped ``arr`` is read window by window, dropping
    each window's pages after it (a few rows fault in whole neighbourhoods of the file)."""
    if _mapping(arr) is None:
        return np.asarray(arr[rows])
    parts = []
    for win in mapped_row_windows(arr):
        a, z = np.searchsorted(rows, [win.start, win.stop])
        if z > a:
            parts.append(arr[rows[a:z]])
    return np.concatenate(parts) if parts else arr[rows]


def _mapping(arr: np.ndarray) -> mmap.mmap | None:
    base: object = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, mmap.mmap) else None


def parse_npy(blob: bytes) -> np.ndarray:
    """Decode a ``.npy`` held in memory; object arrays and pickles are refused with ValueError."""
    shape, dtype, fortran, offset = npy_header(blob[:4096])
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize != len(blob):
        raise ValueError(".npy header disagrees with its data size")
    arr = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return arr.reshape(shape, order="F" if fortran else "C")


# the header dict as numpy's writer formats it, padded with spaces and ended by a newline
_NPY_PLAIN = re.compile(
    r"\{'descr': '([<>|=]?[a-zA-Z][0-9]{0,2})', 'fortran_order': (True|False), "
    r"'shape': \(((?:0|[1-9]\d*),|(?:0|[1-9]\d*)(?:, (?:0|[1-9]\d*))+|)\), \} *\n"
)


def npy_header(head: bytes) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """(shape, dtype, fortran_order, data offset) of a version 1/2/3 ``.npy`` header."""
    if len(head) < 10 or head[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy file")
    major = head[6]
    if major == 1:
        hlen, start = int.from_bytes(head[8:10], "little"), 10
    elif major in (2, 3):
        hlen, start = int.from_bytes(head[8:12], "little"), 12
    else:
        raise ValueError(f"unsupported .npy version {major}")
    if start + hlen > len(head):
        raise ValueError(".npy header is too long")
    text = head[start : start + hlen].decode("latin1")
    try:
        plain = _NPY_PLAIN.fullmatch(text)
        if plain is not None:  # the header numpy writes: read without parsing Python (ast was 60 µs a file)
            descr, fortran_text, dims = plain.groups()
            dtype = np.dtype(descr)
            shape = tuple(int(x) for x in dims.split(",") if x.strip())
            fortran = fortran_text == "True"
        else:
            header = ast.literal_eval(text)
            dtype = np.dtype(header["descr"])
            shape = tuple(int(x) for x in header["shape"])
            fortran = bool(header["fortran_order"])
    except (ValueError, SyntaxError, KeyError, TypeError) as exc:
        raise ValueError(f"bad .npy header ({exc.__class__.__name__})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or any(s < 0 for s in shape):
        raise ValueError(f"unexpected .npy contents ({dtype}, shape {shape})")
    return shape, dtype, fortran, start + hlen
