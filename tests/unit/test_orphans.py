"""kill -9 of the indexer while its embedding processes work: they and the resource tracker go too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_faults import generate_repo

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    """The environment of a test's subprocess, read when it starts: the isolation fixture's config,
    cache and models folders, never the ones this module was imported under."""
    return {**os.environ, "PYTHONPATH": str(REPO), "AIDE_EMBEDDING_WORKERS": "2"}


GONE_WITHIN = 20.0  # without the fix they outlived their parent by minutes


def _children(pid: int) -> dict[int, str]:
    """Live child processes of ``pid`` (from /proc) and their command lines."""
    out: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                out[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _still_alive_after(seconds: float, procs: dict[int, str]) -> dict[int, str]:
    """Those of ``procs`` still running once they all went or ``seconds`` passed."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(_alive(p) for p in procs):
        time.sleep(0.1)
    return {p: procs[p] for p in procs if _alive(p)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_during_embedding_leaves_no_workers_or_tracker(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    generate_repo(root, 80, seed=3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "builtin"],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    children: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            children = _children(proc.pid)
            workers = [p for p, cmd in children.items() if "spawn_main" in cmd]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        workers = [p for p, cmd in children.items() if "spawn_main" in cmd]
        tracker = [p for p, cmd in children.items() if "resource_tracker" in cmd]
        assert len(workers) == 2, f"the indexer never started its embedding processes: {children}"
        time.sleep(2.0)  # let them load the model and embed
        children = {**children, **_children(proc.pid)}
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _still_alive_after(GONE_WITHIN, children)
        assert left == {}, f"still alive {GONE_WITHIN:.0f}s after the indexer was killed: {left}"
        assert tracker, f"no resource tracker among {children}"  # it was checked with the rest above
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in children:  # the processes this test started, by id, should the check have failed
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def test_a_finished_bulk_job_lets_its_embedding_workers_go(tmp_path: Path) -> None:
    """After a bulk embedding job the worker processes end (each holds the model's weights); the
    indexer that ran it stays usable and starts them again for the next large batch."""
    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.pool import PooledEmbedder
    from aide_tui.core.index.indexer import Indexer

    root = tmp_path / "repo"
    generate_repo(root, 12, seed=11)  # 132 dense pieces: a bulk job
    embedder = PooledEmbedder(2)
    try:
        indexer = Indexer(root, load_settings(root, {"embedding": {"backend": "builtin"}}), embedder)
        report = indexer.run()
        assert report.newly_embedded > 64 and report.vectors_missing == 0  # a bulk job ran
        spawned = [p for p, cmd in _children(os.getpid()).items() if "multiprocessing.spawn" in cmd]
        assert spawned == []
        assert embedder.embed(["a", "b", "c", "d"]).shape == (4, embedder.dim)  # workers start again
        assert any("multiprocessing.spawn" in cmd for cmd in _children(os.getpid()).values())
    finally:
        embedder.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_indexer_alone_during_a_build_on_every_core_ends_its_helpers(tmp_path: Path) -> None:
    """The cold build's helpers are forked from the indexer (a copy of every file it holds, its locks
    too): SIGKILL of the indexer alone, not its process group, must end them, and the next run finishes."""
    root = tmp_path / "repo"
    generate_repo(root, 1600, seed=5)  # 2.9 MB: past the size a build goes parallel at
    env = {**_env(), "AIDE_INDEX_BUILD_WORKERS": "2"}
    cmd = [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(helpers) < 2:
            helpers = _children(proc.pid)
            time.sleep(0.05)
        assert len(helpers) >= 2, f"the indexer never started its helpers: {helpers}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _still_alive_after(GONE_WITHIN, helpers)
        assert left == {}, f"still alive {GONE_WITHIN:.0f}s after the indexer was killed: {left}"
        done = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert '"files": 1600' in done.stdout.splitlines()[-1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in helpers:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
