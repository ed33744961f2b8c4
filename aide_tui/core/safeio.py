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
import stat
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
    shape, dtype, fortran, offset = _npy_header(memoryview(mm)[:4096].tobytes())
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize != expect_size:
        raise ValueError(".npy header disagrees with the file size")
    return np.ndarray(shape, dtype=dtype, buffer=mm, offset=offset, order="F" if fortran else "C")


def parse_npy(blob: bytes) -> np.ndarray:
    """Decode a ``.npy`` held in memory; object arrays and pickles are refused with ValueError."""
    shape, dtype, fortran, offset = _npy_header(blob[:4096])
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize != len(blob):
        raise ValueError(".npy header disagrees with its data size")
    arr = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return arr.reshape(shape, order="F" if fortran else "C")


def _npy_header(head: bytes) -> tuple[tuple[int, ...], np.dtype, bool, int]:
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
    try:
        header = ast.literal_eval(head[start : start + hlen].decode("latin1"))
        dtype = np.dtype(header["descr"])
        shape = tuple(int(x) for x in header["shape"])
        fortran = bool(header["fortran_order"])
    except (ValueError, SyntaxError, KeyError, TypeError) as exc:
        raise ValueError(f"bad .npy header ({exc.__class__.__name__})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or any(s < 0 for s in shape):
        raise ValueError(f"unexpected .npy contents ({dtype}, shape {shape})")
    return shape, dtype, fortran, start + hlen
