"""The table the labeled-set scripts print (``eval_definitions.py``, ``eval_snippets.py``): chunk MRR@10
and Hit@1 per set, as markdown, and optionally as JSON."""

from __future__ import annotations

import json
from pathlib import Path


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
