"""Run ``aide-tui serve``: host the workspace (one host per workspace) and answer on its Unix socket and,
with ``--port``, on 127.0.0.1:PORT guarded by a Bearer token (see :mod:`aide_tui.host.server`).

A background host (the indexer ``aide-tui search`` started) gives hosting over when asked; any other host
(an app, another ``serve``, ``mcp``) keeps it and ``serve`` exits 1 naming it. SIGINT, SIGTERM and SIGHUP
(the terminal closed) stop the server cleanly: its socket and lock go with it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from aide_tui.core.config import Settings
from aide_tui.core.textsafe import printable
from aide_tui.host.locations import server_state_dir
from aide_tui.host.lock import AlreadyHosted
from aide_tui.host.server import LOOPBACK_HOSTS, HostServer, RefusedBind
from aide_tui.host.tenure import Tenure
from aide_tui.host.workspace import Workspace

__all__ = ["AlreadyHosted", "RefusedBind", "serve"]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def _run(server: HostServer) -> None:
    """Serve until a stop signal (a second one forces open connections closed)."""
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, server.stop)
    try:
        await server.serve()
    finally:
        for sig in STOP_SIGNALS:
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
    """Host ``root`` and answer until a stop signal. Raises AlreadyHosted, RefusedBind or OSError first."""
    if port is not None and host not in LOOPBACK_HOSTS:
        raise RefusedBind(f"refusing to listen on {host!r}: serve binds loopback only (127.0.0.1, ::1)")
    state = server_state_dir(root)
    tenure = Tenure(root)
    tenure.take_from_background(settings, state)  # a background host is asked to let go (/release)
    lost: list[str] = []
    server: HostServer | None = None

    def on_lost(why: str) -> None:  # the workspace folder went away, or another host took over: stop
        lost.append(why)
        if server is not None:
            server.stop()

    ws = Workspace(root, settings, lambda e: None, watch=watch, front_end="serve", tenure=tenure,
                   listen=False, on_lost=on_lost)  # fmt: skip
    try:
        ws.start()
        started = time.monotonic()
        ws.wait_warm()  # the first search through a new server must not pay for loading the index
        if lost:  # while warming: never open the socket (its folder would be made again)
            print(f"aide-tui: {printable(lost[0])}", file=sys.stderr)
            return 1
        server = HostServer(root, state, settings, ws, ws.hub, port=port, host=host)
        server.open()
        print(f"aide-tui serve: {printable(str(root))} (PID {os.getpid()})", file=out)
        print(f"listening unix:{printable(str(server.sock_path))}", file=out)
        if server.token_file is not None:
            shown = host if ":" not in host else "[::1]"
            print(f"listening http://{shown}:{server.tcp_port} "
                  f"(Authorization: Bearer <{printable(str(server.token_file))}>)", file=out)  # fmt: skip
        print(f"ready in {time.monotonic() - started:.1f} s", file=out)
        out.flush()
        asyncio.run(_run(server))
        if lost:
            print(f"aide-tui: {printable(lost[0])}", file=sys.stderr)
            return 1
        return 0
    finally:
        if server is not None:
            server.close()
        ws.close()
