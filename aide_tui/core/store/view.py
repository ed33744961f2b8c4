"""A consistent, read-only view of one index version, the only thing ranking code talks to.

An index version is a list of immutable segments (a base plus small deltas, see store.py). A chunk
row of an older segment is dead when a newer segment replaced its file or the file was deleted.
Rows of all segments are numbered one after the other ("global rows"); dead rows never score.
Per-segment work (postings, symbol tables) is cached on the :class:`Part` and reused by the next
view, so picking up a one-file delta costs what the delta holds.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from aide_tui.core.bm25 import MultiBM25, Postings
from aide_tui.core.errors import VectorDimensionMismatch
from aide_tui.core.model import Chunk
from aide_tui.core.safeio import gather_rows, mapped_row_windows
from aide_tui.core.store.chunktable import ConcatChunks, defines_all, paths_of
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.graphview import GraphView
from aide_tui.core.store.lexicon import PREFIX_END, Lexicon
from aide_tui.core.store.version_meta import VersionStamp


@dataclass
class VectorBlock:
    """Vectors of some pieces of one part: ``rows`` are the part's piece rows (None = all rows, with
    ``present`` telling which have a vector)."""

    matrix: np.ndarray  # (r, dim) float32, possibly memory-mapped
    rows: np.ndarray | None = None
    present: np.ndarray | None = None

    def piece_rows(self) -> np.ndarray:
        """The part-local piece row of each matrix row that holds a vector."""
        if self.rows is not None:
            return self.rows
        return np.flatnonzero(self.present) if self.present is not None else np.arange(len(self.matrix))

    def projected(self, projection: np.ndarray) -> np.ndarray:
        """``matrix @ projection``, computed once per projection and kept with the (immutable) block."""
        cached = self.__dict__.get("_projected")
        if cached is None or cached[0] is not projection:
            out = np.empty((len(self.matrix), projection.shape[1]), np.float32)
            for rows in mapped_row_windows(self.matrix):  # a mapped file is not left resident
                out[rows] = self.matrix[rows] @ projection
            cached = (projection, out)
            self.__dict__["_projected"] = cached
        return cached[1]


@dataclass
class Part:
    """One immutable segment as a reader holds it, with its derived lookups."""

    name: str
    chunks: Sequence[Chunk]  # a ChunkTable (decoded on access) when loaded from disk
    postings: Postings  # BM25 over chunks
    piece_postings: Postings  # BM25 over dense pieces
    owners: np.ndarray  # (p,) int64: part-local chunk row of each piece
    blocks: list[VectorBlock] = field(default_factory=list)
    block_names: list[str] = field(default_factory=list)
    piece_spans: np.ndarray | None = None  # (p, 2) int: first and last file line of each piece
    graph: GraphTable = field(default_factory=GraphTable)  # the symbol graph of the segment's files

    def with_blocks(self, blocks: list[VectorBlock], names: list[str]) -> Part:
        """The same segment with another set of vector blocks (derived lookups are kept)."""
        part = Part(self.name, self.chunks, self.postings, self.piece_postings, self.owners, blocks, names,
                    self.piece_spans, self.graph)  # fmt: skip
        for cached in ("symbols", "sorted_names", "path_names", "path_ids", "start_lines", "_projection"):
            if cached in self.__dict__:
                part.__dict__[cached] = self.__dict__[cached]
        return part

    @cached_property
    def start_lines(self) -> np.ndarray:
        """(n,) int: each chunk's first line."""
        return np.fromiter(
            (_start(self.chunks, i) for i in range(len(self.chunks))), np.int64, len(self.chunks)
        )

    @cached_property
    def path_names(self) -> list[str]:
        """Distinct file paths of this part's chunks."""
        return list(dict.fromkeys(paths_of(self.chunks)))

    @cached_property
    def path_ids(self) -> np.ndarray:
        """(n,) int: each chunk's index into ``path_names``."""
        index = {p: i for i, p in enumerate(self.path_names)}
        return np.fromiter((index[p] for p in paths_of(self.chunks)), np.int64, len(self.chunks))

    @cached_property
    def symbols(self) -> dict[str, list[int]]:
        """Lower-cased defined name → part-local chunk rows."""
        out: dict[str, list[int]] = {}
        for i, names in enumerate(defines_all(self.chunks)):
            for name in names:
                out.setdefault(name.lower(), []).append(i)
        return out

    @cached_property
    def sorted_names(self) -> list[str]:
        """The lower-cased defined names in sorted order (prefix lookups)."""
        return sorted(self.symbols)

    def projection(self, dim: int) -> np.ndarray:
        """The prefilter's projection, learnt once from this part's vectors (kept while the part lives)."""
        cached = self.__dict__.get("_projection")
        if cached is None or cached.shape[0] != dim:
            sample = self._sample(20_000, dim)
            cached = (
                pca_projection(sample, min(PREFILTER_DIM, dim))
                if len(sample)
                else np.eye(dim, dtype=np.float32)
            )
            self.__dict__["_projection"] = cached
        return cached

    def _sample(self, k: int, dim: int) -> np.ndarray:
        """Up to ``k`` of this part's vectors (all blocks' rows in order, a seeded sorted draw), gathered
        window by window so that a memory-mapped block is never resident as a whole."""
        sources = [b.piece_rows() if b.rows is None else np.arange(len(b.matrix)) for b in self.blocks]
        total = sum(len(s) for s in sources)
        pick = np.arange(total)
        if total > k:
            pick = np.sort(np.random.default_rng(0).choice(total, k, replace=False))
        out, start = [], 0
        for b, src in zip(self.blocks, sources, strict=True):
            lo, hi = np.searchsorted(pick, [start, start + len(src)])
            rows = src[pick[lo:hi] - start]  # ascending matrix rows
            start += len(src)
            out.append(np.asarray(gather_rows(b.matrix, rows), np.float32))
        return np.concatenate(out) if out else np.zeros((0, dim), np.float32)

    def has_vector(self) -> np.ndarray:
        """(p,) bool: pieces with a vector in some block."""
        out = np.zeros(len(self.owners), bool)
        for b in self.blocks:
            out[b.piece_rows()] = True
        return out


PREFILTER_MIN = 60_000  # live vectors from which queries prefilter in a projected space
PREFILTER_DIM = 64
PREFILTER_CANDIDATES = 2048


def pca_projection(sample: np.ndarray, k: int) -> np.ndarray:
    """(dim, k) orthonormal projection onto the top-``k`` principal directions of ``sample`` (uncentred:
    inner products are what the prefilter approximates)."""
    cov = (sample.T @ sample).astype(np.float64)
    vals, vecs = np.linalg.eigh(cov)
    return np.ascontiguousarray(vecs[:, np.argsort(vals)[::-1][:k]], np.float32)


class IndexView:
    """Parts plus their liveness, the files they hold and the statistics queries need."""

    def __init__(
        self,
        parts: list[Part],
        alive: list[np.ndarray | None],
        files: Mapping[str, Any],
        vocab: dict[str, int],
        stamp: VersionStamp | None = None,
    ) -> None:
        self.parts = parts
        self.alive = alive
        self.files = files
        self.vocab = vocab
        self.stamp = stamp or VersionStamp()
        self.offsets = np.cumsum([0] + [len(p.chunks) for p in parts]).tolist()
        self.piece_offsets = np.cumsum([0] + [len(p.owners) for p in parts]).tolist()
        self.chunks: Sequence[Chunk] = ConcatChunks([p.chunks for p in parts])
        self.bm25 = MultiBM25([p.postings for p in parts], alive, vocab)
        self.piece_bm25 = MultiBM25([p.piece_postings for p in parts], self._piece_alive(), vocab)
        self.owners = np.concatenate(
            [p.owners + off for p, off in zip(parts, self.offsets, strict=False)] or [np.zeros(0, np.int64)]
        ).astype(np.int64)
        self._lexicon: Lexicon | None = None  # sorted terms, built on the first prefix lookup
        self._lexicon_base: Lexicon | None = None  # an earlier version's, grown into this one's

    def _piece_alive(self) -> list[np.ndarray | None]:
        return [None if a is None else a[p.owners] for p, a in zip(self.parts, self.alive, strict=True)]

    def warm(self) -> None:
        """Build the lookups the first query would otherwise pay for (call it where loading happens)."""
        for part in self.parts:
            _ = part.symbols
        _ = self.path_parts, self.row_order, self.paths

    # -- rows --------------------------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return len(self.chunks)

    @cached_property
    def alive_mask(self) -> np.ndarray:
        """(n_rows,) bool over global rows."""
        return np.concatenate(
            [
                np.ones(len(p.chunks), bool) if a is None else a
                for p, a in zip(self.parts, self.alive, strict=True)
            ]
            or [np.zeros(0, bool)]
        )

    @cached_property
    def paths(self) -> list[str]:
        """The file path of every global row (cheap: no chunk is decoded)."""
        return [p for part in self.parts for p in paths_of(part.chunks)]

    @cached_property
    def row_order(self) -> np.ndarray:
        """(n_rows,) int: a row's position when rows are sorted by (path, start line).

        Ties in any ranking break on this, so an incrementally updated index and a rebuilt one
        answer in the same order whatever their row numbering. Built from per-part arrays (cached
        with each part) and one sort of the file names, so a reload after an edit stays cheap.
        """
        names = sorted({n for part in self.parts for n in part.path_names})
        rank = {n: i for i, n in enumerate(names)}
        path_rank = np.concatenate(
            [np.asarray([rank[n] for n in part.path_names], np.int64)[part.path_ids] for part in self.parts]
            or [np.zeros(0, np.int64)]
        )
        starts = np.concatenate([part.start_lines for part in self.parts] or [np.zeros(0, np.int64)])
        keys = np.lexsort((starts, path_rank))
        order = np.empty(self.n_rows, np.int64)
        order[keys] = np.arange(self.n_rows)
        return order

    # -- lexical -----------------------------------------------------------------------------------

    def idf(self, term: str) -> float | None:
        """The term's BM25 idf, or None when no live chunk contains it."""
        tid = self.vocab.get(term)
        return None if tid is None or tid >= len(self.bm25.idf) else float(self.bm25.idf[tid])

    def adopt_lexicon(self, previous: IndexView | None) -> None:
        """Start from ``previous``'s sorted terms (when it built them): this version's are then those plus
        the terms its new segments added, not a new sort of the whole vocabulary."""
        if previous is not None:
            self._lexicon_base = previous._lexicon or previous._lexicon_base

    @property
    def lexicon(self) -> Lexicon:
        """The vocabulary sorted (built once per version, grown from the previous version's)."""
        lex = self._lexicon
        if lex is None:
            key, base = self.stamp.vocab_key, self._lexicon_base
            if base is not None and key and base.extends_to(key, len(self.vocab)):
                lex = base.grown(self.vocab, key)
            else:
                lex = Lexicon.build(self.vocab, key)
            self._lexicon, self._lexicon_base = lex, None
        return lex

    def letter_trigrams(self) -> frozenset[str]:
        """The letter trigrams of the vocabulary's words (see core/wordshape.py)."""
        return self.lexicon.trigrams()

    def prefix_terms(self, prefix: str, cap: int, compounds: bool = True) -> list[tuple[str, int]]:
        """Up to ``cap`` terms that start with ``prefix`` and occur in a live chunk, the most frequent
        first (ties by term), with their document frequencies; ``compounds`` False leaves out whole
        identifiers (``timeout.read``, ``proxy_url``: their parts are terms of their own)."""
        lex = self.lexicon
        lo, hi = lex.span(prefix)
        if lo >= hi or cap <= 0:
            return []
        freq = self.bm25.df[lex.ids[lo:hi]]  # every id is below len(vocab) == len(df)
        keep = freq > 0 if compounds else (freq > 0) & ~lex.compound[lo:hi]
        live = np.flatnonzero(keep)
        if live.size > cap:  # keep every term tied with the cut, so the choice never depends on ids
            cut = np.partition(-freq[live], cap - 1)[cap - 1]
            live = live[-freq[live] <= cut]
        order = live[np.lexsort((live, -freq[live]))][:cap]  # positions follow the sorted terms
        return [(lex.terms[lo + int(p)], int(freq[p])) for p in order]

    def defined_names(self, prefix: str, cap: int) -> list[str]:
        """Up to ``cap`` lower-cased names that a live chunk defines and that start with ``prefix``, the
        shortest first (the closest to what is typed; ties by name)."""
        found: set[str] = set()
        for part in self.parts:
            names = part.sorted_names
            lo = bisect_left(names, prefix)
            found.update(names[lo : bisect_left(names, prefix + PREFIX_END, lo)])
        out: list[str] = []
        for name in sorted(found, key=lambda n: (len(n), n)):
            if len(out) >= cap:
                break
            if self.symbol_rows(name):
                out.append(name)
        return out

    def bm25_scores(self, terms: Iterable[str], weights: dict[str, float] | None = None) -> np.ndarray:
        """(n_rows,) float32 BM25 scores over chunks (0 for dead rows and non-matches)."""
        return self.bm25.scores(terms, weights)

    def piece_ranked(
        self,
        terms: list[str],
        n: int,
        weights: dict[str, float] | None = None,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, tuple[int, int] | None]]:
        """Chunk rows ranked by their best piece's BM25 score, at most ``n``, each with the line span of
        that piece (what the hit's best line follows).

        ``allowed`` ((n_rows,) bool) keeps only those chunk rows before the top ``n`` is taken; ties
        break by :attr:`row_order`.
        """
        scores = self.piece_bm25.scores(terms, weights)
        if allowed is not None and scores.size:
            scores = np.where(allowed[self.owners], scores, 0.0)
        best = self._best_owners(scores, np.arange(scores.size), n)
        return [(r, self.piece_lines(p)) for r, p in best.items()]

    def _best_owners(self, scores: np.ndarray, piece_ids: np.ndarray, n: int) -> dict[int, int]:
        """Owner chunk rows of the best-scoring pieces (score > 0), distinct, at most ``n``, each with
        its best piece (in rank order); ties by :attr:`row_order`."""
        positive = np.flatnonzero(scores > 0)
        if positive.size == 0 or n <= 0:
            return {}
        vals = scores[positive]
        if positive.size > 4 * n:  # keep every piece tied with the cut, so ties never depend on row ids
            cut = np.partition(-vals, 4 * n - 1)[4 * n - 1]
            keep = -vals <= cut
            positive, vals = positive[keep], vals[keep]
        owners = self.owners[piece_ids[positive]]
        order = np.lexsort((self.row_order[owners], -vals))
        best: dict[int, int] = {}
        for o, piece in zip(owners[order].tolist(), piece_ids[positive][order].tolist(), strict=True):
            if o not in best:
                best[o] = piece
                if len(best) >= n:
                    break
        return best

    def dense_ranked(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[list[tuple[int, tuple[int, int] | None]], float | None]:
        """Like :meth:`dense_ranked_chunks`, with the line span of each chunk's best piece; and the
        highest similarity of any piece (None when no vector is searched)."""
        best, top = self._dense_best(query, n, allowed)
        return [(r, self.piece_lines(p)) for r, p in best.items()], top

    def piece_lines(self, piece: int) -> tuple[int, int] | None:
        """(first, last) file line of a global piece row, when its segment records them."""
        k = bisect_right(self.piece_offsets, piece) - 1
        part = self.parts[k]
        if part.piece_spans is None:
            return None
        s, e = part.piece_spans[piece - self.piece_offsets[k]]
        return int(s), int(e)

    def symbol_rows(self, name: str) -> list[int]:
        """Live global rows of chunks defining ``name`` (case-insensitive)."""
        key = name.lower()
        out: list[int] = []
        for part, live, off in zip(self.parts, self.alive, self.offsets, strict=False):
            for r in part.symbols.get(key, ()):
                if live is None or live[r]:
                    out.append(off + r)
        return out

    @cached_property
    def graph(self) -> GraphView:
        """The symbol graph of this version's live files."""
        return GraphView([p.graph for p in self.parts], self.files)

    @cached_property
    def rows_by_path(self) -> dict[str, list[int]]:
        """Live global rows of each file, in line order."""
        out: dict[str, list[int]] = {}
        for r in np.flatnonzero(self.alive_mask).tolist():
            out.setdefault(self.paths[r], []).append(r)
        for rows in out.values():
            rows.sort(key=lambda r: _start(self.chunks, r))
        return out

    def line_text(self, path: str, line: int) -> str | None:
        """The indexed text of a file's line (secrets masked); None when no live chunk holds it."""
        rows = self.rows_by_path.get(path, [])
        starts = [_start(self.chunks, r) for r in rows]
        k = bisect_right(starts, line) - 1
        if k < 0:
            return None
        c = self.chunks[rows[k]]
        if line > c.end_line:
            return None
        return c.text.split("\n")[line - c.start_line]

    @cached_property
    def path_parts(self) -> dict[str, set[str]]:
        """Folder name, file name or stem (lower case) → files."""
        out: dict[str, set[str]] = {}
        for p in self.files:
            parts = p.lower().split("/")
            stem = parts[-1].rsplit(".", 1)[0]
            for part in {*parts[:-1], stem, parts[-1]}:
                out.setdefault(part, set()).add(p)
        return out

    # -- dense -------------------------------------------------------------------------------------

    @property
    def embedder(self) -> str:
        return self.stamp.meta.embedder or "none"

    @cached_property
    def vector_count(self) -> int:
        """Live pieces that have a vector."""
        total = 0
        for part, live in zip(self.parts, self._piece_alive(), strict=True):
            has = part.has_vector()
            total += int(has.sum() if live is None else (has & live).sum())
        return total

    def dense_ranked_chunks(self, query: np.ndarray, n: int, allowed: np.ndarray | None = None) -> list[int]:
        """Chunk rows ranked by their best piece's cosine similarity; see :meth:`_dense_best`."""
        return list(self._dense_best(query, n, allowed)[0])

    def _dense_best(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[dict[int, int], float | None]:
        """Chunk rows ranked by their best piece's cosine similarity (positive only), at most ``n``, and
        the highest similarity found (None: no vector to search).

        Small indexes are scanned exactly. From ``PREFILTER_MIN`` live vectors on, a low-dimensional
        projection (PCA of the base segment's vectors) picks ``PREFILTER_CANDIDATES`` candidates and
        only those are scored exactly (docs/benchmarks.md has the recall against exact search).
        ``allowed`` ((n_rows,) bool) keeps only those chunk rows, before the candidates and the top
        ``n`` are taken. Raises VectorDimensionMismatch when ``query`` does not fit the stored vectors.
        """
        q = np.asarray(query, np.float32)
        blocks = self._live_blocks()
        if not blocks:
            return {}, None
        dim = blocks[0][0].matrix.shape[1]
        if any(b.matrix.shape[1] != q.shape[0] for b, _, _ in blocks):
            raise VectorDimensionMismatch(
                f"the index holds {dim}-dimensional vectors but the embedder now gives {q.shape[0]}: "
                "run `aide-tui index` to re-embed"
            )
        total = sum(len(ids) for _, _, ids in blocks)
        if total >= PREFILTER_MIN:
            base = max(self.parts, key=lambda p: len(p.owners))
            proj = base.projection(dim)
            qp = q @ proj
            coarse = np.concatenate(
                [
                    (pr if keep.all() else pr[keep]) @ qp
                    for b, keep, _ in blocks
                    if (pr := b.projected(proj)) is not None
                ]
            )
            if allowed is not None:  # a filtered search picks its candidates among allowed rows only
                gids = np.concatenate([g for b, _, g in blocks if b.projected(proj) is not None])
                coarse = np.where(allowed[self.owners[gids]], coarse, -np.inf)
            k = min(PREFILTER_CANDIDATES, len(coarse))
            cand = np.sort(np.argpartition(-coarse, k - 1)[:k])
        else:
            cand = None
        mats, ids = [], []
        start = 0
        for b, keep, gids in blocks:
            local = np.flatnonzero(keep)
            if cand is not None:
                lo, hi = np.searchsorted(cand, [start, start + len(gids)])
                pick = cand[lo:hi] - start
                start += len(gids)
                local, gids = local[pick], gids[pick]
            if cand is not None:  # a few rows of a big (mapped) block, not left resident
                mats.append(gather_rows(b.matrix, local) @ q)
            else:
                mats.append(b.matrix[local] @ q if len(local) != len(keep) else b.matrix @ q)
            ids.append(gids)
        sims, all_ids = np.concatenate(mats).astype(np.float32, copy=False), np.concatenate(ids)
        if allowed is not None and sims.size:
            sims = np.where(allowed[self.owners[all_ids]], sims, 0.0)
        top = float(sims.max()) if sims.size else None  # rows outside ``allowed`` count as 0
        return self._best_owners(sims, all_ids, n), top

    def _live_blocks(self) -> list[tuple[VectorBlock, np.ndarray, np.ndarray]]:
        """(block, which of its matrix rows are live, their global piece ids) for every block."""
        cached: list[tuple[VectorBlock, np.ndarray, np.ndarray]] | None = self.__dict__.get("_blocks_cache")
        if cached is not None:
            return cached
        out = []
        for part, live, off in zip(self.parts, self._piece_alive(), self.piece_offsets, strict=False):
            for block in part.blocks:
                if block.matrix.shape[0] == 0:
                    continue
                rows = block.piece_rows()
                if block.rows is None:  # a full matrix with a presence mask
                    keep = np.zeros(len(block.matrix), bool)
                    keep[rows] = True if live is None else live[rows]
                    out.append((block, keep, np.flatnonzero(keep) + off))
                else:
                    keep = np.ones(len(rows), bool) if live is None else live[rows]
                    out.append((block, keep, rows[keep] + off))
        self.__dict__["_blocks_cache"] = out
        return out


def _start(chunks: Sequence[Chunk], i: int) -> int:
    start = getattr(chunks, "start_line", None)
    return int(start(i)) if start is not None else chunks[i].start_line
