#!/usr/bin/env python3
"""Code pasted from a file → the chunk that holds it: a labeled set built from indexed workspaces.

    python tests/benchmarks/eval_snippets.py /tmp/neweval/httpx-0.28.1 /tmp/neweval/got ... \\
        [--per-corpus 40] [--mode hybrid|bm25] [--json out.json]

Candidates are the source lines (``.py .go .ts .js .rs``; tests, docs and examples left out) of 40 to
120 characters with four identifiers or more that occur once in the workspace and are not a comment or
a declaration. Three sets are drawn with a fixed seed, ``--per-corpus`` lines each: the line as it is
(``line``), the line with the two below it as pasted (``block``), and the line's identifiers alone,
strings and punctuation dropped (``idents``: a half-remembered line). Right: a hit whose chunk covers
the line (chunk MRR@10, Hit@1). In process (``Searcher.search``), each workspace indexed first. A
script, not a test.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from labeled_table import arguments, report  # noqa: E402

from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402

SOURCE = {".py", ".go", ".ts", ".js", ".rs"}
SKIPPED_TOP = ("tests/", "test/", "docs/", "doc/", "examples/", ".aide/", ".git/")
_DECLARATION = re.compile(r"(def|class|func|function|import|from|export|type|interface|package)\b")
_COMMENT = ("#", "//", "*", "/*", '"""', "'''")


def candidates(root: Path) -> list[tuple[str, int, list[str]]]:
    """(path, 1-based line, the file's lines) of every line worth asking for, in path order."""
    seen: Counter[str] = Counter()
    lines: list[tuple[str, int, list[str]]] = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.suffix not in SOURCE or not p.is_file() or rel.startswith(SKIPPED_TOP) or "/test" in rel:
            continue
        if "node_modules" in rel or rel.endswith(("_test.go", ".test.ts", ".d.ts")):
            continue
        text = p.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, line in enumerate(text, 1):
            seen[line.strip()] += 1
            lines.append((rel, i, text))
    out = []
    for rel, i, text in lines:
        s = text[i - 1].strip()
        if not 40 <= len(s) <= 120 or seen[s] != 1 or s.startswith(_COMMENT) or _DECLARATION.match(s):
            continue
        if len(re.findall(r"[A-Za-z_]\w{2,}", s)) >= 4:
            out.append((rel, i, text))
    return out


def sets(root: Path, n: int) -> dict[str, list[dict[str, object]]]:
    """The three sets of one workspace."""
    cands = candidates(root)
    random.Random(11).shuffle(cands)

    def drawn(k: int) -> list[tuple[str, int, list[str]]]:
        return cands[k * n : (k + 1) * n]

    def idents(s: str) -> str:
        return " ".join(re.findall(r"[A-Za-z_]\w*", re.sub(r"\"[^\"]*\"|'[^']*'", "", s)))

    return {
        "line": [{"q": t[i - 1].strip(), "path": rel, "line": i} for rel, i, t in drawn(0)],
        "block": [{"q": "\n".join(t[i - 1 : i + 2]), "path": rel, "line": i} for rel, i, t in drawn(1)],
        "idents": [{"q": idents(t[i - 1].strip()), "path": rel, "line": i} for rel, i, t in drawn(2)],
    }


def main() -> None:
    args = arguments(__doc__, per_corpus=40)
    rows: dict[str, list[float]] = defaultdict(list)
    for root in args.roots:
        searcher = Searcher(root, load_settings(root, {}))
        for form, asked in sets(root, args.per_corpus).items():
            for d in asked:
                hits = searcher.search(str(d["q"]), limit=10, mode=args.mode, hints=False).results
                rr = next((1 / (k + 1) for k, h in enumerate(hits)
                           if h.path == d["path"] and h.start_line <= int(d["line"]) <= h.end_line), 0.0)  # type: ignore[call-overload]  # fmt: skip
                rows[f"{form}/all"].append(rr)
                rows[f"{form}/{root.name}"].append(rr)
    report(rows, args.mode, args.json)


if __name__ == "__main__":
    main()
