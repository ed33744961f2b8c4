"""Answers that fit an agent's token budget: whole hits in rank order, each trimmed around its best line.

A hit is shown from its best piece (about one function) when that is short but more than a line or
two (a signature alone says too little), else as a window around its best line (``hitlines``); a
later hit of a file already shown keeps only its best line and the two around it, so a budget buys
breadth. Hits are added in rank order while their JSON rows fit the budget; the first one that does
not stops the answer (the ones after it are "left out"), except that the first hit is always there,
cut to fit. Tokens are estimated as the answer module does (one per three characters, which
over-counts code for the usual BPE vocabularies).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aide_tui.core.search.hitlines import hit_best_line
from aide_tui.core.search.response import Hit
from aide_tui.core.tokens import estimate_tokens

PIECE_LINES = 30  # a best piece up to this long is shown whole
BEFORE, AFTER = 3, 12  # else the window: lines before and after the best line
REPEAT_CONTEXT = 1  # a file's later hits: lines on each side of the best line
MIN_LINES = 3  # the first hit, cut to fit a tiny budget, keeps at least its best line and two more


@dataclass
class Budgeted:
    """The rows that fit, their estimated tokens, and how many hits were left out."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    left_out: int = 0


def _window(hit: Hit, repeat: bool) -> tuple[int, int, int]:
    """(first line, last line, best line) of what is shown of ``hit``."""
    best = hit_best_line(hit).line
    if repeat:
        lo, hi = best - REPEAT_CONTEXT, best + REPEAT_CONTEXT
    elif hit.best_piece and MIN_LINES <= hit.best_piece[1] - hit.best_piece[0] + 1 <= PIECE_LINES:
        lo, hi = hit.best_piece
    else:
        lo, hi = best - BEFORE, best + AFTER
    return max(lo, hit.start_line), min(hi, hit.end_line), best


def _lines(hit: Hit, lo: int, hi: int) -> str:
    return "\n".join(hit.text.split("\n")[lo - hit.start_line : hi - hit.start_line + 1])


def trimmed_row(hit: Hit, lo: int, hi: int, best: int) -> dict[str, Any]:
    """The result row of ``hit`` showing lines ``lo``..``hi``."""
    row: dict[str, Any] = {
        "path": hit.path, "start_line": lo, "end_line": hi, "best_line": best, "symbol": hit.symbol,
        "score": round(hit.score, 6), "text": _lines(hit, lo, hi),
        "truncated": (lo, hi) != (hit.start_line, hit.end_line),
    }  # fmt: skip
    if hit.workspace:
        row["workspace"] = hit.workspace
    return row


def row_tokens(row: dict[str, Any]) -> int:
    """Estimated tokens of a row as an agent receives it (its JSON)."""
    return estimate_tokens(json.dumps(row, ensure_ascii=False))


def fit(hits: Sequence[Hit], max_tokens: int) -> Budgeted:
    """The hits that fit ``max_tokens``, in rank order (see the module docstring)."""
    out = Budgeted()
    seen: set[tuple[str, str]] = set()
    for i, hit in enumerate(hits):
        key = (hit.workspace, hit.path)
        lo, hi, best = _window(hit, key in seen)
        row = trimmed_row(hit, lo, hi, best)
        cost = row_tokens(row)
        if out.tokens + cost > max_tokens:
            if i == 0:
                row, cost = _cut_to_fit(hit, lo, hi, best, max_tokens)
            else:
                out.left_out = len(hits) - i
                break
        out.rows.append(row)
        out.tokens += cost
        seen.add(key)
    return out


def _cut_to_fit(hit: Hit, lo: int, hi: int, best: int, budget: int) -> tuple[dict[str, Any], int]:
    """The first hit cut to its best line and as many lines after it as fit (at least MIN_LINES)."""
    lo = max(lo, best - 1)
    row = trimmed_row(hit, lo, min(hi, lo + MIN_LINES - 1), best)
    for end in range(hi, lo + MIN_LINES - 1, -1):
        cand = trimmed_row(hit, lo, end, best)
        if row_tokens(cand) <= budget:
            row = cand
            break
    return row, row_tokens(row)


def budgeted_json(resp: Any, max_tokens: int, limit: int | None = None) -> dict[str, Any]:
    """A response's JSON (``SearchResponse.to_json``) with its first ``limit`` hits fitted to
    ``max_tokens``: the rows carry their shown text, and the answer says the tokens used and the hits
    left out."""
    out: dict[str, Any] = resp.to_json()
    hits = resp.results if limit is None else resp.results[:limit]
    fitted = fit(hits, max_tokens)
    for row, hit in zip(fitted.rows, hits, strict=False):
        row["ranks"] = hit.ranks
    out["results"] = fitted.rows
    out.update(max_tokens=max_tokens, tokens_used=fitted.tokens, left_out=fitted.left_out)
    return out
