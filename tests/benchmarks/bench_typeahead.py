#!/usr/bin/env python3
"""Search-as-you-type benchmark (a script, not a test): the cost of completing the typed word.

    python tests/benchmarks/bench_typeahead.py ROOT [--runs 5] [--mode bm25|hybrid]

Index ROOT first (``aide-tui index ROOT``; ``--embedder none`` for bm25). Every keystroke of a set of
queries typed letter by letter (``s``, ``se``, ``ses``, ... ``session``) is searched in-process
(``Searcher.search``, limit 20) with prefix completion off and on, interleaved; each run reports
p50/p95 of both, and the script prints the median of the runs' p50 and p95, the one-time cost of
sorting the vocabulary (the first completed query of a version), the cost of growing it after a
one-file delta, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.embed.factory import make_embedder  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402

QUERIES = ["session", "create_engine", "relationship", "timeout", "Connection.execute",
           "bulk insert mappings", "declarative base", "with_for_update", "pool pre ping",
           "AsyncSession"]  # fmt: skip


def keystrokes(queries: list[str]) -> list[str]:
    """Every prefix of every query that ends in a letter (what the app searches as one types)."""
    return [q[:i] for q in queries for i in range(1, len(q) + 1) if q[i - 1].isalnum()]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mode", default="bm25", choices=["bm25", "hybrid"])
    args = ap.parse_args()
    root = Path(args.root).resolve()
    settings = load_settings(root, {} if args.mode == "hybrid" else {"embedding": {"backend": "none"}})
    embedder = make_embedder(settings) if args.mode == "hybrid" else None
    s = Searcher(root, settings, embedder)
    s.refresh()
    view = s.retriever.view  # type: ignore[attr-defined]
    sort_ms = grow_ms = 0.0  # each segment's terms are stored sorted: nothing is sorted when loading
    t0 = time.perf_counter()
    s.search("sessio", limit=20, mode=args.mode, prefix=True)  # the first keystroke opens the dictionaries
    first_ms = (time.perf_counter() - t0) * 1000
    keys = keystrokes(QUERIES)
    for q in keys[:20]:  # warm both paths (query vectors cached, lookups built)
        s.search(q, limit=20, mode=args.mode)
        s.search(q, limit=20, mode=args.mode, prefix=True)
    runs = []
    for _ in range(args.runs):
        off, on = [], []
        for q in keys:
            for prefix, into in ((False, off), (True, on)):
                t0 = time.perf_counter()
                s.search(q, limit=20, mode=args.mode, prefix=prefix)
                into.append((time.perf_counter() - t0) * 1000)
        runs.append(
            {"off_p50": pct(off, 50), "off_p95": pct(off, 95), "on_p50": pct(on, 50), "on_p95": pct(on, 95)}
        )
    med = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
    out = {
        "root": str(root),
        "mode": args.mode,
        "chunks": view.n_rows,
        "vocabulary": len(view.vocab),
        "sorted_terms": len(view.vocab),
        "keystrokes": len(keys),
        "runs": args.runs,
        **med,
        "sort_vocabulary_ms": round(sort_ms, 1),
        "first_completed_query_ms": round(first_ms, 1),
        "grow_after_delta_ms": round(grow_ms, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
