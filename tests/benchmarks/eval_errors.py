#!/usr/bin/env python3
"""A pasted error message, log line, place or code snippet → where it is in the code: labeled sets built
from any indexed workspace.

    python tests/benchmarks/eval_errors.py /work/mono/ws --tune django,sympy [--modes bm25,hybrid]
        [--kind raise|log|place|snippet] [--set search.message_weight=0] [--max-per-package 60]
        [--json out.json]

Queries are what a terminal shows: ``ValueError: the message`` for Python's ``raise X("...")`` and
JavaScript/TypeScript's ``throw new X("...")``, taken from the workspace's own source (tests, docs and
vendored folders skipped). Only messages of at least four words that occur once in the workspace are
kept, so each has exactly one right place; raising lines over 400 characters (bundled code) and files
the index left out (generated, over the size cap) are not queries. A message with a placeholder
(``%s``, ``{name}``, ``${x}``) is pasted as the program would print it, the placeholder filled with
``example_value``. The target is the raising line: a hit is right when its chunk covers that line
(chunk MRR@10, Hit@1, Hit@10) and a file is right when it is the raising file (file MRR@10). Rows:
per package, tune (``--tune``) and held-out (the rest). In process, through ``Searcher`` (the CLI's
ranking), with ``--embedder static`` for hybrid. A script, not a test.

``--kind snippet``: three to eight consecutive lines of a Python, JavaScript, TypeScript or Go file of
40 lines or more, past its first 20 (at least three of them code, eight words or more, none over 200
characters), pasted as an editor copies
them (their common indentation removed, lines kept) and, every other query, as one line (a one-line
input joins them with spaces). Right: a chunk covering any of the lines.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

PY_RAISE = re.compile(
    r"""raise\s+([A-Z]\w*(?:Error|Exception|Warning))\(\s*[fbr]?(["'])((?:(?!\2).){12,200})\2"""
)
JS_THROW = re.compile(r"""throw\s+new\s+((?:[A-Z]\w*)?Error)\(\s*([`"'])((?:(?!\2).){12,200})\2""")
PLACEHOLDER = re.compile(
    r"%[-#0 +]*\d*(?:\.\d+)?[sdrfxi]|%\([^)]*\)[sdrfxi]|\{[^{}]{0,40}\}|\$\{[^{}]{0,40}\}"
)
SKIP_DIR = re.compile(
    r"(^|/)(tests?|testing|docs?|examples?|vendor|node_modules|third_party|build|dist)(/|$)"
)
PY_LOG = re.compile(
    r"""\b(?:log|logger|LOG|LOGGER|logging|_log|_logger)\.(debug|info|warning|warn|error|exception|critical)"""
    r"""\(\s*[fbr]?(["'])((?:(?!\2).){12,200})\2"""
)
LOG_FORMS = ("{level}:{logger}:{msg}", "2024-05-01 12:00:03,123 {level} {msg}", "[{level}] {msg}")
MAX_LINE = 400  # a raising line longer than this is bundled or minified code: not a query
EXTS = {".py": PY_RAISE, ".js": JS_THROW, ".mjs": JS_THROW, ".ts": JS_THROW}
SNIPPET_EXTS = {".py", ".js", ".mjs", ".ts", ".go"}
_COMMENT = re.compile(r"^\s*(#|//|/?\*|\"\"\"|'\'\'|$)")


def _sites(rel: str, text: str, rx: re.Pattern[str], kind: str) -> list[tuple[re.Match[str], str]]:
    """(match, query with ``{msg}`` for the message) of each raise, or each Python log call, of a file."""
    if kind == "raise":
        return [(m, f"{m.group(1)}: {{msg}}") for m in rx.finditer(text)]
    if rx is not PY_RAISE:
        return []
    logger = rel.split("/", 1)[-1].rsplit(".", 1)[0].replace("/", ".")  # the module, as __name__ names it
    out = []
    for k, m in enumerate(PY_LOG.finditer(text)):  # as logging's default and two common formats print it
        level = {"warn": "WARNING", "exception": "ERROR"}.get(m.group(1), m.group(1).upper())
        form = LOG_FORMS[k % len(LOG_FORMS)].replace("{level}", level).replace("{logger}", logger)
        out.append((m, form))
    return out


_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


def _places(rel: str, text: str, rng: random.Random) -> list[dict[str, object]]:
    """A few lines inside the file's Python functions, as a traceback frame names them, and as
    ``path:line`` (the path as an installed package has it: the package's own folder dropped)."""
    defs = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _DEF.finditer(text)]
    inner = rel.split("/", 1)[-1]
    out = []
    for line, func in rng.sample(defs, min(2, len(defs))):
        at = line + rng.randint(1, 4)  # a line of the body, as a frame points at
        if at > text.count("\n"):
            continue
        query = (f'File "/usr/lib/python3.11/site-packages/{inner}", line {at}, in {func}'
                 if len(out) % 2 == 0 else f"{inner}:{at}")  # fmt: skip
        out.append({"package": rel.split("/", 1)[0], "path": rel, "line": at, "message": f"{rel}:{at}",
                    "query": query})  # fmt: skip
    return out


def _snippets(rel: str, text: str, rng: random.Random) -> list[dict[str, object]]:
    """Two windows of three to eight lines of code from the file (see the module's docstring)."""
    lines = text.split("\n")
    out: list[dict[str, object]] = []
    for _ in range(12):
        if len(out) == 2 or len(lines) < 40:
            break
        k = rng.randint(3, 8)
        start = rng.randrange(20, len(lines) - k)  # past a licence header and the imports: not unique
        window = lines[start : start + k]
        code = [ln for ln in window if not _COMMENT.match(ln)]
        words = len(re.findall(r"\w+", "\n".join(code)))
        if len(code) < 3 or any(len(ln) > 200 for ln in window) or words < 8:
            continue
        if any(start < int(q["line"]) + 8 and int(q["line"]) < start + k + 8 for q in out):  # type: ignore[call-overload]
            continue
        body = textwrap.dedent("\n".join(window)).strip("\n")
        query = body if len(out) % 2 == 0 else " ".join(body.split())
        out.append({"package": rel.split("/", 1)[0], "path": rel, "line": start + 1, "end": start + k,
                    "message": body, "query": query})  # fmt: skip
    return out


def collect(root: Path, max_per_package: int, seed: int, kind: str = "raise") -> list[dict[str, object]]:
    """The labeled queries of the workspace (each package's first-level folder is its name)."""
    found: list[dict[str, object]] = []
    counts: Counter[str] = Counter()
    for path in sorted(root.rglob("*")):
        rx = EXTS.get(path.suffix) or (PY_RAISE if not path.suffix else None)  # bin/ scripts count too
        if kind == "snippet" and path.suffix == ".go":
            rx = PY_RAISE  # any pattern: snippets are taken from Go files too
        rel = path.relative_to(root).as_posix()
        if rx is None or SKIP_DIR.search(rel) or "/." in "/" + rel or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if kind == "snippet":
            if path.suffix in SNIPPET_EXTS:
                found.extend(_snippets(rel, text, random.Random(f"{seed}:{rel}")))
            continue
        if kind == "place":
            if path.suffix == ".py":
                found.extend(_places(rel, text, random.Random(f"{seed}:{rel}")))
            continue
        for m, form in _sites(rel, text, rx, kind):
            msg = m.group(3)
            counts[msg.lower()] += 1
            if "\\" in msg or len(re.findall(r"[A-Za-z]{2,}", PLACEHOLDER.sub(" ", msg))) < 4:
                continue
            line = text.count("\n", 0, m.start()) + 1
            if len(text.split("\n", line)[line - 1]) > MAX_LINE or not path.suffix:
                continue  # minified or bundled code; a script without a suffix only counts duplicates
            shown = PLACEHOLDER.sub("example_value", msg)
            found.append(
                {
                    "package": rel.split("/", 1)[0],
                    "path": rel,
                    "line": line,
                    "message": msg,
                    "query": form.replace("{msg}", shown),
                }
            )
    once = [q for q in found if counts[str(q["message"]).lower()] == 1 or kind in ("place", "snippet")]
    by_pkg: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in once:
        by_pkg[str(q["package"])].append(q)
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for pkg in sorted(by_pkg):
        qs = by_pkg[pkg]
        rng.shuffle(qs)
        out.extend(sorted(qs[:max_per_package], key=lambda q: (str(q["path"]), int(q["line"]))))  # type: ignore[call-overload]
    return out


def score(results: list[dict[str, object]], q: dict[str, object]) -> tuple[float, float, float, float]:
    """(chunk MRR@10, Hit@1, Hit@10, file MRR@10) of one query's results."""
    chunk_rank = file_rank = 0
    seen: list[str] = []
    for r in results:
        p = str(r["path"])
        if p not in seen:
            seen.append(p)
            if p == q["path"] and not file_rank:
                file_rank = len(seen)
        first, last = int(q["line"]), int(q.get("end", q["line"]))  # type: ignore[call-overload]
        holds = int(r["start_line"]) <= last and first <= int(r["end_line"])  # type: ignore[call-overload]
        if not chunk_rank and p == q["path"] and holds:
            chunk_rank = results.index(r) + 1
    rr = 1 / chunk_rank if 0 < chunk_rank <= 10 else 0.0
    frr = 1 / file_rank if 0 < file_rank <= 10 else 0.0
    return rr, float(chunk_rank == 1), float(0 < chunk_rank <= 10), frr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--tune", default="", help="packages of the tune split, comma-separated")
    p.add_argument("--modes", default="bm25,hybrid")
    p.add_argument("--set", action="append", default=[], help="search.KEY=VALUE (a ranking setting)")
    p.add_argument(
        "--kind",
        choices=["raise", "log", "place", "snippet"],
        default="raise",
        help="raise/throw sites, log calls, lines named as a frame or path:line, or pasted code",
    )
    p.add_argument("--max-per-package", type=int, default=60)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", help="per-query ranks to this file")
    a = p.parse_args(argv)
    from aide_tui.core.config import load_settings
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.search.searcher import Searcher
    from aide_tui.core.store.segments import read_manifest

    indexed = read_manifest(index_dir_for(a.root)).files  # a bundled file the index left out: no target
    queries = [q for q in collect(a.root, a.max_per_package, a.seed, a.kind) if q["path"] in indexed]
    search: dict[str, object] = {}
    for kv in a.set:
        key, _, value = kv.partition("=")
        search[key.removeprefix("search.")] = json.loads(value)
    settings = load_settings(a.root, {"embedding": {"backend": "static"}, "search": search})
    searcher = Searcher(a.root, settings)
    searcher.refresh()
    searcher.warm()
    tune = set(filter(None, a.tune.split(",")))
    per_query: list[dict[str, object]] = []
    packages = len({q["package"] for q in queries})
    print(f"{len(queries)} queries, {packages} packages; settings {search or 'default'}")
    print("| mode | split | n | chunk MRR@10 | Hit@1 | Hit@10 | file MRR@10 |")
    print("|---|---|---|---|---|---|---|")
    for mode in a.modes.split(","):
        rows: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
        took: list[float] = []
        for q in queries:
            t0 = time.perf_counter()
            resp = searcher.search(str(q["query"]), limit=20, mode=mode)
            took.append((time.perf_counter() - t0) * 1000)
            res = [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line} for h in resp.results]
            s = score(res, q)
            split = "tune" if q["package"] in tune else "held-out"
            for key in (str(q["package"]), split, "all"):
                rows[key].append(s)
            per_query.append({"mode": mode, **q, "scores": s})
        for key in sorted(rows, key=lambda k: (k not in ("all", "tune", "held-out"), k)):
            v = rows[key]
            cols = [statistics.fmean(x[i] for x in v) for i in range(4)]
            print(f"| {mode} | {key} | {len(v)} | " + " | ".join(f"{c:.3f}" for c in cols) + " |")
        took.sort()
        p95 = took[int(0.95 * len(took)) - 1]
        print(f"{mode}: search p50 {statistics.median(took):.1f} ms, p95 {p95:.1f} ms")
    if a.json:
        Path(a.json).write_text(json.dumps(per_query, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
