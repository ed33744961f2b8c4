"""Benchmark of the built-in MiniLM embedder (a script; not collected by pytest).

Usage: python tests/benchmarks/bench_embed.py [--chunks 300] [--runs 3]
           [--runtime numpy|onnx-fp32|onnx-int8] [--compare] [--gemm]

Reports document chunks/s (real ~1,500 non-whitespace-char chunks of site-packages Python files,
max_doc_tokens=128) with one process and with two processes (one BLAS / onnxruntime thread each),
medians over ``--runs`` runs, both per wall second and per CPU second (``time.process_time``, the
figure to trust on a shared machine), p50 query latency for short queries, and peak RSS.
``--runtime`` picks the encoder runtime (onnx-* need ``pip install 'aide-tui[onnx]'``); ``--compare``
also prints the cosine of each vector to the numpy encoder's; ``--gemm`` prints numpy's matrix
product rate per dtype at the encoder's largest shape (why numpy float32 is the ceiling).
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

RUNTIMES = ("numpy", "onnx-fp32", "onnx-int8")

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


def make_embedder(runtime: str, **kwargs: object):  # noqa: ANN201 - BuiltinEmbedder or OnnxEmbedder
    """The numpy encoder or the same weights on onnxruntime (aide_tui.core.embed.onnx_embedder)."""
    if runtime == "numpy":
        return BuiltinEmbedder(**kwargs)  # type: ignore[arg-type]
    from aide_tui.core.embed.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder(runtime.removeprefix("onnx-"), **kwargs)


def _worker(args: tuple[list[str], str]) -> tuple[int, float]:
    chunks, runtime = args
    emb = make_embedder(runtime, max_doc_tokens=128)
    emb.load()
    c0 = time.process_time()
    emb.embed(chunks)
    return len(chunks), time.process_time() - c0


def bench_two_processes(chunks: list[str], runtime: str) -> tuple[float, float]:
    """(wall s, pieces per CPU-second summed over both workers) for two processes embedding half each."""
    half = len(chunks) // 2
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        pool.map(_warm, [runtime, runtime])
        t0 = time.perf_counter()
        res = pool.map(_worker, [(chunks[:half], runtime), (chunks[half:], runtime)])
        wall = time.perf_counter() - t0
    return wall, sum(n / cpu for n, cpu in res)


def _warm(runtime: str) -> None:
    make_embedder(runtime).load()


def gemm_rates() -> None:
    """numpy matmul rate per dtype at (32 pieces x 128 tokens) x 384 @ 384 x 1536, CPU time."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, 384)).astype(np.float32)
    b = rng.standard_normal((384, 1536)).astype(np.float32)
    cases = [
        ("float32", a, b, 10),
        ("float64", a.astype(np.float64), b.astype(np.float64), 5),
        ("float16", a[:256].astype(np.float16), b.astype(np.float16), 1),
        ("int8 (int32 acc.)", (a[:256] * 20).astype(np.int8), (b * 20).astype(np.int8), 1),
    ]
    for name, x, y, reps in cases:
        kw = {"dtype": np.int32} if x.dtype == np.int8 else {}
        np.matmul(x[:8], y, **kw)
        c0 = time.process_time()
        for _ in range(reps):
            np.matmul(x, y, **kw)
        cpu = (time.process_time() - c0) / reps
        print(f"numpy matmul {name:18s}: {2 * x.shape[0] * 384 * 1536 / cpu / 1e9:7.2f} GFLOP per CPU-second")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--runtime", default="numpy", choices=RUNTIMES)
    ap.add_argument("--compare", action="store_true", help="cosine of each vector to the numpy encoder's")
    ap.add_argument("--gemm", action="store_true", help="numpy matmul rate per dtype, then exit")
    args = ap.parse_args()
    if args.gemm:
        gemm_rates()
        return

    chunks = make_chunks(args.chunks)
    emb = make_embedder(args.runtime, max_doc_tokens=128)
    t0 = time.perf_counter()
    emb.load()
    load_s = time.perf_counter() - t0
    tokens = [min(emb.count_tokens(c), 128) for c in chunks]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, runtime {args.runtime} ({emb.id}), "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(f"model load + sha256 check (+ onnx graph build on first use): {load_s:.2f} s")
    print(
        f"{len(chunks)} chunks, mean {statistics.mean(len(c) for c in chunks):.0f} chars, "
        f"mean {statistics.mean(tokens):.1f} tokens after truncation (128)"
    )

    t0 = time.perf_counter()
    for c in chunks:
        getattr(emb, "base", emb)._tokenizer.encode(c, 128)  # type: ignore[union-attr]
    print(f"tokenizer alone (warm cache): {len(chunks) / (time.perf_counter() - t0):.0f} chunks/s")

    one, one_cpu = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        vectors = emb.embed(chunks)
        one.append(time.perf_counter() - t0)
        one_cpu.append(time.process_time() - c0)
    med1, cpu1 = statistics.median(one), statistics.median(one_cpu)
    print(
        f"1 process : {len(chunks) / cpu1:6.1f} chunks per CPU-second, "
        f"{len(chunks) / med1:6.1f} per wall second (median of {args.runs})"
    )

    two = [bench_two_processes(chunks, args.runtime) for _ in range(args.runs)]
    med2, cpu2 = statistics.median(w for w, _ in two), statistics.median(r for _, r in two)
    print(
        f"2 processes: {cpu2:6.1f} chunks per CPU-second (sum of both), "
        f"{len(chunks) / med2:6.1f} per wall second (median of {args.runs})"
    )

    if args.compare and args.runtime != "numpy":
        ref = BuiltinEmbedder(max_doc_tokens=128).embed(chunks)
        cos = (vectors * ref).sum(axis=1)
        print(f"cosine to numpy: mean {cos.mean():.6f}, min {cos.min():.6f} (1 - min = {1 - cos.min():.1e})")

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
