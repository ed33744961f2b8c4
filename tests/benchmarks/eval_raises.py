#!/usr/bin/env python3
""" "Where is X raised" → the places that raise exception X (session 23).

    python tests/benchmarks/eval_raises.py [PYTHONPATH of the checkout to measure]

Ground truth from ``ast``: the ``raise X(...)``/``raise X`` statements of each indexed Python workspace
(tests and the builtin exceptions left out), 10 exceptions per workspace drawn with a fixed seed, each
asked three ways (``where is X raised``, ``what raises X``, ``who throws X``). Right: a hit whose lines
hold a raise of X (MRR@10, Hit@1). The public eval's sdists, and four of the wide set never looked at.
"""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOTS = [
    "/tmp/neweval/httpx-0.28.1",
    "/tmp/neweval/click-8.1.7",
    "/tmp/neweval/rich-13.9.4",
    "/tmp/neweval/flask-3.0.3",
    "/tmp/wide/werkzeug-3.0.4",
    "/tmp/wide/requests-2.32.3",
    "/tmp/wide/jinja2-3.1.4",
    "/tmp/wide/tomlkit-0.13.2",
]
FORMS = ["where is {x} raised", "what raises {x}", "who throws {x}"]


def raises(root):
    root = Path(root)
    sites = defaultdict(list)
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if ".aide" in p.parts or "test" in rel:
            continue
        try:
            tree = ast.parse(p.read_text(errors="replace"))
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Raise) and n.exc is not None:
                e = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
                name = e.id if isinstance(e, ast.Name) else e.attr if isinstance(e, ast.Attribute) else None
                if name and name not in (
                    "ValueError",
                    "TypeError",
                    "RuntimeError",
                    "KeyError",
                    "AttributeError",
                    "NotImplementedError",
                    "IndexError",
                    "OSError",
                    "Exception",
                    "StopIteration",
                    "AssertionError",
                    "ImportError",
                    "RecursionError",
                    "SystemExit",
                    "LookupError",
                    "UnicodeDecodeError",
                    "UnicodeEncodeError",
                ):
                    sites[name].append((rel, n.lineno))
    out = sorted(sites.items())
    random.Random(4).shuffle(out)
    return out[:10]


rows = []
for root in ROOTS:
    items = raises(root)
    qs = [(f.format(x=n), s) for n, s in items for f in FORMS]
    if not qs:
        continue
    p = subprocess.run(
        [
            "/work/main/.venv/bin/python",
            "-m",
            "aide_tui",
            "search",
            "--path",
            root,
            "--no-update",
            "--json",
            "--limit",
            "10",
            "--batch",
            "-",
        ],
        input="".join(q + "\n" for q, _ in qs),
        capture_output=True,
        text=True,
        cwd="/tmp",
        env=dict(
            os.environ,
            PYTHONPATH=(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[2])),
        ),
    )
    for (q, s), line in zip(qs, p.stdout.splitlines(), strict=True):
        hits = json.loads(line)["results"]
        right = [any(h["path"] == a and h["start_line"] <= b <= h["end_line"] for a, b in s) for h in hits]
        rows.append((root, q, right.index(True) + 1 if True in right else None))


def show(label, rs):
    mrr = sum(1 / r for *_, r in rs if r) / len(rs)
    hit1 = sum(r == 1 for *_, r in rs) / len(rs)
    print(f"{label:9s} n={len(rs)} MRR {mrr:.3f} Hit@1 {hit1:.3f}")


show("public", [r for r in rows if "neweval" in r[0]])
show("wide", [r for r in rows if "wide" in r[0]])
show("all", rows)
