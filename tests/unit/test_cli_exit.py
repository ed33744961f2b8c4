"""A one-shot command ends without the interpreter's teardown (``aide_tui.cli.run``): its
whole output still arrives, its exit code is kept, and anything still running gets the ordinary exit.
Real processes on a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from aide_tui.cli import _alone

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real CLI with buffered output, as a user's shell runs it (not PYTHONUNBUFFERED)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def test_a_big_answer_arrives_whole_and_exit_codes_are_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "lib.py").write_text("def needle(n):\n    return n\n")
    for i in range(150):  # 15,000 calls: a listing far over a pipe's 64 KiB buffer
        calls = "".join(f"    total += needle({j})\n" for j in range(100))
        head = f"from lib import needle\n\n\ndef use_{i}():\n    total = 0\n"
        (ws / f"mod{i:03}.py").write_text(head + calls)
    built = _cli("index", str(ws), "--embedder", "none", "--json", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout.splitlines()[-1])  # the last line, whole
    assert summary["files"] == 151 and summary["chunks"] > 0
    status = json.loads(_cli("status", str(ws), "--json", "--no-server", cwd=tmp_path).stdout)
    assert (status["files"], status["chunks"]) == (151, summary["chunks"])  # the version it wrote
    out = _cli("refs", "needle", "--path", str(ws), "--no-server", "--limit", "99999", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(out.stdout) > 512 * 1024 and out.stdout.endswith("\n")
    # every line, the last block too: a line printed at a time, so the last buffer is what a missing
    # flush would lose
    assert sum(1 for line in lines if line.startswith("ws/mod") and "needle(" in line) == 15_000
    assert lines[-1].startswith("ws/mod149.py:") and lines[-1].endswith("total += needle(99)")
    got = _cli("refs", "needle", "--path", str(ws), "--no-server", "--json", "--limit", "99999", cwd=tmp_path)
    assert got.returncode == 0 and len(json.loads(got.stdout)["references"]) >= 15_000
    miss = _cli("defs", "NoSuchNameAnywhere", "--path", str(ws), "--no-server", cwd=tmp_path)
    assert miss.returncode == 1 and "NoSuchNameAnywhere" in miss.stderr
    bad = _cli("search", "--path", str(tmp_path / "nowhere"), "--json", "needle", cwd=tmp_path)
    assert bad.returncode != 0 and bad.stderr.strip()


def test_a_thread_still_running_means_the_ordinary_exit() -> None:
    assert _alone()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)  # not a daemon: the ordinary exit would wait for it
    worker.start()
    try:
        assert not _alone()
    finally:
        stop.set()
        worker.join()
    helper = threading.Thread(target=stop.wait, daemon=True)
    stop.clear()
    helper.start()
    try:
        assert _alone()  # a daemon is not waited for either way
    finally:
        stop.set()
        helper.join()
