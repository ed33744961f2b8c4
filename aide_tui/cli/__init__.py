"""Command line: ``aide-tui index|search|status`` over the core, and ``aide-tui [PATH]`` for the TUI.

The JSON shapes are fixed by the shared CONTRACT.md. Each subcommand lives in its own module and
imports the core lazily, so ``aide-tui --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from aide_tui.cli.common import err
from aide_tui.cli.parser import SUBCOMMANDS, build_parser, tui_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aide-tui`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS or argv[:1] in (["-h"], ["--help"]):
        args = build_parser().parse_args(argv)
        handler = args.handler
    else:
        from aide_tui.cli.tui_cmd import cmd_tui

        args = tui_parser().parse_args(argv)
        handler = cmd_tui
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        err("interrupted")
        return 130
    except BrokenPipeError:
        return 0


__all__ = ["build_parser", "main"]
