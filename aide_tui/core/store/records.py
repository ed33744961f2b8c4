"""What every store and the indexer share at the bottom: a source file's record, and the writer lock.

The local segments and a Milvus collection both keep a :class:`FileRecord` per indexed file (what was
read, and how much of it is embedded); the indexer diffs the tree against them. The writer lock makes
one process at a time write a workspace's index, whichever store holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aide_tui.core.errors import LockTimeout
from aide_tui.core.safeio import read_bounded


@dataclass
class FileRecord:
    """What the index knows about one source file, and which segment holds its chunks."""

    size: int
    mtime_ns: int
    sha1: str
    segment: int = 0
    chunks: int = 0
    pieces: int = 0
    vectors: int = 0  # pieces with a vector
    embedded: int = 0  # chunks whose every piece has a vector

    def to_json(self) -> list[Any]:
        return [self.size, self.mtime_ns, self.sha1, self.segment, self.chunks, self.pieces, self.vectors,
                self.embedded]  # fmt: skip


@dataclass(frozen=True)
class PassedFile:
    """A file left out for what it holds (binary, generated), with the size and mtime it had: while
    they stay the same a run passes it over without reading it again."""

    size: int
    mtime_ns: int
    reason: str

    def to_json(self) -> list[Any]:
        return [self.size, self.mtime_ns, str(self.reason)]


@dataclass
class PassedFiles:
    """The files a version left out for their content, and the version of the rules that judged them
    (other rules: every verdict is taken again)."""

    rules: str = ""
    files: dict[str, PassedFile] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rules": self.rules, "files": {p: f.to_json() for p, f in self.files.items()}}


@contextlib.contextmanager
def writer_lock(index_dir: Path, timeout: float = 30.0, poll: float = 0.1) -> Iterator[None]:
    """Hold the index's exclusive writer lock; wait up to ``timeout`` s, then raise LockTimeout.

    flock is released by the kernel when its holder dies, so a stale lock is taken over at once.
    """
    index_dir.mkdir(exist_ok=True, mode=0o700)  # never its state folder (or workspace): they may be gone
    path = index_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    wait = timeout if math.isfinite(timeout) and timeout >= 0 else 0.0
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    pid = lock_holder(index_dir)
                    who = f"process {pid}" if pid else "another process"
                    raise LockTimeout(
                        f"index is locked by {who} (another aide-tui is indexing {index_dir.parent.parent}); "
                        f"gave up after {wait:g} s",
                        pid,
                    ) from None
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def lock_holder(index_dir: Path) -> int | None:
    """The PID written by the current (or last) holder of the writer lock."""
    try:
        return int(read_bounded(index_dir / "lock", 64).decode().strip() or 0) or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def lock_is_held(index_dir: Path) -> bool:
    """Whether some process holds the writer lock right now."""
    try:
        fd = os.open(index_dir / "lock", os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
