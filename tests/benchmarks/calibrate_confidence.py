"""How often each ``confidence`` level is right: the public eval's queries through ``Searcher.search``.

Usage (after the eval has indexed its corpora, e.g. ``aide-tui index ROOT`` for each)::

    python tests/benchmarks/calibrate_confidence.py /tmp/aide-eval [--mode hybrid|bm25]

A query is "right" when its first result's file is one of its targets (file-level R@1). Prints, per
split (tune: httpx, click, httpx-git, click-git, urfave-cli; held-out: rich, flask, rich-git, got) and
level, how many queries got that level and the share that were right.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.embed.factory import make_embedder
from aide_tui.core.search.searcher import Searcher

TUNE = ("httpx-0.28.1", "click-8.1.7", "httpx-git", "click-git", "urfave-cli")
LEVELS = ("high", "medium", "low")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus_root", type=Path)
    p.add_argument("--mode", choices=["hybrid", "bm25"], default="hybrid")
    args = p.parse_args()
    files = sorted((args.corpus_root / "tasks").glob("*.jsonl"))
    files += sorted((args.corpus_root / "changeloc-tasks").glob("*.jsonl"))
    by_corpus: dict[str, list[dict[str, object]]] = defaultdict(list)
    for f in files:
        for line in f.read_text().splitlines():
            task = json.loads(line)
            by_corpus[str(task["corpus"])].append(task)
    tally: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for corpus, tasks in sorted(by_corpus.items()):
        root = args.corpus_root / corpus
        flags = {"embedding": {"backend": "none"}} if args.mode == "bm25" else {}
        settings = load_settings(root, flags)
        searcher = Searcher(root, settings, make_embedder(settings, for_queries=True))
        searcher.refresh()
        split = "tune" if corpus in TUNE else "held-out"
        for task in tasks:
            resp = searcher.search(str(task["query"]), limit=20, mode=args.mode)
            targets = {t["path"] for t in task["targets"]}  # type: ignore[attr-defined]
            right = int(bool(resp.results) and resp.results[0].path in targets)
            level = str(resp.confidence)
            for key in ((split, str(task["task"]), level), (split, "all", level)):
                tally[key][0] += 1
                tally[key][1] += right
    print(f"mode {args.mode}")
    for split in ("tune", "held-out"):
        for kind in ("all", "nl2code", "questions", "symbol", "changeloc"):
            cells = []
            for level in LEVELS:
                n, ok = tally.get((split, kind, level), [0, 0])
                cells.append(f"{level} {n} ({ok / n:.0%} right)" if n else f"{level} 0")
            print(f"{split:8} {kind:10} " + " · ".join(cells))


if __name__ == "__main__":
    main()
