"""Serve benchmarks (not in the default test run): warm latency over the socket, CLI through a server,
load with a reindex and file changes underneath, and faults.

    pip download textual==8.2.8 --no-deps --no-binary :all: && tar xzf textual-8.2.8.tar.gz
    python tests/benchmarks/bench_serve.py latency textual-8.2.8 --mode bm25|hybrid --embedder none|builtin
    python tests/benchmarks/bench_serve.py load textual-8.2.8
    python tests/benchmarks/bench_serve.py faults textual-8.2.8

Each command works on ROOT as given (index it first with the embedder you want; ``load`` and ``faults``
rewrite files, so give them a copy). Figures are printed as Markdown rows for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
QUERIES = [
    "compose widgets in a container",
    "DataTable add_row",
    "how are key bindings dispatched to the focused widget",
    "css selector specificity",
    "Screen push_screen callback",
    "reactive watch method",
    "render a rich renderable in a Static",
    "message pump post_message",
    "timer set_interval",
    "scroll to region animate",
    "Input validation on submit",
    "worker thread cancellation",
    "App.run_test pilot press",
    "tcss parser tokenizer",
    "markdown viewer table of contents",
    "layout dock edge",
    "ListView highlighted index",
    "color blend lerp",
    "mouse capture release",
    "command palette provider search",
]


def env_for(embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env["PYTHONPATH"] = str(REPO)
    env["AIDE_EMBEDDER"] = embedder
    return env


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Server:
    def __init__(self, root: Path, embedder: str, *extra: str) -> None:
        self.root = root
        self.sock = root / ".aide" / "serve.sock"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aide_tui", "serve", str(root), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env_for(embedder),
        )  # fmt: skip
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, ""):
            if line.startswith("listening unix:"):
                break
        transport = httpx.HTTPTransport(uds=str(self.sock))
        self.http = httpx.Client(transport=transport, base_url="http://a", timeout=600)

    def wait_ready(self, timeout: float = 1800) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.http.get("/status").json()
            if st["state"] in ("ready", "partial"):
                return st
            time.sleep(0.2)
        raise SystemExit("no index")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(60)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0:3].__str__()


# -- latency -------------------------------------------------------------------------------------------


def latency(root: Path, mode: str, embedder: str, rounds: int = 3, n: int = 200) -> None:
    srv = Server(root, embedder)
    srv.wait_ready()
    for q in QUERIES:  # warm: the embedder is loaded, caches are hot
        srv.http.post("/search", json={"query": q, "mode": mode, "limit": 20}).raise_for_status()
    p50s, p95s, inner = [], [], []
    for _ in range(rounds):
        times, took = [], []
        for i in range(n):
            t0 = time.perf_counter()
            r = srv.http.post("/search", json={"query": QUERIES[i % len(QUERIES)], "mode": mode, "limit": 20})
            times.append((time.perf_counter() - t0) * 1000)
            r.raise_for_status()
            took.append(r.json()["took_ms"])
        p50s.append(pct(times, 50))
        p95s.append(pct(times, 95))
        inner.append(statistics.median(took))
    cli_served, cli_local = [], []
    env = env_for(embedder)
    base = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--json", "--mode", mode]
    for i in range(rounds):
        q = QUERIES[i]
        for bucket, extra in ((cli_served, []), (cli_local, ["--no-server"])):
            t0 = time.perf_counter()
            out = subprocess.run([*base, *extra, q], capture_output=True, text=True, env=env, check=True)
            bucket.append(time.perf_counter() - t0)
            assert json.loads(out.stdout)["query"] == q
    rss = rss_mb(srv.proc.pid)
    srv.stop()
    print(
        f"| {root.name} | {mode} ({embedder}) | {statistics.median(p50s):.2f} ms "
        f"| {statistics.median(p95s):.2f} ms "
        f"| {statistics.median(inner):.2f} ms | {statistics.median(cli_served):.2f} s "
        f"| {statistics.median(cli_local):.2f} s | {rss:.0f} MB | {uptime()} |"
    )


# -- load ----------------------------------------------------------------------------------------------


def load(root: Path, clients: int = 50, per_client: int = 200, mode: str = "bm25", rounds: int = 3) -> None:
    """50 clients x 200 searches while a reindex runs and files change underneath, ``rounds`` times on the
    same server (a reindex starts each round); RSS is sampled throughout."""
    srv = Server(root, "none")
    srv.wait_ready()
    pid = srv.proc.pid
    files = sorted(p for p in (root / "src").rglob("*.py") if p.stat().st_size > 2000)[:40]
    original = {p: p.read_text() for p in files}
    ever_lines: dict[str, int] = {str(p.relative_to(root)): len(t.splitlines()) for p, t in original.items()}
    current: dict[str, list[str]] = {str(p.relative_to(root)): t.splitlines() for p, t in original.items()}
    stop = threading.Event()
    rss: list[float] = []
    lock = threading.Lock()

    def mutate() -> None:
        rnd = random.Random(7)
        while not stop.is_set():
            p = rnd.choice(files)
            rel = str(p.relative_to(root))
            lines = original[p].splitlines()
            cut = lines[: max(5, len(lines) // rnd.choice((2, 3, 4)))]
            new = cut + [f"# edit {time.time()}"] if rnd.random() < 0.7 else lines
            with lock:
                current[rel] = new
                ever_lines[rel] = max(ever_lines[rel], len(new))
            tmp = p.with_suffix(".tmp~")
            tmp.write_text("\n".join(new) + "\n")
            os.replace(tmp, p)
            time.sleep(0.2)

    def sample() -> None:
        while not stop.is_set():
            rss.append(rss_mb(pid))
            time.sleep(0.25)

    counts = {"ok": 0, "failed": 0, "results": 0, "never_existed": 0, "stale_at_answer": 0}
    errors: list[str] = []

    def check(obj: dict[str, Any]) -> None:
        for r in obj["results"]:
            counts["results"] += 1
            rel = r["path"]
            with lock:
                now = current.get(rel)
                ever = ever_lines.get(rel)
            if now is None:
                try:
                    now = (root / rel).read_text(errors="replace").splitlines()
                except OSError:
                    now = []
                ever = len(now)
            if r["end_line"] > max(ever or 0, len(now)):
                counts["never_existed"] += 1
            elif r["end_line"] > len(now):
                counts["stale_at_answer"] += 1

    async def client(i: int) -> None:
        transport = httpx.AsyncHTTPTransport(uds=str(srv.sock))
        async with httpx.AsyncClient(transport=transport, base_url="http://a", timeout=120) as http:
            for j in range(per_client):
                q = QUERIES[(i + j) % len(QUERIES)]
                try:
                    r = await http.post("/search", json={"query": q, "mode": mode, "limit": 10})
                    if r.status_code != 200:
                        raise RuntimeError(f"{r.status_code} {r.text[:100]}")
                    check(r.json())
                    counts["ok"] += 1
                except Exception as exc:  # noqa: BLE001 - counted
                    counts["failed"] += 1
                    errors.append(repr(exc)[:200])

    async def run_clients() -> None:
        await asyncio.gather(*(client(i) for i in range(clients)))

    rss_before = rss_mb(pid)
    threads = [threading.Thread(target=mutate, daemon=True), threading.Thread(target=sample, daemon=True)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    round_rss = []
    for _ in range(rounds):
        srv.http.post("/reindex", json={"rebuild": True}).raise_for_status()
        asyncio.run(run_clients())
        round_rss.append(rss_mb(pid))
    seconds = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    # settle: the watcher reindexes the last edits; then no result may point past the end of its file
    time.sleep(2)
    deadline = time.monotonic() + 300
    final_stale = -1
    while time.monotonic() < deadline:
        final_stale = 0
        for q in QUERIES:
            for r in srv.http.post("/search", json={"query": q, "mode": mode, "limit": 50}).json()["results"]:
                n = len((root / r["path"]).read_text(errors="replace").splitlines())
                final_stale += r["end_line"] > n
        if final_stale == 0:
            break
        time.sleep(2)
    rss_after = rss_mb(pid)
    srv.stop()
    for p, text in original.items():
        p.write_text(text)
    total = clients * per_client * rounds
    quarters = " / ".join(f"{r:.0f}" for r in round_rss)
    print(
        f"| {rounds} x {clients} x {per_client} ({mode}) | {seconds:.1f} s | {total / seconds:.0f}/s "
        f"| {counts['failed']} | {counts['results']} | {counts['never_existed']} "
        f"| {counts['stale_at_answer']} | {final_stale} | {rss_before:.0f} / {quarters} / {rss_after:.0f} MB "
        f"(max {max(rss):.0f}) | {uptime()} |"
    )
    if errors:
        print("errors:", errors[:5])


# -- faults --------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def faults(root: Path, rounds: int = 3) -> None:
    # 1. kill -9 mid-reindex, restart, must serve a valid index
    for i in range(rounds):
        srv = Server(root, "none")
        srv.wait_ready()
        before = srv.http.get("/status").json()
        srv.http.post("/reindex", json={"rebuild": True}).raise_for_status()
        time.sleep(0.8 + 0.5 * i)
        kids = _children(srv.proc.pid)
        srv.proc.kill()
        srv.proc.wait()
        orphan_alive = [k for k in kids if _alive(k)]
        t0 = time.perf_counter()
        again = Server(root, "none")
        st = again.wait_ready()
        probe = {"query": "DataTable add_row", "mode": "bm25"}
        hits = again.http.post("/search", json=probe).json()["results"]
        ready_s = time.perf_counter() - t0
        again.stop()
        for k in orphan_alive:
            if _alive(k):
                os.kill(k, signal.SIGKILL)
        print(
            f"| kill -9 mid-reindex #{i + 1} | restart: state {st['state']}, {st['files']} files "
            f"(before {before['files']}), {len(hits)} results, ready in {ready_s:.2f} s; "
            f"index child alive after the kill: {len(orphan_alive)} |"
        )
    # 2. clients that disconnect mid-stream (events and a large search answer)
    srv = Server(root, "none")
    srv.wait_ready()
    dropped = 0
    for i in range(100):
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(srv.sock))
        if i % 2:
            s.sendall(b"GET /events HTTP/1.1\r\nHost: a\r\n\r\n")
        else:
            body = json.dumps({"query": "widget", "limit": 1000, "mode": "bm25"}).encode()
            s.sendall(b"POST /search HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        s.recv(64)
        s.close()
        dropped += 1
    ok = srv.http.get("/status").status_code == 200
    print(f"| {dropped} clients hang up mid-answer (events / 1000-result search) | answers after: {ok} |")
    # 3. 1,000 malformed requests in a row
    rss0 = rss_mb(srv.proc.pid)
    statuses: dict[str, int] = {}
    bad_bodies = [
        b"{", b"[]", b'{"query": 1}', b'{"query": "x", "mode": "z"}', b'{"query": "x", "limit": 1e9}',
        b"\xff" * 100, b"[" * 50_000, b'{"query": "' + b"a" * (1 << 20) + b'"}',
    ]  # fmt: skip
    raw = [
        b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /search HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        b"GET /status HTTP/1.1\r\nHost: a\r\nX: " + b"y" * 100_000 + b"\r\n\r\n",
    ]  # fmt: skip
    t0 = time.perf_counter()
    rss_mid = 0.0
    for i in range(1000):
        if i == 500:
            rss_mid = rss_mb(srv.proc.pid)
        try:
            if i % 10 == 9:
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(10)
                s.connect(str(srv.sock))
                s.sendall(raw[(i // 10) % len(raw)])
                answer = s.recv(64).split(b" ")[1:2]
                s.close()
                key = f"raw {answer[0].decode() if answer else 'closed'}"
            elif i % 10 == 8:
                key = str(srv.http.request(random.choice(["PUT", "DELETE", "PATCH"]), "/search").status_code)
            elif i % 10 == 7:
                key = str(srv.http.get(f"/nope/{i}").status_code)
            else:
                key = str(srv.http.post("/search", content=bad_bodies[i % len(bad_bodies)]).status_code)
        except (httpx.HTTPError, OSError) as exc:
            key = f"client error {exc.__class__.__name__}"
        statuses[key] = statuses.get(key, 0) + 1
    seconds = time.perf_counter() - t0
    good = srv.http.post("/search", json={"query": "DataTable add_row", "mode": "bm25"})
    rss1 = rss_mb(srv.proc.pid)
    srv.stop()
    print(
        f"| 1,000 malformed requests in {seconds:.1f} s | {json.dumps(statuses, sort_keys=True)} "
        f"| a good search after: {good.status_code}, {len(good.json()['results'])} results "
        f"| RSS {rss0:.0f} -> {rss_mid:.0f} (after 500) -> {rss1:.0f} MB |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["latency", "load", "faults"])
    ap.add_argument("root", type=Path)
    ap.add_argument("--mode", default="bm25")
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args()
    root = args.root.resolve()
    print(f"# {args.what} on {root} (load average before: {uptime()})")
    if args.what == "latency":
        latency(root, args.mode, args.embedder)
    elif args.what == "load":
        load(root)
    else:
        faults(root)


if __name__ == "__main__":
    main()
