#!/usr/bin/env python3
""" "Subclasses of X" → the classes declared with X as a base (session 23).

    python tests/benchmarks/eval_subclasses.py [ROOT ...]

Ground truth from the source itself, not the index: Python ``class A(X)`` by ``ast``, TS/JS ``class A
extends X`` by a regular expression; bases with two subclasses or more (tests and the commonest
bases left out), 10 per workspace with a fixed seed, each asked three ways (``subclasses of X``,
``classes that inherit from X``, ``X subclasses``). Right: a hit whose lines hold a subclass's
declaration (MRR@10, Hit@1) and the share of the subclasses in the first ten (recall@10). Default
roots: the public eval's Python sdists and the xl2 JS/TS workspaces, indexed.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOTS = ("/tmp/neweval/httpx-0.28.1", "/tmp/neweval/click-8.1.7", "/tmp/neweval/rich-13.9.4",
         "/tmp/neweval/flask-3.0.3", "/tmp/xl2/rxjs", "/tmp/xl2/three", "/tmp/xl2/eslint-lib",
         "/tmp/xl2/webpack-lib")  # fmt: skip
FORMS = ("subclasses of {}", "classes that inherit from {}", "{} subclasses")
COMMON = {"object", "Exception", "Enum", "Protocol", "NamedTuple", "TypedDict", "Generic", "ABC"}
EXTENDS = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(\w+)(?:<[^>]*>)?\s+extends\s+([\w.]+)", re.M
)
Place = tuple[str, int]


def _python_bases(tree: ast.AST) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = (
                    base.id
                    if isinstance(base, ast.Name)
                    else base.attr
                    if isinstance(base, ast.Attribute)
                    else None
                )
                if name:
                    out.append((name, node.lineno))
    return out


def subclasses(root: Path) -> list[tuple[str, list[Place]]]:
    """(base, its subclasses' declarations) for bases with two subclasses or more, 10 drawn."""
    subs: dict[str, list[Place]] = defaultdict(list)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if ".aide" in p.parts or not p.is_file() or "test" in rel:
            continue
        if p.suffix == ".py":
            try:
                found = _python_bases(ast.parse(p.read_text(errors="replace")))
            except SyntaxError:
                continue
            for name, line in found:
                subs[name].append((rel, line))
        elif p.suffix in (".ts", ".js"):
            text = p.read_text(errors="replace")
            for m in EXTENDS.finditer(text):
                subs[m.group(2).rsplit(".", 1)[-1]].append((rel, text.count("\n", 0, m.start(1)) + 1))
    picked = [(b, s) for b, s in sorted(subs.items()) if len(s) >= 2 and len(b) >= 4 and b not in COMMON]
    random.Random(5).shuffle(picked)
    return picked[:10]


def _holds(hit: dict[str, object], place: Place) -> bool:
    return hit["path"] == place[0] and int(hit["start_line"]) <= place[1] <= int(hit["end_line"])  # type: ignore[call-overload]


def main() -> None:
    roots = [Path(r) for r in (sys.argv[1:] or ROOTS)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rows: dict[str, list[tuple[int | None, float]]] = defaultdict(list)
    for root in roots:
        asked = [(form.format(base), places) for base, places in subclasses(root) for form in FORMS]
        if not asked:
            continue
        cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--no-update", "--json",
               "--limit", "10", "--batch", "-"]  # fmt: skip
        batch = "".join(q + "\n" for q, _ in asked)
        out = subprocess.run(cmd, input=batch, capture_output=True, text=True, check=True, env=env)
        kind = "python" if any(p[0].endswith(".py") for _, ps in asked for p in ps) else "js/ts"
        for (_, places), line in zip(asked, out.stdout.splitlines(), strict=True):
            hits = json.loads(line)["results"]
            right = [any(_holds(h, p) for p in places) for h in hits]
            found = sum(any(_holds(h, p) for h in hits) for p in places)
            rank = right.index(True) + 1 if True in right else None
            for key in (kind, "all"):
                rows[key].append((rank, min(found, 10) / min(len(places), 10)))
    for key, got in rows.items():
        mrr = sum(1 / r for r, _ in got if r) / len(got)
        hit1 = sum(r == 1 for r, _ in got) / len(got)
        recall = sum(x for _, x in got) / len(got)
        print(f"{key:8s} n={len(got):3d}  MRR {mrr:.3f}  Hit@1 {hit1:.3f}  recall@10 {recall:.3f}")


if __name__ == "__main__":
    main()
