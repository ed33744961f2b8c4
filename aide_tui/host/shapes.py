"""JSON shapes shared by ``serve`` and ``mcp``: a search answer with (trimmed) chunk texts for agents."""

from __future__ import annotations

from typing import Any

from aide_tui.core.search.response import SearchResponse

TEXT_LINES = 40  # lines of chunk text an agent gets per result (read_span has the rest)
TEXT_CHARS = 2000


def trim(text: str, lines: int = TEXT_LINES, chars: int = TEXT_CHARS) -> tuple[str, bool]:
    """The first ``lines`` lines and ``chars`` characters of ``text``, and whether anything was cut."""
    kept = text.split("\n")[:lines]
    out = "\n".join(kept)[:chars]
    return out, out != text


def search_json(resp: SearchResponse, with_text: bool) -> dict[str, Any]:
    """One ``search --json`` line (a SearchResponse's ``to_json``); ``with_text`` adds each result's chunk
    text, trimmed, and ``truncated`` (an extension that only ``mcp`` asks for): a trimmed row's
    ``end_line`` is then the last line its text holds (all of it, or the part :func:`trim` kept)."""
    out: dict[str, Any] = resp.to_json()
    if with_text:
        for row, hit in zip(out["results"], resp.results, strict=True):
            row["text"], row["truncated"] = trim(hit.text)
            row["end_line"] = min(hit.end_line, hit.start_line + row["text"].count("\n"))
    return out
