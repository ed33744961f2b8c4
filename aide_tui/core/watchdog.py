"""A deadline (and optional cancel switch) for one blocking httpx request: shuts its socket down.

httpx's timeouts apply to each read, so a server that sends one byte at a time never trips them,
and a thread blocked in a read cannot see a cancel flag; closing the socket under the blocked read
ends the request however slowly it trickles. The socket comes from the documented ``trace``
extension (``connection.connect_tcp.complete``): pass ``extensions={"trace": dog.trace}``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

POLL = 0.05  # seconds between looks at the cancel switch


class SocketWatchdog:
    """Fires after ``seconds`` (or as soon as ``cancel`` is set): the request's socket is shut down.

    ``fired`` says whether it did (so the caller can tell its own timeout from a server fault);
    ``cancelled`` whether it was the switch. Call :meth:`cancel` when the request is over.
    """

    def __init__(self, seconds: float, cancel: threading.Event | None = None) -> None:
        self.fired = False
        self.cancelled = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._switch = cancel
        self._over = threading.Event()
        self._deadline = time.monotonic() + max(0.0, seconds)
        if cancel is None:
            self._timer: threading.Timer | None = threading.Timer(max(0.0, seconds), self._fire)
            self._timer.daemon = True
            self._timer.start()
        else:
            self._timer = None
            threading.Thread(target=self._watch, name="socket-watchdog", daemon=True).start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx trace hook: remembers the connection's socket (shut at once if already fired)."""
        stream = info.get("return_value")
        if event.endswith(".complete") and stream is not None and hasattr(stream, "get_extra_info"):
            sock = stream.get_extra_info("socket")
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sock = sock
                    if self.fired:
                        self._shutdown()

    def _watch(self) -> None:
        assert self._switch is not None
        while not self._over.is_set():
            left = self._deadline - time.monotonic()
            if self._switch.is_set():
                self.cancelled = True
                self._fire()
                return
            if left <= 0:
                self._fire()
                return
            self._over.wait(min(POLL, left))

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        """The request is over: stop watching."""
        self._over.set()
        if self._timer is not None:
            self._timer.cancel()
