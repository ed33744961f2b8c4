"""Compare two runs of the public eval (a script; not collected by pytest): metric deltas per task and
overall, and the top-10 overlap per query between the two systems.

Usage: python tests/benchmarks/eval_overlap.py BASE.json OTHER.json [--raw BASE_DIR OTHER_DIR]

BASE.json / OTHER.json are ``run_eval.py --per-query`` outputs (file-level top 10 per query). With
``--raw``, each folder holds the search output of each corpus as ``<corpus>.jsonl`` (e.g. the search
command piped through ``tee DIR/$(basename {root}).jsonl``) and the overlap is also computed on chunks
(path, start line). Used for the numpy vs onnxruntime comparison in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

METRICS = ("MRR@10", "cMRR@10", "R@1")


def _overlap(a: list, b: list) -> float:
    return len(set(a[:10]) & set(b[:10])) / max(len(a[:10]), 1)


def _raw(folder: Path) -> dict[str, list[dict]]:
    return {
        p.stem: [json.loads(line) for line in p.read_text().splitlines() if line.startswith("{")]
        for p in sorted(folder.glob("*.jsonl"))
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base", type=Path)
    ap.add_argument("other", type=Path)
    ap.add_argument("--raw", nargs=2, type=Path, metavar=("BASE_DIR", "OTHER_DIR"))
    args = ap.parse_args()
    a, b = (json.loads(p.read_text()) for p in (args.base, args.other))
    print("| task | " + " | ".join(f"{m} base | other | Δ" for m in METRICS) + " |")
    print("|---|" + "---|---|---|" * len(METRICS))
    for task in [*a["tasks"], "overall"]:
        ma = a["overall"] if task == "overall" else a["tasks"][task]
        mb = b["overall"] if task == "overall" else b["tasks"][task]
        cells = [f"{ma[m]:.4f} | {mb[m]:.4f} | {mb[m] - ma[m]:+.4f}" for m in METRICS]
        print(f"| {task} | " + " | ".join(cells) + " |")
    other = {(q["corpus"], q["id"]): q for q in b["per_query"]}
    by_task: dict[str, list[float]] = {}
    for q in a["per_query"]:
        mate = other[q["corpus"], q["id"]]
        by_task.setdefault(q["task"], []).append(_overlap(q["top_files"], mate["top_files"]))
    files = [v for vs in by_task.values() for v in vs]
    print(f"top-10 file overlap per query: mean {sum(files) / len(files):.4f}, min {min(files):.2f}; " +
          ", ".join(f"{t} {sum(v) / len(v):.4f}" for t, v in by_task.items()))  # fmt: skip
    if args.raw:
        ra, rb = (_raw(d) for d in args.raw)
        chunks, same, first = [], 0, 0
        for corpus, rows in ra.items():
            for qa, qb in zip(rows, rb[corpus], strict=True):
                if qa["query"] != qb["query"]:
                    raise SystemExit(f"{corpus}: the runs answer different queries")
                ta = [(r["path"], r["start_line"]) for r in qa["results"][:10]]
                tb = [(r["path"], r["start_line"]) for r in qb["results"][:10]]
                chunks.append(_overlap(ta, tb))
                same += ta == tb
                first += ta[:1] == tb[:1]
        n = len(chunks)
        print(f"top-10 chunk overlap per query: mean {sum(chunks) / n:.4f}, min {min(chunks):.2f}; "
              f"identical top-10 lists {same}/{n}, same first result {first}/{n}")  # fmt: skip


if __name__ == "__main__":
    main()
