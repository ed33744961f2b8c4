"""How sure a search is of its first answer, and up to three ways to refine the query.

``confidence`` is high, medium or low from the first file's score, its margin over the next file's
best score, and how many ranked lists put the first hit at their top. The thresholds were calibrated on
the public eval's tune split (nl2code, questions, symbol and changeloc, bm25 and hybrid); how often
"high" is right, tune and held-out apart, is in docs/quality.md.

Hints: a sibling of the first hit's symbol (from the symbol graph: the next definition under the same
class or module), a near miss (the first file ranked 11–15), and a frequent alternate term (an
identifier most of the first hits share that the query does not use).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from aide_tui.core.search.hitlines import hit_best_line
from aide_tui.core.search.query import CODE_LIKE, asked_name, asked_subclasses, asked_uses, last_part
from aide_tui.core.search.response import Hit
from aide_tui.core.search.retriever import SymbolGraph, TermStats
from aide_tui.core.tokens import CAMEL_PARTS, STOPWORDS, identifiers, tokenize

HIGH_MARGIN = 0.5  # the first file leads the next by half its score: high
AGREE_LISTS, AGREE_MARGIN = 3, 0.1  # or three lists rank the first hit first and it leads by a tenth
LOW_MARGIN, LOW_LISTS = 0.1, 1  # low: a lead under a tenth that at most one list backs
NEAR_MISS = (10, 15)  # distinct files at these ranks (0-based, end excluded) are near misses
TERM_HITS = 5  # the first hits whose identifiers may suggest an alternate term
MAX_HINTS = 3
_KINDS = ("function", "method", "class", "def", "func", "fn", "fun", "struct", "interface", "type", "trait")


def _files(hits: Sequence[Hit]) -> list[Hit]:
    """The first hit of each distinct file, in rank order."""
    seen: set[tuple[str, str]] = set()
    out: list[Hit] = []
    for h in hits:
        key = (h.workspace, h.path)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def margin(hits: Sequence[Hit]) -> float:
    """How far the first file's score leads the next file's, as a share of the first (1: no other)."""
    files = _files(hits)
    if not files or files[0].score <= 0:
        return 0.0
    second = files[1].score if len(files) > 1 else 0.0
    return (files[0].score - second) / files[0].score


def lists_agreeing(hit: Hit) -> int:
    """How many ranked lists put ``hit`` first."""
    return sum(1 for r in hit.ranks.values() if r == 1)


def confidence(hits: Sequence[Hit]) -> str | None:
    """high / medium / low for the first hit (None without hits)."""
    if not hits:
        return None
    lead, agree = margin(hits), lists_agreeing(hits[0])
    if lead >= HIGH_MARGIN or (agree >= AGREE_LISTS and lead >= AGREE_MARGIN):
        return "high"
    if lead < LOW_MARGIN and agree <= LOW_LISTS:
        return "low"
    return "medium"


def _parent(qualname: str) -> str:
    return qualname.rsplit(".", 1)[0] if "." in qualname else ""


def sibling_hint(hit: Hit, graph: SymbolGraph | None) -> dict[str, object] | None:
    """The definition nearest the first hit's under the same class (or module), from the graph."""
    if graph is None:
        return None
    defs = [d for d in graph.definitions_in(hit.path) if d.kind in _KINDS]
    line = hit_best_line(hit).line
    inside = [d for d in defs if d.line <= line <= d.end_line]
    if not inside:
        return None
    own = max(inside, key=lambda d: d.line)  # the innermost
    sibs = [d for d in defs if _parent(d.qualname) == _parent(own.qualname) and d.qualname != own.qualname]
    if not sibs:
        return None
    near = min(sibs, key=lambda d: (abs(d.line - own.line), d.line))
    return {"kind": "symbol", "symbol": near.qualname, "path": hit.path, "line": near.line,
            "text": f"see also {near.qualname} ({hit.path}:{near.line})"}  # fmt: skip


def near_miss_hint(hits: Sequence[Hit]) -> dict[str, object] | None:
    """The first file ranked 11–15 (a file just outside the first ten)."""
    files = _files(hits)[NEAR_MISS[0] : NEAR_MISS[1]]
    if not files:
        return None
    h = files[0]
    return {"kind": "file", "path": h.path, "rank": NEAR_MISS[0] + 1, "line": h.start_line,
            "text": f"near miss: {h.path} (file ranked {NEAR_MISS[0] + 1})"}  # fmt: skip


def term_hint(hits: Sequence[Hit], query: str, stats: TermStats | None) -> dict[str, object] | None:
    """An identifier most of the first hits share that the query does not use (rarer ones first)."""
    asked = set(tokenize(query)) | {w.lower() for w in identifiers(query)}
    counts: Counter[str] = Counter()
    for h in hits[:TERM_HITS]:
        counts.update({w for w in identifiers(h.text) if len(w) >= 4 and re.search(r"[a-z]", w)})
    shared = [
        (word, n)
        for word, n in counts.items()
        if n >= 2
        and (low := word.lower()) not in asked
        and low not in STOPWORDS
        and not set(tokenize(word)) - {low} <= asked
    ]
    idfs = stats.idfs([w.lower() for w, _ in shared]) if stats is not None else [None] * len(shared)
    best: tuple[float, str] | None = None
    for (word, n), idf in zip(shared, idfs, strict=True):
        score = n * (idf or 1.0)
        if best is None or score > best[0] or (score == best[0] and word < best[1]):
            best = (score, word)
    if best is None:
        return None
    return {"kind": "term", "term": best[1], "text": f"try also: {best[1]}"}


_ONE_NAME = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*")
_FOUND_BY_NAME = ("symbol", "path", "line", "uses", "phrase")  # lists that find a name or a file as written
# ``tests for X``: the path list finds the test files by the word "tests" (a path holding X holds a word
# of the index, which rules the name out before)
_FOUND_BY_NAME_IN_TESTS = ("symbol", "line", "uses", "phrase")


def absent_name(
    hits: Sequence[Hit], query: str, graph: SymbolGraph | None, stats: TermStats | None
) -> str | None:
    """The name a query asks for (the query itself, or the one name of ``who calls X``, ``tests for X``,
    ``subclasses of X``, ``where is X defined``) when the code has no trace of it in any spelling (as
    written, without its underscores, in snake case): not a word of the index, not defined or used
    anywhere (any case, nor with a leading underscore), and no hit found by its name or path. Its hits
    only share its words (``FooBarBaz``: chunks about foo and bar)."""
    asked = _asked(query.strip())
    if graph is None or stats is None or asked is None:
        return None
    text, tests = asked
    if not _ONE_NAME.fullmatch(text) or not CODE_LIKE.search(text):
        return None
    by_name = _FOUND_BY_NAME_IN_TESTS if tests else _FOUND_BY_NAME
    if any(h.ranks.get(k) for h in hits[:10] for k in by_name):
        return None
    last = last_part(text)
    if not tokenize(last):
        return None
    for spelled in _spellings(last):  # digest_auth is DigestAuth's, HTTPStatusError http_status_error's
        whole = tokenize(spelled)[:1]
        if whole and whole[0] in stats.vocab:
            return None
        for name in (spelled, "_" + spelled.lstrip("_")):
            if graph.definitions(name, False) or graph.has_references(name, False):
                return None
    return last


def _spellings(name: str) -> list[str]:
    """``name`` as written, without its underscores (``digest_auth`` → ``digestauth``: definitions are
    looked up in any case) and in snake case (``HTTPStatusError`` → ``http_status_error``). Unlike
    ``lists.other_spellings`` (what the symbol list also looks up, ranking), a Pascal-case name's snake
    form too: here a spelling only keeps a name from being called absent."""
    out = [name]
    if "_" in name.strip("_"):
        out.append(name.replace("_", ""))
    parts = CAMEL_PARTS.findall(name)
    if len(parts) > 1:
        out.append("_".join(p.lower() for p in parts))
    return list(dict.fromkeys(out))


def _asked(text: str) -> tuple[str, bool] | None:
    """The one name ``text`` is, or a short question about one name asks about, and whether it asks for
    that name's tests."""
    if _ONE_NAME.fullmatch(text):
        return text, False
    about = asked_uses(text) or asked_subclasses(text)
    if about is not None:
        return about.name, about.tests
    name = asked_name(text)
    return (name, False) if name is not None else None


def hints(
    hits: Sequence[Hit], query: str, graph: SymbolGraph | None, stats: TermStats | None
) -> list[dict[str, object]]:
    """Up to three refine hints for ``query``'s answer (see the module docstring)."""
    if not hits:
        return []
    found = [sibling_hint(hits[0], graph), near_miss_hint(hits), term_hint(hits, query, stats)]
    return [h for h in found if h is not None][:MAX_HINTS]
