#!/usr/bin/env python3
"""Chunker speed on pathological and long inputs (a script, not a test: speed is never asserted in tests).

    python tests/benchmarks/bench_chunk.py [--runs 5]

Per input: the median seconds of ``chunk_file`` over the runs, and the ratio to the first input (a
quadratic blow-up shows as a ratio far above the inputs' size ratio).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.chunk.chunker import chunk_file  # noqa: E402


def inputs() -> list[tuple[str, str]]:
    py = "\n\n".join(
        f"class C{i}:\n    def m(self, x):\n        if x > {i}:\n"
        f"            return {{'k': x}}\n        return None"
        for i in range(1000)
    )
    js = "\n\n".join(
        f"export class C{i} {{\n  m(x) {{\n    if (x > {i}) {{\n      return '{{'\n    }}\n  }}\n}}"
        for i in range(700)
    )
    c = "\n\n".join(f"static int f{i}(int x)\n{{\n    return x > {i} ? '}}' : 0;\n}}" for i in range(1000))
    one_line = "x = [" + ", ".join(f'"{{{i}}}"' for i in range(2500)) + "]"
    out = [("s.py", py), ("s.ts", js), ("s.c", c)]
    out += [(p, one_line) for p in ("min.js", "blob.py", "data.json", "x.txt", "a.c", "doc.md", "s.yaml")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for path, text in inputs():
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            chunk_file(path, text)
            times.append(time.perf_counter() - t0)
        lines = text.count("\n") + 1
        print(f"{path:10s} {len(text):8d} chars {lines:6d} lines  median {statistics.median(times):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
