"""``aide-tui host ROOT`` (hidden): the background host ``search`` starts for a workspace's bulk work.

It hosts the workspace (indexes and watches it, answers ``search``/``mcp``/app clients on its socket)
until its work is done and nobody has asked it anything for ``--idle`` seconds, then lets go (a front
end attached to it takes over). It gives hosting over at once when a front end asks (``/release``).
Its host lock was taken by the process that started it, so two never start for one workspace.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime

from aide_tui.cli.common import err, setup

IDLE = 60.0  # seconds without work or requests before a background host lets go


def cmd_host(args: argparse.Namespace) -> int:
    from aide_tui.core.live import LiveEvent
    from aide_tui.core.paths import state_dir
    from aide_tui.core.priority import lower_priority
    from aide_tui.host.lock import HostLockUnusable, inherited_lock, try_host_lock
    from aide_tui.host.workspace import Workspace

    ready = setup(args.root, args)
    if ready is None:
        return 2
    root, settings = ready
    lower_priority()
    fd = inherited_lock()
    if fd is None:
        try:
            fd = try_host_lock(state_dir(root), root=root)
        except HostLockUnusable as exc:
            err(str(exc))
            return 1
        if fd is None:
            return 0  # another process hosts it: nothing to do, nothing to write
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    def log(event: LiveEvent) -> None:
        line = getattr(event, "message", "")
        if line:
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            print(f"{stamp} {type(event).__name__.lower()}: {line}", file=sys.stderr, flush=True)

    ws = Workspace(root, settings, log, role="background", lock_fd=fd, on_release=stop.set,
                   on_lost=lambda why: stop.set())  # fmt: skip
    idle = IDLE if args.idle is None else args.idle
    err(f"hosting {root} (PID {os.getpid()})")
    try:
        ws.start()
        while not stop.wait(1.0):
            if time.monotonic() - ws.last_active() > idle:
                break
    finally:
        ws.close()
    err(f"stopped hosting {root}")
    return 0
