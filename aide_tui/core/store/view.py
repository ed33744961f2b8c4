"""A consistent, read-only view of one index version, the only thing ranking code talks to.

An index version is a list of immutable, self-contained segments (see segment_write.py), each opened
lazily as a :class:`~aide_tui.core.store.part.Part`. A chunk row of a segment is dead when a newer
segment holds its file or the file was deleted. Rows of all segments are numbered one after the other
("global rows"); dead rows never score. BM25 statistics (live document frequencies, the average
length) are those of one index holding only the live rows, computed for the query's terms alone; a
query reads the postings of its terms and the rows it shows, whatever the size of the index.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

import numpy as np

from aide_tui.core.bm25 import idf_of, okapi
from aide_tui.core.errors import VectorDimensionMismatch
from aide_tui.core.model import Chunk
from aide_tui.core.store.filetable import segment_of
from aide_tui.core.store.graphview import GraphView
from aide_tui.core.store.part import Field, Part, PartChunks, VectorBlock
from aide_tui.core.store.pathindex import PathIndex
from aide_tui.core.store.sketch import WORD_BITS, nearest, sketch
from aide_tui.core.store.version_meta import VersionStamp
from aide_tui.core.topk import best_positive, top_k

ORDER_OWN_KEYS = 4096  # rows from which order_of sorts the whole index's rows once instead
PREFILTER_MIN = 60_000  # live vectors from which queries prefilter in a projected space
PREFILTER_DIM = 64
PREFILTER_CANDIDATES = 2048  # transformer vectors: chunk recall@10 against exact search .985
# the static tier's candidates by sign sketch (sketch.py): chunk recall@10 against exact search .993 at 8,192
# (200 queries on the monorepo; a 64-dimension projection's best 4,096 held .965)
STATIC_SKETCH_CANDIDATES = 8192
# a one-shot reader (no projection, no sketch of its own) scans the static tier exactly below this many
# live vectors: 92k (SQLAlchemy's size) cost 20 ms exactly, 15 by sketch; the monorepo's 475k 80–100 ms,
# 48 by sketch (the first query of a process, checksums included). The eval's corpora keep exact answers
ONE_SHOT_SKETCH_MIN = 250_000
PREFIX_POOL = 4  # per segment, this many times the asked completions are gathered before merging


def pca_projection(sample: np.ndarray, k: int) -> np.ndarray:
    """(dim, k) orthonormal projection onto the top-``k`` principal directions of ``sample`` (uncentred:
    inner products are what the prefilter approximates)."""
    cov = (sample.T @ sample).astype(np.float64)
    vals, vecs = np.linalg.eigh(cov)
    return np.ascontiguousarray(vecs[:, np.argsort(vals)[::-1][:k]], np.float32)


@dataclass(frozen=True)
class _Found:
    """One segment's postings of some query terms, end to end: ``terms`` (indexes into the query's
    terms) each with ``counts`` postings, their documents and weighted tfs."""

    part: int
    terms: np.ndarray
    counts: np.ndarray
    docs: np.ndarray
    tfs: np.ndarray


HOLDING_PREFIX_TERMS = 512  # terms of a segment a quoted span's last word may start (see rows_holding)


def _live_counts(live: np.ndarray, docs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Live documents of each term whose ``counts`` postings lie end to end in ``docs``: a running
    count of the live postings, read at each term's end."""
    ends = np.cumsum(counts)
    live_so_far = np.concatenate(([0], np.cumsum(live[docs], dtype=np.int64)))
    got: np.ndarray = live_so_far[ends] - live_so_far[ends - counts]
    return got


class ConcatChunks(Sequence[Chunk]):
    """The parts' chunks read as one sequence (global rows)."""

    def __init__(self, parts: list[PartChunks], starts: list[int]) -> None:
        self._parts = parts
        self._starts = starts
        self._n = starts[-1] if starts else 0

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        k, local = self._locate(i)
        return self._parts[k][local]

    def __iter__(self) -> Iterator[Chunk]:
        for p in self._parts:
            yield from p

    def defines(self, i: int) -> tuple[str, ...]:
        """The names global row ``i``'s chunk defines (see :meth:`PartChunks.defines`)."""
        k, local = self._locate(i)
        return self._parts[k].defines(local)

    def _locate(self, i: int) -> tuple[int, int]:
        """(part, row within it) of global row ``i`` (negative: from the end)."""
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_right(self._starts, i) - 1
        return k, i - self._starts[k]


class Vocabulary:
    """Whether a term occurs in some segment of the version (``term in vocab``). It holds the version's
    segments, not the version: a version in a reference cycle outlives its last user until the next
    full collection (a monorepo version is some 100k objects)."""

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and any(p.term_ids([term])[0] >= 0 for p in self._parts)

    def __len__(self) -> int:
        return sum(p.terms.n for p in self._parts)


class IndexView:
    """Parts plus their liveness, the files they hold and the statistics queries need."""

    def __init__(
        self,
        parts: list[Part],
        alive: list[np.ndarray | None],
        files: Mapping[str, Any],
        stamp: VersionStamp | None = None,
    ) -> None:
        self.parts = parts
        self.alive = alive
        self.files = files
        self.stamp = stamp or VersionStamp()
        self.offsets: list[int] = np.cumsum([0] + [p.n_chunks for p in parts]).tolist()
        self.piece_offsets: list[int] = np.cumsum([0] + [p.n_pieces for p in parts]).tolist()
        self.chunks = ConcatChunks([PartChunks(p) for p in parts], self.offsets)
        self.vocab = Vocabulary(parts)
        self.prefilter = False  # set by a long-lived reader (warm_vectors): queries may prefilter

    def warm(self) -> None:
        """Open what the first query would otherwise pay for (call it where loading happens)."""
        for part in self.parts:
            _ = part.c_path, part.terms
        _ = self.alive_mask

    def warm_tables(self) -> None:
        """Build what a version's first queries derive from it (a long-lived reader calls it after
        loading, off the query path): the tie order, the path index, every row's path, each segment's
        graph tables and which of their files are live, and the tables a chunk's row reads
        (:meth:`Part.warm_rows`)."""
        _ = self.row_order, self.path_parts, self.owners, self.paths
        graph = self.graph
        for k, part in enumerate(self.parts):
            part.graph.warm()
            graph.live_paths(k)
            part.warm_rows()

    # -- rows --------------------------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return self.offsets[-1]

    def _part_of(self, row: int) -> tuple[int, int]:
        k = bisect_right(self.offsets, row) - 1
        return k, row - self.offsets[k]

    def path(self, row: int) -> str:
        """The file path of a global row (no chunk is decoded); from :attr:`paths` once a long-lived
        reader built it (:meth:`warm_tables`: a ranking asks a few hundred rows' paths)."""
        paths: list[str] | None = self.__dict__.get("paths")
        if paths is not None:
            return paths[row]
        k, i = self._part_of(row)
        return self.parts[k].path_of(i)

    def defines(self, row: int) -> tuple[str, ...]:
        """The names a global row's chunk defines (its metadata only: no text is decompressed)."""
        return self.chunks.defines(row)

    @cached_property
    def alive_mask(self) -> np.ndarray:
        """(n_rows,) bool over global rows."""
        return np.concatenate(
            [
                np.ones(p.n_chunks, bool) if a is None else a
                for p, a in zip(self.parts, self.alive, strict=True)
            ]
            or [np.zeros(0, bool)]
        )

    @cached_property
    def piece_alive(self) -> list[np.ndarray | None]:
        return [None if a is None else a[p.p_owner] for p, a in zip(self.parts, self.alive, strict=True)]

    @cached_property
    def owners(self) -> np.ndarray:
        """(pieces,) global chunk row of each global piece row."""
        return np.concatenate(
            [p.p_owner + off for p, off in zip(self.parts, self.offsets, strict=False)]
            or [np.zeros(0, np.int64)]
        ).astype(np.int64)

    @cached_property
    def paths(self) -> list[str]:
        """The file path of every global row (a list as long as the index: prefer :meth:`path`)."""
        return [p for part in self.parts for p in np.asarray(part.paths, object)[part.c_path].tolist()]

    @cached_property
    def row_order(self) -> np.ndarray:
        """(n_rows,) int: a row's position when rows are sorted by (path, start line).

        Ties in any ranking break on this, so an incrementally updated index and a rebuilt one answer in
        the same order whatever their row numbering.
        """
        names = sorted({n for part in self.parts for n in part.paths})
        rank = {n: i for i, n in enumerate(names)}
        path_rank = np.concatenate(
            [np.asarray([rank[n] for n in part.paths] or [0], np.int64)[part.c_path] for part in self.parts]
            or [np.zeros(0, np.int64)]
        )
        starts = np.concatenate([part.c_lines[:, 0] for part in self.parts] or [np.zeros(0, np.int64)])
        keys = np.lexsort((starts, path_rank))
        order = np.empty(self.n_rows, np.int64)
        order[keys] = np.arange(self.n_rows)
        return order

    def order_key(self, row: int) -> tuple[str, int, int]:
        """What :attr:`row_order` sorts a row by: (path, first line, row)."""
        k, i = self._part_of(row)
        part = self.parts[k]
        return part.path_of(i), int(part.c_lines[i, 0]), row

    def order_of(self, rows: np.ndarray) -> np.ndarray:
        """Values that order ``rows`` among themselves as :attr:`row_order` does. A few hundred rows
        (what a ranking breaks ties among) are ordered by their own keys, so a one-shot search does not
        sort the whole index's rows (30 ms on a 28k-file monorepo) for them."""
        full = self.__dict__.get("row_order")
        if full is None and len(rows) > ORDER_OWN_KEYS:
            full = self.row_order
        if full is not None:
            got: np.ndarray = full[rows]
            return got
        keys = sorted(range(len(rows)), key=lambda j: self.order_key(int(rows[j])))
        out = np.empty(len(rows), np.int64)
        out[keys] = np.arange(len(rows))
        return out

    def rows_of_files(self, files: Iterable[str]) -> np.ndarray:
        """Live global rows of these files (sorted)."""
        out: list[np.ndarray] = []
        for path in files:
            k = segment_of(self.files, path, -1)
            if 0 <= k < len(self.parts):
                out.append(self.parts[k].rows_of(path) + self.offsets[k])
        return np.sort(np.concatenate(out)) if out else np.zeros(0, np.int64)

    # -- lexical -----------------------------------------------------------------------------------

    def _field(self, part: Part, pieces: bool) -> Field:
        return part.piece_field if pieces else part.chunk_field

    def _stats(self, pieces: bool) -> tuple[int, float]:
        """(live documents, their average weighted length) of a field."""
        key = "_stats_p" if pieces else "_stats_c"
        got: tuple[int, float] | None = self.__dict__.get(key)
        if got is None:
            n, total = 0, 0.0
            alive = self.piece_alive if pieces else self.alive
            for part, live in zip(self.parts, alive, strict=True):
                dl = self._field(part, pieces).lengths
                if live is None:
                    n += len(dl)
                    total += float(dl.sum())
                else:
                    n += int(live.sum())
                    total += float(dl[live].sum())
            got = (n, total / n if n else 1.0)
            self.__dict__[key] = got
        return got

    def _postings(self, terms: list[str], pieces: bool) -> tuple[np.ndarray, list[_Found]]:
        """Live document frequency of each term, and each segment's postings of the terms it holds."""
        df = np.zeros(len(terms), np.int64)
        found: list[_Found] = []
        alive = self.piece_alive if pieces else self.alive
        for k, part in enumerate(self.parts):
            if not (part.n_pieces if pieces else part.n_chunks):
                continue
            tids = part.term_ids(terms)
            which = [j for j, tid in enumerate(tids) if tid >= 0]
            if not which:
                continue
            docs, tfs, counts = self._field(part, pieces).postings_of([tids[j] for j in which])
            if not docs.size:
                continue
            terms_at = np.asarray(which, np.int64)
            live = alive[k]
            df[terms_at] += counts if live is None else _live_counts(live, docs, counts)
            found.append(_Found(k, terms_at, counts, docs, tfs))
        return df, found

    def rows_holding(self, all_of: Sequence[str], any_of: Sequence[str] = (), prefix: str = "") -> np.ndarray:
        """Rows of the live chunks holding every term of ``all_of`` (an AND of their postings, the rarest
        first) and, when ``any_of`` or ``prefix`` is given, a term of ``any_of`` or one that starts with
        ``prefix`` (a prefix that more than ``HOLDING_PREFIX_TERMS`` terms of a segment start with
        does not narrow it there)."""
        out: list[np.ndarray] = []
        for k, part in enumerate(self.parts):
            if not part.n_chunks:
                continue
            docs = self._holding_all(part, all_of)
            if docs is not None and not docs.size:
                continue
            alt = [t for t in part.term_ids(list(any_of)) if t >= 0]
            lo, hi = part.terms.prefix_range(prefix) if prefix else (0, 0)
            if hi - lo <= HOLDING_PREFIX_TERMS and (any_of or prefix):
                got, _, _ = part.chunk_field.postings_of(alt + list(range(lo, hi)))
                docs = np.unique(got) if docs is None else np.intersect1d(docs, got)
            live = self.alive[k]
            if docs is None:
                docs = np.arange(part.n_chunks) if live is None else np.flatnonzero(live)
            elif live is not None:
                docs = docs[live[docs]]
            out.append(docs.astype(np.int64) + self.offsets[k])
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    @staticmethod
    def _holding_all(part: Part, terms: Sequence[str]) -> np.ndarray | None:
        """A segment's documents holding every one of ``terms`` (None: no term asked for)."""
        if not terms:
            return None
        tids = np.asarray(part.term_ids(list(terms)), np.int64)
        if bool((tids < 0).any()):
            return np.zeros(0, np.int64)
        docs: np.ndarray | None = None
        for tid in tids[np.argsort(part.chunk_field.df(tids), kind="stable")].tolist():
            got, _, _ = part.chunk_field.postings_of([tid])
            docs = got if docs is None else np.intersect1d(docs, got)
            if not docs.size:
                break
        return docs

    def live_df(self, terms: list[str]) -> np.ndarray:
        """Live document frequency of each term over chunks: a segment without dead rows gives its stored
        frequencies (no postings read), one with dead rows counts the live documents of each list."""
        df = np.zeros(len(terms), np.int64)
        for part, live in zip(self.parts, self.alive, strict=True):
            if not part.n_chunks:
                continue
            tids = np.asarray(part.term_ids(terms), np.int64)
            has = tids >= 0
            if live is None:
                df[has] += part.chunk_field.df(tids[has])
                continue
            docs, _, counts = part.chunk_field.postings_of(tids[has].tolist())
            df[has] += _live_counts(live, docs, counts)
        return df

    def _idf(self, df: np.ndarray, pieces: bool) -> np.ndarray:
        n, _ = self._stats(pieces)
        return idf_of(n, df)

    def idfs(self, terms: Sequence[str]) -> list[float | None]:
        """Each term's BM25 idf over chunks, or None when no live chunk contains it (the stored
        frequencies where a segment has no dead rows: no postings are read for them)."""
        if not terms:
            return []
        df = self.live_df(list(terms))
        idf = self._idf(df, False).tolist()
        return [w if d else None for w, d in zip(idf, df.tolist(), strict=True)]

    def _scores(self, terms: Iterable[str], weights: dict[str, float] | None, pieces: bool) -> np.ndarray:
        uniq = list(dict.fromkeys(terms))
        total = self.piece_offsets[-1] if pieces else self.n_rows
        out = np.zeros(total, np.float32)
        if not uniq or not total:
            return out
        df, found = self._postings(uniq, pieces)
        idf = self._idf(df, pieces)
        _, avgdl = self._stats(pieces)
        offsets = self.piece_offsets if pieces else self.offsets
        if weights:
            idf = idf * np.asarray([weights.get(t, 1.0) for t in uniq], np.float32)
        for f in found:
            dl = self._field(self.parts[f.part], pieces).lengths[f.docs]
            scores = okapi(f.tfs, dl, np.repeat(idf[f.terms], f.counts), avgdl)
            # unbuffered, in posting order: each document's terms added in query order, as one at a time
            np.add.at(out[offsets[f.part] : offsets[f.part + 1]], f.docs, scores)
        alive = self.piece_alive if pieces else self.alive
        for k, live in enumerate(alive):
            if live is not None:
                out[offsets[k] : offsets[k + 1]][~live] = 0.0
        return out

    def bm25_scores(self, terms: Iterable[str], weights: dict[str, float] | None = None) -> np.ndarray:
        """(n_rows,) float32 BM25 scores over chunks (0 for dead rows and non-matches)."""
        return self._scores(terms, weights, False)

    def piece_scores(self, terms: Iterable[str], weights: dict[str, float] | None = None) -> np.ndarray:
        """(pieces,) float32 BM25 scores over dense pieces."""
        return self._scores(terms, weights, True)

    def prefix_terms(self, prefix: str, cap: int, compounds: bool = True) -> list[tuple[str, int]]:
        """Up to ``cap`` terms that start with ``prefix`` and occur in a live chunk, the most frequent
        first (ties by term), with their live document frequencies; ``compounds`` False leaves out whole
        identifiers (``timeout.read``, ``proxy_url``: their parts are terms of their own). Name-field
        terms (``n:word``) are never completions."""
        if cap <= 0:
            return []
        pool: dict[str, int] = {}
        for part in self.parts:
            lo, hi = part.terms.prefix_range(prefix)
            if lo >= hi:
                continue
            stored = part.chunk_field.df(np.arange(lo, hi))
            want = min(hi - lo, PREFIX_POOL * cap)
            pick = np.arange(hi - lo)
            if len(pick) > want:  # the most frequent, with every term tied at the cut
                cut = np.partition(-stored, want - 1)[want - 1]
                pick = np.flatnonzero(-stored <= cut)
            for i, term in zip(pick.tolist(), part.terms.terms_at(lo + pick), strict=True):
                if ":" in term or (not compounds and ("." in term or "_" in term)):
                    continue
                pool[term] = pool.get(term, 0) + int(stored[i])
        if not pool:
            return []
        terms = sorted(pool, key=lambda t: (-pool[t], t))[: PREFIX_POOL * cap]
        df = self.live_df(terms)
        live = [(t, int(d)) for t, d in zip(terms, df.tolist(), strict=True) if d > 0]
        live.sort(key=lambda td: (-td[1], td[0]))
        return live[:cap]

    def defined_names(self, prefix: str, cap: int) -> list[str]:
        """Up to ``cap`` lower-cased names that a live chunk defines and that start with ``prefix``, the
        shortest first (the closest to what is typed; ties by name)."""
        if cap <= 0:
            return []
        found: set[str] = set()
        for part in self.parts:
            found.update(part.names_from(prefix))
        return self._live_names(sorted(found, key=lambda n: (len(n), n)), cap)

    def names_matching(self, prefix: str, needle: str, pattern: re.Pattern[str], cap: int) -> list[str]:
        """Up to ``cap`` lower-cased names that a live chunk defines, that start with ``prefix``, hold
        ``needle`` and that ``pattern`` matches whole, the shortest first (ties by name). Without a
        ``prefix`` (a pattern that starts with a wildcard) each segment's names are searched for
        ``needle`` (the monorepo's 223k: 0.2 s a query by regex over the list, a few ms this way)."""
        if cap <= 0:
            return []
        found: set[str] = set()
        for part in self.parts:
            names = part.names_from(prefix) if prefix else part.names_holding(needle)
            found.update(n for n in names if pattern.fullmatch(n))
        return self._live_names(sorted(found, key=lambda n: (len(n), n)), cap)

    def _live_names(self, ordered: list[str], cap: int) -> list[str]:
        """The first ``cap`` of ``ordered`` (lower-cased names) that a live chunk defines."""
        out: list[str] = []
        # asked ``cap`` names at a time (one lookup per segment for each batch, not for each name)
        for i in range(0, len(ordered), cap):
            batch = ordered[i : i + cap]
            rows = self.symbols_rows(batch)
            for name in batch:
                if rows[name.lower()]:
                    out.append(name)
                    if len(out) >= cap:
                        return out
        return out

    def letter_trigrams(self) -> frozenset[str]:
        """The letter trigrams of the vocabulary's words (see core/wordshape.py)."""
        got: frozenset[str] | None = self.__dict__.get("_trigrams")
        if got is None:
            grams: set[str] = set()
            for part in self.parts:
                grams |= part.trigrams
            got = self.__dict__["_trigrams"] = frozenset(grams)
        return got

    def piece_ranked(
        self,
        terms: list[str],
        n: int,
        weights: dict[str, float] | None = None,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, tuple[int, int] | None]]:
        """Chunk rows ranked by their best piece's BM25 score, at most ``n``, each with the line span of
        that piece (what the hit's best line follows). ``allowed`` ((n_rows,) bool) keeps only those
        chunk rows before the top ``n`` is taken; ties break by :attr:`row_order`."""
        scores = self.piece_scores(terms, weights)
        if allowed is not None and scores.size:
            scores = np.where(allowed[self.owners], scores, 0.0)
        best = self._best_owners(scores, np.arange(scores.size), n)
        return [(r, self.piece_lines(p)) for r, p in best.items()]

    def _best_owners(self, scores: np.ndarray, piece_ids: np.ndarray, n: int) -> dict[int, int]:
        """Owner chunk rows of the best-scoring pieces (score > 0), distinct, at most ``n``, each with
        its best piece (in rank order); ties by :attr:`row_order`."""
        if n <= 0:
            return {}
        positive, vals = best_positive(scores, 4 * n)
        if positive.size == 0:
            return {}
        owners = self.owners[piece_ids[positive]]
        order = np.lexsort((self.order_of(owners), -vals))
        best: dict[int, int] = {}
        for o, piece in zip(owners[order].tolist(), piece_ids[positive][order].tolist(), strict=True):
            if o not in best:
                best[o] = piece
                if len(best) >= n:
                    break
        return best

    def piece_lines(self, piece: int) -> tuple[int, int] | None:
        """(first, last) file line of a global piece row."""
        k = bisect_right(self.piece_offsets, piece) - 1
        s, e = self.parts[k].p_lines[piece - self.piece_offsets[k]]
        return int(s), int(e)

    def symbol_rows(self, name: str) -> list[int]:
        """Live global rows of chunks defining ``name`` (case-insensitive)."""
        return self.symbols_rows([name])[name.lower()]

    def symbols_rows(self, names: Sequence[str]) -> dict[str, list[int]]:
        """For each of ``names``, lower-cased: the live global rows of chunks defining it, segment by
        segment (one lookup per segment for all the names)."""
        keys = list(dict.fromkeys(n.lower() for n in names))
        out: dict[str, list[int]] = {k: [] for k in keys}
        for part, live, off in zip(self.parts, self.alive, self.offsets, strict=False):
            for key, rows in zip(keys, part.symbol_rows(keys), strict=True):
                if rows.size:
                    out[key].extend((off + (rows if live is None else rows[live[rows]])).tolist())
        return out

    @cached_property
    def graph(self) -> GraphView:
        """The symbol graph of this version's live files."""
        return GraphView([p.graph for p in self.parts], self.files)

    def line_text(self, path: str, line: int) -> str | None:
        """The indexed text of a file's line (secrets masked); None when no live chunk holds it."""
        k = segment_of(self.files, path, -1)
        if not 0 <= k < len(self.parts):
            return None
        part = self.parts[k]
        rows = part.rows_of(path)
        if not len(rows):
            return None
        starts = part.c_lines[rows, 0]
        at = int(np.searchsorted(starts, line, "right")) - 1
        if at < 0:
            return None
        r = int(rows[at])
        s, e = (int(x) for x in part.c_lines[r])
        if line > e:
            return None
        return part.text(r).split("\n")[line - s]

    @cached_property
    def path_parts(self) -> PathIndex:
        """Folder name, file name or stem (lower case) → files."""
        return PathIndex(self.files)

    # -- dense -------------------------------------------------------------------------------------

    @property
    def embedder(self) -> str:
        return self.stamp.meta.embedder or "none"

    @property
    def static_model(self) -> str:
        """The static tier's model id of the version's newest segments ("" when none has static vectors)."""
        for part in reversed(self.parts):
            if part.entry.static:
                return part.entry.static
        return ""

    @cached_property
    def vector_count(self) -> int:
        """Live pieces that have a transformer vector."""
        total = 0
        for part, live in zip(self.parts, self.piece_alive, strict=True):
            has = part.has_vector()
            total += int(has.sum() if live is None else (has & live).sum())
        return total

    def static_missing(self, static_id: str) -> int:
        """Live chunks whose pieces have no static vector of ``static_id``."""
        total = 0
        for part, live in zip(self.parts, self.alive, strict=True):
            if part.entry.static != static_id or not static_id:
                total += part.n_chunks if live is None else int(live.sum())
        return total

    def dense_ranked(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[list[tuple[int, tuple[int, int] | None]], float | None]:
        """Like :meth:`dense_ranked_chunks`, with the line span of each chunk's best piece; and the
        highest similarity of any piece (None when no vector is searched)."""
        best, top = self._dense_best(query, n, allowed, "")
        return [(r, self.piece_lines(p)) for r, p in best.items()], top

    def dense_ranked_chunks(self, query: np.ndarray, n: int, allowed: np.ndarray | None = None) -> list[int]:
        """Chunk rows ranked by their best piece's cosine similarity; see :meth:`_dense_best`."""
        return list(self._dense_best(query, n, allowed, "")[0])

    def static_ranked(
        self, query: np.ndarray, static_id: str, n: int, allowed: np.ndarray | None = None
    ) -> tuple[list[tuple[int, tuple[int, int] | None]], float | None]:
        """Chunk rows ranked by their best piece's similarity in the static tier ``static_id``."""
        best, top = self._dense_best(query, n, allowed, static_id, sketches=True)
        return [(r, self.piece_lines(p)) for r, p in best.items()], top

    def _dense_best(
        self,
        query: np.ndarray,
        n: int,
        allowed: np.ndarray | None,
        tier: str,
        candidates: int | None = None,
        sketches: bool = False,
    ) -> tuple[dict[int, int], float | None]:
        """Chunk rows ranked by their best piece's cosine similarity (positive only), at most ``n``, and
        the highest similarity found (None: no vector to search).

        Small indexes are scanned exactly. From ``PREFILTER_MIN`` live vectors on, ``candidates`` are
        picked and only those are scored exactly (docs/benchmarks.md has the recall against exact
        search): with ``sketches`` (the static tier), the rows nearest the query by sign sketch
        (sketch.py; default ``STATIC_SKETCH_CANDIDATES``) when every block has one (stored, or made by a
        long-lived reader; a one-shot reader from ``ONE_SHOT_SKETCH_MIN`` vectors on); else, in a
        long-lived reader, those nearest in a low-dimensional projection (PCA of the biggest part's
        vectors; default ``PREFILTER_CANDIDATES``).
        ``allowed`` ((n_rows,) bool) keeps only those chunk rows, before the candidates and the top
        ``n`` are taken. ``tier``: "" for the transformer's vectors, else the static tier's id. Raises
        VectorDimensionMismatch when ``query`` does not fit the stored vectors.
        """
        blocks = self._live_blocks(tier)
        q = np.asarray(query, np.float32)
        if not blocks:
            return {}, None
        if any(b.width != q.shape[0] for b, _, _ in blocks):
            raise VectorDimensionMismatch(
                f"the index holds {blocks[0][0].width}-dimensional vectors but the embedder now gives "
                f"{q.shape[0]}: run `aide-tui index` to re-embed"
            )
        total = sum(len(ids) for _, _, ids in blocks)
        cand = None
        sketch_min = PREFILTER_MIN if self.prefilter else ONE_SHOT_SKETCH_MIN
        if sketches and total >= sketch_min and all(b.sketched(self.prefilter) for b, _, _ in blocks):
            cand = self._nearest_by_sketch(blocks, q, allowed, candidates or STATIC_SKETCH_CANDIDATES)
        elif total >= PREFILTER_MIN and (self.prefilter or self._projected(blocks, q.shape[0])):
            proj = self._projection(blocks, q.shape[0])
            qp = q @ proj
            # each block scored whole, then its live rows taken (not their projections copied first)
            scored = [(b.projected(proj) @ qp, keep) for b, keep, _ in blocks]
            coarse = np.concatenate([c if keep.all() else c[keep] for c, keep in scored])
            if allowed is not None:  # a filtered search picks its candidates among allowed rows only
                gids = np.concatenate([g for _, _, g in blocks])
                coarse = np.where(allowed[self.owners[gids]], coarse, -np.inf)
            k = min(candidates or PREFILTER_CANDIDATES, len(coarse))
            cand = np.sort(top_k(coarse, k))
        mats, ids = [], []
        start = 0
        for (b, keep, gids), local in zip(blocks, self._live_rows(tier), strict=True):
            if cand is not None:
                lo, hi = np.searchsorted(cand, [start, start + len(gids)])
                pick = cand[lo:hi] - start
                start += len(gids)
                local, gids = local[pick], gids[pick]
                mats.append(b.gather_times(local, q, self.prefilter))
            else:
                sims = b.scan(q)
                mats.append(sims if len(local) == len(keep) else sims[local])
            ids.append(gids)
        sims, all_ids = np.concatenate(mats).astype(np.float32, copy=False), np.concatenate(ids)
        if allowed is not None and sims.size:
            sims = np.where(allowed[self.owners[all_ids]], sims, 0.0)
        top = float(sims.max()) if sims.size else None  # rows outside ``allowed`` count as 0
        return self._best_owners(sims, all_ids, n), top

    def _live_rows(self, tier: str) -> list[np.ndarray]:
        """Each of :meth:`_live_blocks`'s blocks' live row numbers, kept like them (a query over the
        monorepo's static tier spent 1.5 % of its time listing 475k of them again)."""
        key = f"_live_rows:{tier}"
        got: list[np.ndarray] | None = self.__dict__.get(key)
        if got is None:
            got = self.__dict__[key] = [np.flatnonzero(keep) for _, keep, _ in self._live_blocks(tier)]
        return got

    def _nearest_by_sketch(
        self,
        blocks: list[tuple[VectorBlock, np.ndarray, np.ndarray]],
        q: np.ndarray,
        allowed: np.ndarray | None,
        k: int,
    ) -> np.ndarray:
        """Sorted positions (in the blocks' live rows, end to end) of the ``k`` rows whose sign sketch is
        nearest the query's; rows outside ``allowed`` come last."""
        qs = sketch(q[None])[:, 0]
        dist = [(b.distances(qs, self.prefilter), keep) for b, keep, _ in blocks]
        coarse = np.concatenate([d if keep.all() else d[keep] for d, keep in dist])
        if allowed is not None:
            gids = np.concatenate([g for _, _, g in blocks])
            coarse = np.where(allowed[self.owners[gids]], coarse, np.uint16(WORD_BITS * len(qs) + 1))
        return nearest(coarse, k)

    def _projected(self, blocks: list[tuple[VectorBlock, np.ndarray, np.ndarray]], dim: int) -> bool:
        """Whether the prefilter's projections are at hand (a long-lived reader made them: a one-shot
        search scans exactly, which costs less than projecting every vector once)."""
        base = max(blocks, key=lambda b: len(b[0]))[0]
        proj = base.__dict__.get("_projection")
        if proj is None or proj.shape[0] != dim:
            return False
        return all("_projected" in b.__dict__ for b, _, _ in blocks)

    def warm_postings(self, pause: Callable[[], bool] = lambda: False) -> None:
        """Check each segment's postings (chunks and pieces) before the first query reads them; ``pause``
        before each segment, as :meth:`warm_vectors`."""
        for part in self.parts:
            if pause():
                return
            part.chunk_field.warm()
            if part.n_pieces:
                part.piece_field.warm()

    def warm_vectors(self, static_id: str = "", pause: Callable[[], bool] = lambda: False) -> None:
        """Build the prefilter's projections of the transformer's vectors, and the static tier's sign
        sketches where its segments store none (what a long-lived reader calls after loading, off the
        query path); ``pause`` is called before each block (a reader lets its searches run first: a
        block is up to a second of CPU) and says whether to stop (the blocks done so far keep theirs)."""
        self.prefilter = True
        blocks = self._live_blocks("")
        if sum(len(ids) for _, _, ids in blocks) >= PREFILTER_MIN:
            proj = self._projection(blocks, blocks[0][0].width)
            for b, _, _ in blocks:
                if pause():
                    return
                b.projected(proj)
        blocks = self._live_blocks(static_id) if static_id else []
        if sum(len(ids) for _, _, ids in blocks) >= PREFILTER_MIN:
            _ = self.owners  # what the candidates' chunks are looked up in
            for b, _, _ in blocks:
                if pause():
                    return
                b.sketched(True)

    def _projection(self, blocks: list[tuple[VectorBlock, np.ndarray, np.ndarray]], dim: int) -> np.ndarray:
        """The prefilter's projection, learnt once from a sample of the biggest block's vectors (kept with
        that block while it lives)."""
        base = max(blocks, key=lambda b: len(b[0]))[0]
        cached = base.__dict__.get("_projection")
        if cached is None or cached.shape[0] != dim:
            pick = np.arange(len(base))
            if len(pick) > 20_000:
                pick = np.sort(np.random.default_rng(0).choice(len(base), 20_000, replace=False))
            sample = base.gather(pick)
            cached = (
                pca_projection(sample, min(PREFILTER_DIM, dim))
                if len(sample)
                else np.eye(dim, dtype=np.float32)
            )
            base.__dict__["_projection"] = cached
        return cached

    def _live_blocks(self, static_id: str) -> list[tuple[VectorBlock, np.ndarray, np.ndarray]]:
        """(block, which of its rows are live, their global piece ids) for every transformer block
        (``static_id`` ""), or every part's static block of that model."""
        key = f"_blocks:{static_id}"
        cached: list[tuple[VectorBlock, np.ndarray, np.ndarray]] | None = self.__dict__.get(key)
        if cached is not None:
            return cached
        out = []
        for part, live, off in zip(self.parts, self.piece_alive, self.piece_offsets, strict=False):
            if static_id:
                sb = part.static_block if part.entry.static == static_id else None
                chosen = [sb] if sb is not None else []
            else:
                chosen = part.blocks
            for block in chosen:
                if len(block) == 0:
                    continue
                rows = block.piece_rows()
                keep = np.ones(len(rows), bool) if live is None else live[rows]
                out.append((block, keep, rows[keep] + off))
        self.__dict__[key] = out
        return out
