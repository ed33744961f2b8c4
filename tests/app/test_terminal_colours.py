"""Issue 33 #13: with TERM=linux (16 colours) the selected row's ranks were cyan on the cyan cursor. In a
real terminal (tmux, 120×40 and 80×24), every character of the selected row must differ in colour from
the row's background, the list focused or not."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from apphelpers import indexed_in_a_private_home, tmux
from conftest import write_workspace

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _cells(line: str) -> list[tuple[str, int | None, int | None]]:
    """(character, foreground, background) of each character of a ``capture-pane -e`` line, colours as
    the 16-colour base index (0-7: bright and normal variants of one colour read the same) or None
    (the terminal's default)."""
    fg: int | None = None
    bg: int | None = None
    reverse = False
    out: list[tuple[str, int | None, int | None]] = []
    pos = 0
    for m in [*SGR.finditer(line), None]:
        end = m.start() if m is not None else len(line)
        for ch in line[pos:end]:
            out.append((ch, bg, fg) if reverse else (ch, fg, bg))
        if m is None:
            break
        pos = m.end()
        codes = [int(c) for c in m.group(1).split(";") if c] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg = bg = None
                reverse = False
            elif c == 7:
                reverse = True
            elif c == 27:
                reverse = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                fg = c % 10
            elif 40 <= c <= 47 or 100 <= c <= 107:
                bg = c % 10
            elif c == 39:
                fg = None
            elif c == 49:
                bg = None
            elif c in (38, 48):  # 256 or true colour: not what TERM=linux gets; skip its arguments
                i += 4 if i + 1 < len(codes) and codes[i + 1] == 2 else 2
            i += 1
    return out


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_the_selected_row_reads_on_a_16_colour_console(tmp_path: Path, size: tuple[int, int]) -> None:
    root = write_workspace(tmp_path / "ws")
    home = indexed_in_a_private_home(tmp_path, root)
    sock = f"aide-colours-{os.getpid()}-{size[0]}"
    cmd = f"{home} TERM=linux {sys.executable} -m aide_tui {root} --embedder none --no-watch"
    started = tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(size[0]), "-y",
                    str(size[1]), cmd)  # fmt: skip
    assert started.returncode == 0, started.stderr

    def screen(colours: bool = False) -> list[str]:
        return tmux(sock, "capture-pane", "-p", *(["-e"] if colours else []), "-t", "t").stdout.splitlines()

    def wait(cond: object, what: str) -> None:
        deadline = time.monotonic() + 60
        while not cond():  # type: ignore[operator]
            assert time.monotonic() < deadline, f"{what}:\n" + "\n".join(screen())
            time.sleep(0.2)

    try:
        wait(lambda: any("Type to search" in line for line in screen()), "the app")
        tmux(sock, "send-keys", "-t", "t", "-l", "return")
        wait(lambda: sum(".py:" in line.split("││")[0] for line in screen()[2:8]) >= 2, "two rows at least")

        def selected_rows() -> list[list[tuple[str, int | None, int | None]]]:
            return [c for i, line in enumerate(screen(True)) if i >= 2 and _cursor_row(c := _cells(line))]

        tmux(sock, "send-keys", "-t", "t", "Down")  # the cursor on the second row, the list blurred
        wait(lambda: any(".py:" in "".join(ch for ch, _, _ in r) for r in selected_rows())
             and _cursor_row(_cells(screen(True)[3])), "the cursor on the second row")  # fmt: skip
        blurred = selected_rows()
        tmux(sock, "send-keys", "-t", "t", "Tab")  # the list focused: the cursor's other colours
        wait(lambda: any(" e edit " in line for line in screen()), "the list focused")
        wait(lambda: bool(selected_rows()), "the focused cursor")
        for cells in [*blurred, *selected_rows()]:
            row_bg = _cursor_bg(cells)
            unreadable = [ch for ch, fg, bg in cells if bg == row_bg and fg == row_bg and ch.strip()]
            assert not unreadable, f"{''.join(unreadable)!r} drawn in the row's own background colour"
    finally:
        tmux(sock, "kill-server")


def _cursor_bg(cells: list[tuple[str, int | None, int | None]]) -> int | None:
    """The background of a results row's text (after the list's left border)."""
    return cells[1][2] if len(cells) > 1 else None


def _cursor_row(cells: list[tuple[str, int | None, int | None]]) -> bool:
    """A results row drawn on a coloured background (the cursor): the list's rows have none."""
    text = "".join(ch for ch, _, _ in cells)
    return ".py:" in text.split("││")[0] and _cursor_bg(cells) not in (None, 0)
