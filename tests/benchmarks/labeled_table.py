"""The command line and the table of the labeled-set scripts (``eval_definitions.py``,
``eval_snippets.py``): chunk MRR@10 and Hit@1 per set, as markdown, and optionally as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def arguments(doc: str, per_corpus: int) -> argparse.Namespace:
    """The scripts' shared command line: roots, ``--per-corpus``, ``--mode``, ``--json``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--per-corpus", type=int, default=per_corpus)
    ap.add_argument("--mode", default="hybrid", choices=["hybrid", "bm25"])
    ap.add_argument("--json", type=Path)
    return ap.parse_args()


def report(rows: dict[str, list[float]], mode: str, json_path: Path | None) -> None:
    """Print each set's n, mean reciprocal rank and share of first-rank hits (``rows``: the reciprocal
    ranks per set name); write the same as JSON to ``json_path`` when given."""
    table = {k: {"n": len(v), "MRR@10": sum(v) / len(v), "Hit@1": sum(x == 1 for x in v) / len(v)}
             for k, v in sorted(rows.items())}  # fmt: skip
    print(f"| set ({mode}) | n | chunk MRR@10 | Hit@1 |\n|---|---|---|---|")
    for k, m in table.items():
        print(f"| {k} | {m['n']} | {m['MRR@10']:.3f} | {m['Hit@1']:.3f} |")
    if json_path:
        json_path.write_text(json.dumps(table, indent=1))
