"""Query → ranked, explained results over a workspace's store, whichever it is.

A :class:`Searcher` holds a retriever (the local segments or a Milvus collection, see
:mod:`aide_tui.core.search.stores`) and the query encoder; :mod:`aide_tui.core.search.rank` does the
ranking, :mod:`aide_tui.core.search.finder` answers filter-only queries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.embed.factory import make_static, static_enabled
from aide_tui.core.errors import EmbedderError
from aide_tui.core.search import rerank
from aide_tui.core.search.confidence import MAX_HINTS, absent_name, confidence, hints
from aide_tui.core.search.filters import parse_query
from aide_tui.core.search.finder import find_files
from aide_tui.core.search.rank import QueryEncoder, Ranked, partial_word, rank
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.search.retriever import Retriever
from aide_tui.core.search.stores import open_retriever
from aide_tui.core.search.symbols import (
    MAX_LOCATIONS,
    LineSymbols,
    SymbolAnswer,
    find_definitions,
    find_line_symbols,
    find_references,
)

if TYPE_CHECKING:
    from aide_tui.core.embed.static import StaticEmbedder

QUERY_CACHE = 256  # query vectors remembered
WARM_GAP = 0.1  # seconds after a search before warming takes its next step...
WARM_WAIT = 0.25  # ... waiting at most this long for such a gap (a busy host still warms in seconds)
MAX_QUERY_CHARS = 20_000


class Searcher:
    """Answers queries over a workspace's current index; reloads when a new version lands.

    ``all_workspaces``: every workspace of a shared (Milvus) collection, each hit labelled with its
    workspace. ``retriever``: search this one instead of the store the settings choose.
    """

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder | None = None,
        embedder_error: str | None = None,
        *,
        all_workspaces: bool = False,
        retriever: Retriever | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error
        self.retriever: Retriever = retriever or open_retriever(
            self.root, settings, all_workspaces=all_workspaces
        )
        self._qcache: dict[tuple[str, str], np.ndarray] = {}
        self._qlock = threading.Lock()
        self._warm_lock = threading.Lock()
        self._quiet = threading.Condition()  # searches running and when the last ended (warming waits)
        self._searching = 0
        self._searched_at = 0.0

    @property
    def version(self) -> str:
        """The loaded version ("" before the first refresh)."""
        return self.retriever.version

    def refresh(self) -> bool:
        """Load the index if it changed; returns True when (re)loaded. Raises IndexProblem."""
        return self.retriever.refresh()

    def warm(self, interrupted: Callable[[], bool] = lambda: False) -> None:
        """Open what the first queries read (a long-lived searcher calls it after each load, off the query
        path): the term dictionaries that search as you type completes over, the vocabulary's letter
        trigrams (a typed word that reads as no word of the code: core/wordshape.py), the version's tie
        order, path index and graph tables, the static tier's table, the dense prefilter's projections
        of a big index, and the postings (checked)."""
        with self._warm_lock:  # two loads' warms at once would build the same projections twice
            self._warm(interrupted)

    def _warm(self, interrupted: Callable[[], bool]) -> None:
        if not self.retriever.loaded:
            return
        stats = self.retriever.term_stats
        if stats is not None:
            stats.prefix_terms("a", 1)
            stats.letter_trigrams()
        static_id = ""
        if self.static is not None and self.static.ready():
            try:
                self.static.load()
                static_id = self.static.id
            except EmbedderError:
                pass
        warm_tables = getattr(self.retriever, "warm_tables", None)
        if warm_tables is not None:
            warm_tables()

        def pause() -> bool:
            return self._let_searches_run(interrupted)

        warm_vectors = getattr(self.retriever, "warm_vectors", None)
        if warm_vectors is not None:
            warm_vectors(static_id, pause)
        warm_postings = getattr(self.retriever, "warm_postings", None)
        if warm_postings is not None:
            warm_postings(pause)

    def _let_searches_run(self, interrupted: Callable[[], bool]) -> bool:
        """Wait while a search runs or ran in the last ``WARM_GAP`` seconds (at most ``WARM_WAIT``): what
        warming does in steps gives way to the searches of someone typing. True: stop warming now
        (``interrupted``, e.g. a newer version waits to be loaded)."""
        deadline = time.monotonic() + WARM_WAIT
        with self._quiet:
            while not interrupted() and (
                (wait := min(deadline, self._searched_at + WARM_GAP) - time.monotonic()) > 0
                or (self._searching and time.monotonic() < deadline)
            ):
                self._quiet.wait(min(max(wait, 0.01), 0.05))
        return interrupted()

    def search(
        self, query: str, limit: int = 20, mode: str | None = None, prefix: bool = False, hints: bool = True
    ) -> SearchResponse:
        """Rank chunks for ``query``. Never raises for bad query text: an unknown filter sets ``error``.

        ``prefix`` (search as you type): the word being typed, the last one when no space follows it,
        also finds the words it begins (``timeou`` finds ``timeout``). ``hints`` false leaves out the
        refine hints (a quarter of a typed query's time on SQLAlchemy; the app does not show them).
        """
        with self._quiet:
            self._searching += 1
        try:
            return self._search(query, limit, mode, prefix, hints)
        finally:
            with self._quiet:
                self._searching -= 1
                self._searched_at = time.monotonic()
                self._quiet.notify_all()

    def _search(self, query: str, limit: int, mode: str | None, prefix: bool, hints: bool) -> SearchResponse:
        mode = mode or self.settings.search.mode
        t0 = time.perf_counter()
        retriever = self.retriever
        if not retriever.loaded:
            retriever.refresh()
        resp = SearchResponse(query=query, results=[], mode=mode)
        resp.vectors_missing = retriever.vectors_missing
        resp.static_missing = retriever.static_missing
        text = query[:MAX_QUERY_CHARS]
        parsed = parse_query(text)
        if parsed.error is not None:
            resp.error = parsed.error
        elif parsed.has_filters and not parsed.text:
            resp.results = find_files(retriever, parsed, limit)
        else:
            s = self.settings.search
            partial = partial_word(text) if prefix else None
            ranked = rank(retriever, parsed, mode, rerank.depth(s, limit), self._encoder(), s, partial)
            resp.results = ranked.hits
            if ranked.degraded is not None:
                resp.degraded, resp.degraded_reason = True, ranked.degraded
            resp.no_results, resp.corrected, resp.read_as = (
                ranked.no_results,
                ranked.corrected,
                ranked.read_as,
            )
            rerank.rerank_response(s, parsed.text, resp, limit)  # opt-in; cuts the list to ``limit``
            self._assess(resp, ranked.corrected or parsed.text, hints, ranked)
        resp.took_ms = (time.perf_counter() - t0) * 1000
        return resp

    def _assess(self, resp: SearchResponse, text: str, with_hints: bool, ranked: Ranked) -> None:
        """The answer's confidence and (``with_hints``) refine hints (see confidence.py): high for a name
        pattern's listing led by a match; a name the code has no trace of, or a release number asked
        for that no chunk holds (``ranked.missing``), makes it low, and the first hint says so."""
        listing = ranked.pattern and bool(resp.results) and resp.results[0].ranks.get("symbol") == 1
        resp.confidence = "high" if listing else confidence(resp.results)
        if resp.results and with_hints:
            graph, stats = self.retriever.graph, self.retriever.term_stats
            resp.hints = hints(resp.results, text, graph, stats)
            name = absent_name(resp.results, text, graph, stats)
            absent = name or ranked.missing
            if absent is not None:
                resp.confidence = "low"
                note: dict[str, object] = {
                    "kind": "absent",
                    "name": absent,
                    "text": f"no {absent} in the code: hits share its words"
                    if name is not None
                    else f"no {absent} in the code: hits share the question's other words",
                }
                resp.hints = [note, *resp.hints][:MAX_HINTS]

    def definitions(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` (or ``Class.name``) is defined, from the symbol graph. Raises IndexProblem
        when the index cannot be read; a store without a graph answers with ``error`` set."""
        if not self.retriever.loaded:
            self.retriever.refresh()
        return find_definitions(self.retriever.graph, name, limit)

    def references(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` is used (calls, imports, attribute uses, names), as :meth:`definitions`."""
        if not self.retriever.loaded:
            self.retriever.refresh()
        return find_references(self.retriever.graph, name, limit)

    def line_symbols(self, path: str, line: int, names: list[str]) -> LineSymbols:
        """What the symbol graph says of ``path``'s line ``line`` and of ``names`` (see
        :func:`~aide_tui.core.search.symbols.find_line_symbols`); raises as :meth:`definitions`."""
        if not self.retriever.loaded:
            self.retriever.refresh()
        return find_line_symbols(self.retriever.graph, path, line, names)

    @cached_property
    def static(self) -> StaticEmbedder | None:
        """The static tier's embedder, made on first use (a BM25 search never imports it)."""
        return make_static(self.settings)

    def _encoder(self) -> QueryEncoder:
        static = self._static_vector if static_enabled(self.settings) else None
        if self.embedder is None:
            return QueryEncoder(None, self.embedder_error, static)
        return QueryEncoder(self._query_vectors, static=static)

    def _static_vector(self, text: str) -> tuple[str, np.ndarray] | None:
        """The static tier's query vector (None while its table is not built: searching never distils
        it, the indexing process does)."""
        tier = self.static
        if tier is None or not tier.ready():
            return None
        key = (tier.id, text)
        vec = self._qcache.get(key)
        if vec is None:
            vec = tier.embed([text], kind="query")[0]
            with self._qlock:
                self._qcache[key] = vec
        return tier.id, vec

    def _query_vectors(self, texts: list[str]) -> tuple[str, list[np.ndarray]]:
        """The embedder's id and the texts' query vectors, remembered for the last few hundred texts
        (typing revisits them); the ones not remembered are embedded in one call."""
        embedder = self.embedder
        assert embedder is not None
        emb_id = embedder.id
        have = {t: self._qcache.get((emb_id, t)) for t in dict.fromkeys(texts)}
        missing = [t for t, v in have.items() if v is None]
        if missing:
            vecs = embedder.embed(missing, kind="query")
            with self._qlock:
                for t, v in zip(missing, vecs, strict=True):
                    have[t] = self._qcache[(emb_id, t)] = v
                while len(self._qcache) > QUERY_CACHE:
                    self._qcache.pop(next(iter(self._qcache)))
        return emb_id, [have[t] for t in texts]  # type: ignore[misc]
