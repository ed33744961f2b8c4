"""One process-wide httpx client for requests to local model servers (chat, rerank).

Building an ``httpx.Client`` costs 25-45 ms (its SSL context), more than the rest of an ask's
preparation, so it is built once, on first use, and shared (httpx clients are thread-safe). It never
takes a proxy from the environment, never follows redirects (they could leave loopback) and keeps no
connection alive: each request has its own socket, which :class:`SocketWatchdog` can shut down.
"""

from __future__ import annotations

import threading

import httpx

_client: httpx.Client | None = None
_lock = threading.Lock()


def shared_client() -> httpx.Client:
    """The process's client (built on the first call)."""
    global _client
    with _lock:
        if _client is None or _client.is_closed:
            _client = httpx.Client(
                trust_env=False, follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0)
            )
        return _client
