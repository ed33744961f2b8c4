#!/usr/bin/env python3
"""One host per workspace (issue 20), measured with real processes (a script, not a test).

    python tests/benchmarks/bench_host.py [--rounds 3] [--files 400]

1. **Edit while a CLI-started bulk embed runs**: `aide-tui search` on a fresh workspace leaves a
   background host embedding; a front end (the app's Workspace) opened then attaches; a new function is
   appended to a file; time until the front end's search finds it. Medians of ``--rounds``.
2. **20 parallel first searches** on a fresh workspace: exit codes, errors, background hosts started.
3. **3 fresh workspaces searched at once**: embedding processes alive at once (sampled), and how many
   hosts said they were queued.

The embedder is the built-in one (a real bulk job); the load average is printed with each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.host.lock import host_pid  # noqa: E402
from aide_tui.host.workspace import Workspace  # noqa: E402


def workspace(root: Path, files: int) -> Path:
    (root / "pkg").mkdir(parents=True)
    for i in range(files):
        body = "\n\n".join(
            f"def handler_{i}_{k}(request, retries={k}):\n    '''Handle request {i}.{k}.'''\n"
            f"    for attempt in range(retries):\n        request = request.retry(attempt + {i})\n"
            f"    return request.send()\n"
            for k in range(6)
        )
        (root / "pkg" / f"mod_{i}.py").write_text(body)
    return root


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"), PYTHONPATH=str(REPO))
    return env


def search(root: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--json", *extra, "handler_3_2"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def stop_host(root: Path) -> None:
    pid = host_pid(root / ".aide")
    if pid:
        os.kill(pid, 15)
        for _ in range(300):
            if host_pid(root / ".aide") is None:
                return
            time.sleep(0.1)


def edit_while_embedding(home: Path, files: int) -> float:
    root = workspace(home / "ws", files)
    env = env_for(home)
    assert search(root, env).returncode == 0  # leaves a background host embedding
    os.environ.update({k: env[k] for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME")})
    seen: list[tuple[float, str]] = []

    def note(e: object) -> None:
        name = type(e).__name__
        seen.append((time.monotonic(), f"{name}: {getattr(e, 'message', '')}" if name == "Failed" else name))

    ws = Workspace(root, load_settings(root), note, front_end="app")
    ws.start()
    try:
        deadline = time.monotonic() + 30
        while ws.hosting is False and ws.host_pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
        while not {"Opened", "EmbedderReady"} <= {n for _, n in seen} and time.monotonic() < deadline:
            time.sleep(0.05)  # the app is open and warm (as when its user types), the host still embedding
        assert ws.search("handler_3_2", mode="bm25").results
        assert ws.current_status().vectors_missing > 0, "the bulk job ended before the edit"
        target = root / "pkg" / "mod_5.py"
        t0 = time.monotonic()
        target.write_text(target.read_text() + "\n\ndef qwzxvblorp():\n    return 1\n")
        while not ws.search("qwzxvblorp", mode="bm25").results:
            time.sleep(0.01)
            if time.monotonic() - t0 > 60:
                raise AssertionError(f"never visible; events: {[(round(t - t0, 3), n) for t, n in seen]}")
        took = time.monotonic() - t0
        assert ws.current_status().vectors_missing > 0, "the bulk job ended before the edit was seen"
        if os.environ.get("BENCH_TRACE"):
            print("  events after the edit:", [(round(t - t0, 3), n) for t, n in seen if t >= t0][:12])
            print("  edit at", time.strftime("%H:%M:%S"), "host log tail:")
            print((root / ".aide" / "index.log").read_text()[-1500:])
        return took
    finally:
        ws.close()
        stop_host(root)


def parallel_first_searches(home: Path, files: int) -> dict[str, int]:
    root = workspace(home / "ws", files)
    env = env_for(home)
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--json", "handler_3_2"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(20)]  # fmt: skip
    outs = [p.communicate(timeout=600) for p in procs]
    log = (root / ".aide" / "index.log").read_text() if (root / ".aide" / "index.log").exists() else ""
    stop_host(root)
    return {
        "ok": sum(p.returncode == 0 for p in procs),
        "errors": sum(
            ("gave up" in e or "locked" in e or p.returncode != 0)
            for p, (_, e) in zip(procs, outs, strict=True)
        ),
        "hosts": log.count("background host for"),
    }


def _encoders(hosts: set[int]) -> dict[int, float]:
    """CPU seconds so far of each embedding worker (a multiprocessing child) descending from ``hosts``."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            parent[int(proc.name)] = int(fields[1])
            if b"multiprocessing.spawn" in (proc / "cmdline").read_bytes():
                cpu[int(proc.name)] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            continue

    def under_host(pid: int) -> bool:
        for _ in range(10):
            pid = parent.get(pid, 0)
            if pid in hosts:
                return True
            if pid <= 1:
                return False
        return False

    return {pid: t for pid, t in cpu.items() if under_host(pid)}


def encoders_busy(hosts: set[int], window: float = 1.0) -> tuple[int, int]:
    """(embedding workers alive, those that used over a fifth of a core during ``window`` seconds)."""
    before = _encoders(hosts)
    time.sleep(window)
    after = _encoders(hosts)
    busy = sum(after[p] - before.get(p, after[p]) > 0.2 * window for p in after)
    return len(after), busy


def three_workspaces(home: Path, files: int) -> dict[str, int]:
    roots = [workspace(home / f"ws{i}", files) for i in range(3)]
    env = env_for(home)
    procs = [subprocess.Popen([sys.executable, "-m", "aide_tui", "search", "--path", str(r), "--mode", "bm25",
                               "handler_1_1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in roots]  # fmt: skip
    for p in procs:
        p.communicate(timeout=600)
    alive, busy, hosts = 0, 0, 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # niced hosts on a loaded machine start embedding late
        pids = {pid for r in roots if (pid := host_pid(r / ".aide")) is not None}
        n_alive, n_busy = encoders_busy(pids)
        alive, busy, hosts = max(alive, n_alive), max(busy, n_busy), max(hosts, len(pids))
        if busy and hosts == len(roots) and time.monotonic() > deadline - 60:
            break
        time.sleep(0.25)
    logs = [(r / ".aide" / "index.log").read_text() for r in roots]
    for r in roots:
        stop_host(r)
    return {"hosts": hosts, "embedding_workers_alive_peak": alive, "embedding_workers_busy_peak": busy,
            "queued": sum("waiting for another workspace's embedding" in log for log in logs)}  # fmt: skip


def serve_first_search(root: Path, env: dict[str, str]) -> dict[str, float]:
    """``serve`` on an indexed workspace: seconds until its socket appears, then the first and the
    second ``aide-tui search`` through it (the first must not pay for loading the index or encoder)."""
    t0 = time.monotonic()
    srv = subprocess.Popen([sys.executable, "-m", "aide_tui", "serve", str(root)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while not (root / ".aide" / "serve.sock").exists():
            time.sleep(0.02)
            if time.monotonic() - t0 > 120:
                raise AssertionError("serve never answered")
        up = time.monotonic() - t0
        took = []
        for _ in range(2):
            t1 = time.monotonic()
            assert search(root, env).returncode == 0
            took.append(time.monotonic() - t1)
        return {
            "socket_s": round(up, 3),
            "first_search_s": round(took[0], 3),
            "second_search_s": round(took[1], 3),
        }
    finally:
        srv.terminate()
        srv.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--only", choices=("edit", "parallel", "three", "serve"))
    ap.add_argument("--serve-root", type=Path, help="an indexed workspace for --only serve")
    args = ap.parse_args()
    if args.only == "serve":
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
        rows = [serve_first_search(args.serve_root, env) for _ in range(args.rounds)]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(json.dumps({"serve": rows, "median": med, "load": os.getloadavg()[0]}))
        return
    if args.only == "three":
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps({"three_workspaces": three_workspaces(Path(tmp), args.files // 4),
                              "load": os.getloadavg()[0]}))  # fmt: skip
        return
    times = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            times.append(edit_while_embedding(Path(tmp), args.files))
    edits = {"edit_visible_while_embedding_s": [round(t, 3) for t in times]}
    print(json.dumps({**edits, "median_s": round(statistics.median(times), 3), "load": os.getloadavg()[0]}))
    if args.only == "edit":
        return
    with tempfile.TemporaryDirectory() as tmp:
        got = parallel_first_searches(Path(tmp), args.files // 4)
        print(json.dumps({"parallel_first_searches": got, "load": os.getloadavg()[0]}))
    with tempfile.TemporaryDirectory() as tmp:
        got = three_workspaces(Path(tmp), args.files // 4)
        print(json.dumps({"three_workspaces": got, "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
