"""Command line: ``aide-tui index|search|status`` over the core, and ``aide-tui [PATH]`` for the TUI.

The JSON shapes are fixed by the shared CONTRACT.md. Each subcommand lives in its own module and
imports the core lazily, so ``aide-tui --help`` stays fast.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from aide_tui.cli.common import err
from aide_tui.cli.parser import SUBCOMMANDS, build_parser, tui_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line and give its exit code (what tests call in-process)."""
    return _run_command(argv)[0]


def run() -> NoReturn:
    """Entry point of the ``aide-tui`` console script and ``python -m aide_tui``.

    A one-shot command (``index``, ``search``, ``defs``, ``refs``, ``status``) whose work is all done
    ends the process without tearing the interpreter down: its output is flushed and the exit
    functions run, then its objects and mapped index go with the process (the teardown was 70-120 ms of
    a one-shot search on a monorepo, 40-60 ms of a cold ``index`` of textual). Every index write is
    already on disk by then (written whole, then renamed into place). Anything still running (a thread
    that is not a daemon) gets the ordinary exit, which waits for it.
    """
    code, quick = _run_command(None)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if quick and run_exit_functions is not None and _alone():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader is gone: there is nobody left to tell
        run_exit_functions()
        os._exit(code)
    sys.exit(code)


def _alone() -> bool:
    """Whether every other thread of the process is a daemon (the ordinary exit would not wait)."""
    me = threading.current_thread()
    return all(t is me or t.daemon for t in threading.enumerate())


def _run_command(argv: Sequence[str] | None) -> tuple[int, bool]:
    """The command's exit code, and whether it may end without the interpreter's teardown."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS or argv[:1] in (["-h"], ["--help"]):
        args = build_parser().parse_args(argv)
        handler = args.handler
    else:
        from aide_tui.cli.tui_cmd import cmd_tui

        args = tui_parser().parse_args(argv)
        handler = cmd_tui
    quick = bool(getattr(args, "quick_exit", False))
    try:
        return int(handler(args)), quick
    except KeyboardInterrupt:
        err("interrupted")
        return 130, False
    except BrokenPipeError:
        return 0, quick


__all__ = ["build_parser", "main", "run"]
