"""One host per workspace (issue 20): race-free start, attach and take over, edits before bulk
embedding, a machine-wide budget of bulk jobs, the index owning its embedder, serve's edges. Real
processes and sockets throughout; the embedder is a real loopback HTTP server (slow on purpose where a
host must still be embedding)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write_workspace
from loopback_server import LoopbackServer
from serve_helpers import REPO, Served, _reap_servers, clean_env, cli  # noqa: F401

from aide_tui.core.config import load_settings
from aide_tui.core.live import Attached, Hosting
from aide_tui.host.lock import host_pid
from aide_tui.host.workspace import Workspace


def until(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``cond`` until it returns something true (bounded: a hang fails, never blocks)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def big_workspace(root: Path, files: int = 80) -> Path:
    """Enough files that their vectors are a bulk job (more than 64 pieces to embed: one per file)."""
    for i in range(files):
        body = "\n\n".join(f"def step_{i}_{k}(value):\n    return value * {k} + {i}\n" for k in range(4))
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"mod_{i}.py").write_text(body)
    return root


@pytest.fixture
def slow_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(dim=8) as srv:
        yield srv


def env_for(home: Path, srv: LoopbackServer, **extra: str) -> dict[str, str]:
    return clean_env(home, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=srv.url, **extra)


def hosts_started(root: Path) -> int:
    log = root / ".aide" / "index.log"
    return log.read_text().count("background host for") if log.exists() else 0


def stop_host(root: Path) -> None:
    pid = host_pid(root / ".aide")
    if pid:
        with contextlib.suppress(ProcessLookupError):  # it may have finished and gone on its own
            os.kill(pid, signal.SIGTERM)
        until(lambda: host_pid(root / ".aide") is None, "the host to stop", 30)


def test_parallel_first_searches_start_one_host_and_all_answer(
    tmp_path: Path, slow_server: LoopbackServer
) -> None:
    """20 searches at once on a fresh workspace: one updates, one background host starts (the host lock
    is taken before spawning, then handed over), every search answers, nobody "gave up"."""
    root = big_workspace(tmp_path / "ws")
    slow_server.set_mode("slow", delay=0.05)
    env = env_for(tmp_path, slow_server)
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--json", "step_3_2"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(20)]  # fmt: skip
    try:
        outs = [p.communicate(timeout=180) for p in procs]
        for p, (out, errs) in zip(procs, outs, strict=True):
            assert p.returncode == 0, errs
            assert "gave up" not in errs and "locked" not in errs
            assert json.loads(out.splitlines()[-1])["results"][0]["path"] == "pkg/mod_3.py"
        assert hosts_started(root) == 1
    finally:
        stop_host(root)


def test_a_front_end_attaches_and_sees_an_edit_while_the_host_embeds(
    tmp_path: Path, slow_server: LoopbackServer
) -> None:
    """The app's case of issue 20: a background host is embedding a bulk job; a front end opened meanwhile
    attaches (it never indexes, never waits on a lock), and an edit is searchable in it long before the
    bulk job ends (the host commits the edit's lexical side between embedding batches)."""
    root = big_workspace(tmp_path / "ws", files=300)
    slow_server.set_mode("slow", delay=1.0)  # every batch of the bulk job takes a while
    env = env_for(tmp_path, slow_server)
    assert cli("search", "--path", str(root), "--mode", "bm25", "step_1_1", env=env).returncode == 0
    assert hosts_started(root) == 1
    handed = host_pid(root / ".aide")  # the lock names the host at once, not the search that exited
    assert handed and b"aide_tui\x00host" in Path(f"/proc/{handed}/cmdline").read_bytes()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("XDG_", "AIDE_"))})
    settings = load_settings(root)
    events: list[object] = []
    ws = Workspace(root, settings, events.append, front_end="app")
    try:
        ws.start()
        attached = until(lambda: next((e for e in events if isinstance(e, Attached)), None), "attaching")
        assert attached.pid == host_pid(root / ".aide") and attached.role == "background"
        assert not ws.hosting
        (root / "pkg" / "mod_7.py").write_text("def qwzxvblorp():\n    return 1\n")
        hit = until(
            lambda: ws.search("qwzxvblorp", mode="bm25").results, "the edit in the attached front end"
        )
        assert hit[0].path == "pkg/mod_7.py"
        assert ws.current_status().vectors_missing > 0  # the bulk job is still going on
    finally:
        ws.close()
        for k in env:
            if k.startswith(("XDG_", "AIDE_")):
                os.environ.pop(k, None)
        stop_host(root)


SLOW_HOST = """
import os, subprocess, sys, time
from pathlib import Path
from aide_tui.host.lock import LOCK_FD_ENV, try_host_lock
root = Path(sys.argv[1])
fd = try_host_lock(root / ".aide")
assert fd is not None
Path(sys.argv[2]).write_text("locked")
time.sleep(float(sys.argv[3]))  # a host still warming up: the lock is held, the socket not there yet
os.set_inheritable(fd, True)
os.execve(sys.executable, [sys.executable, "-m", "aide_tui", "host", str(root), "--idle", "600"],
          {**os.environ, LOCK_FD_ENV: str(fd)})
"""


def test_a_front_end_waits_for_a_host_that_answers_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that holds the lock but answers only after the front end's attach wait (warming up on a
    loaded machine): the front end searches what is on disk, says it is waiting, then attaches and sees
    the host's commits; it never gives up on the host for good."""
    import aide_tui.host.workspace as workspace_mod

    root = write_workspace(tmp_path / "ws", {"a.py": "def alpha():\n    return 1\n"})
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    (root / ".aide").mkdir(mode=0o700)
    flag = tmp_path / "locked"
    host = subprocess.Popen([sys.executable, "-c", SLOW_HOST, str(root), str(flag), "3"], env=env)
    monkeypatch.setattr(workspace_mod, "ATTACH_WAIT", 0.5)
    for k, v in env.items():
        if k.startswith(("XDG_", "AIDE_")):
            monkeypatch.setenv(k, v)
    events: list[object] = []
    ws = Workspace(root, load_settings(root), events.append, front_end="app")
    try:
        until(flag.exists, "the slow host to take the lock", 30)
        ws.start()
        waiting = until(
            lambda: next((e for e in events if getattr(e, "state", "") == "waiting"), None), "waiting"
        )
        assert f"PID {host.pid}" in waiting.message
        assert not any(type(e).__name__ == "Failed" for e in events)
        attached = until(lambda: next((e for e in events if isinstance(e, Attached)), None), "attaching")
        assert attached.pid == host.pid and not ws.hosting
        (root / "b.py").write_text("def qwzxvblorp():\n    return 2\n")
        hit = until(lambda: ws.search("qwzxvblorp", mode="bm25").results, "the host's commit here")
        assert hit[0].path == "b.py"
    finally:
        ws.close()
        host.terminate()
        host.wait(30)


def test_when_the_host_goes_the_attached_front_end_takes_over(
    tmp_path: Path, slow_server: LoopbackServer
) -> None:
    root = big_workspace(tmp_path / "ws")
    env = env_for(tmp_path, slow_server)
    srv = Served(root, "--no-watch", env=env)
    try:
        srv.wait_ready()
        os.environ.update({k: v for k, v in env.items() if k.startswith(("XDG_", "AIDE_"))})
        events: list[object] = []
        ws = Workspace(root, load_settings(root), events.append, front_end="app", watch=True)
        ws.start()
        until(lambda: any(isinstance(e, Attached) for e in events), "attaching to serve")
        assert srv.stop() == 0
        until(lambda: any(isinstance(e, Hosting) for e in events), "taking over")
        assert ws.hosting and host_pid(root / ".aide") == os.getpid()
        (root / "pkg" / "mod_2.py").write_text("def freshly_taken_over():\n    return 2\n")
        hit = until(lambda: ws.search("freshly_taken_over", mode="bm25").results, "the new host to index")
        assert hit[0].path == "pkg/mod_2.py"
        ws.close()
        assert host_pid(root / ".aide") is None  # closing lets go
    finally:
        for k in env:
            if k.startswith(("XDG_", "AIDE_")):
                os.environ.pop(k, None)


def test_one_bulk_job_at_a_time_across_workspaces(tmp_path: Path, slow_server: LoopbackServer) -> None:
    """Three fresh workspaces searched at once: one bulk embedding runs, the others say they are queued,
    and all finish."""
    slow_server.set_mode("slow", delay=0.05)
    env = env_for(tmp_path, slow_server)
    roots = [big_workspace(tmp_path / f"ws{i}") for i in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "aide_tui", "search", "--path", str(r), "--mode", "bm25", "step_1_1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for r in roots
    ]  # fmt: skip

    def embedded(r: Path) -> bool:
        return json.loads(cli("status", str(r), "--json", env=env).stdout)["vectors_missing"] == 0

    try:
        for p in procs:
            p.communicate(timeout=120)
            assert p.returncode == 0
        for r in roots:
            until(lambda r=r: embedded(r), f"{r.name}'s vectors", 120)
        logs = [(r / ".aide" / "index.log").read_text() for r in roots]
        assert sum("waiting for another workspace's embedding" in log for log in logs) >= 1, logs
    finally:
        for r in roots:
            stop_host(r)


def test_a_second_install_searches_the_index_as_built(tmp_path: Path) -> None:
    """Issue 20's two installs: an index built on the numpy encoder is searched and updated by an install
    whose runtime is left to "auto" (onnx here when installed) without re-embedding it."""
    pytest.importorskip("onnxruntime")
    root = write_workspace(tmp_path / "ws")
    numpy_env = clean_env(tmp_path, AIDE_EMBEDDING_RUNTIME="numpy")
    assert cli("index", str(root), "--json", env=numpy_env).returncode == 0
    before = json.loads(cli("status", str(root), "--json", env=numpy_env).stdout)
    assert before["vectors_missing"] == 0 and ":onnx" not in before["embedder"]
    auto_env = clean_env(tmp_path)
    (root / "src" / "more.py").write_text("def another_function():\n    return 3\n")
    out = cli("index", str(root), env=auto_env)
    assert out.returncode == 0 and "re-embedding" not in out.stderr
    assert ", 1 changed" in out.stdout or "(1 changed" in out.stdout
    after = json.loads(cli("status", str(root), "--json", env=auto_env).stdout)
    assert after["embedder"] == before["embedder"] and after["vectors_missing"] == 0
    got = json.loads(cli("search", "--path", str(root), "--json", "--no-update", "another function",
                         env=auto_env).stdout)  # fmt: skip
    assert not got["degraded"] and any(r["ranks"]["dense"] for r in got["results"])


def test_serve_stops_cleanly_on_sighup_and_when_its_root_goes(tmp_path: Path) -> None:
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    root = write_workspace(tmp_path / "ws")
    srv = Served(root, env=env)
    srv.wait_ready()
    assert srv.stop(signal.SIGHUP) == 0  # the terminal closed
    assert not (root / ".aide" / "serve.sock").exists() and not (root / ".aide" / "serve.lock").exists()
    srv = Served(root, env=env)
    srv.wait_ready()
    assert srv.stop(signal.SIGTERM) == 0
    assert not (root / ".aide" / "serve.sock").exists() and not (root / ".aide" / "serve.lock").exists()
    srv = Served(root, env=env)
    srv.wait_ready()
    moved = tmp_path / "moved"
    root.rename(moved)
    assert srv.proc.wait(30) == 1
    assert "moved or deleted" in (srv.proc.stderr.read() if srv.proc.stderr else "")
    assert not root.exists()  # never recreated
    assert not (moved / ".aide" / "serve.sock").exists()
