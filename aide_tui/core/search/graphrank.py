"""What ranking takes from the symbol graph: files one hop from the best files, and a centrality prior
over the graph of imports and calls (each measured, kept for short prose; see docs/quality.md).

- **Hops** (LocAgent's lever): the files the best few files import (resolved against the indexed files)
  and the files defining the functions they call (names with at most ``MAX_CALL_DEFS`` definitions);
  each neighbour's best BM25 chunk joins the ranking as one more list, the files more of the best
  files link to first.
- **Centrality**: PageRank over the files and their links (store/centrality.py, stored with the
  version by the indexer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aide_tui.core.search.retriever import K, Retrieval, SymbolGraph
from aide_tui.core.store.centrality import MAX_CALL_DEFS, FileIndex, file_rank, links, resolve_import

__all__ = ["MAX_CALL_DEFS", "FileIndex", "file_rank", "hop_list", "links", "neighbours", "resolve_import"]


# -- hops -------------------------------------------------------------------------------------------


def neighbours(g: SymbolGraph, files: FileIndex, sources: Sequence[str]) -> dict[str, float]:
    """Files one hop from ``sources`` (imported by one, or defining what one calls), each with the
    number of sources that link to it; the sources themselves are left out."""
    out: dict[str, float] = {}
    for src in sources:
        for p in links(g, files, src):
            out[p] = out.get(p, 0.0) + 1.0
    for src in sources:
        out.pop(src, None)
    return out


def hop_list(q: Retrieval[K], near: Mapping[str, float], limit: int) -> list[K]:
    """Each neighbour file's best BM25 chunk (files without a matching word are left out): files more
    of the best files link to first, then by score."""
    if not near:
        return []
    best: dict[str, K] = {}
    for k in q.in_files(set(near), limit):
        p = q.path(k)
        if p not in best or q.score(k) > q.score(best[p]):
            best[p] = k
    keys = list(best.values())
    keys.sort(key=lambda k: (-near[q.path(k)], -q.score(k), q.order(k)))
    return keys[:limit]
