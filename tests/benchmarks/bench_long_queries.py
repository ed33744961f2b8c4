#!/usr/bin/env python3
"""Oversized-query benchmark (a script, not a test): what a pasted or garbage query of ~32k characters
costs, by its shape.

    python tests/benchmarks/bench_long_queries.py ROOT [--runs 3] [--mode bm25|hybrid]

Index ROOT first (``aide-tui index ROOT``). Each shape (one 32k-letter word, a path of 8,000 folders,
a pasted log of calls, 1,200 traceback frames ...) is searched in-process (``Searcher.search``, limit
50) ``--runs`` times; the script prints each shape's median in ms, slowest first, a one-word query as
the baseline measured in the same run, and the load average. A shape whose cost grows with the square
of its length shows up here (a 32k-letter word cost 1.8-2.4 s on httpx before session 20).
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
from aide_tui.core.search.searcher import Searcher  # noqa: E402

SHAPES = {
    "one word": "abcdefghij" * 3200, "one letter": "a" * 32000, "words": " ".join(["word"] * 6000),
    "dotted": "a." * 16000, "folders": "a/" * 16000, "a path": "src/" * 8000 + "x.py:1",
    "dashes": "-" * 32000, "a flag": "--" + "a-" * 16000, "camelCase": "aB" * 16000,
    "snake_case": "a_" * 16000, "colons": "a:" * 16000, "quoted": '"a" ' * 8000, "calls": "f(" * 16000,
    "digits": "1" * 32000, "capitals": "A" * 32000, "a log of calls": "foo.bar(baz) " * 2700,
    "frames": 'File "a.py", line 1, in f\n' * 1200, "umlauts": "ä" * 32000, "blank": " \n" * 16000,
    "brackets": "[a]" * 10000, "sigils": "$a@b#c " * 4500, "escapes": "\\a" * 16000, "tags": "<a>" * 10000,
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", choices=("bm25", "hybrid"), default="bm25")
    args = ap.parse_args()
    backend = {"bm25": "none", "hybrid": "builtin"}[args.mode]
    searcher = Searcher(args.root, load_settings(args.root, {"embedding": {"backend": backend}}))
    searcher.search("client", limit=10)  # load the index once

    def median_ms(query: str) -> float:
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            searcher.search(query, limit=50, hints=False)
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)

    base = median_ms("timeout")
    shapes = sorted(((median_ms(q), name) for name, q in SHAPES.items()), reverse=True)
    out = {"root": str(args.root), "mode": args.mode, "runs": args.runs, "baseline_ms": round(base, 1),
           "shapes_ms": {name: round(ms, 1) for ms, name in shapes}, "load": os.getloadavg()[0]}  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
