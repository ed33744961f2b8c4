#!/usr/bin/env python3
""" "Who imports X" → the files that import module X (session 23).

    python tests/benchmarks/eval_imports.py [ROOT ...]

Ground truth from ``ast``: for each module of an indexed Python workspace whose stem no other file has,
the other files with an ``import``/``from ... import`` of it (two or more), 10 modules drawn with a
fixed seed, each asked four ways (``who imports X``, ``where is X imported``, ``modules that import X``,
``files importing X``; X the stem as written). Right: a hit in an importing file (MRR@10, Hit@1), and the
share of the importing files among the first ten hits' files (files@10). httpx and click tune, rich
and flask held out.
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

ROOTS = ("/tmp/neweval/httpx-0.28.1", "/tmp/neweval/click-8.1.7", "/tmp/neweval/rich-13.9.4",
         "/tmp/neweval/flask-3.0.3")  # fmt: skip
FORMS = ("who imports {}", "where is {} imported", "modules that import {}", "files importing {}")


def _imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module.rsplit(".", 1)[-1], *(a.name for a in node.names)]
        elif isinstance(node, ast.Import):
            names += [a.name.rsplit(".", 1)[-1] for a in node.names]
    return names


def importers(root: Path) -> list[tuple[str, list[str]]]:
    files = [p for p in sorted(root.rglob("*.py")) if ".aide" not in p.parts]
    stems: dict[str, list[str]] = defaultdict(list)
    for p in files:
        stems[p.stem].append(p.relative_to(root).as_posix())
    found: dict[str, set[str]] = defaultdict(set)
    for p in files:
        rel = p.relative_to(root).as_posix()
        try:
            names = _imported(ast.parse(p.read_text(errors="replace")))
        except SyntaxError:
            continue
        for name in names:
            if len(stems.get(name, ())) == 1 and stems[name][0] != rel:
                found[name].add(rel)
    picked = [(m, sorted(fs)) for m, fs in sorted(found.items()) if len(fs) >= 2 and len(m) >= 4]
    random.Random(9).shuffle(picked)
    return picked[:10]


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rows: dict[str, list[tuple[int | None, float]]] = defaultdict(list)
    for root in [Path(r) for r in (sys.argv[1:] or ROOTS)]:
        asked = [(form.format(m), files) for m, files in importers(root) for form in FORMS]
        if not asked:
            continue
        cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--no-update", "--json",
               "--limit", "10", "--batch", "-"]  # fmt: skip
        batch = "".join(q + "\n" for q, _ in asked)
        out = subprocess.run(cmd, input=batch, capture_output=True, text=True, check=True, env=env)
        split = "tune" if root.name.startswith(("httpx", "click")) else "held-out"
        for (_, files), line in zip(asked, out.stdout.splitlines(), strict=True):
            paths = [h["path"] for h in json.loads(line)["results"]]
            right = [p in files for p in paths]
            share = len(set(paths) & set(files)) / min(len(files), 10)
            for key in (split, "all"):
                rows[key].append((right.index(True) + 1 if True in right else None, share))
    for key, got in rows.items():
        mrr = sum(1 / r for r, _ in got if r) / len(got)
        hit1 = sum(r == 1 for r, _ in got) / len(got)
        share = sum(s for _, s in got) / len(got)
        print(f"{key:9s} n={len(got):3d}  MRR {mrr:.3f}  Hit@1 {hit1:.3f}  files@10 {share:.3f}")


if __name__ == "__main__":
    main()
