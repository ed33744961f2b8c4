"""Search over a Milvus store: Milvus retrieves the candidates, our fusion orders them.

First stage in the engine: BM25 over our own token field (chunks and pieces), dense search over the
piece vectors, scalar filters (workspace, language, files passing ``path:``), and the chunks defining a
name the query mentions (a second BM25 field over the defined names: an exact-name inverted index).
The lists are then fused with the same RRF weights, test-file and file-kind priors as the local
:class:`~aide_tui.core.search.searcher.Searcher`, ties broken by path and line, so both stores answer alike.
``all_workspaces`` searches every workspace of the collection and labels each hit with its workspace.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core import filekinds
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, EmbedderError
from aide_tui.core.milvus.store import META_PATH, MilvusBackend, _lit, check_layout, names_text, query_text
from aide_tui.core.search.fuse import rrf
from aide_tui.core.search.query import analyze
from aide_tui.core.search.searcher import (
    _CODE_LIKE,
    _QUOTED,
    _TEST_PATH,
    MAX_SYMBOL_DEFS,
    PROSE_PATH_FACTOR,
    PROSE_SYMBOL_FACTOR,
    Hit,
    ParsedQuery,
    SearchResponse,
    _looks_like_code,
    diversify,
    parse_query,
)
from aide_tui.core.store.segments import IndexMissing
from aide_tui.core.tokens import STOPWORDS, identifiers, tokenize

CHUNK_FIELDS = [
    "workspace",
    "path",
    "start_line",
    "end_line",
    "language",
    "symbol",
    "text",
    "defines",
    "file_hash",
]
PIECE_FIELDS = ["chunk_id", "start_line", "end_line"]
MAX_FILTER_FILES = 2000  # path: filters become `path in [...]` up to this many files, else a post-filter


@dataclass
class Cand:
    """A chunk row fetched from the engine."""

    id: str
    workspace: str
    path: str
    start_line: int
    end_line: int
    language: str
    symbol: str | None
    text: str
    defines: tuple[str, ...]
    file_hash: str = ""


@dataclass
class _Query:
    """One query's parts and what the lists found (candidates by chunk row id)."""

    parsed: ParsedQuery
    parts: Any
    code_like: bool
    terms: list[str]
    qtext: str
    flt: str
    post: bool
    cands: dict[str, Cand] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=dict)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    explicit_path: bool = False


@dataclass
class WorkspaceHit(Hit):
    """A hit of a search over several workspaces: says which one."""

    workspace: str = ""
    root: str = ""  # the workspace's root where it was indexed (not serialised: it may be another machine's)
    file_hash: str = ""  # sha1 of the file as indexed: another workspace's file is read only if it matches

    def to_json(self) -> dict[str, object]:
        out = super().to_json()
        out["workspace"] = self.workspace
        return out


class MilvusSearcher:
    """Same ``refresh`` / ``search`` as :class:`~aide_tui.core.search.searcher.Searcher`, over Milvus."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 embedder_error: str | None = None, all_workspaces: bool = False) -> None:  # fmt: skip
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error
        self.all_workspaces = all_workspaces
        self.backend = MilvusBackend(self.root, settings)
        self.ws = self.backend.ws
        self._lock = threading.Lock()
        self.metas: dict[str, dict[str, Any]] = {}
        self.files: dict[str, set[str]] = {}  # workspace -> its files
        self.vectors_missing = 0
        self._path_parts: dict[str, set[str]] = {}
        self.version = ""  # this workspace's committed version when last refreshed

    @property
    def store(self) -> Any:
        return self.backend.store()

    # -- loading -----------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Read the workspace records and file lists. Raises IndexMissing when nothing is indexed."""
        with self._lock:
            store = self.store
            if not store.exists():
                raise IndexMissing(f"Milvus store {store.uri}: collection {store.name} does not exist yet: "
                                   "run `aide-tui index`")  # fmt: skip
            check_layout(store)
            metas = store.workspaces()
            if not self.all_workspaces:
                metas = {k: v for k, v in metas.items() if k == self.ws}
            if not metas:
                raise IndexMissing(
                    f"workspace {self.ws} is not in collection {store.name}: run `aide-tui index`"
                )
            files: dict[str, set[str]] = {}
            missing = 0
            for ws in metas:
                recs = store.records(ws)
                files[ws] = set(recs)
                if metas[ws].get("embedder", "none") != "none":
                    missing += sum(r.pieces - r.vectors for r in recs.values())
            self.metas, self.files, self.vectors_missing = metas, files, missing
            self.version = str((metas.get(self.ws) or {}).get("version", ""))
            parts: dict[str, set[str]] = {}
            for ws_files in files.values():
                for p in ws_files:
                    segs = p.lower().split("/")
                    stem = segs[-1].rsplit(".", 1)[0]
                    for part in {*segs[:-1], stem, segs[-1]}:
                        parts.setdefault(part, set()).add(p)
            self._path_parts = parts
            return True

    # -- engine calls ------------------------------------------------------------------------------

    def _base_filter(self, parsed: ParsedQuery) -> tuple[str, bool]:
        """(filter expression, whether a post-filter on path is still needed)."""
        parts: list[str] = []
        if not self.all_workspaces:
            parts.append(f"workspace == {_lit(self.ws)}")
        if parsed.langs:
            parts.append(f"language in [{', '.join(map(_lit, parsed.langs))}]")
        post = False
        if parsed.path_globs:
            allowed = sorted({p for fs in self.files.values() for p in fs if parsed.accepts_path(p)})
            if len(allowed) <= MAX_FILTER_FILES:
                parts.append(f"path in [{', '.join(map(_lit, allowed))}]" if allowed else 'path == ""')
            else:
                post = True
        return " and ".join(parts), post

    def _search(self, collection: str, data: Any, field: str, limit: int, flt: str, fields: list[str],
                metric: str) -> list[tuple[dict, float]]:  # fmt: skip
        c = self.store.client()
        res = self.store.call(
            "search", c.search, collection, data=[data], anns_field=field, limit=limit, filter=flt,
            output_fields=fields, search_params={"metric_type": metric},
        )  # fmt: skip
        out = []
        for h in res[0] if res else []:
            ent = dict(h.get("entity") or {})
            ent["id"] = h.get("id")
            out.append((ent, float(h.get("distance", 0.0))))
        return out

    @staticmethod
    def _cand(ent: dict) -> Cand:
        return Cand(str(ent["id"]), ent.get("workspace", ""), ent["path"], int(ent["start_line"]),
                    int(ent["end_line"]), ent.get("language") or "text", ent.get("symbol") or None,
                    ent.get("text") or "", tuple(ent.get("defines") or ()),
                    str(ent.get("file_hash") or ""))  # fmt: skip

    def _fetch(self, cands: dict[str, Cand], ids: list[str]) -> None:
        need = [i for i in dict.fromkeys(ids) if i not in cands]
        if not need:
            return
        c = self.store.client()
        for k in range(0, len(need), 500):
            rows = self.store.call("fetch chunks", c.get, self.store.chunks, ids=need[k : k + 500],
                                   output_fields=CHUNK_FIELDS)  # fmt: skip
            for r in rows:
                cands[str(r["id"])] = self._cand(r)

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 20, mode: str | None = None) -> SearchResponse:
        """Rank chunks for ``query`` (the local searcher's lists, fusion and priors)."""
        mode = mode or self.settings.search.mode
        t0 = time.perf_counter()
        if not self.metas:
            self.refresh()
        resp = SearchResponse(query=query, results=[], mode=mode)
        resp.vectors_missing = self.vectors_missing
        parsed = parse_query(query[:20_000])
        if parsed.error is not None:
            resp.error = parsed.error
        elif parsed.has_filters and not parsed.text:
            resp.results = self._file_finder(parsed, limit)
        else:
            q = self._query(parsed)
            if mode in ("hybrid", "bm25"):
                self._lexical_lists(q)
            if mode in ("hybrid", "dense") and parsed.text:
                self._dense_into(q, resp)
            self._fetch(q.cands, [i for lst in q.lists.values() for i in lst])
            if mode in ("hybrid", "bm25"):
                quoted_in = q.parts.prose_without_frames() if q.parts.long else parsed.text
                q.lists["phrase"] = self._phrase_list(
                    quoted_in, q.cands, q.scores, self.settings.search.top_n
                )
            resp.results = self._hits(q, self._ranked(q, limit), limit)
        resp.took_ms = (time.perf_counter() - t0) * 1000
        return resp

    def _query(self, parsed: ParsedQuery) -> _Query:
        """A query's terms (a pasted text keeps its identifiers weighted double) and engine filter."""
        parts = analyze(parsed.text)
        terms = list(dict.fromkeys(tokenize(parsed.text)))
        weights: dict[str, float] | None = None
        if parts.long:  # see Searcher._query_terms
            code = {t for w in identifiers(parsed.text) if _CODE_LIKE.search(w) for t in tokenize(w)}
            weights = {t: 2.0 for t in code}
        flt, post = self._base_filter(parsed)
        return _Query(
            parsed, parts, _looks_like_code(parsed.text), terms, query_text(terms, weights), flt, post
        )

    def _lexical_lists(self, q: _Query) -> None:
        """BM25 over chunks and pieces, the chunks defining the names, the files the query names."""
        if not q.qtext:
            return
        n = self.settings.search.top_n
        found = self._search(self.store.chunks, q.qtext, "sparse", n, q.flt, CHUNK_FIELDS, "BM25")
        for ent, dist in found:
            cand = self._cand(ent)
            q.cands[cand.id] = cand
            q.scores[cand.id] = abs(dist)
        q.lists["bm25"] = [str(e["id"]) for e, _ in found]
        pieces = self._search(self.store.pieces, q.qtext, "sparse", 4 * n, q.flt, PIECE_FIELDS, "BM25")
        q.lists["piece"] = list(dict.fromkeys(str(e["chunk_id"]) for e, _ in pieces))[:n]
        q.lists["symbol"] = self._symbol_list(q.parsed.text, q.parts, q.flt, q.cands, q.scores, n)
        if q.parts.long:
            q.lists["path"] = self._mention_list(q.parts, q.flt, q.cands, q.scores, n)
        else:
            q.lists["path"], q.explicit_path = self._path_list(
                q.parsed.text, q.qtext, q.flt, q.cands, q.scores, n, q.code_like
            )

    def _dense_into(self, q: _Query, resp: SearchResponse) -> None:
        dense, reason, q.spans = self._dense_list(q.parsed.text, q.flt, self.settings.search.top_n)
        if dense is not None:
            q.lists["dense"] = dense
        elif reason is not None:
            resp.degraded, resp.degraded_reason = True, reason

    def _list_weights(self, q: _Query) -> dict[str, float]:
        s = self.settings.search
        weights = {
            "bm25": s.bm25_weight, "dense": s.dense_weight, "symbol": s.symbol_weight,
            "path": s.path_weight, "piece": s.piece_weight, "phrase": s.phrase_weight,
        }  # fmt: skip
        if q.parts.long:
            weights.update(symbol=s.long_symbol_weight, path=s.mention_weight,
                           phrase=s.long_phrase_weight, dense=s.long_dense_weight)  # fmt: skip
        elif not q.code_like:
            weights["symbol"] *= PROSE_SYMBOL_FACTOR
            if not q.explicit_path:
                weights["path"] *= PROSE_PATH_FACTOR
        return weights

    def _ranked(self, q: _Query, limit: int) -> list[tuple[Any, Cand]]:
        """The candidates fused by RRF, with the test-file, file-kind and file-aggregation priors."""
        s = self.settings.search
        cands = q.cands
        lists = {k: [i for i in v if i in cands] for k, v in q.lists.items()}
        if q.post:
            lists = {k: [i for i in v if q.parsed.accepts_path(cands[i].path)] for k, v in lists.items()}
        keys = sorted(cands, key=lambda i: (cands[i].workspace, cands[i].path, cands[i].start_line, i))
        num = {k: n for n, k in enumerate(keys)}  # rrf fuses ints, numbered in (workspace, path, line) order
        fused = rrf({k: [num[i] for i in v] for k, v in lists.items()}, k=s.rrf_k,
                    weights=self._list_weights(q), order=lambda d: d)  # fmt: skip
        row = {n: cands[k] for k, n in num.items()}
        self._priors(q, fused, row)
        fused.sort(key=lambda f: (-f.score, min(f.ranks.values()), f.doc))
        if s.per_file_cap > 0:
            fused = diversify(fused, [f"{row[f.doc].workspace}\0{row[f.doc].path}" for f in fused],
                              s.per_file_cap, limit)  # fmt: skip
        return [(f, row[f.doc]) for f in fused]

    def _priors(self, q: _Query, fused: list, row: dict[int, Cand]) -> None:
        s = self.settings.search
        parts, text = q.parts, q.parsed.text
        test_weight = s.long_test_weight if parts.long else s.test_weight
        if test_weight != 1 and "test" not in (parts.title.lower() if parts.long else text.lower()):
            for f in fused:
                if _TEST_PATH.search(row[f.doc].path):
                    f.score *= test_weight
        strength = s.kind_prior if parts.long else (0.0 if q.code_like else s.prose_kind_prior)
        if strength > 0:
            about = parts.title if parts.long else text
            exempt = filekinds.kinds_asked_about(set(re.findall(r"[\w.-]+", about.lower())))
            for f in fused:
                f.score *= filekinds.prior(row[f.doc].path, exempt, strength)
        agg = s.file_agg if parts.long else s.prose_file_agg
        if agg > 0:
            by_file: dict[tuple[str, str], list] = {}
            for f in fused:
                by_file.setdefault((row[f.doc].workspace, row[f.doc].path), []).append(f)
            for items in by_file.values():
                if len(items) > 1:
                    items.sort(key=lambda f: -f.score)
                    items[0].score += agg * sum(f.score / i for i, f in enumerate(items[1:], start=1))

    def _hits(self, q: _Query, ranked: list[tuple[Any, Cand]], limit: int) -> list[Hit]:
        out: list[Hit] = []
        for f, c in ranked[:limit]:
            ranks: dict[str, int | None] = {"bm25": f.ranks.get("bm25"), "dense": f.ranks.get("dense")}
            ranks.update({k: f.ranks[k] for k in ("symbol", "path", "piece", "phrase") if k in f.ranks})
            args = (c.path, c.start_line, c.end_line, f.score, c.symbol, c.language, ranks, q.terms, c.text)
            best = q.spans.get(c.id)
            if self.all_workspaces:
                out.append(
                    WorkspaceHit(
                        *args,
                        best_piece=best,
                        workspace=c.workspace,
                        root=self._root_of(c.workspace),
                        file_hash=c.file_hash,
                    )
                )
            else:
                out.append(Hit(*args, best_piece=best))
        return out

    # -- lists -------------------------------------------------------------------------------------

    def _symbol_list(self, text: str, parts: Any, flt: str, cands: dict[str, Cand], scores: dict[str, float],
                     limit: int) -> list[str]:  # fmt: skip
        """Chunks defining the names the query mentions (exact case first, then by BM25 score)."""
        names: dict[str, float] = {}
        if parts.long:
            for name, weight in parts.names.items():
                for cand in dict.fromkeys([name, name.rsplit(".", 1)[-1]]):
                    if len(cand) >= 3 and cand.lower() not in STOPWORDS:
                        names[cand] = names.get(cand, 0.0) + weight
        else:
            words = identifiers(text)
            short = len(words) <= 3
            for w in words:
                if not (short or _CODE_LIKE.search(w)):
                    continue
                for cand in dict.fromkeys([w, w.rsplit(".", 1)[-1]]):
                    if len(cand) >= 3 and cand.lower() not in STOPWORDS:
                        names.setdefault(cand, 1.0)
        if not names:
            return []
        lows = sorted({n.lower() for n in names})[:64]
        found = self._search(self.store.chunks, names_text(lows), "names_sparse", max(limit * 4, 200), flt,
                             CHUNK_FIELDS, "BM25")  # fmt: skip
        per_name: dict[str, list[str]] = {}
        for r, _ in found:
            cand = self._cand(r)
            cands.setdefault(cand.id, cand)
            for d in cand.defines:
                per_name.setdefault(d.lower(), []).append(cand.id)
        scored: dict[str, tuple[float, float]] = {}
        for name, weight in names.items():
            ids = list(dict.fromkeys(per_name.get(name.lower(), [])))
            if parts.long and (not ids or len(ids) > MAX_SYMBOL_DEFS):
                continue
            for i in ids:
                exact = (
                    (2 if name in cands[i].defines else 1)
                    if not parts.long
                    else (1.0 if name in cands[i].defines else 0.5) * weight
                )
                prev = scored.get(i, (0.0, 0.0))
                total = prev[0] + exact if parts.long else max(prev[0], exact)
                scored[i] = (total, scores.get(i, 0.0))
        key = {i: (cands[i].workspace, cands[i].path, cands[i].start_line) for i in scored}
        return sorted(scored, key=lambda i: (-scored[i][0], -scored[i][1], key[i]))[:limit]

    def _path_list(self, text: str, qtext: str, flt: str, cands: dict[str, Cand], scores: dict[str, float],
                   limit: int, bare_words: bool) -> tuple[list[str], bool]:  # fmt: skip
        """Chunks of files the query names, best BM25 first (the engine searches just those files)."""
        from aide_tui.core.search.searcher import named_files

        hits, explicit = named_files(text, self._path_parts, bare_words)
        if not hits or not qtext:
            return [], False
        expr = f"path in [{', '.join(map(_lit, sorted(hits)))}]"
        found = self._search(self.store.chunks, qtext, "sparse", limit, f"{flt} and {expr}" if flt else expr,
                             CHUNK_FIELDS, "BM25")  # fmt: skip
        rows = []
        for ent, dist in found:
            cand = self._cand(ent)
            cands.setdefault(cand.id, cand)
            scores.setdefault(cand.id, abs(dist))
            rows.append(cand.id)
        rows.sort(key=lambda i: (-hits[cands[i].path], -scores.get(i, 0.0), cands[i].workspace,
                                 cands[i].path, cands[i].start_line))  # fmt: skip
        return rows[:limit], explicit

    def _mention_list(
        self, parts: Any, flt: str, cands: dict[str, Cand], scores: dict[str, float], limit: int
    ) -> list[str]:
        """For a pasted text: chunks of the files it names (traceback frames innermost first, then written
        paths), each file leading with the chunk defining the frame's function or holding its line."""
        from types import SimpleNamespace

        from aide_tui.core.search.searcher import Searcher, mentioned_files

        shim: Any = SimpleNamespace(path_parts=self._path_parts)
        files = mentioned_files(parts, lambda written: Searcher._resolve_path(shim, written))
        if not files:
            return []
        expr = f"path in [{', '.join(map(_lit, sorted(files)))}]"
        c = self.store.client()
        rows = self.store.call(
            "query", c.query, self.store.chunks, filter=f"{flt} and {expr}" if flt else expr,
            output_fields=CHUNK_FIELDS, limit=5000,
        )  # fmt: skip
        by_file: dict[str, list[str]] = {p: [] for p in files}
        for r in rows:
            cand = self._cand(r)
            cands.setdefault(cand.id, cand)
            by_file.setdefault(cand.path, []).append(cand.id)
        heads: list[str] = []
        tails: list[str] = []
        for p, frames in files.items():
            ids = by_file.get(p) or []
            if not ids:
                continue

            def key(i: str, frames: list[tuple[str | None, int]] = frames) -> tuple[int, float, str, int]:
                c = cands[i]
                hit = any(
                    (func and (func in c.defines or func.rsplit(".", 1)[-1] in c.defines))
                    or c.start_line <= line <= c.end_line
                    for func, line in frames
                )
                return (0 if hit else 1, -scores.get(i, 0.0), c.workspace, c.start_line)

            ids.sort(key=key)
            heads.append(ids[0])
            tails.extend(ids[1:3])
        return (heads + tails)[:limit]

    @staticmethod
    def _phrase_list(text: str, cands: dict[str, Cand], scores: dict[str, float], limit: int) -> list[str]:
        """Candidates holding every "double-quoted" span of the query verbatim (case-insensitive)."""
        phrases = [p.lower() for p in _QUOTED.findall(text) if p.strip()]
        if not phrases:
            return []
        hits = [
            i for i, c in cands.items() if scores.get(i, 0) > 0 and all(p in c.text.lower() for p in phrases)
        ]
        hits.sort(key=lambda i: (-scores[i], cands[i].workspace, cands[i].path, cands[i].start_line))
        return hits[:limit]

    def _dense_list(self, text: str, flt: str, n: int) -> tuple[list[str] | None, str | None,
                                                                  dict[str, tuple[int, int]]]:  # fmt: skip
        """Chunks ranked by their best piece's similarity (the engine's top pieces), with the piece lines."""
        if self.embedder is None:
            return None, self.embedder_error, {}
        try:
            emb_id = self.embedder.id
            q = np.asarray(self.embedder.embed([text], kind="query")[0], np.float32)
        except EmbedderError as exc:
            return None, str(exc), {}
        dim = self.store.vector_dim()
        if not dim:
            return (
                None,
                f"collection {self.store.name} holds no vectors (it was created without an embedder)",
                {},
            )
        if dim != q.shape[0]:
            return None, (f"the collection holds {dim}-dimensional vectors but the embedder now gives "
                          f"{q.shape[0]}"), {}  # fmt: skip
        embedders = {m.get("embedder", "none") for m in self.metas.values()}
        if emb_id not in embedders:
            return [], None, {}  # vectors not computed by this embedder (yet): nothing to fuse
        found = self._search(self.store.pieces, q.tolist(), "vec", 4 * n, flt, PIECE_FIELDS, "IP")
        out: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        for ent, sim in found:
            if sim <= 0:
                continue
            cid = str(ent["chunk_id"])
            if cid not in spans:
                spans[cid] = (int(ent["start_line"]), int(ent["end_line"]))
                out.append(cid)
                if len(out) >= n:
                    break
        return out, None, spans

    def _file_finder(self, parsed: ParsedQuery, limit: int) -> list[Hit]:
        """A filter-only query lists the matching files (path order)."""
        from aide_tui.core.chunk.chunker import detect_language

        out: list[Hit] = []
        pairs = sorted((p, ws) for ws, fs in self.files.items() for p in fs if parsed.accepts_path(p))
        for rank, (p, ws) in enumerate(pairs[:limit], start=1):
            args = (
                p,
                1,
                1,
                1.0 / rank,
                None,
                detect_language(p),
                {"bm25": None, "dense": None, "path": rank},
            )
            out.append(WorkspaceHit(*args, workspace=ws, root=self._root_of(ws)) if self.all_workspaces
                       else Hit(*args))  # fmt: skip
        return out

    def _root_of(self, ws: str) -> str:
        if ws == self.ws:
            return str(self.root)
        root = (self.metas.get(ws) or {}).get(
            "root"
        )  # written by whoever indexed it: hitlines.hit_root checks
        return root if isinstance(root, str) else ""


__all__ = ["META_PATH", "MilvusSearcher", "WorkspaceHit"]
