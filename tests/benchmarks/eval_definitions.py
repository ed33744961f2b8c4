#!/usr/bin/env python3
"""A name, or a declaration of it, → its definition: a labeled set built from indexed Python workspaces.

    python tests/benchmarks/eval_definitions.py /tmp/neweval/httpx-0.28.1 /tmp/neweval/click-8.1.7 ...
        [--per-corpus 60] [--mode hybrid|bm25] [--json out.json]

Every class and function that a workspace defines exactly once under that spelling (tests, docs and
examples left out; names of four characters or more, no dunders) is a candidate; ``--per-corpus`` of
them are drawn with a fixed seed. Each is asked two ways, as a developer types it: the bare name
(``Headers``) and as a declaration (``class Headers``, ``def get_list``). A third set asks for methods
whose name several classes define, qualified by their class (``Client.send`` beside
``AsyncClient.send``), ``--per-corpus`` of them. A fourth asks for each command-line flag written
once in the source, on the line declaring the option (``--follow-redirects``). A fifth misspells the
bare names (two neighbouring letters of the longest part swapped: ``Hedaers``). A sixth wraps each
bare name in a question, one of ``QUESTIONS`` in turn (``where is Headers defined``). A seventh asks
for each module whose file stem no other source file has, by its stem as written (``_compat``;
right: any chunk of that file), and (``module word``) those whose stem has underscores around a word,
by the word (``compat``, ``version`` for ``__version__.py``). Two more ask for each bare name in
another convention: a snake_case name as camelCase (``promptForValue``) and a name of two or three
words as those words (``digest auth``).
Two more ask for each qualified method by its class in words: ``client send`` and ``send method of
Client``.
Right: a hit whose chunk
covers the ``def``/``class`` line, or the option's (chunk MRR@10, Hit@1). Through the CLI
(``search --json --no-update --batch``), so each workspace must be indexed first. A script, not a test.
"""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from labeled_table import arguments, report

SKIPPED_TOP = ("tests/", "test/", "docs/", "doc/", "examples/")
QUESTIONS = ("where is {} defined", "what does {} do", "show me the {} class", "how is {} implemented",
             "which file defines {}", "I need the {} implementation", "{} source code",
             "where does {} live")  # fmt: skip


_FLAG = re.compile(r"[\"'](--[a-z][\w-]+)[\"']")
_DECLARES_OPTION = re.compile(r"option\(|add_argument\(|Option\(")


def flags(root: Path) -> list[dict[str, object]]:
    """Command-line flags written once in the source, on the line that declares the option
    (``@click.option("--count")``, ``parser.add_argument("--verbose")``)."""
    seen: Counter[str] = Counter()
    declared: list[tuple[str, str, int]] = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(SKIPPED_TOP) or rel.startswith(".aide"):
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for flag in _FLAG.findall(line):
                seen[flag] += 1
                if _DECLARES_OPTION.search(line):
                    declared.append((flag, rel, i))
    return [{"name": f, "path": rel, "line": i, "kw": "flag"} for f, rel, i in declared if seen[f] == 1]


def misspelt(name: str) -> str | None:
    """``name`` with one typing slip: two neighbouring letters of its longest part of five letters or
    more swapped, in the middle of the part (``Headers`` → ``Hedaers``); None when it has no such part."""
    parts = [m for m in re.finditer(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name) if len(m.group()) >= 5]
    if not parts:
        return None
    m = max(parts, key=lambda p: (len(p.group()), -p.start()))
    i = m.start() + len(m.group()) // 2 - 1
    swapped = name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return swapped if swapped != name else None


def definitions(root: Path, per_corpus: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The workspace's uniquely named classes and functions, and its methods whose name other classes
    define too (asked as ``Class.method``), a seeded sample of each."""
    found: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    methods: dict[str, list[tuple[str, int, str]]] = defaultdict(list)  # name -> (path, line, class)
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(SKIPPED_TOP) or "/tests/" in rel or rel.startswith(".aide"):
            continue
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                kw = "class" if isinstance(node, ast.ClassDef) else "def"
                found[node.name].append((rel, node.lineno, kw))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods[item.name].append((rel, item.lineno, node.name))
    unique = [
        (n, v[0]) for n, v in sorted(found.items()) if len(v) == 1 and len(n) >= 4 and not n.startswith("__")
    ]
    random.Random(7).shuffle(unique)
    shared = [
        (f"{cls}.{n}", rel, line) for n, v in sorted(methods.items()) if len(v) > 1 and len(n) >= 4
        for rel, line, cls in v
        if sum(c == cls for _, _, c in v) == 1 and not n.startswith("__") and not rel.startswith(SKIPPED_TOP)
    ]  # fmt: skip
    random.Random(7).shuffle(shared)
    return (
        [{"name": n, "path": rel, "line": line, "kw": kw} for n, (rel, line, kw) in unique[:per_corpus]],
        [{"name": n, "path": rel, "line": line, "kw": "method"} for n, rel, line in shared[:per_corpus]],
    )


def module_words(root: Path, per_corpus: int) -> list[dict[str, object]]:
    """The modules of :func:`modules` whose stem has underscores around a word (``_compat``,
    ``__version__``), asked by the word alone (``compat``, ``version``) when no other file has it."""
    files = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))]
    words = Counter(f.rsplit("/", 1)[-1][:-3].strip("_") for f in files)
    out = []
    for d in modules(root, 10**6):
        word = str(d["name"]).strip("_")
        if word != d["name"] and len(word) >= 3 and words[word] == 1 and word != "init":
            out.append({**d, "name": word})
    return out[:per_corpus]


def modules(root: Path, per_corpus: int) -> list[dict[str, object]]:
    """Source modules whose stem no other file has, a seeded sample, asked by the stem."""
    files = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))]
    files = [f for f in files if not f.startswith((*SKIPPED_TOP, ".aide")) and "/tests/" not in f]
    stems = Counter(f.rsplit("/", 1)[-1][:-3] for f in files)
    picked = [f for f in files if stems[f.rsplit("/", 1)[-1][:-3]] == 1 and not f.endswith("__init__.py")]
    random.Random(7).shuffle(picked)
    return [
        {"name": f.rsplit("/", 1)[-1][:-3], "path": f, "line": 0, "kw": "module"} for f in picked[:per_corpus]
    ]


def _camel(name: str) -> str | None:
    """A snake_case name as camelCase (``prompt_for_value`` → ``promptForValue``); None for others."""
    parts = [p for p in name.split("_") if p]
    if len(parts) < 2 or name.startswith("_"):
        return None
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _words(name: str) -> str | None:
    """A name's words in lower case (``DigestAuth`` → ``digest auth``); None for a one-word name."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)
    return " ".join(w.lower() for w in words) if 2 <= len(words) <= 3 else None


def _owner_words(qualified: str, sentence: bool) -> str:
    """A method asked by its class in words: ``client send`` or ``send method of Client``."""
    owner, member = qualified.split(".", 1)
    return f"{member} method of {owner}" if sentence else f"{owner.lower()} {member}"


def _holds(hit: dict[str, object], d: dict[str, object], whole_file: bool) -> bool:
    """Whether a hit is the right answer: its chunk covers the line asked for (any chunk of the file)."""
    if hit["path"] != d["path"]:
        return False
    return whole_file or hit["start_line"] <= d["line"] <= hit["end_line"]  # type: ignore[operator]


def ranks(root: Path, queries: list[str], mode: str) -> list[list[dict[str, object]]]:
    """Each query's first ten hits, through the CLI."""
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--json", "--no-update",
           "--limit", "10", "--mode", mode, "--batch", "-"]  # fmt: skip
    out = subprocess.run(cmd, input="\n".join(queries) + "\n", capture_output=True, text=True, check=True)
    return [json.loads(line)["results"] for line in out.stdout.splitlines()]


def main() -> None:
    args = arguments(__doc__, per_corpus=60)
    rows: dict[str, list[float]] = defaultdict(list)
    for root in args.roots:
        unique, shared = definitions(root, args.per_corpus)
        typos = [{**d, "name": t} for d in unique if (t := misspelt(str(d["name"])))]
        sets = {
            "bare": unique,
            "declaration": unique,
            "qualified": shared,
            "flag": flags(root),
            "typo": typos,
            "question": [
                {**d, "name": QUESTIONS[i % len(QUESTIONS)].format(d["name"])} for i, d in enumerate(unique)
            ],
            "module": modules(root, args.per_corpus),
            "module word": module_words(root, args.per_corpus),
            "camelCase": [{**d, "name": c} for d in unique if (c := _camel(str(d["name"])))],
            "words": [{**d, "name": w} for d in unique if (w := _words(str(d["name"])))],
            "owner words": [{**d, "name": _owner_words(str(d["name"]), False)} for d in shared],
            "member of": [{**d, "name": _owner_words(str(d["name"]), True)} for d in shared],
        }
        for form, defs in sets.items():
            if not defs:
                continue
            queries = [f"{d['kw']} {d['name']}" if form == "declaration" else str(d["name"]) for d in defs]
            whole_file = form.startswith("module")  # any chunk of the module's file
            for d, hits in zip(defs, ranks(root, queries, args.mode), strict=True):
                rr = next((1 / (i + 1) for i, h in enumerate(hits) if _holds(h, d, whole_file)), 0.0)
                for key in (f"{form}/{root.name}", f"{form}/all", f"{form}/{d['kw']}"):
                    rows[key].append(rr)
    report(rows, args.mode, args.json)


if __name__ == "__main__":
    main()
