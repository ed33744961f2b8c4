"""``aide-tui [PATH]``: open the app."""

from __future__ import annotations

import argparse
import os

from aide_tui.cli.common import err, setup


def cmd_tui(args: argparse.Namespace) -> int:
    """Open the Textual app on PATH."""
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings = ready
    # Frames are drawn only when something changed; a higher cap shortens the wait between a change
    # (a typed key, new results) and its frame. Must be set before Textual is imported.
    os.environ.setdefault("TEXTUAL_FPS", "120")
    try:
        from aide_tui.tui.app import AideApp
    except ImportError as exc:
        err(f"the TUI is unavailable: {exc}")
        return 1
    from aide_tui.core.errors import ConfigError

    try:
        app = AideApp(root, settings, watch=not args.no_watch, calm_gc=True)
    except ConfigError as exc:  # the [keys] table names an unknown command or a bad key
        err(f"config error: {exc}")
        return 2
    app.run()
    return 0
