"""The host lock: at most one process hosts a workspace (indexes it and answers on its socket).

``<state>/serve.lock`` is flocked for as long as a process hosts; it holds the host's PID. Taking it is
the only way to become a host, so starting is race-free: a process that spawns a background host takes
the lock first and hands the open file to the child (a flock belongs to the open file, which the child
inherits), so there is never a moment when two processes both think they may start one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from aide_tui.host.locations import LOCK_NAME, lock_holder

LOCK_FD_ENV = "AIDE_HOST_LOCK_FD"  # a spawned host finds the lock its parent took for it here


class AlreadyHosted(Exception):
    """Another process hosts this workspace."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"PID {pid}" if pid else "PID unknown")
        self.pid = pid


def try_host_lock(state: Path, wait: float = 0.0) -> int | None:
    """The host lock's file descriptor when this process got it (within ``wait`` seconds), else None.
    The PID written in it becomes this process's. The file is removed when hosting ends (:func:`release`),
    so a lock taken on a file that was removed meanwhile is dropped and taken again on the new one."""
    path = state / LOCK_NAME
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
            continue
        if _same_file(fd, path):
            claim(fd)
            return fd
        os.close(fd)  # the previous host removed it after we opened it: take the new one


def acquire_host_lock(state: Path, wait: float = 0.5) -> int:
    """:func:`try_host_lock`, or AlreadyHosted naming the holder."""
    fd = try_host_lock(state, wait)
    if fd is None:
        raise AlreadyHosted(host_pid(state) or 0)
    return fd


def claim(fd: int, pid: int | None = None) -> None:
    """Write this process's PID (or ``pid``: the host it hands the lock to) into a held host lock."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid() if pid is None else pid}\n".encode(), 0)


def inherited_lock() -> int | None:
    """The host lock a parent took for this process (see :data:`LOCK_FD_ENV`), when it is still held."""
    raw = os.environ.pop(LOCK_FD_ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: succeeds at once
    except OSError:
        return None
    os.set_inheritable(fd, False)
    claim(fd)
    return fd


def host_pid(state: Path) -> int | None:
    """The PID of the process hosting the workspace (0 when held but unreadable), None when nobody does."""
    return lock_holder(state / LOCK_NAME)


def release(fd: int, state: Path) -> None:
    """Stop hosting: the lock file goes (removed while still held, so nobody holds a stale one), and the
    next front end to try takes over."""
    path = state / LOCK_NAME
    if _same_file(fd, path):
        with contextlib.suppress(OSError):
            os.unlink(path)
    os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)
