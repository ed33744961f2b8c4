"""What ranking takes from the symbol graph: files one hop from the best files, and a centrality prior
over the graph of imports and calls (each measured, kept for short prose; see docs/quality.md).

- **Hops** (LocAgent's lever): the files the best few files import (resolved against the indexed files)
  and the files defining the functions they call (names with at most ``MAX_CALL_DEFS`` definitions);
  each neighbour's best BM25 chunk joins the ranking as one more list, the files more of the best
  files link to first.
- **Centrality**: PageRank over the files and their links (store/centrality.py, stored with the
  version by the indexer).
- **Sources of prose and tests**: a docs page, changelog, example or test among the first hits repeats
  the words of a change description without being the file to edit; the source files it describes
  (the files a test imports or calls into, the files defining the names a page mentions) join the
  ranking as one more list, those the better-ranked such hits point at first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from aide_tui.core.search.query import CODE_LIKE
from aide_tui.core.search.retriever import K, Retrieval, SymbolGraph
from aide_tui.core.store.centrality import MAX_CALL_DEFS, FileIndex, file_rank, links, resolve_import
from aide_tui.core.tokens import STOPWORDS, identifiers

MAX_PAGE_NAMES = 40  # code-like names of one prose hit looked up as definitions
_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")

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


# -- sources of prose and tests ---------------------------------------------------------------------


def page_names(text: str) -> list[str]:
    """The code names a prose chunk mentions: its backticked words and its code-like identifiers
    (``Client.send``, ``trust_env``), each once, the last dotted part too, at most MAX_PAGE_NAMES."""
    words = [w for span in _BACKTICKED.findall(text) for w in identifiers(span)]
    words += [w for w in identifiers(text) if CODE_LIKE.search(w) and not w[:1].isdigit()]
    out: dict[str, None] = {}
    for w in words:
        for name in (w, w.rsplit(".", 1)[-1]):
            if len(name) >= 3 and name.lower() not in STOPWORDS:
                out.setdefault(name)
    return list(out)[:MAX_PAGE_NAMES]


def described_files(
    g: SymbolGraph,
    files: FileIndex,
    pointers: Sequence[tuple[int, str, str, bool]],
    is_source: Callable[[str], bool],
) -> dict[str, float]:
    """Source files described by ``pointers``: (file rank, path, chunk text, is a test) of the
    non-source hits. A test points at the files it imports or calls into; a docs page, changelog or
    example at the files defining the names it mentions (names defined in at most MAX_CALL_DEFS files).
    A pointer at file rank i gives 1/i, split over the files it points at; a file that is itself a
    pointer is left out."""
    out: dict[str, float] = {}
    for i, path, text, is_test in pointers:
        if is_test:
            targets = [p for p in links(g, files, path) if is_source(p)]
        else:
            defined = g.definition_paths(page_names(text))
            targets = list(dict.fromkeys(p for where in defined.values()
                                         if 0 < len(where) <= MAX_CALL_DEFS for p in sorted(where)
                                         if is_source(p)))  # fmt: skip
        for p in targets:
            out[p] = out.get(p, 0.0) + 1.0 / (i * len(targets))
    for _, path, _, _ in pointers:
        out.pop(path, None)
    return out
