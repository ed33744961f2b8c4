"""Reciprocal Rank Fusion of several ranked lists."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_K = 10.0  # the search default (settings.search.rrf_k)


@dataclass
class Fused:
    """One fused item: its RRF score and its 1-based rank in each list that contained it."""

    doc: Hashable  # a row number or id, meaningful to the retriever that found it
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    lists: Mapping[str, Sequence[Hashable]],
    k: float = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
    order: Callable[[Hashable], object] | None = None,
) -> list[Fused]:
    """Fuse ranked lists: score(d) = Σ weight_list / (k + rank_list(d)).

    Ties break by best rank, then by ``order(doc)`` (path and line, so two indexes that number their
    rows differently answer alike; it must be unique), else by the doc itself.
    """
    items: dict[Hashable, Fused] = {}
    for name, docs in lists.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, doc in enumerate(docs, start=1):
            item = items.get(doc)
            if item is None:
                item = items[doc] = Fused(doc, 0.0)
            if name in item.ranks:
                continue
            item.ranks[name] = rank
            if w > 0:
                item.score += w / (k + rank)
    if order is None:
        return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.doc))  # type: ignore[operator]
    return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), order(f.doc)))
