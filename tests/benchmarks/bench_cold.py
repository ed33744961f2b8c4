#!/usr/bin/env python3
"""Cold start (issue 28): how soon a fresh copy of a repository is searchable by keyword and by meaning.

    python tests/benchmarks/bench_cold.py [--runs 3] [--textual DIR] [--sqlalchemy DIR] [--rich DIR]

Each figure is the median of ``--runs`` whole-process runs on a fresh copy (``.aide`` removed), with the
machine's load average before and after; the static tier's table is in the models cache already (a
fresh copy, not a fresh machine: distilling the table once per machine is timed on its own):

- textual, ``index --embedder none`` against bm25s's 60-line window build of the same tree (needs
  ``/tmp/eval-venv`` with bm25s, as the eval's baselines do), and their ratio per pair;
- SQLAlchemy, ``index --embedder static`` wall and CPU seconds and peak RSS;
- SQLAlchemy with the default settings, a first ``search --json``: wall seconds until it answers, and
  its ``static_missing`` (0: every chunk was searchable by meaning in that answer);
- rich with the default settings, the app's host (LiveWorkspace, what the app runs): seconds from
  start until a committed version has every chunk's static vector;
- the transformer's pieces per CPU-second on numpy and on onnxruntime (int8), 300 pieces of rich;
- distilling the static table from scratch (wall and CPU seconds).

Sources default to the pinned sdists (``pip download --no-deps --no-binary :all:``) unpacked under
/work/corpora; any tree can be given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BM25S = Path("/tmp/eval-venv/bin/python")
BASELINE = REPO.parent / "shared" / "eval" / "baselines" / "bm25_search.py"


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def timed(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the process and its children, peak RSS MB of the largest, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss // 1024, proc.stdout


def fresh(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".aide"))
    return dst


def aide(*args: str) -> list[str]:
    return [sys.executable, "-m", "aide_tui", *args]


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def lexical_vs_bm25s(src: Path, tmp: Path, runs: int) -> dict[str, object]:
    ours, theirs, ratios = [], [], []
    for _ in range(runs):
        root = fresh(src, tmp)
        wall, _, _, _ = timed(aide("index", str(root), "--embedder", "none", "--json"))
        ours.append(wall)
        if BM25S.exists():
            root = fresh(src, tmp)
            b, _, _, _ = timed([str(BM25S), str(BASELINE), "index", "--unit", "window", str(root)])
            theirs.append(b)
            ratios.append(wall / b)
    return {"aide_none_s": med(ours), "bm25s_window_s": med(theirs), "ratio": med(ratios), "runs": runs}


def static_index(src: Path, tmp: Path, runs: int) -> dict[str, object]:
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        root = fresh(src, tmp)
        wall, cpu, peak, out = timed(aide("index", str(root), "--embedder", "static", "--json"))
        summary = json.loads(out.strip().splitlines()[-1])
        assert summary["static_missing"] == 0, summary
        walls.append(wall)
        cpus.append(cpu)
        rss.append(peak)
    return {"wall_s": med(walls), "cpu_s": med(cpus), "peak_rss_mb": med(rss), "chunks": summary["chunks"]}


def first_search(src: Path, tmp: Path, runs: int) -> dict[str, object]:
    walls, missing = [], []
    for _ in range(runs):
        root = fresh(src, tmp)
        wall, _, _, out = timed(
            aide("search", "--path", str(root), "--json", "how are bound parameters rendered")
        )
        missing.append(json.loads(out)["static_missing"])
        walls.append(wall)
        _stop_host(root)
    return {"wall_s": med(walls), "static_missing": missing}


def _stop_host(root: Path) -> None:
    """Stop the background host a first search leaves for the transformer's vectors."""
    lock = root / ".aide" / "serve.lock"
    try:
        pid = int(lock.read_text().split()[0])
        os.kill(pid, 15)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (OSError, ValueError, IndexError):
        pass


def app_host(src: Path, tmp: Path, runs: int) -> dict[str, object]:
    """Seconds from opening a fresh copy in the app's host until every chunk has its static vector."""
    sys.path.insert(0, str(REPO))
    from aide_tui.core.config import load_settings
    from aide_tui.core.events import Committed
    from aide_tui.core.live import LiveWorkspace

    times = []
    for _ in range(runs):
        root = fresh(src, tmp)
        done: list[float] = []
        t0 = time.perf_counter()

        def on_event(ev: object, t0: float = t0, done: list[float] = done) -> None:
            if isinstance(ev, Committed) and ev.static_missing == 0 and ev.chunks and not done:
                done.append(time.perf_counter() - t0)

        live = LiveWorkspace(root, load_settings(root), on_event, watch=False)
        live.start()
        deadline = time.monotonic() + 300
        while not done and time.monotonic() < deadline:
            time.sleep(0.02)
        live.close()
        times.append(done[0] if done else float("nan"))
    return {"seconds_to_static_complete": med(times), "runs": times}


RATE = """
import os, sys, resource
sys.path.insert(0, {repo!r})
from aide_tui.core.chunk.chunker import chunk_file_multi
from aide_tui.core.chunk.pieces import PIECE_BUDGET, dense_pieces
from aide_tui.core.embed.builtin import BuiltinEmbedder
texts = []
for d, _, fs in sorted(os.walk({root!r})):
    for f in sorted(fs):
        if f.endswith(".py"):
            p = os.path.join(d, f)
            text = open(p, encoding="utf-8", errors="replace").read()
            ch, small = chunk_file_multi(p, text, (1500, PIECE_BUDGET), [])
            texts += [pc.embed_text for _, pc in dense_pieces(ch, small)]
texts = texts[:300]
e = BuiltinEmbedder(runtime={runtime!r}); e.load(); e.embed(texts[:8])
r0 = resource.getrusage(resource.RUSAGE_SELF)
e.embed(texts)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(len(texts) / ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)))
"""


def transformer_rates(rich: Path, runs: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for runtime in ("numpy", "onnx-int8"):
        rates = []
        for _ in range(runs):
            code = RATE.format(repo=str(REPO), root=str(rich), runtime=runtime)
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
            if p.returncode != 0:
                raise SystemExit(p.stderr[-2000:])
            rates.append(float(p.stdout.strip().splitlines()[-1]))
        out[runtime] = med(rates)
    out["ratio"] = float(out["onnx-int8"]) / float(out["numpy"])  # type: ignore[arg-type]
    return out


def distill_once(tmp: Path) -> dict[str, object]:
    env = {**os.environ, "AIDE_MODELS_DIR": str(tmp / "models-fresh")}
    code = "from aide_tui.core.embed.static import StaticEmbedder; StaticEmbedder().load()"
    wall, cpu, peak, _ = timed([sys.executable, "-c", code], env=env)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--textual", type=Path, default=Path("/work/corpora/textual-8.2.8"))
    ap.add_argument("--sqlalchemy", type=Path, default=Path("/work/corpora/SQLAlchemy-2.0.30"))
    ap.add_argument("--rich", type=Path, default=Path("/work/corpora/rich-13.9.4"))
    ap.add_argument(
        "--only", default="", help="comma-separated parts: lexical,static,search,app,rates,distill"
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    res: dict[str, object] = {"load_before": load()}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as t:
        tmp = Path(t)
        parts = {
            "lexical": lambda: lexical_vs_bm25s(args.textual, tmp, args.runs),
            "static": lambda: static_index(args.sqlalchemy, tmp, args.runs),
            "search": lambda: first_search(args.sqlalchemy, tmp, args.runs),
            "app": lambda: app_host(args.rich, tmp, args.runs),
            "rates": lambda: transformer_rates(args.rich, args.runs),
            "distill": lambda: distill_once(tmp),
        }
        for name, run in parts.items():
            if only and name not in only:
                continue
            res[name] = run()
            print(name, json.dumps(res[name]), flush=True)
    res["load_after"] = load()
    print(json.dumps(res, indent=1))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
