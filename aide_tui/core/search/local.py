"""The local retriever: candidate lists over the segments under ``<root>/.aide/index`` (an IndexView).

Keys are global row numbers of the loaded view. A query's filters become one row mask, applied before
any top-n is taken; ties break by (path, first line) through the view's ``order_of``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import same_model
from aide_tui.core.embed.factory import static_enabled
from aide_tui.core.errors import VectorDimensionMismatch
from aide_tui.core.paths import MANIFEST, index_dir_for
from aide_tui.core.search.filters import ParsedQuery
from aide_tui.core.search.retriever import Candidate, DenseLists, IndexedFile
from aide_tui.core.status import IndexStatus
from aide_tui.core.store.segments import load_view, read_rank
from aide_tui.core.store.status import read_status, static_missing_for
from aide_tui.core.store.view import IndexView
from aide_tui.core.topk import best_positive


class LocalRetrieval:
    """One query over one view: BM25 scores of its terms, zero outside the filter's rows."""

    def __init__(
        self, ix: IndexView, allowed: np.ndarray | None, terms: list[str], weights: dict[str, float] | None
    ) -> None:
        self.ix = ix
        self.allowed = allowed
        self.terms = terms
        self.weights = weights
        scores = ix.bm25_scores(terms, weights) if terms else np.zeros(ix.n_rows, np.float32)
        self.scores = scores if allowed is None else np.where(allowed, scores, np.float32(0.0))

    def bm25(self, n: int) -> list[int]:
        """Rows with the ``n`` best positive scores; ties by path and line."""
        if n <= 0:
            return []
        positive, vals = best_positive(self.scores, n)
        if positive.size == 0:
            return []
        order = np.lexsort((self.ix.order_of(positive), -vals))
        return [int(r) for r in positive[order][:n]]

    def score(self, key: int) -> float:
        return float(self.scores[key])

    def positive(self) -> Iterable[int]:
        return map(int, np.flatnonzero(self.scores > 0))

    def holding(self, all_of: Sequence[str], any_of: Sequence[str], prefix: str) -> Iterable[int]:
        rows = self.ix.rows_holding(all_of, any_of, prefix)
        return map(int, rows[self.scores[rows] > 0])

    def piece_bm25(self, n: int) -> tuple[list[int], dict[int, tuple[int, int]]]:
        ranked = self.ix.piece_ranked(self.terms, n, self.weights, allowed=self.allowed)
        return [r for r, _ in ranked], {r: span for r, span in ranked if span is not None}

    def defining(self, names: Sequence[str]) -> dict[str, list[int]]:
        found = self.ix.symbols_rows(names)
        if self.allowed is None:
            return found
        return {key: [r for r in rows if self.allowed[r]] for key, rows in found.items()}

    def in_files(self, files: Collection[str], n: int) -> list[int]:
        rows = self.ix.rows_of_files(files)
        return [int(r) for r in rows[self.scores[rows] > 0]] if len(rows) else []

    def all_in_files(self, files: Collection[str]) -> list[int]:
        rows = self.ix.rows_of_files(files)
        mask = self.ix.alive_mask if self.allowed is None else self.allowed
        return [int(r) for r in rows[mask[rows]]] if len(rows) else []

    def static(self, vector: np.ndarray, static_id: str, n: int) -> DenseLists[int]:
        """Chunks ranked by their best piece's similarity in the static tier (none yet: an empty list)."""
        try:
            ranked, top = self.ix.static_ranked(vector, static_id, n, allowed=self.allowed)
        except VectorDimensionMismatch as exc:
            return DenseLists[int](degraded=str(exc))
        if top is None:
            return DenseLists[int]()
        return DenseLists(
            [[r for r, _ in ranked]], {r: span for r, span in ranked if span is not None}, best=top
        )

    def dense(self, vectors: Sequence[np.ndarray], embedder_id: str, n: int) -> DenseLists[int]:
        ix = self.ix
        if not same_model(ix.embedder, embedder_id):
            return DenseLists[
                int
            ]()  # vectors are still being computed: not degraded, just nothing to fuse yet
        try:
            first, top = ix.dense_ranked(vectors[0], n, allowed=self.allowed)
            rest = [ix.dense_ranked_chunks(v, n, allowed=self.allowed) for v in vectors[1:]]
        except VectorDimensionMismatch as exc:
            return DenseLists[int](degraded=str(exc))
        spans: dict[int, tuple[int, int]] = {r: span for r, span in first if span is not None}
        lists: list[list[int]] = [[r for r, _ in first], *rest]
        return DenseLists(lists, spans, best=top)

    def fetch(self, keys: Iterable[int]) -> None:
        pass  # rows are at hand

    def chunk(self, key: int) -> Candidate:
        c = self.ix.chunks[key]
        return Candidate(c.path, c.start_line, c.end_line, c.language, c.symbol, c.text, tuple(c.defines))

    def path(self, key: int) -> str:
        return self.ix.path(key)

    def defines(self, key: int) -> tuple[str, ...]:
        return self.ix.defines(key)

    def file_of(self, key: int) -> str:
        return self.ix.path(key)

    def order(self, key: int) -> object:
        return self.ix.order_key(key)


class LocalGraph:
    """The symbol graph of one loaded view, with the view's line texts."""

    def __init__(self, ix: IndexView) -> None:
        self.ix = ix
        g = ix.graph
        self.definitions = g.definitions
        self.references = g.references
        self.has_references = g.has_references
        self.definitions_in = g.definitions_in
        self.definitions_under = g.definitions_under
        self.references_in = g.references_in
        self.imports_of = g.imports_of
        self.called_names = g.called_names
        self.definition_paths = g.definition_paths
        self.paths = g.paths
        self.line_text = ix.line_text
        self.memo = g.memo


class LocalRetriever:
    """The local store's current version, reloaded when a new manifest lands."""

    all_workspaces = False

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root)
        self.settings = settings
        self._lock = threading.Lock()
        self._key: object | None = None
        self._view: IndexView | None = None  # replaced whole, so a query never mixes two versions

    @property
    def view(self) -> IndexView | None:
        """The loaded index version (None before the first refresh)."""
        return self._view

    @property
    def loaded(self) -> bool:
        return self._view is not None

    def _loaded(self) -> IndexView:
        view = self._view
        if view is None:
            self.refresh()
            view = self._view
        assert view is not None
        return view

    @property
    def version(self) -> str:
        view = self._view
        return view.stamp.generation if view is not None else ""

    @property
    def vectors_missing(self) -> int:
        return self._loaded().stamp.counts.vectors_missing

    @property
    def static_missing(self) -> int:
        """Chunks of the loaded version without a static-tier vector (every chunk when the settings use
        the tier and the version has none, as for a Milvus collection)."""
        stamp = self._loaded().stamp
        wanted = static_enabled(self.settings)
        return static_missing_for(stamp.counts.static_missing, stamp.meta.static, stamp.counts.chunks, wanted)

    @property
    def path_parts(self) -> Mapping[str, set[str]]:
        return self._loaded().path_parts

    @property
    def term_stats(self) -> IndexView:
        return self._loaded()

    @property
    def graph(self) -> LocalGraph:
        return LocalGraph(self._loaded())

    def version_key(self) -> object | None:
        try:
            st = os.stat(index_dir_for(self.root, create=False) / MANIFEST)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def refresh(self) -> bool:
        """Load the index if it changed; True when (re)loaded. Raises IndexProblem.

        Segments already loaded are reused, so picking up a small delta costs what the delta holds.
        """
        key = self.version_key()
        with self._lock:
            if key is not None and key == self._key and self._view is not None:
                return False
            old = self._view
            idx = index_dir_for(self.root, create=False)
            view = load_view(idx, old)
            view.warm()
            stored = read_rank(idx, view.stamp.meta)
            if stored is not None:  # the indexer's: never walk the whole graph here
                view.graph.memo.update(file_rank=stored, file_rank_checked=True)
            elif old is not None and "graph" in old.__dict__ and "file_rank" in old.graph.memo:
                view.graph.memo["file_rank"] = old.graph.memo["file_rank"]  # an edit barely moves it
            self._view = view
            self._key = key
            return True

    def warm_tables(self) -> None:
        """Build the loaded version's tie order, path index and graph tables (a long-lived reader)."""
        view = self._view
        if view is not None:
            view.warm_tables()

    def warm_postings(self, pause: Callable[[], bool] = lambda: False) -> None:
        """Check the loaded version's postings (a long-lived reader; ``pause`` before each segment)."""
        view = self._view
        if view is not None:
            view.warm_postings(pause)

    def warm_vectors(self, static_id: str = "", pause: Callable[[], bool] = lambda: False) -> None:
        """Build the dense prefilter's projections of the loaded version (a long-lived reader; ``pause``
        before each block)."""
        view = self._view
        if view is not None:
            view.warm_vectors(static_id, pause)

    def files(self) -> list[IndexedFile]:
        return [IndexedFile(p) for p in self._loaded().files]

    def end_lines(self, files: Sequence[IndexedFile]) -> list[int]:
        """The last line of each file's last live chunk."""
        ix = self._loaded()
        out = []
        for f in files:
            rows = ix.rows_of_files([f.path])
            out.append(max((ix.chunks[int(r)].end_line for r in rows), default=1))
        return out

    def begin(
        self, parsed: ParsedQuery, terms: list[str], weights: dict[str, float] | None
    ) -> LocalRetrieval:
        ix = self._loaded()
        allowed = None
        if parsed.has_filters:
            allowed = np.zeros(ix.n_rows, bool)
            allowed[ix.rows_of_files([p for p in ix.files if parsed.accepts_path(p)])] = True
        return LocalRetrieval(ix, allowed, terms, weights)

    def status(self) -> IndexStatus:
        return read_status(self.root, self.settings.embedding.backend, static_enabled(self.settings))

    def child_settings(self) -> Settings:
        return self.settings

    def close(self) -> None:
        pass
