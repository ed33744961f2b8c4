"""``aide-tui [PATH]``: open the app."""

from __future__ import annotations

import argparse

from aide_tui.cli.common import err, setup


def cmd_tui(args: argparse.Namespace) -> int:
    """Open the Textual app on PATH."""
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings = ready
    try:
        from aide_tui.tui.app import AideApp
    except ImportError as exc:
        err(f"the TUI is unavailable: {exc}")
        return 1
    AideApp(root, settings, watch=not args.no_watch).run()
    return 0
