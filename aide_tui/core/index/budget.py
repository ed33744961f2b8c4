"""A machine-wide budget of bulk embedding: at most ``index.max_bulk_jobs`` per user at once.

Each workspace's host embeds in its own processes; four fresh workspaces searched at once would start
eight CPU-bound encoders on two cores. A bulk embedding job (more than :data:`BULK_PIECES` missing
vectors) first takes one of N slots: flock-ed files in the user's private cache folder
(``$XDG_CACHE_HOME/aide-tui/slots``), shared by every workspace. A job that finds none free waits,
visibly ("queued"), and gives way to newer work meanwhile. Lexical indexing and an edit's handful of
vectors never queue. A dead process's slot frees itself (the kernel drops its flock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from aide_tui.core.paths import private_dir, trusted_dir, user_cache_dir

BULK_PIECES = 64  # missing vectors from which embedding is a bulk job
POLL = 0.5  # seconds between looks at the slots while queued


def slots_dir() -> Path:
    return user_cache_dir() / "slots"


def _try_slot(folder: Path, n: int) -> int | None:
    """An fd holding slot ``n``, or None when another job holds it."""
    fd = os.open(folder / f"bulk-{n}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


@contextlib.contextmanager
def bulk_slot(jobs: int, keep_waiting: Callable[[], bool], on_queued: Callable[[], None]) -> Iterator[bool]:
    """Hold one of ``jobs`` slots for the ``with`` body; yields True once held, False when
    ``keep_waiting()`` said to stop waiting first (newer work, a cancel). ``on_queued`` is called once
    when the job has to wait. With no usable slot folder there is no budget (the job runs)."""
    folder = slots_dir()
    try:
        if not trusted_dir(folder):
            raise OSError(f"{folder} is a symlink or belongs to another user")
        private_dir(folder)
    except OSError:
        yield True  # a budget we cannot keep must not stop indexing
        return
    fd = None
    told = False
    while fd is None:
        for n in range(max(1, jobs)):
            fd = _try_slot(folder, n)
            if fd is not None:
                break
        if fd is None:
            if not told:
                on_queued()
                told = True
            if not keep_waiting():
                yield False
                return
            time.sleep(POLL)
    try:
        yield True
    finally:
        os.close(fd)
