"""The machine-wide budget of bulk embedding (budget.py): a fair queue across workspaces, in turns,
with the wait's ETA in the progress events (issue 33 #2), and planted slot files that never stop
indexing (issue 32 #9). Real ``aide-tui index`` processes, real slot files, a real loopback embedder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_server import LoopbackServer
from serve_helpers import clean_env


def workspace(root: Path, files: int, tag: str) -> Path:
    """``files`` files of four functions each: about one vector a function, a bulk job from 17 files."""
    for i in range(files):
        body = "\n\n".join(
            f"def {tag}_step_{i}_{k}(value):\n    return value * {k} + {i}  # {tag}\n" for k in range(4)
        )
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"mod_{i}.py").write_text(body)
    return root


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(dim=8) as srv:
        yield srv


class Indexing:
    """``aide-tui index --progress`` in the background: its events, each with the time it arrived."""

    def __init__(self, root: Path, env: dict[str, str], user: list[str] | None = None) -> None:
        cmd = [*(user or []), sys.executable, "-m", "aide_tui", "index", str(root), "--progress"]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[tuple[float, dict]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append((time.monotonic(), json.loads(line)))

    def first(self, pred: object, what: str, timeout: float = 120.0) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, e in list(self.events):
                if pred(e):  # type: ignore[operator]
                    return at, e
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"never saw {what}: {[e for _, e in self.events][-5:]}")

    def done(self, timeout: float = 300.0) -> dict:
        _, e = self.first(lambda e: e["event"] == "done", "done", timeout)
        self.proc.wait(timeout=60)
        assert self.proc.returncode == 0, self.proc.stderr.read() if self.proc.stderr else ""
        return e

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def embedding(e: dict) -> bool:
    return e["event"] == "progress" and e["state"] == "embedding" and e["vectors_done"] > 0


def queued(e: dict) -> bool:
    return e["event"] == "progress" and e["state"] == "queued"


def test_small_workspaces_get_turns_first_come_first_served_with_an_eta(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """A big workspace embeds; a small one, then another, arrive and queue. Each gets a slot after
    one turn of the big one, in the order they came, and their queued message says for whom they
    wait and about how long; the big one queues behind them and finishes last."""
    server.set_mode("slow", delay=0.2)  # the big job: about 60 requests, several turns
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=server.url,
                    AIDE_INDEX_BULK_TURN_SECONDS="3")  # fmt: skip
    big = workspace(tmp_path / "big", 150, "big")
    first = workspace(tmp_path / "first", 20, "first")
    second = workspace(tmp_path / "second", 20, "second")
    runs: list[Indexing] = []
    try:
        runs.append(Indexing(big, env))
        runs[0].first(embedding, "the big workspace embedding")
        runs.append(Indexing(first, env))
        runs[1].first(queued, "the first small workspace queued")
        runs.append(Indexing(second, env))
        runs[2].first(queued, "the second small workspace queued")
        done = [r.done() for r in runs]
        assert all(d["vectors_missing"] == 0 for d in done), done
        started = [r.first(embedding, "embedding")[0] for r in runs[1:]]
        finished = [r.first(lambda e: e["event"] == "done", "done")[0] for r in runs]
        assert started[0] < started[1], "first come, first served"
        assert finished[1] < finished[0] and finished[2] < finished[0], "the big one does not hold the slot"
        assert any(queued(e) for _, e in runs[0].events), "the big one queued behind them after its turn"
        waits = [e for _, e in runs[1].events if queued(e)]
        assert "waiting for another workspace's embedding (big: " in waits[0]["message"], waits
        with_eta = [e for e in waits + [e for _, e in runs[2].events if queued(e)] if e["wait_seconds"]]
        assert with_eta and all(e["message"].startswith("your turn in about") for e in with_eta), waits
        assert all(0 < e["wait_seconds"] < 120 for e in with_eta), with_eta
    finally:
        for r in runs:
            r.stop()


def test_the_eta_adds_a_turn_for_each_job_ahead() -> None:
    from aide_tui.core.index.budget import BulkJob, Wait, eta

    now = time.time()
    holder = {"workspace": "big", "left": 9000, "rate": 30.0, "turn_left": 40.0, "at": now}
    job = BulkJob("small", 100, jobs=1, turn_s=60.0)
    assert eta(job, [holder], []) == pytest.approx(40.0, abs=1)  # the rest of the holder's turn
    ahead = [{"pieces": 300}, {"pieces": 90_000}]
    assert eta(job, [holder], ahead) == pytest.approx(40 + 10 + 60, abs=1)  # small one's 10 s, a full turn
    assert eta(job, [{**holder, "rate": 0}], ahead) is None  # no rate yet: unknown, not a guess
    assert Wait(["big"], 2, 110.0, 9000).message(1, 60.0) == (
        "your turn in about 1:50: waiting for another workspace's embedding (big: 9,000 vectors left), "
        "2 more ahead in the queue (index.max_bulk_jobs = 1, turns of 60 s)"
    )


PLANTS = ["fifo", "symlink loop", "folder", "symlink to a file", "another user's file"]


def _plant(slots: Path, kind: str, victim: Path) -> None:
    lock = slots / "bulk-0.lock"
    slots.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "symlink loop":
        os.symlink(lock, lock)
    elif kind == "folder":
        lock.mkdir()
    elif kind == "symlink to a file":
        os.symlink(victim, lock)
    else:
        lock.write_text("someone else's\n")
        os.chown(lock, 65534, 65534)


@pytest.mark.parametrize("kind", PLANTS)
def test_a_planted_slot_file_never_stops_indexing(tmp_path: Path, server: LoopbackServer, kind: str) -> None:
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=server.url)
    victim = tmp_path / "victim.txt"
    victim.write_text("not a lock\n")
    slots = tmp_path / "xdg-cache" / "aide-tui" / "slots"
    _plant(slots, kind, victim)
    root = workspace(tmp_path / "ws", 30, "planted")
    out = subprocess.run([sys.executable, "-m", "aide_tui", "index", str(root), "--json"], env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["vectors_missing"] == 0 and not summary["degraded"], summary
    assert any("bulk-0.lock is unusable" in w and "using bulk-0.alt.lock" in w for w in summary["warnings"])
    status_cmd = [sys.executable, "-m", "aide_tui", "status", str(root), "--json"]
    status = json.loads(
        subprocess.run(status_cmd, env=env, capture_output=True, text=True, timeout=120).stdout
    )
    assert status["state"] == "ready", status
    assert victim.read_text() == "not a lock\n"  # never followed, never written
    lock = slots / "bulk-0.lock"
    assert lock.is_symlink() or lock.is_dir() or lock.is_fifo() or lock.stat().st_uid == 65534


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv")
def test_a_root_owned_slot_file_does_not_stop_another_users_indexing(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """As uid 65534 (setpriv), with root's file at bulk-0.lock and at its alternative: it embeds
    without a slot and says so."""
    home = Path(tempfile.mkdtemp(prefix="aide-slots-", dir="/tmp"))  # pytest's tmp dirs are root-only
    try:
        os.chmod(home, 0o755)
        env = clean_env(home, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=server.url, HOME=str(home))
        slots = home / "xdg-cache" / "aide-tui" / "slots"
        slots.mkdir(parents=True, mode=0o700)
        for name in ("bulk-0.lock", "bulk-0.alt.lock"):
            (slots / name).write_text("root's\n")  # owned by root: the user cannot open it for writing
            os.chmod(slots / name, 0o644)
        root = workspace(home / "ws", 30, "nobody")
        for p in [home, *home.rglob("*")]:
            if not (p.parent == slots and p.name.endswith(".lock")):
                os.chown(p, 65534, 65534, follow_symlinks=False)
        user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        out = subprocess.run([*user, sys.executable, "-m", "aide_tui", "index", str(root), "--json"], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout.splitlines()[-1])
        assert summary["vectors_missing"] == 0, summary
        warnings = " | ".join(summary["warnings"])
        assert (
            "bulk-0.lock is unusable" in warnings and "embedding without the machine-wide budget" in warnings
        )
        assert (slots / "bulk-0.lock").read_text() == "root's\n"
    finally:
        shutil.rmtree(home, ignore_errors=True)
