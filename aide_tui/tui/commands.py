"""The search screen's commands that hand a hit to something outside the app: the editor (``e``), the
clipboard (``y``) and the results file (F4). What they write or run is worked out without Textual in
:mod:`aide_tui.tui.hitactions`; here it is done, and said in a toast."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, SuspendNotSupported

from aide_tui.core.search.response import Hit
from aide_tui.tui.hitactions import (
    editor_command,
    home_path,
    location_text,
    vimgrep_text,
    wrap_path,
    write_atomically,
)


def open_editor(app: App[Any], root: Path, hit: Hit, line: int, record: Callable[[], None]) -> None:
    """Open ``hit`` in $VISUAL/$EDITOR at ``line`` (``+LINE path``), the app suspended meanwhile;
    ``record`` (the query joins the history) runs first."""
    cmd = editor_command(hit, root, line, os.environ)
    if isinstance(cmd, str):
        app.notify(cmd, severity="warning")
        return
    record()
    try:
        with app.suspend():
            subprocess.run(cmd, check=False)
    except SuspendNotSupported:
        app.notify("cannot open an editor from this terminal", severity="warning")
    except OSError as exc:
        app.notify(f"cannot run {cmd[0]!r}: {exc.strerror or exc}", severity="error")
    app.refresh()


def copy_location(app: App[Any], root: Path, hit: Hit, line: int, record: Callable[[], None]) -> None:
    """Copy ``path:line`` (OSC 52, works over SSH)."""
    record()
    text = location_text(hit, root, line)
    app.copy_to_clipboard(text)
    app.notify(f"copied {text}", timeout=2)


def write_results(
    app: App[Any], root: Path, hits: list[Hit], target: Path, record: Callable[[], None]
) -> None:
    """Write ``hits`` as ``path:line:col:text`` lines (vim's :cfile) to ``target`` and copy them."""
    if not hits:
        app.notify("no results to write", severity="warning")
        return
    record()
    text = vimgrep_text(hits, root)
    try:
        write_atomically(target, text)
    except OSError as exc:
        app.notify(f"cannot write {target}: {exc.strerror or exc}", severity="error")
        return
    app.copy_to_clipboard(text)
    # a toast is at most 60 cells or half the screen, less its padding and edge
    width = max(20, min(60, app.size.width // 2) - 3)
    where = wrap_path(home_path(target), width)
    app.notify(f"{len(hits)} results (vim :cfile, copied) in\n{where}", timeout=8)
