"""Answers that fit an agent's token budget: whole hits in rank order, each trimmed around its best line.

A hit is shown from its best piece (about one function) when that is short but more than a line or
two (a signature alone says too little), else as a window around its best line (``hitlines``); a
later hit of a file already shown keeps only its best line and the two around it, so a budget buys
breadth. Hits are added in rank order while their rows fit the budget; the first one that does not
stops the answer (the ones after it are "left out"). The first hit is cut to fit instead: to fewer
lines from the one before its best line, then to its best line alone, then to a part of that line
around its first match (a minified file's one 30,000-character line; the row says which ``columns``
it holds); a first hit whose row does not fit even with one character of text is left out too.

The budget is a limit on the rows as the surface sends them: each row is counted as its compact JSON
(``ranks`` and every other key it carries, escapes included, so ``search --json``'s ASCII-only output
counts ``\\uXXXX`` as six characters), one token per three characters as the answer module estimates
(which over-counts code for the usual BPE vocabularies). ``tokens_used`` is that count, never more than
``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aide_tui.core.search.hitlines import hit_best_line, symbol_at_line, term_spans
from aide_tui.core.search.response import Hit, SearchResponse
from aide_tui.core.tokens import estimate_tokens

PIECE_LINES = 30  # a best piece up to this long is shown whole
BEFORE, AFTER = 3, 12  # else the window: lines before and after the best line
REPEAT_CONTEXT = 1  # a file's later hits: lines on each side of the best line
LINE_CONTEXT = 40  # a best line cut to fit keeps this many characters before its first match

Shape = Callable[[Hit, dict[str, Any]], dict[str, Any]]  # a trimmed row as the surface sends it


def with_ranks(hit: Hit, row: dict[str, Any]) -> dict[str, Any]:
    """A ``search --json`` row: the trimmed row and the hit's ``ranks``."""
    return {**row, "ranks": hit.ranks}


def as_trimmed(hit: Hit, row: dict[str, Any]) -> dict[str, Any]:
    return row


@dataclass
class Budgeted:
    """The rows that fit (as sent), their estimated tokens, and how many hits were left out."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    left_out: int = 0


def _window(hit: Hit, repeat: bool) -> tuple[int, int, int]:
    """(first line, last line, best line) of what is shown of ``hit``."""
    best = hit_best_line(hit).line
    if repeat:
        lo, hi = best - REPEAT_CONTEXT, best + REPEAT_CONTEXT
    elif hit.best_piece and 3 <= hit.best_piece[1] - hit.best_piece[0] + 1 <= PIECE_LINES:
        lo, hi = hit.best_piece
    else:
        lo, hi = best - BEFORE, best + AFTER
    return max(lo, hit.start_line), min(hi, hit.end_line), best


def _lines(hit: Hit, lo: int, hi: int) -> str:
    return "\n".join(hit.text.split("\n")[lo - hit.start_line : hi - hit.start_line + 1])


def trimmed_row(hit: Hit, lo: int, hi: int, best: int) -> dict[str, Any]:
    """The result row of ``hit`` showing lines ``lo``..``hi``."""
    row: dict[str, Any] = {
        "path": hit.path, "start_line": lo, "end_line": hi, "best_line": best,
        "symbol": symbol_at_line(hit, best),
        "score": round(hit.score, 6), "text": _lines(hit, lo, hi),
        "truncated": (lo, hi) != (hit.start_line, hit.end_line),
    }  # fmt: skip
    if hit.workspace:
        row["workspace"] = hit.workspace
    return row


def row_tokens(row: dict[str, Any], ascii: bool = False) -> int:
    """Estimated tokens of a row as an agent receives it: its compact JSON (``ascii``: with non-ASCII
    characters escaped, as ``search --json`` prints them)."""
    return estimate_tokens(json.dumps(row, ensure_ascii=ascii))


def fit(hits: Sequence[Hit], max_tokens: int, shape: Shape = as_trimmed, ascii: bool = False) -> Budgeted:
    """The hits that fit ``max_tokens``, in rank order, each row as ``shape`` sends it and counted so
    (see the module docstring)."""
    out = Budgeted()
    seen: set[tuple[str, str]] = set()
    for i, hit in enumerate(hits):
        key = (hit.workspace, hit.path)
        lo, hi, best = _window(hit, key in seen)
        row = shape(hit, trimmed_row(hit, lo, hi, best))
        cost = row_tokens(row, ascii)
        if out.tokens + cost > max_tokens:
            cut = _cut_to_fit(hit, lo, hi, best, max_tokens, shape, ascii) if i == 0 else None
            if cut is None:
                out.left_out = len(hits) - i
                break
            row, cost = cut, row_tokens(cut, ascii)
        out.rows.append(row)
        out.tokens += cost
        seen.add(key)
    return out


def _largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """The largest ``n`` in ``lo..hi`` with ``fits(n)`` (``fits`` holds up to some point), or None."""
    if lo > hi or not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut_to_fit(
    hit: Hit, lo: int, hi: int, best: int, budget: int, shape: Shape, ascii: bool
) -> dict[str, Any] | None:
    """The first hit cut to fit ``budget``: from the line before its best line to as many lines after
    it as fit; else its best line alone; else a part of its best line around its first match; None
    when not even one character of it fits."""

    def lines_row(first: int, last: int) -> dict[str, Any]:
        return shape(hit, trimmed_row(hit, first, last, best))

    for first in dict.fromkeys((max(lo, best - 1), best)):

        def fits(end: int, first: int = first) -> bool:
            return row_tokens(lines_row(first, end), ascii) <= budget

        last = _largest(best, hi, fits)
        if last is not None:
            return lines_row(first, last)
    line = _lines(hit, best, best)
    match = _focus(line, hit.query_terms)

    def part_row(width: int) -> dict[str, Any]:
        start = max(0, min(match - LINE_CONTEXT, len(line) - width))
        row = trimmed_row(hit, best, best, best)
        row.update(text=line[start : start + width], truncated=True, columns=[start + 1, start + width])
        return shape(hit, row)

    width = _largest(1, len(line), lambda w: row_tokens(part_row(w), ascii) <= budget)
    return None if width is None else part_row(width)


def _focus(line: str, terms: Sequence[str]) -> int:
    """Where a line cut to fit should look: the first match of its longest matching query term (a
    whole ``parse_header`` before its parts), else its first character that is not a space."""
    spans = term_spans(line, terms)
    if spans:
        return min(spans, key=lambda s: (-len(s[2]), s[0]))[0]
    return len(line) - len(line.lstrip())


def budgeted_json(
    resp: SearchResponse,
    max_tokens: int,
    limit: int | None = None,
    shape: Shape = with_ranks,
    ascii: bool = True,
) -> dict[str, Any]:
    """A response's JSON (``SearchResponse.to_json``) with its first ``limit`` hits fitted to
    ``max_tokens``: the rows (as ``shape`` makes them; by default ``search --json``'s, with ``ranks``,
    counted ASCII-escaped as it prints them) carry their shown text, and the answer says the tokens used
    and the hits left out."""
    out: dict[str, Any] = resp.to_json()
    hits = resp.results if limit is None else resp.results[:limit]
    fitted = fit(hits, max_tokens, shape, ascii)
    out["results"] = fitted.rows
    out.update(max_tokens=max_tokens, tokens_used=fitted.tokens, left_out=fitted.left_out)
    return out
