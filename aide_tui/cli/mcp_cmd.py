"""``aide-tui mcp [ROOT]``: a Model Context Protocol server over stdio for coding agents."""

from __future__ import annotations

import argparse

from aide_tui.cli.common import err, setup
from aide_tui.serve import INSTALL_HINT, missing_extra


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP tools on stdin/stdout until the client closes them; exit 2 without the extra."""
    missing = missing_extra()
    if missing:
        err(f"mcp needs the optional 'mcp' extra ({', '.join(missing)} missing): {INSTALL_HINT}")
        return 2
    ready = setup(args.root, args)
    if ready is None:
        return 2
    root, settings = ready
    from aide_tui.serve.mcp_server import run_stdio

    run_stdio(root, settings, watch=not args.no_watch)
    return 0
