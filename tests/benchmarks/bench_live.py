#!/usr/bin/env python3
"""Live-index benchmark (a script, not a test): edit a file in a watched workspace, time until the
running service answers with it.

    python tests/benchmarks/bench_live.py ROOT [--edits 10] [--embedder builtin|none] [--store local|milvus]

Uses :class:`~aide_tui.core.live.LiveWorkspace`, the service the app runs (watcher → long-lived
low-priority indexing process → commit → reload). For each edit (a new function with a unique name
appended to a real file) it reports: the time until a lexical search finds it, and (with an
embedder) until its vectors are committed and loaded. Index ROOT first (``aide-tui index ROOT``) so
the run starts from a complete index. Prints p50/p95 and the machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.events import Done  # noqa: E402
from aide_tui.core.live import LiveEvent, LiveWorkspace, Reloaded  # noqa: E402


def wait_for(events: queue.Queue[LiveEvent], pred, timeout: float) -> LiveEvent | None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            ev = events.get(timeout=left)
        except queue.Empty:
            return None
        if pred(ev):
            return ev
    return None


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--embedder", default="builtin")
    ap.add_argument("--store", choices=["local", "milvus"], default="local")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    settings = load_settings(
        root, {"embedding": {"backend": args.embedder}, "store": {"backend": args.store}}
    )
    events: queue.Queue[LiveEvent] = queue.Queue()
    live = LiveWorkspace(root, settings, events.put)
    live.start()
    if wait_for(events, lambda e: isinstance(e, Done), 1800) is None:
        raise SystemExit("the first (catch-up) run did not finish")
    targets = sorted(p for p in root.rglob("*.py") if ".aide" not in p.parts and p.stat().st_size < 40_000)
    lexical: list[float] = []
    vectors: list[float] = []
    try:
        for i in range(args.edits):
            target = targets[(i * 7919) % len(targets)]
            name = f"zq_bench_{os.getpid()}_{i}"
            time.sleep(1.5)  # a lone edit after a quiet moment, as when a person saves a file
            while not events.empty():
                events.get_nowait()
            original = target.read_text()
            t0 = time.monotonic()
            target.write_text(original + f"\n\ndef {name}():\n    return 'benchmark edit {i}'\n")
            found = None
            with_vectors = False
            while found is None and time.monotonic() - t0 < 60:
                ev = wait_for(events, lambda e: isinstance(e, Reloaded), 60)
                if ev is not None and any(name in h.text for h in live.search(name, mode="bm25").results):
                    found = time.monotonic() - t0
                    with_vectors = isinstance(ev, Reloaded) and ev.status.vectors_missing == 0
            if found is None:
                raise SystemExit(f"edit {i} never became searchable")
            lexical.append(found)
            if args.embedder != "none":
                if with_vectors:  # the edit's vectors came in the same commit as its text
                    vectors.append(found)
                else:
                    ev = wait_for(
                        events, lambda e: isinstance(e, Reloaded) and e.status.vectors_missing == 0, 120
                    )
                    if ev is None:
                        raise SystemExit(f"edit {i}: vectors never arrived")
                    vectors.append(time.monotonic() - t0)
            target.write_text(original)
            wait_for(events, lambda e: isinstance(e, Done), 120)
    finally:
        live.close()
    out = {
        "root": str(root),
        "edits": len(lexical),
        "lexical_s": {"p50": round(statistics.median(lexical), 3), "p95": round(pct(lexical, 0.95), 3)},
        "lexical_each_s": [round(x, 3) for x in lexical],
        "load": os.getloadavg()[0],
    }
    if vectors:
        out["vectors_s"] = {"p50": round(statistics.median(vectors), 3), "p95": round(pct(vectors, 0.95), 3)}
        out["vectors_each_s"] = [round(x, 3) for x in vectors]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
