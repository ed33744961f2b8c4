"""Run ``aide-tui serve``: one server per workspace (flock + PID), a 0600 Unix socket in the 0700 state dir,
and optionally 127.0.0.1:PORT guarded by a Bearer token.

The token is never taken from the workspace (a cloned repository may ship a ``.aide/serve.token``, and
then anyone who read the repository knows it): it lives in the workspace's folder in the user's cache
dir, created by us with O_EXCL, 0600, and is reused only while it is still a file of ours that nobody
else may read, with one link; anything else there is refused with a message."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import secrets
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TextIO

import uvicorn

from aide_tui.core.config import Settings
from aide_tui.core.paths import fallback_dir, private_dir, trusted_dir
from aide_tui.core.textsafe import printable
from aide_tui.serve.app import Guard, create_app
from aide_tui.serve.client import settings_fingerprint
from aide_tui.serve.deadline import header_deadline_protocol, raise_fd_limit
from aide_tui.serve.locations import LOCK_NAME, TOKEN_NAME, prepare_socket_dir, server_state_dir, socket_for

LOOPBACK_HOSTS = {"127.0.0.1": socket.AF_INET, "localhost": socket.AF_INET, "::1": socket.AF_INET6}
LOCK_WAIT = 0.5  # seconds: a client probing the lock holds it for microseconds
MAX_CONNECTIONS = 512  # beyond this uvicorn answers 503 instead of queueing without bound
KEEP_ALIVE = 5  # seconds an idle kept-alive connection stays open


class AlreadyRunning(Exception):
    """Another server holds this workspace's lock."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"PID {pid}" if pid else "PID unknown")
        self.pid = pid


class RefusedBind(ValueError):
    """A bind address that is not loopback."""


def acquire_lock(state: Path) -> int:
    """Hold ``state/serve.lock`` for the process lifetime (returns the fd); AlreadyRunning otherwise."""
    path = state / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise AlreadyRunning(int(raw) if raw.isdigit() else 0) from None
            time.sleep(0.05)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def token_path(root: Path) -> Path:
    """Where the TCP listener's token lives: the workspace's folder in the user's cache dir (0700), never
    inside the workspace."""
    return fallback_dir(root) / TOKEN_NAME


def _read_own_token(path: Path) -> str | None:
    """The token in ``path`` if it is a file we created as :func:`load_token` does (regular, ours, 0600 or
    stricter, one link); None when there is none or it is damaged (then it is replaced); OSError when it
    is something else, which is never used nor touched."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = exc.strerror or exc
        raise OSError(f"{path}: not a token file aide-tui created ({why}); remove it") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or mode & 0o077 or st.st_nlink != 1:
            raise OSError(
                f"{path}: not a token file aide-tui created (owner uid {st.st_uid}, mode {mode:o}, "
                f"{st.st_nlink} links); remove it"
            )
        token = fh.read(4096).decode("ascii", "replace").strip()
    if len(token) >= 32 and token.replace("-", "").replace("_", "").isalnum():
        return token
    os.unlink(path)  # empty or damaged: make a new one
    return None


def load_token(root: Path) -> tuple[str, Path]:
    """The Bearer token for ``root``'s TCP listener and its file (:func:`token_path`), created with
    O_EXCL (0600) when there is none."""
    path = token_path(root)
    if not trusted_dir(path.parent):
        raise OSError(f"{path.parent} is a symlink or belongs to another user")
    private_dir(path.parent)
    for _ in range(2):
        token = _read_own_token(path)
        if token is not None:
            return token, path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another server made one meanwhile: read that
            continue
        token = secrets.token_urlsafe(32)
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
        return token, path
    raise OSError(f"cannot create {path}")


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` that only we can connect to (0600), replacing a dead one."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(f"{path} is a directory")
        os.unlink(path)  # we hold the lock: whatever socket is there is dead
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600, no window where others could connect
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(256)
    return sock


def loopback_hosts(port: int) -> frozenset[bytes]:
    """The ``Host`` header values the TCP listener answers: loopback names, with or without its port (a
    DNS-rebinding page sends its own host name)."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return frozenset(n.encode() for name in names for n in (name, f"{name}:{port}"))


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening loopback TCP socket; any other address is refused."""
    family = LOOPBACK_HOSTS.get(host)
    if family is None:
        raise RefusedBind(f"refusing to listen on {host!r}: serve binds loopback only (127.0.0.1, ::1)")
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", port))
    sock.listen(256)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server for one listener; :func:`_run` owns the signals for all of them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:  # older uvicorn's name for the same step
        pass


def _config(app: Any, lifespan: Literal["auto", "on", "off"]) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        lifespan=lifespan,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE,
        http=header_deadline_protocol(),  # slow or unfinished request headers cannot hold the server
    )


async def _run(servers: list[tuple[_Server, socket.socket]], on_stop: Callable[[], None]) -> None:
    """Serve every listener in one loop; SIGINT/SIGTERM stop them all (a second one forces it)."""
    loop = asyncio.get_running_loop()
    plain = [s for s, _ in servers]

    def stop() -> None:
        on_stop()
        for s in plain:
            s.force_exit = s.should_exit
            s.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    first, first_sock = servers[0]  # runs the app's lifespan: the others start once it is up
    tasks = [asyncio.create_task(first.serve(sockets=[first_sock]))]
    while not first.started and not tasks[0].done():
        await asyncio.sleep(0.01)
    tasks += [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in servers[1:]]
    try:
        await asyncio.gather(*tasks)
    finally:
        stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def serve(
    root: Path,
    settings: Settings,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    watch: bool = True,
    out: TextIO = sys.stdout,
) -> int:
    """Serve ``root`` until SIGINT/SIGTERM. Raises AlreadyRunning, RefusedBind or OSError before serving."""
    if port is not None and host not in LOOPBACK_HOSTS:
        raise RefusedBind(f"refusing to listen on {host!r}: serve binds loopback only (127.0.0.1, ::1)")
    state = server_state_dir(root)
    lock_fd = acquire_lock(state)
    raise_fd_limit()
    sock_path = socket_for(root, state)
    sockets: list[socket.socket] = []
    inode: int | None = None
    try:
        prepare_socket_dir(sock_path)
        token, token_file = load_token(root) if port is not None else (None, None)
        sockets.append(bind_unix(sock_path))
        inode = os.lstat(sock_path).st_ino
        if port is not None:
            sockets.append(bind_tcp(host, port))
        app, service = create_app(root, settings, watch=watch)
        fingerprint = settings_fingerprint(settings)
        guards = [Guard(app, fingerprint)]
        if token is not None:
            tcp_port = sockets[-1].getsockname()[1]
            guards.append(Guard(app, fingerprint, token, hosts=loopback_hosts(tcp_port)))
        servers = [
            (_Server(_config(guard, lifespan="on" if i == 0 else "off")), sock)
            for i, (guard, sock) in enumerate(zip(guards, sockets, strict=True))
        ]
        print(f"aide-tui serve: {printable(str(root))} (PID {os.getpid()})", file=out)
        print(f"listening unix:{printable(str(sock_path))}", file=out)
        if token_file is not None:
            tcp = sockets[-1].getsockname()
            print(f"listening http://{host if ':' not in host else '[::1]'}:{tcp[1]} "
                  f"(Authorization: Bearer <{printable(str(token_file))}>)", file=out)  # fmt: skip
        out.flush()
        asyncio.run(_run(servers, service.hub.close))
        return 0
    finally:
        for s in sockets:
            s.close()
        with contextlib.suppress(OSError):
            if inode is not None and os.lstat(sock_path).st_ino == inode:
                os.unlink(sock_path)
        os.close(lock_fd)
