"""Benchmark of the built-in numpy MiniLM embedder (a script; not collected by pytest).

Usage: python tests/benchmarks/bench_embed.py [--chunks 300] [--runs 3]

Reports document chunks/s (real ~1,500 non-whitespace-char chunks of site-packages Python files,
max_doc_tokens=128) with one process and with two processes (one BLAS thread each), medians over
``--runs`` runs, p50 query latency for short queries, and peak RSS.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import sys
import sysconfig
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from aide_tui.core.embed.builtin import BuiltinEmbedder  # noqa: E402

QUERIES = [
    "read a file and split it into lines",
    "http client timeout",
    "parse json config",
    "retry with exponential backoff",
    "where is the event loop created",
    "render a table in the terminal",
    "url encode query parameters",
    "close the socket on error",
]


def make_chunks(n: int, target: int = 1500) -> list[str]:
    """~``target`` non-whitespace-char chunks of consecutive lines from real site-packages .py files."""
    site = Path(sysconfig.get_paths()["purelib"])
    files = sorted(
        p for pkg in ("httpx", "textual", "rich", "pygments", "_pytest") for p in (site / pkg).rglob("*.py")
    )
    chunks: list[str] = []
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError):
            continue
        buf: list[str] = []
        count = 0
        for line in lines:
            buf.append(line)
            count += sum(1 for c in line if not c.isspace())
            if count >= target:
                chunks.append("".join(buf))
                buf, count = [], 0
                if len(chunks) >= n:
                    return chunks
    return chunks


def _worker(chunks: list[str]) -> float:
    emb = BuiltinEmbedder(max_doc_tokens=128)
    emb.load()
    t0 = time.perf_counter()
    emb.embed(chunks)
    return time.perf_counter() - t0


def bench_two_processes(chunks: list[str]) -> float:
    """Wall time for two processes embedding half of the chunks each (load excluded via barrier-free max)."""
    half = len(chunks) // 2
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        pool.map(_warm, [0, 1])
        t0 = time.perf_counter()
        pool.map(_worker, [chunks[:half], chunks[half:]])
        return time.perf_counter() - t0


def _warm(_: int) -> None:
    BuiltinEmbedder().load()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    chunks = make_chunks(args.chunks)
    emb = BuiltinEmbedder(max_doc_tokens=128)
    t0 = time.perf_counter()
    emb.load()
    load_s = time.perf_counter() - t0
    tokens = [min(emb.count_tokens(c), 128) for c in chunks]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    print(f"model load + sha256 check: {load_s:.2f} s")
    print(
        f"{len(chunks)} chunks, mean {statistics.mean(len(c) for c in chunks):.0f} chars, "
        f"mean {statistics.mean(tokens):.1f} tokens after truncation (128)"
    )

    t0 = time.perf_counter()
    for c in chunks:
        emb._tokenizer.encode(c, 128)  # type: ignore[union-attr]
    print(f"tokenizer alone (warm cache): {len(chunks) / (time.perf_counter() - t0):.0f} chunks/s")

    one = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        emb.embed(chunks)
        one.append(time.perf_counter() - t0)
    med1 = statistics.median(one)
    print(f"1 process : {len(chunks) / med1:6.1f} chunks/s (median of {args.runs}: {med1:.2f} s)")

    two = [bench_two_processes(chunks) for _ in range(args.runs)]
    med2 = statistics.median(two)
    print(f"2 processes: {len(chunks) / med2:6.1f} chunks/s (median of {args.runs}: {med2:.2f} s)")

    lat = []
    for _ in range(5):
        for q in QUERIES:
            t0 = time.perf_counter()
            emb.embed([q], kind="query")
            lat.append(time.perf_counter() - t0)
    print(f"query latency p50 {statistics.median(lat) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: main process {peak:.0f} MiB, largest worker {child:.0f} MiB")


if __name__ == "__main__":
    main()
