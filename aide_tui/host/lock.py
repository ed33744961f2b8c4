"""The host lock: at most one process hosts a workspace (indexes it and answers on its socket).

``<state>/serve.lock`` is flocked for as long as a process hosts; it holds the host's PID. Taking it is
the only way to become a host, so starting is race-free: a process that spawns a background host takes
the lock first and hands the open file to the child (a flock belongs to the open file, which the child
inherits), so there is never a moment when two processes both think they may start one.

The file can be removed or replaced under a running host (``rm``, ``git clean -X``): the host then holds
a lock on a file nobody else can open, and the next process would take a new one. So a process that
takes the lock also makes sure no other host still answers on the workspace's socket (it lets the new
file go if one does), and a host checks its lock (:func:`keep_host_lock`, every few seconds and before
each indexing run): it takes the file back when nobody else holds it, and otherwise stops hosting.
A lock file this process cannot open (another user's, a symlink, a folder) is :class:`HostLockUnusable`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import time
from pathlib import Path

from aide_tui.host.locations import LOCK_NAME, SOCKET_NAME, lock_holder, socket_for

LOCK_FD_ENV = "AIDE_HOST_LOCK_FD"  # a spawned host finds the lock its parent took for it here
RETAKE_WAIT = 1.0  # seconds a host waits to take back its lock file (a taker may be letting it go)


class AlreadyHosted(Exception):
    """Another process hosts this workspace."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"PID {pid}" if pid else "PID unknown")
        self.pid = pid


class HostLockUnusable(OSError):
    """The host lock file is there but this process cannot open it: nobody here may host the workspace."""

    def __str__(self) -> str:
        return str(self.strerror)


def _open_lock(path: Path) -> int:
    """The lock file, opened (created if missing) read-write; HostLockUnusable saying why it cannot be."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        try:
            st: os.stat_result | None = os.lstat(path)
        except OSError:
            st = None
        if st is not None and st.st_uid != os.geteuid():
            why = f"belongs to another user (uid {st.st_uid})"
        elif exc.errno == errno.ELOOP:
            why = "is a symlink"
        elif exc.errno == errno.EISDIR:
            why = "is a folder"
        else:
            why = f"cannot be opened ({exc.strerror or exc})"
        raise HostLockUnusable(
            exc.errno or errno.EACCES, f"{path} {why}: cannot take the host lock"
        ) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        why = (
            "is not a regular file"
            if not stat.S_ISREG(st.st_mode)
            else f"belongs to another user (uid {st.st_uid})"
        )
        raise HostLockUnusable(errno.EACCES, f"{path} {why}: cannot take the host lock")
    return fd


def _listener_pid(state: Path, root: Path | None) -> int | None:
    """The PID of another process of ours that listens on the workspace's socket (a host whose lock file
    was removed), None when nobody does."""
    if root is None and state.name == ".aide":
        root = state.parent
    import socket  # here: a one-shot search that only asks who holds the lock never connects

    paths = dict.fromkeys([state / SOCKET_NAME, *([socket_for(root, state)] if root is not None else [])])
    option = getattr(socket, "SO_PEERCRED", None)
    for path in paths:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
            if option is None:
                return 0
            pid, uid, _gid = struct.unpack(
                "3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
            )
        except OSError:
            continue
        finally:
            sock.close()
        if uid == os.geteuid() and pid != os.getpid():
            return int(pid)
    return None


def try_host_lock(state: Path, wait: float = 0.0, root: Path | None = None) -> int | None:
    """The host lock's file descriptor when this process got it (within ``wait`` seconds), else None.
    The PID written in it becomes this process's. The file is removed when hosting ends (:func:`release`),
    so a lock taken on a file that was removed meanwhile is dropped and taken again on the new one. A
    lock taken while another host still answers on the socket (its lock file was removed) is let go:
    that process hosts. HostLockUnusable when the file cannot be opened."""
    path = state / LOCK_NAME
    deadline = time.monotonic() + wait
    while True:
        fd = _open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
            continue
        if not _same_file(fd, path):
            os.close(fd)  # the previous host removed it after we opened it: take the new one
            continue
        if _listener_pid(state, root) is not None:
            release(fd, state)  # a host whose lock file went still answers: it hosts, not us
            return None
        claim(fd)
        return fd


def acquire_host_lock(state: Path, wait: float = 0.5, root: Path | None = None) -> int:
    """:func:`try_host_lock`, or AlreadyHosted naming the holder."""
    fd = try_host_lock(state, wait, root)
    if fd is None:
        raise AlreadyHosted(host_pid(state) or _listener_pid(state, root) or 0)
    return fd


def keep_host_lock(fd: int, state: Path, root: Path | None = None) -> int | None:
    """The host lock ``fd`` checked against its file: ``fd`` while it is still the file there; when the
    file was removed or replaced, the lock on the one there now (taken back, and ``fd`` closed) unless
    another process holds that one: then None, or HostLockUnusable when it cannot be opened (``fd``
    stays open either way: stop hosting, then close it)."""
    if _same_file(fd, state / LOCK_NAME):
        return fd
    new = try_host_lock(state, RETAKE_WAIT, root)
    if new is not None:
        os.close(fd)
    return new


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
