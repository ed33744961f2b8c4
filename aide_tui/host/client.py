"""Talk to a workspace's host over its Unix socket (standard library only: a CLI call must stay cheap).

``aide-tui search``/``status`` use the host for their root when its socket answers and it runs with the
same settings (every answer carries a fingerprint of them); otherwise they work in-process. A front end
that attaches to a host follows its ``/events`` whatever its settings. A socket file whose host is gone is
removed on the way; one that another user could have planted is never used.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aide_tui.core.textsafe import printable
from aide_tui.host.locations import listening_sockets, remove_dead_socket, untrusted_folder

if TYPE_CHECKING:
    from aide_tui.core.config import Settings

SETTINGS_HEADER = "x-aide-settings"
PID_HEADER = "x-aide-pid"
# Settings that do not change any answer: how long to wait for a lock, how many processes embed.
_IRRELEVANT = {
    ("index", "lock_timeout"), ("embedding", "workers"), ("embedding", "timeout"), ("search", "mode"),
}  # fmt: skip


def settings_fingerprint(settings: Settings) -> str:
    """A short hash of the settings that shape search results and status (not per-request ones)."""
    data = asdict(settings)
    for section, key in _IRRELEVANT:
        data.get(section, {}).pop(key, None)
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class ServeUnavailable(Exception):
    """The server did not answer as expected; the caller falls back to in-process work."""


class ConnectFailed(ServeUnavailable):
    """Nobody accepts connections on the socket (a dead server's leftover)."""


class UntrustedSocket(ServeUnavailable):
    """The socket, its folder or the process behind it is not ours: nothing is sent to it."""


class BadRequest(ServeUnavailable):
    """The server refused the request as malformed (400): for a search, the query cannot be understood
    (an unknown ``lang:``); the message is the server's ``error``."""


def untrusted_socket(path: Path) -> str | None:
    """Why the socket file at ``path`` may have been put there by someone else (None: it is a socket
    of ours, in a folder of ours that no other user may write to)."""
    why = untrusted_folder(path.parent)
    if why is not None:
        return why
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} is not a socket"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to another user (uid {st.st_uid})"
    return None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (None where the system cannot
    tell: SO_PEERCRED is Linux's; other systems rely on the file and folder checks)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class _UnixConnection(http.client.HTTPConnection):
    """The standard library's HTTP/1.1 client over a Unix socket (httpx costs ~0.25 s to import and set
    up, more than a whole warm search, in a CLI call that lives for one query)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("aide-serve", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        why = untrusted_socket(Path(self.unix_path))
        if why is not None:
            raise UntrustedSocket(why)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
            uid = peer_uid(sock)
        except OSError:
            sock.close()
            raise
        if uid is not None and uid != os.geteuid():  # the file was ours, the listener is not
            sock.close()
            raise UntrustedSocket(f"{self.unix_path}: the server behind it runs as another user (uid {uid})")
        self.sock = sock


class ServeClient:
    """A blocking HTTP client bound to one server socket (one kept-alive connection, not thread-safe)."""

    def __init__(self, sock: Path, fingerprint: str | None, timeout: float = 600.0) -> None:
        self.sock = Path(sock)
        self.fingerprint = fingerprint
        self.timeout = timeout
        self.pid: int | None = None
        self._conn: _UnixConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _exchange(self, method: str, path: str, payload: bytes | None) -> tuple[int, dict[str, str], bytes]:
        if self._conn is None:
            self._conn = _UnixConnection(str(self.sock), self.timeout)
            try:
                self._conn.connect()
            except UntrustedSocket:
                self.close()
                raise
            except OSError as exc:
                self.close()
                raise ConnectFailed(f"{self.sock}: {exc}") from exc
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        try:
            self._conn.request(method, path, body=payload, headers=headers)
            resp = self._conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise ServeUnavailable(f"{self.sock}: {exc}") from exc
        if resp.will_close:
            self.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        payload = None if body is None else json.dumps(body).encode()
        try:
            status, headers, raw = self._exchange(method, path, payload)
        except (ConnectFailed, UntrustedSocket):
            raise
        except ServeUnavailable:  # a kept-alive connection the server closed meanwhile: once more
            status, headers, raw = self._exchange(method, path, payload)
        if self.fingerprint is not None and headers.get(SETTINGS_HEADER) != self.fingerprint:
            raise ServeUnavailable("the server runs with other settings")
        pid = headers.get(PID_HEADER, "")
        self.pid = int(pid) if pid.isdigit() else None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ServeUnavailable(f"not JSON ({status})") from exc
        if status >= 400 or not isinstance(data, dict):
            message = str(data.get("error") if isinstance(data, dict) else data)
            raise BadRequest(message) if status == 400 else ServeUnavailable(message)
        return data

    def status(self) -> dict[str, Any]:
        """``GET /status``: the ``status --json`` object."""
        return self._request("GET", "/status")

    def search(
        self,
        query: str,
        limit: int,
        mode: str,
        text: bool = False,
        all_workspaces: bool = False,
        prefix: bool = False,
    ) -> dict[str, Any]:
        """``POST /search``: one ``search --json`` object (``text``: each result also carries its chunk;
        ``all_workspaces``: every workspace of a shared collection, each result naming its workspace;
        ``prefix``: search as you type). BadRequest when the query cannot be understood."""
        body: dict[str, Any] = {"query": query, "limit": limit, "mode": mode}
        if text:
            body["text"] = True
        if all_workspaces:
            body["all_workspaces"] = True
        if prefix:
            body["prefix"] = True
        return self._request("POST", "/search", body)

    def symbols(self, what: str, name: str, limit: int) -> dict[str, Any]:
        """``POST /defs`` (``what`` "definitions") or ``/refs``: the ``defs`` / ``refs --json`` object.
        BadRequest when the name cannot be looked up (not an identifier, no symbol graph)."""
        route = "/defs" if what == "definitions" else "/refs"
        return self._request("POST", route, {"name": name, "limit": limit})

    def reindex(
        self, rebuild: bool = False, paths: list[str] | None = None, wait: bool = False
    ) -> dict[str, Any]:
        """``POST /reindex``: the host schedules a run (``paths``: just those files); with ``wait``, the
        event that ended the run covering this request."""
        body: dict[str, Any] = {"rebuild": rebuild}
        if paths is not None:
            body["paths"] = paths
        if wait:
            body["wait"] = True
        return self._request("POST", "/reindex", body)

    def host(self) -> dict[str, Any]:
        """``GET /host``: who hosts the workspace (pid, role, a Lite store's engine address)."""
        return self._request("GET", "/host")

    def release(self) -> dict[str, Any]:
        """``POST /release``: a background host stops hosting (ServeUnavailable from any other host)."""
        return self._request("POST", "/release", {})

    def events(self) -> Iterator[dict[str, Any]]:
        """``GET /events``: each event object as it arrives, until the host closes the stream (on its
        own connection, which the iterator owns). Raises ServeUnavailable when the stream cannot start."""
        conn = _UnixConnection(str(self.sock), self.timeout)
        try:
            conn.connect()
            conn.request("GET", "/events")
            resp = conn.getresponse()
            if resp.status != 200:
                raise ServeUnavailable(f"{self.sock}: /events answered {resp.status}")
            while True:
                line = resp.readline()
                if not line:
                    return
                if line.startswith(b"data: "):
                    try:
                        obj = json.loads(line[6:])
                    except ValueError:
                        continue
                    if isinstance(obj, dict):
                        yield obj
        except (OSError, http.client.HTTPException) as exc:
            raise ServeUnavailable(f"{self.sock}: {exc}") from exc
        finally:
            conn.close()


def connect(root: Path, settings: Settings, any_settings: bool = False) -> ServeClient | None:
    """A client for the server running on ``root`` with these settings (``any_settings``: whatever
    settings it runs with), or None (dead sockets removed)."""
    fingerprint = None if any_settings else settings_fingerprint(settings)
    for sock, lock in listening_sockets(Path(root)):
        client = ServeClient(sock, fingerprint)
        try:
            client.status()
            return client
        except UntrustedSocket as exc:  # never removed: it may be another user's file, or a trap
            client.close()
            print(f"aide-tui: ignoring a server socket: {printable(str(exc))}", file=sys.stderr)
        except ConnectFailed:
            client.close()
            remove_dead_socket(sock, lock)
        except ServeUnavailable:
            client.close()
    return None
