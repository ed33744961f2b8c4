"""What a search answers: result rows (hits) and the response around them (the CLI contract's JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aide_tui.core.tokens import tokenize


@dataclass
class Hit:
    """One result row: a chunk with its fused score, per-list ranks and why it matched.

    ``workspace`` is set for a search over every workspace of a shared collection; ``root`` (where that
    workspace was indexed, never serialised) and ``file_hash`` (the file's sha1 as indexed) let a front
    end read another workspace's file only when it is on this machine with the bytes that were indexed.
    """

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None
    language: str
    ranks: dict[str, int | None]
    query_terms: list[str] = field(default_factory=list)
    text: str = ""
    best_piece: tuple[int, int] | None = None  # lines of the dense piece that ranked this chunk
    workspace: str = ""
    root: str = ""
    file_hash: str = ""

    def matched_terms(self) -> list[str]:
        """Query terms that occur in this chunk's code or path (for the "why" line)."""
        return sorted(set(self.query_terms) & set(tokenize(f"{self.text} {self.path}")))

    def to_json(self) -> dict[str, object]:
        """The contract's result object (plus ``workspace`` for a search over several workspaces)."""
        out: dict[str, object] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "symbol": self.symbol,
            "ranks": self.ranks,
        }
        if self.workspace:
            out["workspace"] = self.workspace
        return out


@dataclass
class SearchResponse:
    """Results of one query plus whether the dense side was unavailable."""

    query: str
    results: list[Hit]
    degraded: bool = False
    degraded_reason: str | None = None
    took_ms: float = 0.0
    mode: str = "hybrid"
    vectors_missing: int = 0  # dense pieces of the searched version still without a vector
    static_missing: int = 0  # chunks of the searched version without a static-tier vector
    error: str | None = None  # the query could not be understood (unknown lang:): show it, no results
    rerank: str | None = None  # reranking on: "ok" or "degraded: <reason>" (see rerank.py)
    no_results: str | None = None  # why nothing answers a query nothing supports (hybrid), with a hint
    confidence: str | None = None  # high / medium / low for the first hit (see confidence.py)
    hints: list[dict[str, object]] = field(default_factory=list)  # up to three ways to refine the query
    corrected: str | None = None  # the query with its typos fixed, as the keyword lists read it
    read_as: str | None = None  # what a short question about one name was read as ("uses of send")

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "took_ms": round(self.took_ms, 3),
            "vectors_missing": self.vectors_missing,
            "static_missing": self.static_missing,
            "results": [h.to_json() for h in self.results],
        }
        if self.error is not None:
            out["error"] = self.error
        if self.rerank is not None:
            out["rerank"] = self.rerank
        if self.no_results is not None:
            out["no_results"] = self.no_results
        if self.corrected is not None:
            out["corrected"] = self.corrected
        if self.read_as is not None:
            out["read_as"] = self.read_as
        if self.confidence is not None:
            out["confidence"] = self.confidence
            out["hints"] = self.hints
        return out
