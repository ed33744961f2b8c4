#!/usr/bin/env python3
"""Calibrate hybrid's "no results" floor (a script, not a test): best dense similarity of the public
eval's queries vs random strings.

    python tests/benchmarks/calibrate_no_results.py /tmp/aide-eval [--floors .2 .23 .25 .3 .35]

Each corpus must be indexed with its vectors (``aide-tui index ROOT``, the builtin encoder). Reads the
three tasks and ``changeloc-tasks/changeloc.jsonl``; per corpus, 500 random strings (seeded: 300
single strings of 4-16 letters, 200 of two or three such words). Prints both distributions, whether
a lexical list supports each query (bm25 mode finds something), and the share of each set below
every floor.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.embed.factory import make_embedder  # noqa: E402
from aide_tui.core.search.filters import parse_query  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402
from aide_tui.core.wordshape import UNSEEN_SHARE, unseen_share  # noqa: E402

WORD = re.compile(r"[a-z]{4,}")


def random_strings(seed: int = 23) -> list[str]:
    rng = random.Random(seed)

    def gib(n: int) -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))

    singles = [gib(rng.randint(4, 16)) for _ in range(300)]
    return singles + [" ".join(gib(rng.randint(3, 10)) for _ in range(rng.randint(2, 3))) for _ in range(200)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--floors", type=float, nargs="+", default=[0.2, 0.23, 0.25, 0.3, 0.35])
    args = ap.parse_args()
    files = [*(args.root / "tasks").glob("*.jsonl"), args.root / "changeloc-tasks" / "changeloc.jsonl"]
    by_corpus: dict[str, list[str]] = {}
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            t = json.loads(line)
            by_corpus.setdefault(t["corpus"], []).append(t["query"].replace("\n", " "))
    rows: dict[str, list[tuple[float, bool]]] = {"real": [], "random": []}
    held: dict[str, list[bool]] = {"real": [], "random": []}  # hybrid as shipped answers "no results"
    words: dict[str, list[float]] = {"real": [], "random": []}
    all_words = sorted(
        {w for qs in by_corpus.values() for q in qs for w in re.findall(r"[a-z]{4,}", q.lower())}
    )
    for corpus, real in sorted(by_corpus.items()):
        root = args.root / corpus
        settings = load_settings(root, {})
        s = Searcher(root, settings, make_embedder(settings))
        s.refresh()
        for kind, qs in (("real", real), ("random", random_strings())):
            for q in qs:
                parsed = parse_query(q)
                emb_id, vecs = s._query_vectors([parsed.text])
                best = s.retriever.begin(parsed, [], None).dense(vecs, emb_id, 50).best
                rows[kind].append((float(best or 0.0), bool(s.search(q, limit=5, mode="bm25").results)))
                held[kind].append(s.search(q, limit=5, mode="hybrid").no_results is not None)
        stats = s.retriever.term_stats
        if stats is not None:  # every eval word the corpus lacks, against its vocabulary's trigrams
            seen = stats.letter_trigrams()
            words["real"] += [unseen_share(w, seen) for w in all_words if w not in stats.vocab]
            words["random"] += [unseen_share(w, seen) for q in random_strings() for w in q.split()]
    for kind, got in rows.items():
        b = np.array([x for x, _ in got])
        lexical = sum(1 for _, lex in got if lex)
        pcts = np.percentile(b, [1, 5, 50, 95, 99])
        shown = " ".join(f"{k} {v:.3f}" for k, v in zip(("p1", "p5", "p50", "p95", "p99"), pcts, strict=True))
        print(
            f"{kind} ({len(b)}, {lexical} with lexical support): min {b.min():.3f} {shown} max {b.max():.3f}"
        )
    for f in args.floors:
        real = np.mean([x < f for x, _ in rows["real"]])
        false = np.mean([x < f and not lex for x, lex in rows["real"]])
        caught = np.mean([x < f and not lex for x, lex in rows["random"]])
        print(
            f"floor {f:.2f}: real below {real:.1%} (no results: {false:.1%}); random no results {caught:.1%}"
        )
    for kind in ("real", "random"):
        print(f"hybrid as shipped, {kind}: 'no results' for {sum(held[kind])} of {len(held[kind])}")
    for kind, shares in words.items():
        a = np.array(shares)
        ps = (1, 5, 50, 95, 99)
        pcts = " ".join(f"p{p} {v:.2f}" for p, v in zip(ps, np.percentile(a, ps), strict=True))
        print(f"words, {kind} ({len(a)}): share of trigrams unseen {pcts}; >= {UNSEEN_SHARE}: "
              f"{np.mean(a >= UNSEEN_SHARE):.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
