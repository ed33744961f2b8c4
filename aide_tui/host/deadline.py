"""uvicorn's HTTP/1.1 protocol with a deadline for request headers (slowloris).

uvicorn times out idle kept-alive connections, but not a client that connects and sends its headers
slowly or never; such connections counted against ``limit_concurrency``, so 600 of them from another
local user made every real request a 503. Here a connection waiting for (the rest of) a request's
headers is *pending*:

- a pending connection does not count against the server's connection limit (it is added to uvicorn's
  connection set once its headers are complete);
- it is closed when its headers are not complete within :data:`HEADER_TIMEOUT` seconds;
- at most :data:`MAX_PENDING` connections are pending at once (each holds a file descriptor): past that
  a new one closes the oldest pending one.

With :class:`~aide_tui.host.routes.Guard` closing the connection of every refused request, a client
without the token cannot hold a connection that counts, only pending ones, for 10 s each.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections import OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0  # seconds from a connection (or the first byte of a kept-alive one) to full headers
MAX_PENDING = 1024  # connections waiting for headers at once, per listener
FD_LIMIT = 8192  # the soft limit of open files the server raises itself to (within the hard limit)


def header_deadline_protocol() -> type[H11Protocol]:
    """A protocol class for one listener (its pending connections are its own)."""
    pending: OrderedDict[HeaderDeadlineProtocol, asyncio.TimerHandle] = OrderedDict()
    return type("ListenerProtocol", (HeaderDeadlineProtocol,), {"pending": pending})


def raise_fd_limit(want: int = FD_LIMIT) -> None:
    """Room for MAX_PENDING pending connections beside the real ones (the default soft limit is often
    1024); never above the hard limit."""
    with contextlib.suppress(OSError, ValueError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = want if hard == resource.RLIM_INFINITY else min(want, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class HeaderDeadlineProtocol(H11Protocol):
    """:class:`H11Protocol` whose connections must send complete request headers in time (see above)."""

    pending: OrderedDict[HeaderDeadlineProtocol, asyncio.TimerHandle]

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._wait_for_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # a request whose headers are complete starts here
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._wait_for_headers()  # (the rest of) the next request's headers are due
        else:
            self._headers_done()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_done()
        super().connection_lost(exc)

    def _wait_for_headers(self) -> None:
        if self in self.pending:
            return  # the deadline runs from the first byte, not the last
        while len(self.pending) >= MAX_PENDING:
            oldest, timer = self.pending.popitem(last=False)
            timer.cancel()
            oldest.transport.close()
        self.connections.discard(self)  # not counted against limit_concurrency while pending
        self.pending[self] = self.loop.call_later(HEADER_TIMEOUT, self._expired)

    def _headers_done(self) -> None:
        timer = self.pending.pop(self, None)
        if timer is not None:
            timer.cancel()
            if not self.transport.is_closing():
                self.connections.add(self)

    def _expired(self) -> None:
        self.pending.pop(self, None)
        self.transport.close()
