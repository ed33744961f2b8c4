"""Reciprocal Rank Fusion of several ranked lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    """One fused item: its RRF score and its 1-based rank in each list that contained it."""

    doc: int
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    lists: Mapping[str, Sequence[int]], k: float = 20.0, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """Fuse ranked lists: score(d) = Σ weight_list / (k + rank_list(d)); ties broken by best rank, then id."""
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
    return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.doc))
