#!/usr/bin/env python3
"""The public eval's two generated tasks on code that is not Python, labeled by Universal Ctags (an
independent parser: ``apt-get install universal-ctags``), written in the eval's own task format.

    python tests/benchmarks/eval_languages.py OUT SRC_DIR[=NAME] ... [--per-corpus 40] [--seed 7]
    python ../shared/eval/run_eval.py --corpus-root OUT --tasks OUT/tasks/*.jsonl --system ...

Each ``SRC_DIR`` is copied to ``OUT/NAME`` (its Go, Rust, JavaScript, TypeScript, Java, C and C++
files). Definitions are ctags' functions, methods, classes, structs, interfaces, traits, enums and type
aliases outside tests, vendored and generated paths.

- **symbol**: a name of six characters or more that ctags finds defined exactly once in the corpus
  (any kind) → its definition (target: the definition's lines).
- **qualified** (in the symbol file, ids ``q...``): a method whose name several definitions share,
  asked by its type as the language writes it (``Subject.next``, ``Arc::strong_count``) → that method.
- **nl2code**: a function or method with a doc comment right above it (``//``, ``///``, ``/** */``,
  attributes and decorators in between allowed) whose first sentence has six words or more and occurs
  once in the corpus: the query is that sentence (a Go comment's leading name dropped, as ``returns the
  JSON encoding of v``), and the comment is blanked in the copy (its lines kept, empty), so the text
  asked for is not in the corpus, as the eval's nl2code removes the docstring.

``--per-corpus`` of each are drawn with a fixed seed. A script, not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

EXTENSIONS = {".go": "go", ".rs": "rust", ".js": "js", ".mjs": "js", ".ts": "ts", ".tsx": "ts",
              ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp"}  # fmt: skip
DEF_KINDS = {"func", "function", "method", "class", "struct", "interface", "trait", "enum", "type",
             "typedef", "talias", "alias", "implementation"}  # fmt: skip
CALLABLE = {"func", "function", "method"}
SKIP = re.compile(r"(^|/)(tests?|testdata|__tests__|spec|vendor|node_modules|dist|build|benches|examples?)/"
                  r"|(^|/)tests?\.rs$|_test\.go$|\.(test|spec|d)\.[jt]sx?$|\.min\.js$")  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_TAG_LINE = re.compile(r"^\s*@\w+")


def copy_corpus(src: Path, dest: Path) -> list[str]:
    """Copy ``src``'s source files to ``dest``; their relative paths."""
    out = []
    for p in sorted(src.rglob("*")):
        if p.is_file() and p.suffix in EXTENSIONS and not p.is_symlink():
            rel = p.relative_to(src).as_posix()
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest / rel)
            out.append(rel)
    return out


def tags(root: Path) -> list[dict[str, object]]:
    """ctags' definitions under ``root`` (paths relative to it)."""
    command = ["ctags", "-R", "--output-format=json", "--fields=+nKelZ", "-o", "-", "."]
    run = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if run.returncode:
        raise SystemExit(f"ctags failed in {root} (apt-get install universal-ctags)")
    out = []
    for line in run.stdout.splitlines():
        t = json.loads(line)
        if t.get("_type") == "tag" and "line" in t:
            t["path"] = str(t["path"]).removeprefix("./")
            out.append(t)
    return out


_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`|//[^\n]*|/\*.*?\*/', re.S)


def block_end(lines: list[str], def_line: int) -> int:
    """The 1-based line closing the brace block that opens at or after ``def_line`` (strings and
    comments skipped); ``def_line`` itself for a declaration without a body (ctags 5.9 gives no end
    for most languages)."""
    text = "\n".join(lines[def_line - 1 : def_line + 3000])
    text = _STRING_OR_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    depth, seen = 0, False
    for i, ch in enumerate(text):
        if ch == ";" and not seen:
            return def_line
        if ch == "{":
            depth, seen = depth + 1, True
        elif ch == "}" and seen:
            depth -= 1
            if depth == 0:
                return def_line + text.count("\n", 0, i)
    return def_line


def _declares(tag: dict[str, object]) -> bool:
    """Whether ctags' tag is a declaration as a person reads it: not an object literal's key that it
    calls a class, not an anonymous function or struct, not a bodiless overload signature (``f(x): T;``)."""
    pattern, name = str(tag.get("pattern", "")), str(tag["name"])
    if name.startswith(("AnonymousFunction", "__anon")):
        return False
    if tag["kind"] == "class" and tag.get("language") in ("JavaScript", "TypeScript"):
        return "class" in pattern
    return not (tag["kind"] in CALLABLE and pattern.endswith(";$/"))


def _comment_lines(lines: list[str], def_line: int) -> tuple[list[int], str] | None:
    """The doc comment right above 1-based ``def_line``: its line numbers and its text."""
    i = def_line - 2
    while i >= 0 and re.match(r"\s*(#\[|@\w)", lines[i]):  # Rust attributes, decorators
        i -= 1
    if i < 0:
        return None
    taken: list[int] = []
    if lines[i].strip().endswith("*/"):
        j = i
        while j >= 0 and "/*" not in lines[j]:
            j -= 1
        if j < 0 or not lines[j].lstrip().startswith("/*"):
            return None
        taken = list(range(j, i + 1))
        body = [re.sub(r"^\s*(/\*\*?|\*/|\*)?", "", lines[k]).replace("*/", "") for k in taken]
    else:
        j = i
        while j >= 0 and lines[j].lstrip().startswith("//"):
            j -= 1
        taken = list(range(j + 1, i + 1))
        body = [re.sub(r"^\s*//[/!]?", "", lines[k]) for k in taken]
    if not taken:
        return None
    prose = []
    for b in body:
        if _TAG_LINE.match(b):
            break
        prose.append(b.strip())
    return [k + 1 for k in taken], " ".join(p for p in prose if p).strip()


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text, maxsplit=1)[0].strip()


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


SCOPES = {"class", "struct", "implementation", "interface", "trait", "enum"}


def qualified(
    defs: list[dict[str, object]], counts: Counter[str], corpus: str, n: int, rng: random.Random
) -> list[dict[str, object]]:
    """Methods whose name several definitions share, asked by their type as the language writes it
    (``Subject.next``, ``Arc::strong_count``, ``Encoding.Decode``) → that method."""

    def owner(t: dict[str, object]) -> str:
        return re.split(r"\.|::", str(t.get("scope", "")))[-1].split("<")[0]

    pairs = Counter((owner(t), str(t["name"])) for t in defs)
    picked = [t for t in defs
              if t["kind"] in CALLABLE and t.get("scopeKind") in SCOPES and counts[str(t["name"])] > 1
              and len(str(t["name"])) >= 3
              and pairs[(owner(t), str(t["name"]))] == 1]  # fmt: skip
    rng.shuffle(picked)
    out = []
    for i, t in enumerate(picked[:n]):
        sep = "::" if t.get("language") in ("Rust", "C++") else "."
        query = owner(t) + sep + str(t["name"])
        out.append({"id": f"symbol/{corpus}/q{i:03d}", "task": "symbol", "corpus": corpus, "query": query,
                    "targets": [{"path": t["path"], "start_line": t["line"], "end_line": t["end"]}],
                    "meta": {"kind": "qualified", "language": t.get("language")}})  # fmt: skip
    return out


def build(src: Path, name: str, out: Path, per_corpus: int, rng: random.Random) -> tuple[list, list]:
    dest = out / name
    if dest.exists():
        shutil.rmtree(dest)
    copy_corpus(src, dest)
    all_tags = [t for t in tags(dest) if not SKIP.search(str(t["path"])) and _declares(t)]
    counts = Counter(str(t["name"]) for t in tags(dest))
    texts: dict[str, list[str]] = {}

    def lines_of(rel: str) -> list[str]:
        if rel not in texts:
            texts[rel] = (dest / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        return texts[rel]

    defs = [t for t in all_tags if t["kind"] in DEF_KINDS]
    for t in defs:
        t.setdefault("end", block_end(lines_of(str(t["path"])), int(t["line"])))  # type: ignore[call-overload]

    symbols = [t for t in defs if len(str(t["name"])) >= 6 and counts[str(t["name"])] == 1]
    rng.shuffle(symbols)
    sym_tasks = [{"id": f"symbol/{name}/{i:03d}", "task": "symbol", "corpus": name, "query": str(t["name"]),
                  "targets": [{"path": t["path"], "start_line": t["line"], "end_line": t["end"]}],
                  "meta": {"kind": t["kind"], "language": t.get("language")}}
                 for i, t in enumerate(symbols[:per_corpus])]  # fmt: skip
    qual_tasks = qualified(defs, counts, name, per_corpus, random.Random(f"{name}-qualified"))
    candidates = []
    corpus_text = _norm(" ".join(" ".join(lines_of(r)) for r in {str(t["path"]) for t in defs}))
    for t in defs:
        if t["kind"] not in CALLABLE:
            continue
        found = _comment_lines(lines_of(str(t["path"])), int(t["line"]))  # type: ignore[call-overload]
        if found is None:
            continue
        numbers, text = found
        sentence = first_sentence(text)
        if t.get("language") == "Go" and sentence.split(" ", 1)[0] == t["name"]:
            sentence = sentence.split(" ", 1)[1] if " " in sentence else ""
        if len(sentence.split()) < 6 or corpus_text.count(_norm(sentence)) != 1:
            continue
        candidates.append((t, numbers, sentence))
    rng.shuffle(candidates)
    nl_tasks = []
    for i, (t, numbers, sentence) in enumerate(candidates[:per_corpus]):
        lines = lines_of(str(t["path"]))
        for n in numbers:
            lines[n - 1] = ""
        nl_tasks.append({"id": f"nl2code/{name}/{i:03d}", "task": "nl2code", "corpus": name,
                         "query": sentence,
                         "targets": [{"path": t["path"], "start_line": t["line"], "end_line": t["end"]}],
                         "meta": {"qualname": t["name"], "language": t.get("language")}})  # fmt: skip
    for rel, lines in texts.items():
        (dest / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{name}: {len(defs)} definitions, {len(symbols)} unique names, {len(candidates)} documented",
          file=sys.stderr)  # fmt: skip
    return sym_tasks + qual_tasks, nl_tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("sources", nargs="+", help="SRC_DIR or SRC_DIR=NAME")
    ap.add_argument("--per-corpus", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    syms, nls = [], []
    for spec in a.sources:
        src, _, name = spec.partition("=")
        s, n = build(Path(src), name or Path(src).name, a.out, a.per_corpus, rng)
        syms += s
        nls += n
    (a.out / "tasks").mkdir(parents=True, exist_ok=True)
    for kind, rows in (("symbol", syms), ("nl2code", nls)):
        with open(a.out / "tasks" / f"{kind}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main()
