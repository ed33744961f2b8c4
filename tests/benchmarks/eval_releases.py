#!/usr/bin/env python3
"""Release-number queries → the section of the release notes that heads that release (session 23).

    python tests/benchmarks/eval_releases.py [hybrid|bm25] [per-query.json]

For 25 releases of each of four changelogs of the public eval's changeloc corpora (unpacked under
/tmp/neweval and indexed; rich-git is held out), five phrasings each ("2.3.1", "changelog 2.3.1", "what
changed in 2.3.1", "release notes for version 2.3.1", "changes in v2.3.1"): a hit is a result whose
lines hold the release's heading line. Prints MRR@10 and Hit@1 per phrasing and split. Environment:
PY (the interpreter), PP (PYTHONPATH: the checkout to measure), CORPORA (default /tmp/neweval).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

CORPORA = Path(os.environ.get("CORPORA", "/tmp/neweval"))
REPOS = {
    "click-git": "CHANGES.rst",
    "httpx-git": "CHANGELOG.md",
    "urfave-cli": "docs/CHANGELOG.md",
    "rich-git": "CHANGELOG.md",
}
HELD_OUT = {"rich-git"}
HEAD = re.compile(r"^(?:#+\s*\[?v?(\d+\.\d+(?:\.\d+)?(?:[a-z.]*\d*)?)\]?|Version (\d+\.\d+(?:\.\d+)?))")
FORMS = ["{v}", "changelog {v}", "what changed in {v}", "release notes for version {v}", "changes in v{v}"]
Task = tuple[str, str, str, str, int]  # repo, form, query, file, heading line


def tasks() -> list[Task]:
    out: list[Task] = []
    rnd = random.Random(7)
    for repo, name in REPOS.items():
        lines = (CORPORA / repo / name).read_text().splitlines()
        first: dict[str, int] = {}
        for i, line in enumerate(lines):
            m = HEAD.match(line)
            if m:
                first.setdefault(m.group(1) or m.group(2), i + 1)
        for version, line_no in rnd.sample(sorted(first.items()), min(25, len(first))):
            out += [(repo, form, form.format(v=version), name, line_no) for form in FORMS]
    return out


def ranks(mode: str) -> dict[Task, int | None]:
    py = os.environ.get("PY", sys.executable)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PP", str(Path(__file__).resolve().parents[2]))}
    by_repo: dict[str, list[Task]] = {}
    for t in tasks():
        by_repo.setdefault(t[0], []).append(t)
    out: dict[Task, int | None] = {}
    for repo, items in by_repo.items():
        cmd = [py, "-m", "aide_tui", "search", "--path", str(CORPORA / repo), "--no-update", "--json",
               "--limit", "10", "--mode", mode, "--batch", "-"]  # fmt: skip
        batch = "".join(t[2] + "\n" for t in items)
        p = subprocess.run(cmd, input=batch, capture_output=True, text=True, cwd="/tmp", env=env, check=True)
        answers = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
        for t, a in zip(items, answers, strict=True):
            held = [h["path"] == t[3] and h["start_line"] <= t[4] <= h["end_line"] for h in a["results"]]
            out[t] = held.index(True) + 1 if True in held else None
    return out


def _line(label: str, got: list[int | None]) -> str:
    mrr = sum(1 / r for r in got if r) / len(got)
    hit1 = sum(1 for r in got if r == 1) / len(got)
    return f"{label:40s} MRR {mrr:.3f}  Hit@1 {hit1:.3f}  n={len(got)}"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "hybrid"
    got = ranks(mode)
    for split in ("tune", "held-out"):
        part = {t: r for t, r in got.items() if (t[0] in HELD_OUT) == (split == "held-out")}
        for form in FORMS:
            print(_line(f"{split} {form}", [r for t, r in part.items() if t[1] == form]))
        print(_line(f"{split} all", list(part.values())))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps({f"{t[0]}|{t[2]}": r for t, r in got.items()}, indent=0))


if __name__ == "__main__":
    main()
