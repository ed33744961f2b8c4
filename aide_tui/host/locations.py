"""Where a workspace's server keeps its socket, token and lock: in the state dir (``ROOT/.aide``, 0700).

AF_UNIX paths are limited to 107 bytes; a deep workspace gets its socket in a private per-user runtime
folder instead, under a name derived from the workspace's real path, so clients find it the same way.
That folder (``$XDG_RUNTIME_DIR/aide-tui-<uid>``, else in the temp dir, where anyone may create it first)
is used only when it is ours and nobody else may write to it: :func:`untrusted_folder` says why not.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
from pathlib import Path

from aide_tui.core.paths import fallback_dir, private_dir, state_dir, trusted_dir

SOCKET_NAME = "serve.sock"
TOKEN_NAME = "serve.token"
LOCK_NAME = "serve.lock"
MAX_SOCKET_PATH = 100  # bytes; the kernel's limit is 107 (sun_path is 108 with the NUL)


def runtime_dir() -> Path:
    """A user-only folder for sockets whose natural path is too long."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if not base:
        import tempfile  # only for a socket path too long to sit beside the index

        base = tempfile.gettempdir()
    uid = os.geteuid() if hasattr(os, "geteuid") else 0
    return Path(base) / f"aide-tui-{uid}"


def _short_socket(root: Path) -> Path:
    tag = hashlib.sha1(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return runtime_dir() / f"{tag}.sock"


def socket_for(root: Path, state: Path) -> Path:
    """The socket path a server whose state dir is ``state`` listens on."""
    path = state / SOCKET_NAME
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    return _short_socket(root)


def untrusted_folder(folder: Path) -> str | None:
    """Why a socket's folder cannot be trusted (None when it is a real folder of ours that no other user
    may write to: nobody else can have put a socket in it, nor replace ours)."""
    try:
        st = os.lstat(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder (a symlink?)"
    if st.st_uid != os.geteuid():
        return f"{folder} belongs to another user (uid {st.st_uid})"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return f"{folder} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def prepare_socket_dir(sock: Path) -> None:
    """Make sure the socket's folder exists, is ours and is 0700 (raises OSError otherwise). The runtime
    folder is refused when another user owns it or may write to it (created 0700 by us otherwise); a
    state folder is never created here (it is gone only when its workspace was moved or deleted)."""
    folder = sock.parent
    if not trusted_dir(folder):
        raise OSError(f"{folder} is a symlink or belongs to another user")
    if folder == runtime_dir():
        if os.path.lexists(folder):
            why = untrusted_folder(folder)  # someone else's files may be in it: never chmod it into ours
            if why is not None:
                raise OSError(f"{why}: not using it for the server's socket; remove it")
        private_dir(folder)
    elif not folder.is_dir():  # a state folder exists while its host runs: never make it (or its root) again
        raise FileNotFoundError(f"{folder} is gone (the workspace was moved or deleted)")
    else:
        private_dir(folder, within=folder.parent)
    why = untrusted_folder(folder)  # checked again after creating it: another user may have been first
    if why is not None:
        raise OSError(f"{why}: not using it for the server's socket")


def server_state_dir(root: Path) -> Path:
    """The state dir a server uses (created if needed): the same one the indexer writes to."""
    return state_dir(root, create=True)


def socket_candidates(root: Path) -> list[tuple[Path, Path]]:
    """(socket, lock file) of every place a server for ``root`` may listen, most likely first.

    For clients: creates nothing. A workspace's index is either in ``ROOT/.aide`` or in its fallback
    folder, and so is its server.
    """
    out: list[tuple[Path, Path]] = []
    for state in (Path(root) / ".aide", fallback_dir(root)):
        pair = (socket_for(root, state), state / LOCK_NAME)
        if pair not in out:
            out.append(pair)
    return out


def listening_sockets(root: Path) -> list[tuple[Path, Path]]:
    """The (socket, lock file) pairs of :func:`socket_candidates` where a socket file sits (a server may
    answer there; none: nobody hosts ``root``)."""
    out = []
    for sock, lock in socket_candidates(root):
        try:
            if sock.is_socket():
                out.append((sock, lock))
        except OSError:
            continue
    return out


def lock_holder(lock: Path) -> int | None:
    """The PID written in a held lock file, 0 when held but unreadable, None when nobody holds it."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: no hang
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raw = os.read(fd, 32).decode("ascii", "replace").strip()
            return int(raw) if raw.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def remove_dead_socket(sock: Path, lock: Path) -> bool:
    """Remove ``sock`` when no server holds ``lock`` (a crashed server leaves its socket behind)."""
    if lock_holder(lock) is not None:
        return False
    try:
        if stat.S_ISSOCK(os.lstat(sock).st_mode):
            os.unlink(sock)
            return True
    except OSError:
        pass
    return False
