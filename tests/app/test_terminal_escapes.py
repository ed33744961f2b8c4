"""Issue 22 #1: a file's bytes never drive the terminal. The preview shows control characters (␛, ␇...)
instead of sending them; checked on the rendered segments and in a real terminal (tmux with
``set-clipboard on``: an OSC 52 in a file must not reach the clipboard, an OSC 0 must not retitle the pane).
The CLI's vimgrep/paths formats and the serve banner are checked the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apphelpers import indexed_in_a_private_home, tmux
from conftest import write_workspace

from aide_tui.core.textsafe import visible

REPO = Path(__file__).resolve().parents[2]
HOSTILE = (
    "def zq():\n"
    '    clip = "\x1b]52;c;cHduZWQ=\x07"\n'  # OSC 52: "pwned" to the clipboard
    '    title = "\x1b]0;HACKED\x07"\n'  # OSC 0: the pane's title
    '    wipe = "\x1b[2J\x1b[H"\n'  # clear the screen
    '    link = "\x1b]8;;http://evil.example\x1b\\\\here\x1b]8;;\x1b\\\\"\n'  # OSC 8: a hidden link
    '    c1 = "\x9b2J\x9d0;C1\x9c"\n'  # one-byte CSI / OSC / ST
    "    return clip\n"
)
TERMINAL_BYTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_visible_leaves_no_terminal_control() -> None:
    shown = visible(HOSTILE.replace("\n", ""))
    assert TERMINAL_BYTES.search(shown) is None
    assert "␛]52;c;cHduZWQ=␇" in shown and "\\x9b2J" in shown
    assert visible("plain\ttext ünïcode") == "plain\ttext ünïcode"
    assert len(visible("a\x1bb\x07c")) == 5  # one cell per control: columns stay aligned


def test_preview_segments_carry_no_control_characters(tmp_path: Path) -> None:
    from rich.style import Style

    from aide_tui.core.search.response import Hit
    from aide_tui.tui.widgets.preview import PreviewStyles, render_preview

    root = write_workspace(tmp_path / "ws", {"a.py": HOSTILE})
    hit = Hit(path="a.py", start_line=1, end_line=7, language="python", symbol="def zq", text=HOSTILE,
              score=1.0, ranks={}, query_terms=["zq"])  # fmt: skip
    plain = Style()
    data = render_preview(root, hit, PreviewStyles(plain, plain, plain, plain))
    assert data.from_disk
    text = "".join(seg.text for line in data.lines for seg in line)
    assert TERMINAL_BYTES.search(text) is None, repr(text)
    assert "␛]52;c;cHduZWQ=␇" in text


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_hostile_file_in_the_preview_reaches_no_terminal(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"a.py": HOSTILE})
    home = indexed_in_a_private_home(tmp_path, root)
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g set-clipboard on\nset -g allow-rename on\nset -g history-limit 100\n")
    sock = f"aide-esc-{os.getpid()}"
    cmd = f"{home} {sys.executable} -m aide_tui {root} --embedder none"
    started = tmux(sock, "-f", str(conf), "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", cmd)
    assert started.returncode == 0, started.stderr
    try:
        tmux(sock, "set-option", "-t", "t", "remain-on-exit", "on")
        deadline = time.monotonic() + 60
        while "Type to search" not in tmux(sock, "capture-pane", "-p", "-t", "t").stdout:
            assert time.monotonic() < deadline, tmux(sock, "capture-pane", "-p", "-t", "t").stdout
            time.sleep(0.2)
        tmux(sock, "send-keys", "-t", "t", "-l", "zq")
        deadline = time.monotonic() + 60
        screen = ""
        while "52;c;cHduZWQ=" not in screen:  # the preview shows the line (with ␛ in front)
            assert time.monotonic() < deadline, screen
            time.sleep(0.2)
            screen = tmux(sock, "capture-pane", "-p", "-t", "t").stdout
        time.sleep(1.0)  # let any pending output reach the terminal
        assert "␛]52;c;cHduZWQ=␇" in screen, screen
        buffers = tmux(sock, "list-buffers").stdout
        assert "pwned" not in buffers and "cHduZWQ" not in buffers, buffers  # the clipboard is untouched
        title = tmux(sock, "display-message", "-p", "-t", "t", "#{pane_title}").stdout.strip()
        assert "HACKED" not in title and "C1" not in title, title
    finally:
        tmux(sock, "kill-server")


def test_cli_location_formats_escape_names_and_text(tmp_path: Path) -> None:
    root = write_workspace(
        tmp_path / "ws", {"a.py": HOSTILE, "b\x1b[31mred.py": "def zq_name():\n    pass\n"}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(
        PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_CACHE_HOME=str(tmp_path / "c")
    )
    for fmt in ("vimgrep", "paths"):
        args = ["search", "--path", str(root), "--embedder", "none", "--format", fmt, "zq", "clip", "zq_name"]
        out = subprocess.run([sys.executable, "-m", "aide_tui", *args], env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "a.py" in out.stdout and "red.py" in out.stdout, out.stdout
        assert TERMINAL_BYTES.search(out.stdout) is None, repr(out.stdout)
        assert TERMINAL_BYTES.search(out.stderr) is None, repr(out.stderr)


def test_serve_banner_escapes_the_root(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    from serve_helpers import Served, clean_env

    root = write_workspace(tmp_path / "w\x1b]0;HACKED\x07s", {"a.py": "x = 1\n"})
    srv = Served(root, "--embedder", "none", env=clean_env(tmp_path))
    try:
        banner = "\n".join(srv.lines)
        assert "serve:" in banner and TERMINAL_BYTES.search(banner) is None, repr(banner)
    finally:
        srv.stop()
