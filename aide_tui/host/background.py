"""The background host a one-shot ``search`` starts for a workspace's bulk work (``aide-tui host ROOT``).

It hosts the workspace (indexes and watches it, answers ``search``/``mcp``/app clients on its socket)
until its work is done and nobody has asked it anything for ``idle`` seconds, then lets go (a front end
attached to it takes over). It gives hosting over at once when a front end asks (``/release``). Its host
lock was taken by the process that started it (see :meth:`Tenure.hand_to_background_host`), so two
never start for one workspace.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.live import LiveEvent
from aide_tui.core.priority import lower_priority
from aide_tui.host.lock import HostLockUnusable
from aide_tui.host.tenure import Tenure
from aide_tui.host.workspace import Workspace

IDLE = 60.0  # seconds without work or requests before a background host lets go


def host_in_background(
    root: Path, settings: Settings, say: Callable[[str], None], log: Callable[[str], None], idle: float = IDLE
) -> int:
    """Host ``root`` at low priority until idle, a stop signal or ``/release``; the exit code. ``say``:
    this process's own lines (stderr, which is ``index.log``); ``log``: the workspace's events, stamped.
    Nothing to do (exit 0) when another process hosts the workspace; exit 1 when its lock file cannot
    be opened."""
    lower_priority()
    tenure = Tenure(root)
    try:
        if not (tenure.inherit() or tenure.take()):
            return 0  # another process hosts it: nothing to do, nothing to write
    except HostLockUnusable as exc:
        say(str(exc))
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    def stamped(event: LiveEvent) -> None:
        line = getattr(event, "message", "")
        if line:
            log(f"{datetime.now(UTC).strftime('%H:%M:%S')} {type(event).__name__.lower()}: {line}")

    ws = Workspace(root, settings, stamped, front_end="background", tenure=tenure, on_release=stop.set,
                   on_lost=lambda why: stop.set())  # fmt: skip
    say(f"hosting {root} (PID {os.getpid()})")
    try:
        ws.start()
        while not stop.wait(1.0):
            if time.monotonic() - ws.last_active() > idle:
                break
    finally:
        ws.close()
    say(f"stopped hosting {root}")
    return 0
