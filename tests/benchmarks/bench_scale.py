#!/usr/bin/env python3
"""Scale benchmark (a script, not a test): a ≥ 1M-line workspace from pinned sdists.

    python tests/benchmarks/bench_scale.py [--runs 3] [--work /tmp/aide-scale]

Builds the workspace from textual 8.2.8, rich 13.9.4, Django 5.1.4 and sympy 1.13.3 (pip download
--no-binary, cached in /tmp/corpora), then reports for BM25-only and hybrid: cold index, no-op reindex
and one-file edit (in-process seconds, medians), query took_ms p50/p95 over a fixed query list and the
peak RSS of the process doing it, then the peak RSS of a process that only opens the index and answers
the queries (query-bm25 / query-hybrid). Hybrid uses a fast synthetic 384-d embedder (random projection of
hashed terms) so that embedding 200k+ pieces takes minutes, not hours: it measures the index and the
vector search, not the encoder (bench_embed.py measures that). The exact-vs-prefilter recall@10 of
dense search is reported on the same vectors. ripgrep per-query wall time is the baseline measured in
the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.index.indexer import Indexer  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402
from aide_tui.core.store import view as view_mod  # noqa: E402
from aide_tui.core.tokens import tokenize  # noqa: E402

SDISTS = ["textual==8.2.8", "rich==13.9.4", "django==5.1.4", "sympy==1.13.3"]
QUERIES = [
    "parse_header", "where are redirects followed", "render a table", "QuerySet", "load config file",
    "raise an exception when the timeout expires", "url encoding of query parameters", "compose widgets",
    "style parsing", "migration autodetector", "handle keyboard input", "cache invalidation",
    "read file lines", "async worker cancelled", "color conversion rgb", "template context processors",
    "register a callback", "json serialization", "csrf token check", "database connection pooling",
]  # fmt: skip


class SyntheticEmbedder:
    """Deterministic 384-d vectors: a fixed random projection of hashed term counts (fast, structured)."""

    id = "synthetic:hash-proj-384"
    dim = 384

    def __init__(self) -> None:
        self._proj = np.random.default_rng(0).normal(size=(4096, self.dim)).astype(np.float32)

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            ids = [zlib.crc32(t.encode()) % 4096 for t in tokenize(text)[:256]] or [0]
            out[i] = self._proj[ids].sum(axis=0)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out


def prepare(work: Path) -> Path:
    """The workspace: each sdist's tree under its own folder (kept between runs)."""
    root = work / "ws"
    if root.exists():
        return root
    cache = Path("/tmp/corpora")
    cache.mkdir(exist_ok=True)
    for spec in SDISTS:
        name, version = spec.split("==")
        tars = [p for p in cache.glob("*.tar.gz") if p.name.lower().startswith(f"{name}-{version}")]
        if not tars:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", spec, "--no-deps", "--no-binary",
                            ":all:", "-d", str(cache)], check=True)  # fmt: skip
            tars = [p for p in cache.glob("*.tar.gz") if p.name.lower().startswith(f"{name}-{version}")]
        with tarfile.open(tars[0]) as tar:
            tar.extractall(root, filter="data")
    return root


def line_count(root: Path) -> int:
    n = 0
    for p in root.rglob("*"):
        if p.is_file() and ".aide" not in p.parts:
            try:
                n += p.read_bytes().count(b"\n")
            except OSError:
                pass
    return n


def rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def timed(fn, runs: int) -> float:  # noqa: ANN001
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def query_times(searcher: Searcher, mode: str, rounds: int = 3) -> tuple[float, float]:
    searcher.search(QUERIES[0], mode=mode)
    took = [searcher.search(q, limit=20, mode=mode).took_ms for _ in range(rounds) for q in QUERIES]
    took.sort()
    return statistics.median(took), took[int(0.95 * (len(took) - 1))]


def rg_baseline(root: Path) -> float | None:
    if not shutil.which("rg"):
        return None
    took = []
    for q in QUERIES:
        pattern = "|".join(w for w in q.split() if len(w) > 2)
        t0 = time.perf_counter()
        subprocess.run(["rg", "-i", "-c", pattern, str(root)], capture_output=True)
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took)


def dense_recall(searcher: Searcher, embedder: SyntheticEmbedder) -> float:
    """recall@10 of the prefiltered dense list against an exact scan, over the query list."""
    view = searcher.view
    assert view is not None
    hits = []
    for q in QUERIES:
        vec = embedder.embed([q])[0]
        fast = view.dense_ranked_chunks(vec, 10)
        saved = view_mod.PREFILTER_MIN
        view_mod.PREFILTER_MIN = 10**12
        exact = view.dense_ranked_chunks(vec, 10)
        view_mod.PREFILTER_MIN = saved
        hits.append(len(set(fast) & set(exact)) / max(len(exact), 1))
    return float(np.mean(hits))


def bench(root: Path, hybrid: bool, runs: int) -> dict[str, object]:
    shutil.rmtree(root / ".aide", ignore_errors=True)
    backend = "openai" if hybrid else "none"  # the synthetic embedder is passed in directly
    settings = load_settings(root, {"embedding": {"backend": backend}})
    embedder = SyntheticEmbedder() if hybrid else None
    t0 = time.perf_counter()
    rep = Indexer(root, settings, embedder).run()
    cold = time.perf_counter() - t0
    noop = timed(lambda: Indexer(root, settings, embedder).run(), runs)
    target = root / "django-5.1.4" / "django" / "db" / "models" / "query.py"
    if not target.exists():
        target = next(root.rglob("query.py"))
    original = target.read_text()

    def edit() -> None:
        target.write_text(original + f"\n# edit {time.time_ns()}\n")
        Indexer(root, settings, embedder).run()

    one_edit = timed(edit, runs)
    target.write_text(original)
    Indexer(root, settings, embedder).run()
    gc.collect()
    searcher = Searcher(root, settings, embedder)
    t0 = time.perf_counter()
    searcher.refresh()
    load = time.perf_counter() - t0
    out: dict[str, object] = {
        "files": rep.files, "chunks": rep.chunks, "cold_s": round(cold, 1), "noop_s": round(noop, 3),
        "edit_s": round(one_edit, 3), "load_s": round(load, 2),
    }  # fmt: skip
    if hybrid:
        view = searcher.view
        assert view is not None
        out["vectors"] = sum(len(ids) for _, _, ids in view._live_blocks())
        out["hybrid_ms"] = query_times(searcher, "hybrid")
        out["dense_ms"] = query_times(searcher, "dense")
        out["dense_recall@10"] = round(dense_recall(searcher, embedder), 3)  # type: ignore[arg-type]
    else:
        out["bm25_ms"] = query_times(searcher, "bm25")
    out["peak_rss_mb"] = rss_mb()
    return out


def query_only(root: Path, hybrid: bool) -> dict[str, object]:
    """Open the index the last run left and answer the query list: the peak RSS of a search process."""
    settings = load_settings(root, {"embedding": {"backend": "openai" if hybrid else "none"}})
    searcher = Searcher(root, settings, SyntheticEmbedder() if hybrid else None)
    t0 = time.perf_counter()
    searcher.refresh()
    out: dict[str, object] = {"load_s": round(time.perf_counter() - t0, 2)}
    out["hybrid_ms" if hybrid else "bm25_ms"] = query_times(searcher, "hybrid" if hybrid else "bm25")
    out["peak_rss_mb"] = rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/aide-scale")
    modes = ["bm25", "hybrid", "both", "query-bm25", "query-hybrid"]
    ap.add_argument("--mode", choices=modes, default="both")
    args = ap.parse_args()
    root = prepare(Path(args.work))
    if args.mode == "both":
        print(json.dumps({"lines": line_count(root), "rg_query_ms_p50": rg_baseline(root)}), flush=True)
    if args.mode == "both":  # each mode in its own process, so each peak RSS is that mode's own
        for mode in ("bm25", "hybrid", "query-bm25", "query-hybrid"):  # query-*: a search process alone
            cmd = [sys.executable, __file__, "--runs", str(args.runs), "--work", args.work, "--mode", mode]
            subprocess.run(cmd, check=True)
        return
    if args.mode.startswith("query-"):
        result = query_only(root, args.mode == "query-hybrid")
        print(json.dumps({"mode": args.mode, **result, "load": os.getloadavg()[0]}), flush=True)
        return
    result = bench(root, args.mode == "hybrid", args.runs)
    print(json.dumps({"mode": args.mode, **result, "load": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    main()
