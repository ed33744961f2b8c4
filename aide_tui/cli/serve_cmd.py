"""``aide-tui serve [ROOT]``: keep ROOT's index warm and answer HTTP/1.1 JSON on a private Unix socket."""

from __future__ import annotations

import argparse

from aide_tui.cli.common import err, setup


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 1 when another front end hosts ROOT."""
    from aide_tui.serve.runner import AlreadyHosted, RefusedBind, serve

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
    except AlreadyHosted as exc:
        err(f"a server is already running for {root} ({exc}): another aide-tui hosts this workspace")
        return 1
    except OSError as exc:
        err(f"cannot serve {root}: {exc}")
        return 1
