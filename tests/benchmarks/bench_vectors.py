#!/usr/bin/env python3
"""Cold vector rate of the indexing paths (a script, not a test): the CLI's ``aide-tui index`` and the
app's service (LiveWorkspace → long-lived indexing process), on a fresh copy of ROOT each time.

    python tests/benchmarks/bench_vectors.py ROOT [--runtime numpy|onnx] [--runs 3]

Reports dense pieces per second of the embedding phase (from its first progress event to the end of
the run), to compare with ``bench_embed.py``'s 2-process rate measured in the same session.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.events import Done, Progress  # noqa: E402
from aide_tui.core.live import LiveWorkspace  # noqa: E402


def cli_rate(root: Path, runtime: str) -> float:
    """Pieces per second of ``aide-tui index --progress`` (embedding phase only)."""
    env = {**os.environ, "AIDE_EMBEDDING_RUNTIME": runtime}
    cmd = [sys.executable, "-m", "aide_tui", "index", str(root), "--progress"]
    start = None
    last = 0
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        ev = json.loads(line)
        if ev.get("event") == "progress" and ev.get("state") == "embedding":
            if start is None:
                start = time.monotonic()
            last = ev.get("vectors_done", 0)
    proc.wait()
    end = time.monotonic()
    return last / (end - start) if start else 0.0


def app_rate(root: Path, runtime: str) -> float:
    """Pieces per second of the app's service (the same numbers the app's progress bar shows)."""
    os.environ["AIDE_EMBEDDING_RUNTIME"] = runtime
    settings = load_settings(root)
    events: queue.Queue[object] = queue.Queue()
    live = LiveWorkspace(root, settings, events.put, watch=False)
    live.start()
    start = None
    done = 0
    try:
        while True:
            ev = events.get(timeout=3600)
            if isinstance(ev, Progress) and ev.state == "embedding":
                start = start or time.monotonic()
                done = ev.vectors_done
            if isinstance(ev, Done) and not ev.preempted:
                break
    finally:
        live.close()
    return done / (time.monotonic() - start) if start else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--runtime", default="numpy")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out: dict[str, list[float]] = {"cli": [], "app": []}
    with tempfile.TemporaryDirectory(prefix="aide-vec-") as tmp:
        for _ in range(args.runs):
            for kind, fn in (("cli", cli_rate), ("app", app_rate)):
                root = Path(tmp) / "ws"
                shutil.rmtree(root, ignore_errors=True)
                shutil.copytree(args.root, root, ignore=shutil.ignore_patterns(".aide"))
                out[kind].append(fn(root, args.runtime))
    print(json.dumps({
        "root": args.root, "runtime": args.runtime,
        "cli_pieces_per_s": round(statistics.median(out["cli"]), 1),
        "app_pieces_per_s": round(statistics.median(out["app"]), 1),
        "runs": args.runs, "load": os.getloadavg()[0],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
