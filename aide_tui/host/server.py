"""The host's listeners: the workspace protocol on its private Unix socket (0600 in a 0700 folder) and,
for ``serve --port``, on 127.0.0.1:PORT guarded by a Bearer token.

The token is never taken from the workspace (a cloned repository may ship a ``.aide/serve.token``, and
then anyone who read the repository knows it): it lives in the workspace's folder in the user's cache
dir, created by us with O_EXCL, 0600, and is reused only while it is still a file of ours that nobody
else may read, with one link; anything else there is refused with a message.

A host runs the listeners either in its main thread (``serve``, which owns the signals) or in a thread
of their own beside a front end (the app, ``mcp``, the background indexer).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

from aide_tui.core.config import Settings
from aide_tui.core.paths import fallback_dir, private_dir, trusted_dir
from aide_tui.host.client import settings_fingerprint
from aide_tui.host.deadline import header_deadline_protocol, raise_fd_limit
from aide_tui.host.locations import TOKEN_NAME, prepare_socket_dir, socket_for
from aide_tui.host.routes import Guard, HostedWorkspace, Hub, create_app

LOOPBACK_HOSTS = {"127.0.0.1": socket.AF_INET, "localhost": socket.AF_INET, "::1": socket.AF_INET6}
MAX_CONNECTIONS = 512  # beyond this uvicorn answers 503 instead of queueing without bound
KEEP_ALIVE = 5  # seconds an idle kept-alive connection stays open


class RefusedBind(ValueError):
    """A bind address that is not loopback."""


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


def _config(app: ASGIApp, lifespan: Literal["auto", "on", "off"]) -> uvicorn.Config:
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


class HostServer:
    """The workspace protocol over a started workspace and its hub, on the host's listeners."""

    def __init__(
        self, root: Path, state: Path, settings: Settings, live: HostedWorkspace, hub: Hub, *,
        port: int | None = None, host: str = "127.0.0.1", on_release: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        if port is not None and host not in LOOPBACK_HOSTS:
            raise RefusedBind(f"refusing to listen on {host!r}: serve binds loopback only (127.0.0.1, ::1)")
        self.root = root
        self.sock_path = socket_for(root, state)
        self.port, self.host = port, host
        self.token_file: Path | None = None
        self._sockets: list[socket.socket] = []
        self._inode: int | None = None
        self._dir_fd: int | None = None
        self._servers: list[tuple[_Server, socket.socket]] = []
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()  # start and close may race (a front end closing at once)
        self._app, _ = create_app(live, hub, settings, on_release=on_release)
        self._fingerprint = settings_fingerprint(settings)

    def open(self) -> None:
        """Bind the listeners (raises OSError or RefusedBind); nothing is answered before :meth:`run`."""
        raise_fd_limit()
        prepare_socket_dir(self.sock_path)
        token = None
        if self.port is not None:
            token, self.token_file = load_token(self.root)
        self._sockets.append(bind_unix(self.sock_path))
        self._inode = os.lstat(self.sock_path).st_ino
        # the socket is removed through its folder's fd: it goes even when the workspace was moved
        self._dir_fd = os.open(self.sock_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        guards = [Guard(self._app, self._fingerprint)]
        if self.port is not None:
            self._sockets.append(bind_tcp(self.host, self.port))
            guards.append(Guard(self._app, self._fingerprint, token, hosts=loopback_hosts(self.tcp_port)))
        self._servers = [
            (_Server(_config(guard, lifespan="on" if i == 0 else "off")), sock)
            for i, (guard, sock) in enumerate(zip(guards, self._sockets, strict=True))
        ]

    @property
    def tcp_port(self) -> int:
        return int(self._sockets[-1].getsockname()[1]) if self.port is not None else 0

    async def serve(self) -> None:
        """Answer until :meth:`stop` (the first listener runs the app's lifespan, the others start after)."""
        first, first_sock = self._servers[0]
        tasks = [asyncio.create_task(first.serve(sockets=[first_sock]))]
        while not first.started and not tasks[0].done():
            await asyncio.sleep(0.01)
        tasks += [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in self._servers[1:]]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.stop()

    def start(self) -> None:
        """Answer from a thread of its own (beside a front end that owns the main thread)."""
        with self._thread_lock:
            self._thread = threading.Thread(
                target=lambda: asyncio.run(self.serve()), name="aide-host", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop answering (a second call forces open connections closed)."""
        for s, _ in self._servers:
            s.force_exit = s.should_exit
            s.should_exit = True

    def close(self, timeout: float = 5.0) -> None:
        """Stop, wait for the listener thread, close the sockets and remove the socket file if it is ours."""
        self.stop()
        with self._thread_lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        for s in self._sockets:
            s.close()
        name, folder = self.sock_path.name, self._dir_fd
        if folder is not None:
            with contextlib.suppress(OSError):
                if os.stat(name, dir_fd=folder, follow_symlinks=False).st_ino == self._inode:
                    os.unlink(name, dir_fd=folder)
            os.close(folder)
        self._inode, self._dir_fd = None, None
