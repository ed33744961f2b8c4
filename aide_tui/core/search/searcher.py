"""Query → ranked, explained results: BM25, symbol and path lists plus dense top-k, fused with RRF."""

from __future__ import annotations

import fnmatch
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from aide_tui.core import filekinds
from aide_tui.core.backend import backend_for
from aide_tui.core.bm25 import field_query
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, EmbedderError
from aide_tui.core.languages import LANGUAGES, detect_language
from aide_tui.core.model import Chunk
from aide_tui.core.search.fuse import rrf
from aide_tui.core.search.query import LONG_QUERY_TERMS, QueryParts, analyze
from aide_tui.core.store.view import IndexView, VectorDimensionMismatch
from aide_tui.core.tokens import STOPWORDS, identifiers, tokenize

T = TypeVar("T")
_FILTER = re.compile(r"(?:^|\s)(path|lang):(\S+)")
_CODE_LIKE = re.compile(r"[_.]|[a-z][A-Z]|[A-Z]{2,}[a-z]|\d")
QUERY_CACHE = 256  # query vectors remembered
MAX_PATH_WORDS = 300  # distinct words of a (pasted) query checked against file paths
PROSE_SYMBOL_FACTOR = 0.15
PROSE_PATH_FACTOR = 0.0
MAX_SYMBOL_DEFS = 8  # a name defined in more chunks than this says little about where to look
_QUOTED = re.compile(r'"([^"]{2,200})"')
_FILE_NAME = re.compile(r"[\w.-]+\.[a-z][a-z0-9]{0,5}")
_TEST_PATH = re.compile(
    r"(^|/)(tests?|specs?|__tests__|testing)/|(^|/)test_[^/]*$|_test\.\w+$|\.(spec|test)\.\w+$|Tests?\.\w+$"
)

LANGUAGE_ALIASES = {
    "py": "python", "python3": "python", "py3": "python", "js": "javascript", "node": "javascript",
    "jsx": "javascript", "ecmascript": "javascript", "ts": "typescript", "tsx": "typescript",
    "rs": "rust", "golang": "go", "yml": "yaml", "md": "markdown", "sh": "shell", "bash": "shell",
    "zsh": "shell", "rb": "ruby", "cs": "csharp", "c#": "csharp", "c++": "cpp", "cxx": "cpp",
    "hpp": "cpp", "kt": "kotlin", "txt": "text", "plain": "text", "jsonc": "json",
}  # fmt: skip


class QueryError(ValueError):
    """The query's filters cannot be understood (e.g. an unknown ``lang:``); the message says why."""


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
    best_piece: tuple[int, int] | None = None  # lines of the piece (BM25 or dense) that ranked this chunk

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
    error: str | None = None  # the query could not be understood (unknown lang:): show it, no results

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "took_ms": round(self.took_ms, 3),
            "vectors_missing": self.vectors_missing,
            "results": [h.to_json() for h in self.results],
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class ParsedQuery:
    """Free text plus ``path:GLOB`` / ``lang:NAME`` filters (language names already canonical)."""

    text: str
    path_globs: list[str]
    langs: list[str]
    error: str | None = None  # why the filters cannot be used (unknown lang:); the search answers nothing

    @property
    def has_filters(self) -> bool:
        return bool(self.path_globs or self.langs)

    def accepts_path(self, path: str) -> bool:
        if self.langs and detect_language(path) not in self.langs:
            return False
        if self.path_globs:
            return any(_glob_match(path, g) for g in self.path_globs)
        return True

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


def canonical_language(name: str) -> str:
    """``py`` → ``python``; raises QueryError listing the valid names for an unknown one."""
    low = name.lower()
    low = LANGUAGE_ALIASES.get(low, low)
    if low not in LANGUAGES:
        raise QueryError(
            f"unknown language {name!r} in lang: (valid: {', '.join(LANGUAGES)}; aliases: "
            f"{', '.join(sorted(LANGUAGE_ALIASES))})"
        )
    return low


def parse_query(query: str) -> ParsedQuery:
    """Split filters out of the query text. Never raises: an unknown ``lang:`` name sets ``error``."""
    globs: list[str] = []
    langs: list[str] = []
    error: str | None = None
    for kind, value in _FILTER.findall(query):
        if kind == "path":
            globs.append(value)
            continue
        for v in value.split(","):
            if not v:
                continue
            try:
                langs.append(canonical_language(v))
            except QueryError as exc:
                error = error or str(exc)
    text = _FILTER.sub(" ", query).strip()
    return ParsedQuery(text, globs, list(dict.fromkeys(langs)), error)


def _fuzzy_score(needle: str, path: str) -> float | None:
    """How well ``needle`` matches ``path`` as a file finder does (higher is better; None = no match).

    A substring match beats a subsequence match; a match in the file name beats one in a folder;
    shorter paths win ties.
    """
    n, p = needle.lower(), path.lower()
    name = p.rsplit("/", 1)[-1]
    if n in (p, name):
        return 1000.0 - len(p) / 100
    if p.endswith("/" + n):
        return 900.0 - len(p) / 100
    if n in name:
        return 800.0 - len(p) / 100
    if n in p:
        return 700.0 - len(p) / 100
    # subsequence: every character in order; fewer gaps and a match ending in the file name score higher
    pos, gaps, last = -1, 0, -1
    for ch in n:
        nxt = p.find(ch, pos + 1)
        if nxt < 0:
            return None
        if last >= 0 and nxt != last + 1:
            gaps += 1
        pos = last = nxt
    in_name = pos >= len(p) - len(name)
    return 500.0 - 10 * gaps + (50 if in_name else 0) - len(p) / 100


def named_files(
    text: str, path_parts: Mapping[str, Iterable[str]], bare_words: bool
) -> tuple[dict[str, int], bool]:
    """Indexed files the query names, each with a weight (2 per explicit path or file name, 1 per bare
    word when ``bare_words``), and whether any was explicit; empty when none or more than 50 match.
    ``path_parts`` maps a lower-cased path component to the files having it."""
    hits: dict[str, int] = {}
    explicit = False
    words = dict.fromkeys(raw.lower().strip("./-") for raw in re.findall(r"[\w./-]+", text))
    for word in list(words)[:MAX_PATH_WORDS]:
        if len(word) < 3 or word in STOPWORDS:
            continue
        if "/" in word or _FILE_NAME.fullmatch(word):
            for p in path_parts.get(word.rsplit("/", 1)[-1], ()):  # files named, or under, the last part
                low = p.lower()
                if low == word or low.endswith("/" + word) or f"/{word}/" in f"/{low}":
                    hits[p] = hits.get(p, 0) + 2
                    explicit = True
        elif bare_words:
            for p in path_parts.get(word, ()):
                hits[p] = hits.get(p, 0) + 1
    return (hits, explicit) if len(hits) <= 50 else ({}, False)


def mentioned_files(
    parts: QueryParts, resolve: Callable[[str], list[str]]
) -> dict[str, list[tuple[str | None, int]]]:
    """Indexed files a pasted text names, in order (traceback frames innermost first, then written
    paths), each with its frames' (function, line); empty when none or more than 30 are named."""
    files: dict[str, list[tuple[str | None, int]]] = {}
    for f in reversed(parts.frames):
        for p in resolve(f.path):
            files.setdefault(p, []).append((f.func, f.line))
    for written in parts.paths:
        for p in resolve(written):
            files.setdefault(p, [])
    return files if len(files) <= 30 else {}


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

    @property
    def version(self) -> str:
        """The loaded version's generation ("" before the first refresh)."""
        view = self._view
        return str(view.meta.get("generation", "")) if view is not None else ""

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

    # -- filters ---------------------------------------------------------------------------------

    def _file_mask(self, ix: IndexView, parsed: ParsedQuery) -> tuple[list[str], np.ndarray]:
        """(files passing the filters, (n_rows,) bool of the live rows in them)."""
        files = [p for p in ix.files if parsed.accepts_path(p)]
        keep = set(files)
        mask = np.fromiter((p in keep for p in ix.paths), bool, count=ix.n_rows)
        return files, mask & ix.alive_mask

    def _file_finder(self, ix: IndexView, parsed: ParsedQuery, limit: int) -> list[Hit]:
        """A filter-only query lists the matching files; a plain ``path:`` value is also fuzzy."""
        plain = [g for g in parsed.path_globs if not any(ch in g for ch in "*?[")]
        files = [p for p in ix.files if parsed.accepts_path(p)]
        scored: list[tuple[float, str]]
        if plain:
            if not files:  # nothing holds the text: fall back to a fuzzy (subsequence) match
                lang_only = ParsedQuery("", [g for g in parsed.path_globs if g not in plain], parsed.langs)
                files = [p for p in ix.files if lang_only.accepts_path(p)]
            scored = []
            for p in files:
                per = [_fuzzy_score(g, p) for g in plain]
                if all(v is not None for v in per):
                    scored.append((sum(v for v in per if v is not None), p))
        else:
            scored = [(0.0, p) for p in files]
        scored.sort(key=lambda t: (-t[0], t[1]))
        shown = {p for _, p in scored[:limit]}
        last_row: dict[str, int] = {}
        for i, (p, live) in enumerate(zip(ix.paths, ix.alive_mask, strict=True)):
            if live and p in shown:
                last_row[p] = i  # a file's chunks are stored in line order
        out = []
        for rank, (_score, p) in enumerate(scored[:limit], start=1):
            end = ix.chunks[last_row[p]].end_line if p in last_row else 1
            out.append(Hit(p, 1, end, 1.0 / rank, None, detect_language(p),
                           {"bm25": None, "dense": None, "path": rank}))  # fmt: skip
        return out

    # -- retrievers --------------------------------------------------------------------------------

    @staticmethod
    def _top(ix: IndexView, scores: np.ndarray, n: int) -> list[int]:
        """Rows with the ``n`` best positive scores; ties by path and line (:attr:`IndexView.row_order`)."""
        positive = np.flatnonzero(scores > 0)
        if positive.size == 0 or n <= 0:
            return []
        vals = scores[positive]
        if positive.size > n:
            cut = np.partition(-vals, n - 1)[n - 1]
            keep = -vals <= cut
            positive, vals = positive[keep], vals[keep]
        order = np.lexsort((ix.row_order[positive], -vals))
        return [int(r) for r in positive[order][:n]]

    @staticmethod
    def _symbol_list(
        ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int, allowed: np.ndarray | None
    ) -> list[int]:
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
                    if allowed is not None and not allowed[row]:
                        continue
                    exact = 2 if cand in ix.chunks[row].defines else 1
                    prev = scored.get(row, (0, 0.0))
                    scored[row] = (max(prev[0], exact), float(bm25_scores[row]))
        order = ix.row_order
        ranked = sorted(scored, key=lambda r: (-scored[r][0], -scored[r][1], order[r]))
        return ranked[:limit]

    @staticmethod
    def _named_symbol_list(
        ix: IndexView, parts: QueryParts, bm25_scores: np.ndarray, limit: int, allowed: np.ndarray | None
    ) -> list[int]:
        """For a pasted text: chunks defining the names it is about (title, inline code, frames first)."""
        scored: dict[int, tuple[float, float]] = {}
        for name, weight in parts.names.items():
            for cand in dict.fromkeys([name, name.rsplit(".", 1)[-1]]):
                if len(cand) < 3 or cand.lower() in STOPWORDS:
                    continue
                rows = [r for r in ix.symbol_rows(cand) if allowed is None or allowed[r]]
                if not rows or len(rows) > MAX_SYMBOL_DEFS:
                    continue
                for row in rows:
                    exact = 1.0 if cand in ix.chunks[row].defines else 0.5
                    prev = scored.get(row, (0.0, 0.0))
                    scored[row] = (prev[0] + weight * exact, float(bm25_scores[row]))
        order = ix.row_order
        ranked = sorted(scored, key=lambda r: (-scored[r][0], -scored[r][1], order[r]))
        return ranked[:limit]

    @staticmethod
    def _resolve_path(ix: IndexView, written: str) -> list[str]:
        """Indexed files a written path names: those sharing the longest tail of path components.

        ``/usr/lib/python3/site-packages/pkg/mod.py`` finds ``src/pkg/mod.py``; a bare file name must
        be unambiguous enough (at most 3 files), a longer path must share at least two components.
        """
        comps = [c for c in written.replace("\\", "/").lower().split("/") if c and c not in (".", "..")]
        if not comps:
            return []
        cands = ix.path_parts.get(comps[-1], ())
        best: list[str] = []
        best_len = 0
        for p in cands:
            pc = p.lower().split("/")
            if pc[-1] != comps[-1]:
                continue
            common = 0
            while common < min(len(pc), len(comps)) and pc[-1 - common] == comps[-1 - common]:
                common += 1
            if common > best_len:
                best, best_len = [p], common
            elif common == best_len:
                best.append(p)
        if not best or (best_len < 2 and best_len < len(comps)) or (best_len == 1 and len(best) > 3):
            return []
        return sorted(best)

    def _mention_list(
        self,
        ix: IndexView,
        parts: QueryParts,
        bm25_scores: np.ndarray,
        limit: int,
        allowed: np.ndarray | None,
    ) -> list[int]:
        """Chunks of the files a pasted text names: traceback frames innermost first, then written
        paths. Each file leads with the chunk defining the frame's function (or holding its line)."""
        files = mentioned_files(parts, lambda written: self._resolve_path(ix, written))
        if not files:
            return []
        by_file: dict[str, list[int]] = {p: [] for p in files}
        paths = ix.paths
        for i in np.flatnonzero(ix.alive_mask if allowed is None else allowed):
            if paths[i] in by_file:
                by_file[paths[i]].append(int(i))
        order = ix.row_order
        heads: list[int] = []
        tails: list[int] = []
        for p, frames in files.items():
            rows = by_file[p]
            if not rows:
                continue

            def key(r: int, frames: list[tuple[str | None, int]] = frames) -> tuple[int, float, int]:
                c = ix.chunks[r]
                hit = any(
                    (func and (func in c.defines or func.rsplit(".", 1)[-1] in c.defines))
                    or c.start_line <= line <= c.end_line
                    for func, line in frames
                )
                return (0 if hit else 1, -float(bm25_scores[r]), int(order[r]))

            rows.sort(key=key)
            heads.append(rows[0])
            tails.extend(rows[1:3])
        return (heads + tails)[:limit]

    @staticmethod
    def _path_list(
        ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int, bare_words: bool
    ) -> tuple[list[int], bool]:
        """Chunks of files named by the query, by BM25 score within them; and whether a path was explicit.

        Explicit paths (``cli/main.go``, ``server.py``, as in a stack trace) always count; bare words
        (``routing``) only when ``bare_words`` (identifier-like queries).
        """
        hits, explicit = named_files(text, ix.path_parts, bare_words)
        if not hits:
            return [], False
        paths = ix.paths
        rows = [i for i in np.flatnonzero(bm25_scores > 0) if paths[i] in hits]
        order = ix.row_order
        rows.sort(key=lambda r: (-hits[paths[r]], -float(bm25_scores[r]), order[r]))
        return [int(r) for r in rows[:limit]], explicit

    @staticmethod
    def _phrase_list(ix: IndexView, text: str, bm25_scores: np.ndarray, limit: int) -> list[int]:
        """Chunks containing every "double-quoted" span of the query verbatim (case-insensitive)."""
        phrases = [p.lower() for p in _QUOTED.findall(text) if p.strip()]
        if not phrases:
            return []
        candidates = np.flatnonzero(bm25_scores > 0)
        hits = [i for i in map(int, candidates) if all(p in ix.chunks[i].text.lower() for p in phrases)]
        order = ix.row_order
        hits.sort(key=lambda i: (-float(bm25_scores[i]), order[i]))
        return hits[:limit]

    def _query_terms(
        self, ix: IndexView, text: str, title: str = ""
    ) -> tuple[list[str], dict[str, float] | None]:
        """BM25 terms and weights. A long pasted text (issue, stack trace) keeps its identifiers, weighted
        double, and its rarest other terms, so boilerplate prose cannot drown the names that matter;
        the words of its title (what the issue is about) are kept too."""
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
        weights = {t: 2.0 for t in code_terms}
        tw = self.settings.search.title_weight
        if title and tw > 0:
            for t in dict.fromkeys(tokenize(title)):
                if t in vocab:
                    if t not in keep:
                        keep.append(t)
                    weights[t] = max(weights.get(t, 1.0), tw)
        return keep, weights

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 20, mode: str | None = None) -> SearchResponse:
        """Rank chunks for ``query``. Never raises for bad query text: an unknown filter sets ``error``."""
        mode = mode or self.settings.search.mode
        t0 = time.perf_counter()
        if self._view is None:
            self.refresh()
        ix = self._view
        assert ix is not None
        resp = SearchResponse(query=query, results=[], mode=mode)
        resp.vectors_missing = int(ix.meta.get("counts", {}).get("vectors_missing", 0))
        parsed = parse_query(query[:20_000])
        allowed: np.ndarray | None = None
        if parsed.error is not None:
            resp.error = parsed.error
        elif parsed.has_filters and not parsed.text:
            resp.results = self._file_finder(ix, parsed, limit)
        else:
            if parsed.has_filters:
                _, allowed = self._file_mask(ix, parsed)
            self._rank(ix, parsed, mode, limit, allowed, resp)
        resp.took_ms = (time.perf_counter() - t0) * 1000
        return resp

    def _rank(
        self, ix: IndexView, parsed: ParsedQuery, mode: str, limit: int, allowed: np.ndarray | None,
        resp: SearchResponse,
    ) -> None:  # fmt: skip
        """Fill ``resp`` with the fused ranking of ``parsed.text`` (within ``allowed`` rows)."""
        s = self.settings.search
        parts = analyze(parsed.text)
        code_like = _looks_like_code(parsed.text)
        terms, weights = self._query_terms(ix, parsed.text, parts.title)
        # the name field for prose (an identifier-like query has the exact symbol list instead)
        name_weight = s.long_name_weight if parts.long else (0.0 if code_like else s.name_weight)
        fterms, fweights = field_query(terms, weights, name_weight)
        scores = ix.bm25_scores(fterms, fweights) if terms else np.zeros(ix.n_rows, np.float32)
        if allowed is not None:
            scores = np.where(allowed, scores, np.float32(0.0))
        lists: dict[str, list[int]] = {}
        piece_spans: dict[int, tuple[int, int]] = {}
        explicit_path = False
        if mode in ("hybrid", "bm25"):
            explicit_path = self._lexical_lists(
                ix, parsed.text, parts, scores, (fterms, fweights), allowed, lists, piece_spans
            )
        spans: dict[int, tuple[int, int]] = {}
        if mode in ("hybrid", "dense") and parsed.text:
            texts = [parsed.text]
            if parts.long and s.dense_segments:
                texts += parts.segments()
            dense, reason, spans = self._dense_list(ix, texts, s.top_n, allowed)
            if dense is not None:
                lists["dense"] = dense
            elif reason is not None:
                resp.degraded, resp.degraded_reason = True, reason
        order = ix.row_order
        fused = rrf(lists, k=s.rrf_k, weights=self._list_weights(parts.long, code_like, explicit_path),
                    order=lambda d: int(order[d]))  # fmt: skip
        self._apply_priors(ix, fused, parsed.text, parts, code_like)
        fused.sort(key=lambda f: (-f.score, min(f.ranks.values()), int(order[f.doc])))
        if allowed is not None:
            fused = [f for f in fused if allowed[f.doc]]
        if s.per_file_cap > 0:
            fused = diversify(fused, [ix.paths[f.doc] for f in fused], s.per_file_cap, limit)
        spans = self._best_pieces(spans, piece_spans, fused[:limit])
        resp.results = [self._hit(ix, f, terms, spans.get(f.doc)) for f in fused[:limit]]

    def _lexical_lists(
        self, ix: IndexView, text: str, parts: QueryParts, scores: np.ndarray,
        query_terms: tuple[list[str], dict[str, float] | None], allowed: np.ndarray | None,
        lists: dict[str, list[int]], piece_spans: dict[int, tuple[int, int]],
    ) -> bool:  # fmt: skip
        """Add the keyword-side ranked lists to ``lists`` (and the lines of each chunk's best BM25 piece to
        ``piece_spans``); True when the query names a path outright."""
        n = self.settings.search.top_n
        terms, weights = query_terms
        lists["bm25"] = self._top(ix, scores, n)
        # in a pasted text only the prose's quotes are phrases (not code, not traceback file names)
        quoted_in = parts.prose_without_frames() if parts.long else text
        lists["phrase"] = self._phrase_list(ix, quoted_in, scores, n)
        piece = ix.piece_ranked(terms, n, weights, allowed=allowed)
        lists["piece"] = [r for r, _ in piece]
        piece_spans.update((r, span) for r, span in piece if span is not None)
        if parts.long:
            lists["symbol"] = self._named_symbol_list(ix, parts, scores, n, allowed)
            lists["path"] = self._mention_list(ix, parts, scores, n, allowed)
            return False
        lists["symbol"] = self._symbol_list(ix, text, scores, n, allowed)
        lists["path"], explicit_path = self._path_list(ix, text, scores, n, _looks_like_code(text))
        if allowed is not None:
            lists["path"] = [r for r in lists["path"] if allowed[r]]
        return explicit_path

    def _best_pieces(
        self, dense: dict[int, tuple[int, int]], lexical: dict[int, tuple[int, int]], fused: list
    ) -> dict[int, tuple[int, int]]:
        """The piece each hit's best line follows (``search.best_piece``): "piece" = the chunk's best
        BM25 piece, else its best dense piece; "dense" = the dense piece only."""
        if self.settings.search.best_piece == "dense" or not lexical:
            return dense
        out = dict(dense)
        for f in fused:
            if f.doc in lexical:
                out[f.doc] = lexical[f.doc]
        return out

    def _list_weights(self, long: bool, code_like: bool, explicit_path: bool) -> dict[str, float]:
        """RRF weight of each ranked list for this kind of query."""
        s = self.settings.search
        w = {"bm25": s.bm25_weight, "dense": s.dense_weight, "symbol": s.symbol_weight,
             "path": s.path_weight, "piece": s.piece_weight, "phrase": s.phrase_weight}  # fmt: skip
        if long:
            w.update(symbol=s.long_symbol_weight, path=s.mention_weight, phrase=s.long_phrase_weight,
                     dense=s.long_dense_weight)  # fmt: skip
        elif not code_like:
            # prose mentioning a name usually asks about code that uses it, not for its definition
            w["symbol"] *= PROSE_SYMBOL_FACTOR
            if not explicit_path:
                w["path"] *= PROSE_PATH_FACTOR
        return w

    def _apply_priors(
        self, ix: IndexView, fused: list, text: str, parts: QueryParts, code_like: bool
    ) -> None:
        """Scale fused scores by the test-path and file-kind priors, then add file-level evidence."""
        s = self.settings.search
        test_weight = s.long_test_weight if parts.long else s.test_weight
        if test_weight != 1 and "test" not in (parts.title.lower() if parts.long else text.lower()):
            for f in fused:
                if _TEST_PATH.search(ix.paths[f.doc]):
                    f.score *= test_weight
        strength = s.kind_prior if parts.long else (0.0 if code_like else s.prose_kind_prior)
        if strength > 0:
            about = parts.title if parts.long else text
            exempt = filekinds.kinds_asked_about(set(re.findall(r"[\w.-]+", about.lower())))
            for f in fused:
                f.score *= filekinds.prior(ix.paths[f.doc], exempt, strength)
        agg = s.file_agg if parts.long else s.prose_file_agg
        if agg > 0:
            _aggregate_files(ix, fused, agg)

    @staticmethod
    def _hit(ix: IndexView, f: Any, terms: list[str], span: tuple[int, int] | None) -> Hit:
        """The result row of fused item ``f``."""
        c = ix.chunks[f.doc]
        ranks: dict[str, int | None] = {"bm25": f.ranks.get("bm25"), "dense": f.ranks.get("dense")}
        for extra in ("symbol", "path", "piece", "phrase"):
            if extra in f.ranks:
                ranks[extra] = f.ranks[extra]
        return Hit(c.path, c.start_line, c.end_line, f.score, c.symbol, c.language, ranks, terms, c.text,
                   best_piece=span)  # fmt: skip

    def _query_vectors(self, emb_id: str, texts: list[str]) -> list[np.ndarray]:
        """The texts' query vectors, remembered for the last few hundred texts (typing revisits them);
        the ones not remembered are embedded in one call."""
        assert self.embedder is not None
        have = {t: self._qcache.get((emb_id, t)) for t in dict.fromkeys(texts)}
        missing = [t for t, v in have.items() if v is None]
        if missing:
            vecs = self.embedder.embed(missing, kind="query")
            with self._qlock:
                for t, v in zip(missing, vecs, strict=True):
                    have[t] = self._qcache[(emb_id, t)] = v
                while len(self._qcache) > QUERY_CACHE:
                    self._qcache.pop(next(iter(self._qcache)))
        return [have[t] for t in texts]  # type: ignore[misc]

    def _dense_list(
        self, ix: IndexView, texts: list[str], n: int, allowed: np.ndarray | None = None
    ) -> tuple[list[int] | None, str | None, dict[int, tuple[int, int]]]:
        """Dense top-n, or (None, reason) when the dense side is unusable (None, None: not configured),
        with the lines of each chunk's best piece (for the first text: the whole query).

        Several texts (a pasted issue's whole text, title, prose and code) each rank the chunks; their
        rankings are fused by RRF into one list.
        """
        if self.embedder is None:
            return None, self.embedder_error, {}
        try:
            emb_id = self.embedder.id
            qs = self._query_vectors(emb_id, texts)
        except EmbedderError as exc:
            return None, str(exc), {}
        if ix.embedder != emb_id:
            return [], None, {}  # vectors are still being computed: not degraded, just nothing to fuse yet
        try:
            first = ix.dense_ranked(qs[0], n, allowed=allowed)
            ranked = [[r for r, _ in first]] + [ix.dense_ranked_chunks(q, n, allowed=allowed) for q in qs[1:]]
        except VectorDimensionMismatch as exc:
            return None, str(exc), {}
        spans = {r: span for r, span in first if span is not None}
        if len(ranked) == 1:
            return ranked[0], None, spans  # a chunk ranks by its best piece
        order = ix.row_order
        fused = rrf({str(i): r for i, r in enumerate(ranked)}, k=self.settings.search.rrf_k,
                    order=lambda d: int(order[d]))  # fmt: skip
        return [f.doc for f in fused[:n]], None, spans


def _aggregate_files(ix: IndexView, fused: list, agg: float) -> None:
    """File-level evidence: a file's best chunk scores its best plus ``agg`` times the damped sum of
    its other chunks (the i-th next best counts 1/i), so a file hit in many places rises."""
    by_file: dict[str, list] = {}
    for f in fused:
        by_file.setdefault(ix.paths[f.doc], []).append(f)
    for items in by_file.values():
        if len(items) < 2:
            continue
        items.sort(key=lambda f: -f.score)
        extra = sum(f.score / i for i, f in enumerate(items[1:], start=1))
        items[0].score += agg * extra
