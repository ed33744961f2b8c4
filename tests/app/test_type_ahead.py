"""Keys typed while the app starts are the query, not lost: a person types at once after the command. In
a real terminal (tmux): the keys are sent the moment the pane starts, long before Python has imported
Textual, and the query box shows them once it is up; a last query put back at start (never seen) is
replaced by what was typed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_workspace

REPO = Path(__file__).resolve().parents[2]
BOUND = 120.0  # seconds: a bound against hangs, never a measurement

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def _tmux(sock: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, timeout=30)


def _screen(sock: str) -> list[str]:
    return _tmux(sock, "capture-pane", "-p", "-t", "t").stdout.splitlines()


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
    return _tmux(sock, "has-session", "-t", "t").returncode != 0


@pytest.fixture
def app_cmd(tmp_path: Path) -> str:
    root = write_workspace(
        tmp_path / "ws",
        {
            "zoo/walrus.py": "def walrus_tusks():\n    return 2\n",
            "zoo/zebra.py": "def zebra_stripes():\n    return 1\n",
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none"],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    exports = " ".join(f"{k}={v!r}" for k, v in env.items() if k in ("PYTHONPATH", "XDG_CONFIG_HOME",
                       "XDG_CACHE_HOME", "XDG_STATE_HOME", "PATH", "HOME"))  # fmt: skip
    return f"env {exports} TERM=xterm-256color {sys.executable} -m aide_tui {root} --embedder none --no-watch"


def _start_typing(sock: str, cmd: str, text: str) -> None:
    started = _tmux(sock, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", cmd)
    assert started.returncode == 0, started.stderr
    _tmux(sock, "send-keys", "-t", "t", "-l", text)  # at once: the app is not even importing yet


def _quit(sock: str) -> None:
    _tmux(sock, "send-keys", "-t", "t", "C-q")
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
        _tmux(sock, "kill-server")
