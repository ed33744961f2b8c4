#!/usr/bin/env python3
"""Search as you type on the public eval (a script, not a test): partial last words, completion off/on.

    python tests/benchmarks/eval_typeahead.py /tmp/aide-eval [--tasks nl2code questions symbol]

Each corpus must be indexed (``aide-tui index ROOT --embedder none``). For every query whose last
word has at least five letters, the query is searched (bm25, in-process) with that word whole, cut
to three letters, to all but two and to all but one, without and with prefix completion; prints the
file-level MRR@10 of each against the task's targets. Then, per corpus, 40 words of six or more
letters drawn from its code (seeded) are typed to 3, 4, n-2 and n-1 letters: the share of the whole
word's top-10 chunks in the partial word's top 10, and how often its first chunk is among them.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402

LAST_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\W*$")


def open_searcher(root: Path) -> Searcher:
    s = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    s.refresh()
    return s


def mrr(s: Searcher, query: str, targets: set[str], prefix: bool) -> float:
    files = list(dict.fromkeys(h.path for h in s.search(query, limit=50, mode="bm25", prefix=prefix).results))
    return next((1 / (i + 1) for i, f in enumerate(files[:10]) if f in targets), 0.0)


def queries(root: Path, tasks: list[str]) -> dict[tuple[str, str], list[float]]:
    rows: dict[tuple[str, str], list[float]] = {}
    searchers: dict[str, Searcher] = {}
    for task in tasks:
        for line in (root / "tasks" / f"{task}.jsonl").read_text(encoding="utf-8").splitlines():
            t = json.loads(line)
            m = LAST_WORD.search(t["query"])
            if not m or len(m.group(1)) < 5:
                continue
            s = searchers.setdefault(t["corpus"], open_searcher(root / t["corpus"]))
            targets = {x["path"] for x in t["targets"]}
            q, word = t["query"][: m.end(1)], m.group(1)
            rows.setdefault((task, "whole word"), []).append(mrr(s, q, targets, False))
            for name, keep in (("3 letters", 3), ("all but 2", len(word) - 2), ("all but 1", len(word) - 1)):
                cut = q[: m.start(1) + keep]
                rows.setdefault((task, f"{name} off"), []).append(mrr(s, cut, targets, False))
                rows.setdefault((task, f"{name} on"), []).append(mrr(s, cut, targets, True))
    return rows


def words(root: Path, n: int = 40) -> list[str]:
    seen: Counter[str] = Counter()
    for p in sorted(root.rglob("*.py")):
        if ".aide" not in p.parts:
            seen.update(re.findall(r"\b[a-z]{6,}\b", p.read_text(errors="replace")))
    pool = sorted(w for w, k in seen.items() if k >= 5)
    return random.Random(1).sample(pool, min(n, len(pool)))


def typed_words(root: Path, corpora: list[str], prefix: bool) -> tuple[float, float]:
    share, first = [], []
    for corpus in corpora:
        s = open_searcher(root / corpus)
        for w in words(root / corpus):
            whole = [(h.path, h.start_line) for h in s.search(w, limit=10, mode="bm25").results]
            if not whole:
                continue
            for k in sorted({3, 4, len(w) - 2, len(w) - 1}):
                got = {
                    (h.path, h.start_line)
                    for h in s.search(w[:k], limit=10, mode="bm25", prefix=prefix).results
                }
                share.append(len(set(whole) & got) / len(whole))
                first.append(whole[0] in got)
    return statistics.mean(share), statistics.mean(first)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--tasks", nargs="+", default=["nl2code", "questions", "symbol"])
    args = ap.parse_args()
    for (task, name), v in queries(args.root, args.tasks).items():
        print(f"{task:10s} {name:16s} n={len(v):3d} MRR@10 {statistics.mean(v):.3f}")
    lines = [x for t in args.tasks for x in (args.root / "tasks" / f"{t}.jsonl").read_text().splitlines()]
    corpora = sorted({json.loads(x)["corpus"] for x in lines})
    for prefix in (False, True):
        share, first = typed_words(args.root, corpora, prefix)
        on = "on" if prefix else "off"
        print(
            f"typed words, completion {on}: share of the whole word's top 10 {share:.3f}, first {first:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
