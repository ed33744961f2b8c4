#!/usr/bin/env python3
"""swe_dev recall at a token budget (a script, not a test): is the file the fix edits among the hits of
``search_code``'s default answer?

    python tests/benchmarks/budget_recall.py --eval ../shared/eval --work /tmp/budget-recall
        [--modes bm25 hybrid] [--budgets 500 1000 2000 4000] [--limit 10] [--repos a/b,c/d]
        [--seed-bm25 DIR] [--seed-hybrid DIR] [--out rows.json]

For each of the 22 swe_dev instances (``swe_dev/run.py``'s own ``load`` and ``materialize``: one
workspace per repository, moved from one base commit to the next in the runner's order, so the index
is updated incrementally as in the eval) the whole issue text is the query, as ``run.py`` builds it,
and the CLI answers it:

- ``search --json --limit 10 --max-tokens B``: MCP ``search_code``'s default answer at B = 2000
  (``limit=10``, ``max_tokens=2000``: both call ``core/search/budget.budgeted_json`` on the same
  ranking; MCP searches 40 deep for its hints, which does not change the first ten);
- ``search --json --limit 10`` without a budget, the baseline: its rows as the CLI prints them (no
  text) and as MCP's ``max_tokens=0`` answer carries them (each chunk's text trimmed to 40 lines /
  2,000 characters), tokens estimated as the budget estimates them (``row_tokens``).

bm25 runs ``--mode bm25 --embedder none``; hybrid runs ``aide-tui index ROOT`` first ("index first",
as docs/quality.md's swe_dev hybrid rows). ``--seed-MODE DIR`` copies an existing workspace tree
(e.g. the eval runner's ``--work``, with its index and embedding cache) before the first instance.
Prints, per mode and split (tune: sqlfluff, astroid, marshmallow; held-out: pvlib, pydicom), the
share of instances whose gold file is among the answer's hits, and the medians of tokens used and
hits returned.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from aide_tui.core.search.budget import row_tokens  # noqa: E402
from aide_tui.host.shapes import trim  # noqa: E402

TUNE = {"sqlfluff/sqlfluff", "pylint-dev/astroid", "marshmallow-code/marshmallow"}
LIMIT = 10  # search_code's default limit
MCP_FIELDS = ("path", "start_line", "end_line", "best_line", "symbol", "score")  # search_code's rows
MODE_FLAGS = {"bm25": ["--mode", "bm25", "--embedder", "none"], "hybrid": ["--mode", "hybrid"]}


def load_runner(eval_dir: Path) -> ModuleType:
    """The swe_dev runner as a module (its ``load`` and ``materialize``)."""
    spec = importlib.util.spec_from_file_location("swe_dev_run", eval_dir / "swe_dev" / "run.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no swe_dev/run.py under {eval_dir}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def aide(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m aide_tui ARGS`` with this checkout's package first on the path."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True, env=env, check=False
    )


def search(root: Path, batch: Path, mode: str, budget: int | None, limit: int) -> dict[str, Any]:
    """The CLI's JSON answer to the one query in ``batch``."""
    extra = ["--max-tokens", str(budget)] if budget else []
    p = aide("search", "--path", str(root), "--json", "--limit", str(limit), "--no-server",
             *MODE_FLAGS[mode], *extra, "--batch", str(batch))  # fmt: skip
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"search failed in {root} (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def with_text(root: Path, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as MCP's ``max_tokens=0`` answer carries it: its fields there, and the chunk's lines
    trimmed to 40 lines / 2,000 characters (``host/shapes.trim``)."""
    lines = (root / row["path"]).read_text(encoding="utf-8", errors="replace").split("\n")
    text, cut = trim("\n".join(lines[row["start_line"] - 1 : row["end_line"]]))
    return {**{k: row[k] for k in MCP_FIELDS if k in row}, "text": text, "truncated": cut}


def measure(root: Path, inst: dict[str, Any], mode: str, budgets: list[int], limit: int) -> dict[str, Any]:
    """One instance: the budgeted answers and the unbudgeted baseline."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(" ".join(inst["query"].split()) + "\n")  # as run.py builds the query
        batch = Path(f.name)
    try:
        out: dict[str, Any] = {"id": inst["id"], "repo": inst["repo"], "gold": inst["gold"], "budgets": {}}
        for b in budgets:
            ans = search(root, batch, mode, b, limit)
            paths = [r["path"] for r in ans["results"]]
            out["budgets"][str(b)] = {
                "found": any(p in inst["gold"] for p in paths), "tokens": ans["tokens_used"],
                "hits": len(paths), "files": len(set(paths)), "left_out": ans["left_out"],
            }  # fmt: skip
        plain = search(root, batch, mode, None, limit)
        files: list[str] = []
        for r in plain["results"]:
            if r["path"] not in files:
                files.append(r["path"])
        rank = next((i for i, p in enumerate(files, 1) if p in inst["gold"]), None)
        out["plain"] = {
            "found": rank is not None, "rank": rank, "hits": len(plain["results"]),
            "tokens_rows": sum(row_tokens(r) for r in plain["results"]),
            "tokens_text": sum(row_tokens(with_text(root, r)) for r in plain["results"]),
        }  # fmt: skip
        return out
    finally:
        batch.unlink()


def run_mode(
    runner: ModuleType,
    work: Path,
    mode: str,
    budgets: list[int],
    limit: int,
    seed: Path | None,
    repos: set[str],
) -> list[dict[str, Any]]:
    """Every instance (of ``repos``, when given) in the runner's order, in ``work``/``mode``."""
    insts, blobs = runner.load()
    insts = [i for i in insts if not repos or i["repo"] in repos]
    base = work / mode
    if seed is not None and not base.exists():
        shutil.copytree(seed, base, symlinks=True)
    rows = []
    for inst in sorted(insts, key=lambda i: (i["repo"], i["created"])):
        root = base / inst["repo"].replace("/", "+")
        t0 = time.perf_counter()
        changed = runner.materialize(inst["files"], blobs, str(root))
        if mode == "hybrid":
            p = aide("index", str(root))
            if p.returncode != 0:
                raise SystemExit(f"index failed in {root}: {p.stderr.strip()[-400:]}")
        row = measure(root, inst, mode, budgets, limit)
        row.update(mode=mode, files_changed=changed, wall_s=round(time.perf_counter() - t0, 1))
        b = row["budgets"].get("2000") or next(iter(row["budgets"].values()))
        print(f"{mode:6s} {inst['id']:38s} found@2000={b['found']} tokens={b['tokens']} hits={b['hits']} "
              f"plain rank={row['plain']['rank']} ({row['wall_s']} s)", file=sys.stderr)  # fmt: skip
        rows.append(row)
    return rows


def pct(rows: list[dict[str, Any]], found: Any) -> str:
    return f"{100 * sum(1 for r in rows if found(r)) / len(rows):.1f}"


def median(values: list[int]) -> str:
    return f"{statistics.median(values):,.0f}"


def table(rows: list[dict[str, Any]], budgets: list[int], limit: int) -> str:
    """The markdown table: per mode and split, recall and medians at each budget, then the baseline."""
    head = ["mode", "split", "n"]
    head += [f"gold in answer @{b:,} (tokens / hits, median)" for b in budgets]
    head += [f"top {limit}, no budget: gold in it", "tokens: rows / rows + text (median)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode in dict.fromkeys(r["mode"] for r in rows):
        for split in ("tune", "held-out", "all"):
            rs = [
                r
                for r in rows
                if r["mode"] == mode and (split == "all" or (r["repo"] in TUNE) == (split == "tune"))
            ]
            if not rs:
                continue
            cells = [mode, split, str(len(rs))]
            for b in budgets:
                k = str(b)
                cells.append(f"{pct(rs, lambda r, k=k: r['budgets'][k]['found'])}% "
                             f"({median([r['budgets'][k]['tokens'] for r in rs])} / "
                             f"{median([r['budgets'][k]['hits'] for r in rs])})")  # fmt: skip
            cells.append(f"{pct(rs, lambda r: r['plain']['found'])}%")
            cells.append(f"{median([r['plain']['tokens_rows'] for r in rs])} / "
                         f"{median([r['plain']['tokens_text'] for r in rs])}")  # fmt: skip
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", type=Path, default=REPO.parent / "shared" / "eval", help="the eval folder")
    ap.add_argument("--work", type=Path, default=Path("/tmp/budget-recall"))
    ap.add_argument("--modes", nargs="+", choices=sorted(MODE_FLAGS), default=["bm25", "hybrid"])
    ap.add_argument("--limit", type=int, default=LIMIT, help="hits asked for (search_code's default: 10)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--seed-bm25", type=Path, help="copy this workspace tree into WORK/bm25 first")
    ap.add_argument("--seed-hybrid", type=Path, help="copy this workspace tree into WORK/hybrid first")
    ap.add_argument("--repos", default="", help="only these repositories (a/b,c/d), as run.py's --repos")
    ap.add_argument("--out", type=Path, help="write every instance's figures here (JSON)")
    args = ap.parse_args()
    runner = load_runner(args.eval)
    repos = set(filter(None, args.repos.split(",")))
    rows: list[dict[str, Any]] = []
    for mode in args.modes:
        rows += run_mode(
            runner, args.work, mode, args.budgets, args.limit, getattr(args, f"seed_{mode}"), repos
        )
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(table(rows, args.budgets, args.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
