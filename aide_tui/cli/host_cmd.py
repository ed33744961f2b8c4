"""``aide-tui host ROOT`` (hidden): the background host ``search`` starts for a workspace's bulk work
(see :mod:`aide_tui.host.background`)."""

from __future__ import annotations

import argparse
import sys

from aide_tui.cli.common import err, setup
from aide_tui.host.background import IDLE, host_in_background


def cmd_host(args: argparse.Namespace) -> int:
    ready = setup(args.root, args, new_workspace=False)
    if ready is None:
        return 2
    root, settings = ready

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return host_in_background(root, settings, err, log, IDLE if args.idle is None else args.idle)
