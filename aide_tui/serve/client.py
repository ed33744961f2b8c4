"""Talk to a running ``aide-tui serve`` over its Unix socket (default install: standard library only).

``aide-tui search``/``status`` and ``aide-tui mcp`` use a running server for their root when its socket
answers and it runs with the same settings (every answer carries a fingerprint of them); otherwise they
work in-process. A socket file whose server is gone is removed on the way.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from dataclasses import asdict
from pathlib import Path
from typing import Any

from aide_tui.serve.locations import remove_dead_socket, socket_candidates

SETTINGS_HEADER = "x-aide-settings"
PID_HEADER = "x-aide-pid"
# Settings that do not change any answer: how long to wait for a lock, how many processes embed.
_IRRELEVANT = {
    ("index", "lock_timeout"), ("embedding", "workers"), ("embedding", "timeout"), ("search", "mode"),
}  # fmt: skip


def settings_fingerprint(settings: Any) -> str:
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


class _UnixConnection(http.client.HTTPConnection):
    """The standard library's HTTP/1.1 client over a Unix socket (httpx costs ~0.25 s to import and set
    up, more than a whole warm search, in a CLI call that lives for one query)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("aide-serve", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class ServeClient:
    """A blocking HTTP client bound to one server socket (one kept-alive connection, not thread-safe)."""

    def __init__(self, sock: Path, fingerprint: str, timeout: float = 600.0) -> None:
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
        except ConnectFailed:
            raise
        except ServeUnavailable:  # a kept-alive connection the server closed meanwhile: once more
            status, headers, raw = self._exchange(method, path, payload)
        if headers.get(SETTINGS_HEADER) != self.fingerprint:
            raise ServeUnavailable("the server runs with other settings")
        pid = headers.get(PID_HEADER, "")
        self.pid = int(pid) if pid.isdigit() else None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ServeUnavailable(f"not JSON ({status})") from exc
        if status >= 400 or not isinstance(data, dict):
            raise ServeUnavailable(str(data.get("error") if isinstance(data, dict) else data))
        return data

    def status(self) -> dict[str, Any]:
        """``GET /status``: the ``status --json`` object."""
        return self._request("GET", "/status")

    def search(
        self, query: str, limit: int, mode: str, text: bool = False, all_workspaces: bool = False
    ) -> dict[str, Any]:
        """``POST /search``: one ``search --json`` object (``text``: each result also carries its chunk;
        ``all_workspaces``: every workspace of a shared collection, each result naming its workspace)."""
        body: dict[str, Any] = {"query": query, "limit": limit, "mode": mode}
        if text:
            body["text"] = True
        if all_workspaces:
            body["all_workspaces"] = True
        return self._request("POST", "/search", body)

    def reindex(self, rebuild: bool = False) -> dict[str, Any]:
        return self._request("POST", "/reindex", {"rebuild": rebuild})


def connect(root: Path, settings: Any) -> ServeClient | None:
    """A client for the server running on ``root`` with these settings, or None (dead sockets removed)."""
    fingerprint = settings_fingerprint(settings)
    for sock, lock in socket_candidates(Path(root)):
        try:
            if not sock.is_socket():
                continue
        except OSError:
            continue
        client = ServeClient(sock, fingerprint)
        try:
            client.status()
            return client
        except ConnectFailed:
            client.close()
            remove_dead_socket(sock, lock)
        except ServeUnavailable:
            client.close()
    return None
