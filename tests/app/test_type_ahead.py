"""Keys typed while the app starts are the query, not lost: a person types at once after the command. In
a real terminal (tmux): the keys are sent the moment the pane starts, long before Python has imported
Textual, and the query box shows them once it is up; a last query put back at start (never seen) is
replaced by what was typed."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from apphelpers import indexed_in_a_private_home, tmux
from conftest import write_workspace

BOUND = 120.0  # seconds: a bound against hangs, never a measurement

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def _screen(sock: str) -> list[str]:
    return tmux(sock, "capture-pane", "-p", "-t", "t").stdout.splitlines()


def _wait(sock: str, ok: object, what: str) -> list[str]:
    deadline = time.monotonic() + BOUND
    lines: list[str] = []
    while time.monotonic() < deadline:
        lines = _screen(sock)
        if ok(lines):  # type: ignore[operator]
            return lines
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen; the screen:\n" + "\n".join(lines))


def _gone(sock: str) -> bool:
    return tmux(sock, "has-session", "-t", "t").returncode != 0


@pytest.fixture
def app_cmd(tmp_path: Path) -> str:
    root = write_workspace(
        tmp_path / "ws",
        {
            "zoo/walrus.py": "def walrus_tusks():\n    return 2\n",
            "zoo/zebra.py": "def zebra_stripes():\n    return 1\n",
        },
    )
    home = indexed_in_a_private_home(tmp_path, root)
    return f"{home} TERM=xterm-256color {sys.executable} -m aide_tui {root} --embedder none --no-watch"


def _start_typing(sock: str, cmd: str, text: str) -> None:
    started = tmux(sock, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", cmd)
    assert started.returncode == 0, started.stderr
    tmux(sock, "send-keys", "-t", "t", "-l", text)  # at once: the app is not even importing yet


def _quit(sock: str) -> None:
    tmux(sock, "send-keys", "-t", "t", "C-q")
    deadline = time.monotonic() + BOUND
    while not _gone(sock) and time.monotonic() < deadline:
        time.sleep(0.1)


def test_keys_typed_while_the_app_starts_are_the_query(app_cmd: str) -> None:
    sock = f"aide-ahead-{os.getpid()}"
    try:
        _start_typing(sock, app_cmd, "walrus tusks")
        lines = _wait(sock, lambda ls: any("walrus.py" in x for x in ls[1:8]), "the typed query's results")
        assert lines[0].strip() == "walrus tusks"
        _quit(sock)  # the query is remembered as the last one

        _start_typing(sock, app_cmd, "zebra")
        lines = _wait(sock, lambda ls: any("zebra.py" in x for x in ls[1:8]), "the second query's results")
        assert lines[0].strip() == "zebra"  # not "walrus tuskszebra": the restored query was replaced
    finally:
        tmux(sock, "kill-server")
