#!/usr/bin/env python3
""" "The tests of X" → the test file named after X (session 23).

    python tests/benchmarks/eval_tests_of.py [--mode hybrid|bm25] [--corpora DIR]

For each indexed Python workspace of the public eval (httpx and click to tune, rich and flask held out;
the sdists and the git checkouts), the test files ``tests/**/test_<word>.py`` whose word is also the
stem of a source module (``_content.py`` → ``content``), 12 drawn with a fixed seed, each asked four
ways: ``tests for <word>``, ``where is <word> tested``, ``<word> tests``, ``unit tests of <word>``.
Right: any chunk of such a test file (MRR@10, Hit@1), through the CLI (``search --batch``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOTS = ("httpx-0.28.1", "click-8.1.7", "rich-13.9.4", "flask-3.0.3", "httpx-git", "click-git", "rich-git")
TUNE = ("httpx", "click")
FORMS = ("tests for {}", "where is {} tested", "{} tests", "unit tests of {}")
Result = tuple[str, str, int | None]  # corpus, form, rank


def tested_words(root: Path) -> list[tuple[str, list[str]]]:
    """(word, its test files) for test files named after a source module, a seeded sample of 12."""
    files = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py")) if ".aide" not in p.parts]
    tests: dict[str, list[str]] = {}
    for f in files:
        stem = f.rsplit("/", 1)[-1][:-3]
        if stem.startswith("test_") and (f.startswith("tests/") or "/tests/" in f):
            tests.setdefault(stem[5:], []).append(f)
    sources = {f.rsplit("/", 1)[-1][:-3].strip("_") for f in files if "test" not in f}
    picked = [(w, fs) for w, fs in sorted(tests.items()) if len(w) >= 4 and w in sources]
    random.Random(3).shuffle(picked)
    return picked[:12]


def run(root: Path, mode: str) -> list[Result]:
    asked = [(form, form.format(word), files) for word, files in tested_words(root) for form in FORMS]
    if not asked:
        return []
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--no-update", "--json",
           "--limit", "10", "--mode", mode, "--batch", "-"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    batch = "".join(q + "\n" for _, q, _ in asked)
    out = subprocess.run(cmd, input=batch, capture_output=True, text=True, check=True, env=env)
    results = []
    for (form, _, files), line in zip(asked, out.stdout.splitlines(), strict=True):
        held = [h["path"] in files for h in json.loads(line)["results"]]
        results.append((root.name, form, held.index(True) + 1 if True in held else None))
    return results


def _row(label: str, got: list[Result]) -> str:
    if not got:
        return f"{label:28s} n=0"
    mrr = sum(1 / r for _, _, r in got if r) / len(got)
    hit1 = sum(r == 1 for _, _, r in got) / len(got)
    return f"{label:28s} n={len(got):3d}  MRR {mrr:.3f}  Hit@1 {hit1:.3f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", default="hybrid")
    p.add_argument("--corpora", type=Path, default=Path("/tmp/neweval"))
    args = p.parse_args()
    got = [r for name in ROOTS if (args.corpora / name).is_dir() for r in run(args.corpora / name, args.mode)]
    print(_row("all", got))
    print(_row("tune (httpx, click)", [r for r in got if r[0].startswith(TUNE)]))
    print(_row("held-out (rich, flask)", [r for r in got if not r[0].startswith(TUNE)]))
    for form in FORMS:
        print(_row(form.format("X"), [r for r in got if r[1] == form]))


if __name__ == "__main__":
    main()
