#!/usr/bin/env python3
"""Index and query benchmark (a script, not a test): medians over several runs, with baselines.

    python tests/benchmarks/bench_index.py [--runs 3] [--embedder none|builtin] [--store local|milvus] [ROOT]

Default targets: the four public-eval corpora copied into one folder (from /tmp/aide-eval) and the
source of the textual==8.2.8 sdist (downloaded with pip into /tmp if missing). For each target:
cold index, no-op reindex and one-file-edit reindex wall seconds (subprocess, includes start-up),
peak RSS of the indexer, warm query took_ms p50/p95 over a batch of queries; baselines measured in
the same run: bm25s window index build (if /tmp/eval-venv has bm25s) and ripgrep per-query wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVAL = REPO.parent / "shared" / "eval"
QUERIES = [
    "parse_header", "where are redirects followed", "render a table", "Client", "load config file",
    "raise an exception when the timeout expires", "url encoding of query parameters", "compose widgets",
    "style parsing", "def on_mount", "handle keyboard input", "cache invalidation", "read file lines",
    "async worker cancelled", "color conversion rgb", "command line options", "register a callback",
    "json serialization", "stream response body", "test fixture setup",
]  # fmt: skip


def peak_rss(cmd: list[str]) -> tuple[float, int, str]:
    """Run ``cmd``; return wall seconds, its own peak RSS in MB and stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, ru.ru_maxrss // 1024, out


STORE: list[str] = []  # --store milvus: every command uses the Milvus store (Milvus Lite in ROOT/.aide)


def aide(*args: str) -> list[str]:
    return [sys.executable, "-m", "aide_tui", *args, *STORE]


def prepare_targets(tmp: Path) -> list[Path]:
    targets = []
    corpora = sorted(p for p in Path("/tmp/aide-eval").glob("*-*") if p.is_dir() and p.name != "tasks")
    if corpora:
        combined = tmp / "eval-corpora"
        for c in corpora:
            shutil.copytree(c, combined / c.name, ignore=shutil.ignore_patterns(".aide"))
        targets.append(combined)
    src = Path("/tmp/textual-src/textual-8.2.8")
    if not src.exists():
        src.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "textual==8.2.8", "-d", str(src.parent)], check=True)  # fmt: skip
        shutil.unpack_archive(str(src.parent / "textual-8.2.8.tar.gz"), str(src.parent))
    dst = tmp / "textual-8.2.8"
    shutil.copytree(src, dst)
    targets.append(dst)
    return targets


def bench_target(root: Path, runs: int, embedder: str) -> dict[str, object]:
    files = sum(1 for _ in root.rglob("*") if _.is_file())
    lines = 0
    for p in root.rglob("*.py"):
        with open(p, "rb") as fh:
            lines += fh.read().count(b"\n")
    cold, noop, edit, rss = [], [], [], []
    noop_in, edit_in, search_wall = [], [], []
    edit_file = next(iter(sorted(root.rglob("*.py"))))
    for _ in range(runs):
        shutil.rmtree(root / ".aide", ignore_errors=True)
        wall, mb, out = peak_rss(aide("index", str(root), "--embedder", embedder, "--json"))
        cold.append(wall)
        rss.append(mb)
        summary = json.loads(out.splitlines()[-1])
        wall, _, out = peak_rss(aide("index", str(root), "--embedder", embedder, "--json"))
        noop.append(wall)
        noop_in.append(json.loads(out.splitlines()[-1])["seconds"])
        with open(edit_file, "a") as fh:
            fh.write(f"\ndef bench_edit_{time.time_ns()}():\n    return 1\n")
        wall, _, out = peak_rss(aide("index", str(root), "--embedder", embedder, "--json"))
        edit.append(wall)
        edit_in.append(json.loads(out.splitlines()[-1])["seconds"])
        # one CLI search on an unchanged tree, its refresh included (what an editor or agent pays)
        search_wall.append(peak_rss(aide("search", "--path", str(root), "--embedder", embedder, "--json",
                                         "--no-server", "compose widgets"))[0])  # fmt: skip
    batch = root / ".aide" / "bench-queries.txt"
    batch.write_text("\n".join(QUERIES * 3) + "\n")
    took: list[float] = []
    search_rss = 0
    for _ in range(runs):
        _, mb, out = peak_rss(aide("search", "--path", str(root), "--embedder", embedder, "--json",
                                   "--no-update", "--limit", "20", "--batch", str(batch)))  # fmt: skip
        search_rss = max(search_rss, mb)
        took += [json.loads(line)["took_ms"] for line in out.splitlines()]
    took.sort()
    result: dict[str, object] = {
        "target": root.name,
        "files": files,
        "py_lines": lines,
        "chunks": summary["chunks"],
        "indexed_files": summary["files"],
        "cold_index_s": statistics.median(cold),
        "noop_reindex_s": statistics.median(noop),
        "noop_inside_s": statistics.median(noop_in),
        "edit_reindex_s": statistics.median(edit),
        "edit_inside_s": statistics.median(edit_in),
        "search_unchanged_wall_s": statistics.median(search_wall),
        "index_peak_rss_mb": max(rss),
        "search_peak_rss_mb": search_rss,
        "query_p50_ms": took[len(took) // 2],
        "query_p95_ms": took[int(len(took) * 0.95)],
    }
    # baselines, same run
    if shutil.which("rg"):
        rg = []
        for q in QUERIES:
            t0 = time.perf_counter()
            subprocess.run(["rg", "-i", "-c", "-e", q.split()[0], str(root)], capture_output=True)
            rg.append((time.perf_counter() - t0) * 1000)
        result["rg_query_p50_ms"] = statistics.median(rg)
    bm25s_py = Path("/tmp/eval-venv/bin/python")
    if bm25s_py.exists():
        walls = []
        for _ in range(runs):
            walls.append(peak_rss([str(bm25s_py), str(EVAL / "baselines" / "bm25_search.py"), "index",
                                   "--unit", "window", str(root)])[0])  # fmt: skip
        result["bm25s_window_index_s"] = statistics.median(walls)
        result["cold_vs_bm25s"] = result["cold_index_s"] / result["bm25s_window_index_s"]  # type: ignore[operator]
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--store", default="local", choices=["local", "milvus"])
    args = ap.parse_args()
    STORE[:] = ["--store", args.store]
    with tempfile.TemporaryDirectory(prefix="aide-bench-") as tmp:
        targets = [Path(r) for r in args.roots] or prepare_targets(Path(tmp))
        for root in targets:
            res = bench_target(root, args.runs, args.embedder)
            print(json.dumps({"embedder": args.embedder, "store": args.store, **res}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
