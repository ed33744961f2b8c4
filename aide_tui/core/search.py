"""Query → ranked, explained results: BM25, symbol and path lists plus dense top-k, fused with RRF."""

from __future__ import annotations

import fnmatch
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from aide_tui.core.backend import backend_for
from aide_tui.core.bm25 import top_positive
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, EmbedderError
from aide_tui.core.fuse import rrf
from aide_tui.core.model import Chunk
from aide_tui.core.tokens import STOPWORDS, identifiers, tokenize
from aide_tui.core.view import IndexView, VectorDimensionMismatch

T = TypeVar("T")
_FILTER = re.compile(r"(?:^|\s)(path|lang):(\S+)")
_CODE_LIKE = re.compile(r"[_.]|[a-z][A-Z]|[A-Z]{2,}[a-z]|\d")
QUERY_CACHE = 256  # query vectors remembered
LONG_QUERY_TERMS = 24
MAX_PATH_WORDS = 300  # distinct words of a (pasted) query checked against file paths
PROSE_SYMBOL_FACTOR = 0.15
PROSE_PATH_FACTOR = 0.0
_QUOTED = re.compile(r'"([^"]{2,200})"')
_FILE_NAME = re.compile(r"[\w.-]+\.[a-z][a-z0-9]{0,5}")
_TEST_PATH = re.compile(
    r"(^|/)(tests?|specs?|__tests__|testing)/|(^|/)test_[^/]*$|_test\.\w+$|\.(spec|test)\.\w+$|Tests?\.\w+$"
)


def diversify(items: list[T], keys: list[str], cap: int, window: int) -> list[T]:
    """Reorder so the first ``window`` items hold at most ``cap`` per key; the overflow follows in order."""
    head: list[T] = []
    rest: list[T] = []
    seen: dict[str, int] = {}
    for item, key in zip(items, keys, strict=True):
        if len(head) < window and seen.get(key, 0) < cap:
            seen[key] = seen.get(key, 0) + 1
            head.append(item)
        else:
            rest.append(item)
    return head + rest


def _looks_like_code(text: str) -> bool:
    """A short query made of identifiers (``parse_header``, ``Client.send``) rather than prose."""
    words = text.split()
    return 0 < len(words) <= 3 or sum(bool(_CODE_LIKE.search(w)) for w in words) * 2 >= len(words) > 0


@dataclass
class Hit:
    """One result row: a chunk with its fused score, per-list ranks and why it matched."""

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None
    language: str
    ranks: dict[str, int | None]
    query_terms: list[str] = field(default_factory=list)
    text: str = ""

    def matched_terms(self) -> list[str]:
        """Query terms that occur in this chunk's code or path (for the "why" line)."""
        return sorted(set(self.query_terms) & set(tokenize(f"{self.text} {self.path}")))

    def to_json(self) -> dict[str, object]:
        """The contract's result object."""
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "symbol": self.symbol,
            "ranks": self.ranks,
        }


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

    def to_json(self) -> dict[str, object]:
        return {
            "query": self.query,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "took_ms": round(self.took_ms, 3),
            "vectors_missing": self.vectors_missing,
            "results": [h.to_json() for h in self.results],
        }


@dataclass
class ParsedQuery:
    """Free text plus ``path:GLOB`` / ``lang:NAME`` filters."""

    text: str
    path_globs: list[str]
    langs: list[str]

    def accepts(self, chunk: Chunk) -> bool:
        if self.langs and chunk.language not in self.langs:
            return False
        if self.path_globs:
            return any(_glob_match(chunk.path, g) for g in self.path_globs)
        return True


def _glob_match(path: str, glob: str) -> bool:
    if any(ch in glob for ch in "*?["):
        return (
            fnmatch.fnmatch(path, glob)
            or fnmatch.fnmatch(path, f"*/{glob}")
            or fnmatch.fnmatch(path, f"{glob}/*")
        )
    return glob in path


def parse_query(query: str) -> ParsedQuery:
    """Split filters out of the query text."""
    globs: list[str] = []
    langs: list[str] = []
    for kind, value in _FILTER.findall(query):
        (globs if kind == "path" else langs).append(value if kind == "path" else value.lower())
    text = _FILTER.sub(" ", query).strip()
    return ParsedQuery(text, globs, langs)


class Searcher:
    """Answers queries over a workspace's current index; reloads when a new version lands."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 embedder_error: str | None = None) -> None:  # fmt: skip
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error
        self.backend = backend_for(self.root, settings)
        self._lock = threading.Lock()
        self._manifest_stat: object | None = None
        self._qcache: dict[tuple[str, str], np.ndarray] = {}
        self._qlock = threading.Lock()
        self._view: IndexView | None = None  # replaced whole, so a query never mixes two versions

    @property
    def view(self) -> IndexView | None:
        """The loaded index version (None before the first refresh)."""
        return self._view

    # -- loading -----------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Load the index if it changed; returns True when (re)loaded. Raises IndexError_.

        Segments already loaded are reused, so picking up a small delta costs what the delta holds.
        """
        key = self.backend.version_key()
        with self._lock:
            if key is not None and key == self._manifest_stat and self._view is not None:
                return False
            view = self.backend.load_view(self._view)
            view.warm()
            self._view = view
            self._manifest_stat = key
            return True

    # -- retrievers --------------------------------------------------------------------------------

    @staticmethod
    def _symbol_list(ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int) -> list[int]:
        """Chunks defining a name the query mentions: exact case first, then case-insensitive."""
        words = identifiers(text)
        short = len(words) <= 3
        scored: dict[int, tuple[int, float]] = {}
        for w in words:
            if not (short or _CODE_LIKE.search(w)):
                continue
            for cand in dict.fromkeys([w, w.rsplit(".", 1)[-1]]):
                if len(cand) < 3 or cand.lower() in STOPWORDS:
                    continue
                for row in ix.symbol_rows(cand):
                    exact = 2 if cand in ix.chunks[row].defines else 1
                    prev = scored.get(row, (0, 0.0))
                    scored[row] = (max(prev[0], exact), float(bm25_scores[row]))
        ranked = sorted(scored, key=lambda r: (-scored[r][0], -scored[r][1], r))
        return ranked[:limit]

    @staticmethod
    def _path_list(
        ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int, bare_words: bool
    ) -> tuple[list[int], bool]:
        """Chunks of files named by the query, by BM25 score within them; and whether a path was explicit.

        Explicit paths (``cli/main.go``, ``server.py``, as in a stack trace) always count; bare words
        (``routing``) only when ``bare_words`` (identifier-like queries).
        """
        hits: dict[str, int] = {}
        explicit = False
        words = dict.fromkeys(raw.lower().strip("./-") for raw in re.findall(r"[\w./-]+", text))
        for word in list(words)[:MAX_PATH_WORDS]:
            if len(word) < 3 or word in STOPWORDS:
                continue
            if "/" in word or _FILE_NAME.fullmatch(word):
                for p in ix.path_parts.get(
                    word.rsplit("/", 1)[-1], ()
                ):  # files named, or under, the last part
                    low = p.lower()
                    if low == word or low.endswith("/" + word) or f"/{word}/" in f"/{low}":
                        hits[p] = hits.get(p, 0) + 2
                        explicit = True
            elif bare_words:
                for p in ix.path_parts.get(word, ()):
                    hits[p] = hits.get(p, 0) + 1
        if not hits or len(hits) > 50:
            return [], False
        rows = [i for i in np.flatnonzero(bm25_scores > 0) if ix.chunks[i].path in hits]
        rows.sort(key=lambda r: (-hits[ix.chunks[r].path], -float(bm25_scores[r]), r))
        return [int(r) for r in rows[:limit]], explicit

    @staticmethod
    def _phrase_list(ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int) -> list[int]:
        """Chunks containing every "double-quoted" span of the query verbatim (case-insensitive)."""
        phrases = [p.lower() for p in _QUOTED.findall(text) if p.strip()]
        if not phrases:
            return []
        candidates = np.flatnonzero(bm25_scores > 0)
        hits = [int(i) for i in candidates if all(p in ix.chunks[i].text.lower() for p in phrases)]
        hits.sort(key=lambda i: (-float(bm25_scores[i]), i))
        return hits[:limit]

    @staticmethod
    def _query_terms(ix: IndexView, text: str) -> tuple[list[str], dict[str, float] | None]:
        """BM25 terms and weights. A long pasted text (issue, stack trace) keeps its identifiers, weighted
        double, and its rarest other terms, so boilerplate prose cannot drown the names that matter."""
        terms = list(dict.fromkeys(tokenize(text)))
        if len(terms) <= LONG_QUERY_TERMS:
            return terms, None
        code_terms = list(
            dict.fromkeys(t for w in identifiers(text) if _CODE_LIKE.search(w) for t in tokenize(w))
        )
        vocab = ix.vocab
        known = sorted(
            ((ix.idf(t) or 0.0, t) for t in terms if t in vocab and t not in code_terms), reverse=True
        )
        keep = [t for t in code_terms if t in vocab][: 2 * LONG_QUERY_TERMS]
        keep += [t for _, t in known[: max(LONG_QUERY_TERMS - len(keep) // 2, 8)]]
        return keep, {t: 2.0 for t in code_terms}

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 20, mode: str | None = None) -> SearchResponse:
        """Rank chunks for ``query``. Never raises for bad query text."""
        mode = mode or self.settings.search.mode
        t0 = time.perf_counter()
        if self._view is None:
            self.refresh()
        ix = self._view
        assert ix is not None
        s = self.settings.search
        parsed = parse_query(query[:20_000])
        resp = SearchResponse(query=query, results=[], mode=mode)
        resp.vectors_missing = int(ix.meta.get("counts", {}).get("vectors_missing", 0))
        lists: dict[str, list[int]] = {}
        code_like = _looks_like_code(parsed.text)
        explicit_path = False
        terms, weights = self._query_terms(ix, parsed.text)
        scores = ix.bm25_scores(terms, weights) if terms else np.zeros(ix.n_rows, np.float32)
        if mode in ("hybrid", "bm25"):
            lists["bm25"] = [int(i) for i in top_positive(scores, s.top_n)[0]]
            lists["phrase"] = self._phrase_list(ix, parsed.text, scores, s.top_n)
            lists["piece"] = ix.piece_ranked_chunks(terms, s.top_n, weights)
            lists["symbol"] = self._symbol_list(ix, parsed.text, scores, s.top_n)
            lists["path"], explicit_path = self._path_list(ix, parsed.text, scores, s.top_n, code_like)
        if mode in ("hybrid", "dense") and parsed.text:
            dense, reason = self._dense_list(ix, parsed.text, s.top_n)
            if dense is not None:
                lists["dense"] = dense
            elif reason is not None:
                resp.degraded, resp.degraded_reason = True, reason
        weights_by_list = {
            "bm25": s.bm25_weight,
            "dense": s.dense_weight,
            "symbol": s.symbol_weight,
            "path": s.path_weight,
            "piece": s.piece_weight,
            "phrase": s.phrase_weight,
        }
        if not code_like:
            # prose mentioning a name usually asks about code that uses it, not for its definition
            weights_by_list["symbol"] *= PROSE_SYMBOL_FACTOR
            if not explicit_path:
                weights_by_list["path"] *= PROSE_PATH_FACTOR
        fused = rrf(lists, k=s.rrf_k, weights=weights_by_list)
        if s.test_weight != 1 and "test" not in parsed.text.lower():
            for f in fused:
                if _TEST_PATH.search(ix.chunks[f.doc].path):
                    f.score *= s.test_weight
            fused.sort(key=lambda f: (-f.score, min(f.ranks.values()), f.doc))
        fused = [f for f in fused if parsed.accepts(ix.chunks[f.doc])]
        if s.per_file_cap > 0:
            fused = diversify(fused, [ix.chunks[f.doc].path for f in fused], s.per_file_cap, limit)
        for f in fused:
            c = ix.chunks[f.doc]
            ranks: dict[str, int | None] = {"bm25": f.ranks.get("bm25"), "dense": f.ranks.get("dense")}
            for extra in ("symbol", "path", "piece", "phrase"):
                if extra in f.ranks:
                    ranks[extra] = f.ranks[extra]
            resp.results.append(
                Hit(c.path, c.start_line, c.end_line, f.score, c.symbol, c.language, ranks, terms, c.text)
            )
            if len(resp.results) >= limit:
                break
        resp.took_ms = (time.perf_counter() - t0) * 1000
        return resp

    def _query_vector(self, emb_id: str, text: str) -> np.ndarray:
        """The query's vector, remembered for the last few hundred queries (typing revisits them)."""
        key = (emb_id, text)
        vec = self._qcache.get(key)
        if vec is None:
            assert self.embedder is not None
            vec = self.embedder.embed([text], kind="query")[0]
            with self._qlock:
                self._qcache[key] = vec
                if len(self._qcache) > QUERY_CACHE:
                    self._qcache.pop(next(iter(self._qcache)))
        return vec

    def _dense_list(self, ix: IndexView, text: str, n: int) -> tuple[list[int] | None, str | None]:
        """Dense top-n, or (None, reason) when the dense side is unusable (None, None: not configured)."""
        if self.embedder is None:
            return None, self.embedder_error
        try:
            emb_id = self.embedder.id
            q = self._query_vector(emb_id, text)
        except EmbedderError as exc:
            return None, str(exc)
        if ix.embedder != emb_id:
            return [], None  # vectors are still being computed: not degraded, just nothing to fuse yet
        try:
            return ix.dense_ranked_chunks(q, n), None  # a chunk ranks by its best piece
        except VectorDimensionMismatch as exc:
            return None, str(exc)
