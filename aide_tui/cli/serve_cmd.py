"""``aide-tui serve [ROOT]``: keep ROOT's index warm and answer HTTP/1.1 JSON on a private Unix socket."""

from __future__ import annotations

import argparse

from aide_tui.cli.common import err, setup
from aide_tui.serve import INSTALL_HINT, missing_extra


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 1 when a server already runs for ROOT, 2 without the extra."""
    missing = missing_extra()
    if missing:
        err(f"serve needs the optional 'serve' extra ({', '.join(missing)} missing): {INSTALL_HINT}")
        return 2
    from aide_tui.serve.runner import AlreadyRunning, RefusedBind, serve

    if args.port is not None and not 0 <= args.port <= 65535:
        err(f"--port {args.port}: not a port number")
        return 2
    ready = setup(args.root, args)
    if ready is None:
        return 2
    root, settings = ready
    try:
        return serve(root, settings, port=args.port, host=args.host, watch=not args.no_watch)
    except RefusedBind as exc:
        err(str(exc))
        return 2
    except AlreadyRunning as exc:
        err(f"a server is already running for {root} ({exc})")
        return 1
    except OSError as exc:
        err(f"cannot serve {root}: {exc}")
        return 1
