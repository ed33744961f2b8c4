"""Reciprocal Rank Fusion of several ranked lists."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_K = 10.0  # the search default (settings.search.rrf_k)


@dataclass
class Fused:
    """One fused item: its RRF score and its 1-based rank in each list that contained it."""

    doc: int
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    lists: Mapping[str, Sequence[int]],
    k: float = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
    order: Callable[[int], object] | None = None,
) -> list[Fused]:
    """Fuse ranked lists: score(d) = Σ weight_list / (k + rank_list(d)).

    Ties break by best rank, then by ``order(doc)`` (e.g. path and line, so two indexes that number
    their rows differently answer alike), then by id.
    """
    items: dict[int, Fused] = {}
    for name, docs in lists.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, doc in enumerate(docs, start=1):
            item = items.get(int(doc))
            if item is None:
                item = items[int(doc)] = Fused(int(doc), 0.0)
            if name in item.ranks:
                continue
            item.ranks[name] = rank
            if w > 0:
                item.score += w / (k + rank)
    if order is None:
        return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.doc))
    return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), order(f.doc), f.doc))
