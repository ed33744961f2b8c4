"""The Milvus retriever: the engine gives each list's candidates, our ranking orders them.

First stage in the engine: BM25 over our own token field (chunks and pieces), dense search over the
piece vectors, scalar filters (workspace, language, the files passing ``path:``), and the chunks
defining a name (a second BM25 field over the defined names: an exact-name inverted index). Keys are
row ids; ties break by (workspace, path, first line), as the local store's by (path, first line).
``all_workspaces`` searches every workspace of the collection and labels each candidate with its
workspace.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import same_model
from aide_tui.core.errors import IndexMissing, IndexProblem, StoreUnavailable
from aide_tui.core.milvus.connection import (
    INSTALL_HINT,
    MilvusStore,
    check_layout,
    collection_name,
    connect,
    shown_uri,
    workspace_id,
)
from aide_tui.core.milvus.lite import release_engine
from aide_tui.core.milvus.terms import literal, names_text, query_text
from aide_tui.core.search.filters import ParsedQuery
from aide_tui.core.search.retriever import Candidate, DenseLists, IndexedFile
from aide_tui.core.status import IndexStatus

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
PIECE_FIELDS = ["chunk_id", "path", "start_line", "end_line"]
MAX_FILTER_FILES = 2000  # path: filters become `path in [...]` up to this many files, else a post-filter
MAX_NAMES = 64  # names looked up in one definition search
MENTION_ROWS = 5000  # chunks read of the files a pasted text names


def _cand(ent: dict[str, Any]) -> Candidate:
    return Candidate(
        ent["path"], int(ent["start_line"]), int(ent["end_line"]), ent.get("language") or "text",
        ent.get("symbol") or None, ent.get("text") or "", tuple(ent.get("defines") or ()),
        ent.get("workspace", ""), "", str(ent.get("file_hash") or ""),
    )  # fmt: skip


class MilvusRetrieval:
    """One query: the engine filter, the BM25 query text, and the candidates fetched so far."""

    def __init__(self, r: MilvusRetriever, parsed: ParsedQuery, terms: list[str],
                 weights: dict[str, float] | None) -> None:  # fmt: skip
        self.r = r
        self.store = r.store()
        self.parsed = parsed
        self.qtext = query_text(terms, weights)
        self.flt, self.post = r.engine_filter(parsed)
        self.cands: dict[str, Candidate] = {}
        self.scores: dict[str, float] = {}

    # -- engine calls ----------------------------------------------------------------------------------

    def _search(self, collection: str, data: Any, field: str, limit: int, fields: list[str], metric: str,
                extra: str = "") -> list[tuple[dict[str, Any], float]]:  # fmt: skip
        flt = f"{self.flt} and {extra}" if self.flt and extra else (self.flt or extra)
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

    def _take(self, ent: dict[str, Any], score: float | None = None) -> str:
        """Remember a chunk row the engine returned (and its BM25 score, first seen wins)."""
        key = str(ent["id"])
        self.cands.setdefault(key, _cand(ent))
        if score is not None:
            self.scores.setdefault(key, abs(score))
        return key

    def _passing(self, keys: Iterable[str]) -> list[str]:
        """The keys whose file passes ``path:`` when the engine could not filter it (too many files)."""
        if not self.post:
            return list(keys)
        return [k for k in keys if self.parsed.accepts_path(self.cands[k].path)]

    # -- lists -----------------------------------------------------------------------------------------

    def bm25(self, n: int) -> list[str]:
        if not self.qtext:
            return []
        found = self._search(self.store.chunks, self.qtext, "sparse", n, CHUNK_FIELDS, "BM25")
        keys = [str(e["id"]) for e, _ in found]
        for ent, dist in found:
            self.cands[str(ent["id"])] = _cand(ent)
            self.scores[str(ent["id"])] = abs(dist)
        return self._passing(keys)

    def score(self, key: str) -> float:
        return self.scores.get(key, 0.0)

    def positive(self) -> Iterable[str]:
        return [k for k in self.cands if self.scores.get(k, 0.0) > 0]

    def holding(self, all_of: Sequence[str], any_of: Sequence[str], prefix: str) -> None:
        return None  # the server's candidates are all there is: positive() filters them

    def piece_bm25(self, n: int) -> tuple[list[str], dict[str, tuple[int, int]]]:
        if not self.qtext:
            return [], {}
        found = self._search(self.store.pieces, self.qtext, "sparse", 4 * n, PIECE_FIELDS, "BM25")
        first: dict[str, dict[str, Any]] = {}
        for ent, _ in found:
            first.setdefault(str(ent["chunk_id"]), ent)  # a chunk's best piece comes first
        best = list(first)[:n]
        if self.post:
            best = [k for k in best if self.parsed.accepts_path(first[k].get("path", ""))]
        return best, {k: (int(first[k]["start_line"]), int(first[k]["end_line"])) for k in best}

    def defining(self, names: Sequence[str]) -> dict[str, list[str]]:
        lows = sorted({n.lower() for n in names})[:MAX_NAMES]
        if not lows:
            return {}
        limit = max(self.r.settings.search.top_n * 4, 200)
        found = self._search(self.store.chunks, names_text(lows), "names_sparse", limit, CHUNK_FIELDS, "BM25")
        out: dict[str, list[str]] = {}
        for ent, _ in found:
            key = self._take(ent)
            for d in self.cands[key].defines:
                out.setdefault(d.lower(), []).append(key)
        return {name: self._passing(dict.fromkeys(keys)) for name, keys in out.items()}

    def in_files(self, files: Collection[str], n: int) -> list[str]:
        if not self.qtext or not files:
            return []
        expr = f"path in [{', '.join(map(literal, sorted(files)))}]"
        found = self._search(self.store.chunks, self.qtext, "sparse", n, CHUNK_FIELDS, "BM25", expr)
        return self._passing(self._take(ent, dist) for ent, dist in found)

    def all_in_files(self, files: Collection[str]) -> list[str]:
        if not files:
            return []
        expr = f"path in [{', '.join(map(literal, sorted(files)))}]"
        flt = f"{self.flt} and {expr}" if self.flt else expr
        c = self.store.client()
        rows = self.store.call("query", c.query, self.store.chunks, filter=flt, output_fields=CHUNK_FIELDS,
                               limit=MENTION_ROWS)  # fmt: skip
        return self._passing(self._take(r) for r in rows)

    def static(self, vector: np.ndarray, static_id: str, n: int) -> DenseLists[str]:
        """A Milvus collection keeps no static-tier vectors (its schema has one vector field)."""
        return DenseLists[str]()

    def dense(self, vectors: Sequence[np.ndarray], embedder_id: str, n: int) -> DenseLists[str]:
        store = self.store
        dim = store.vector_dim()
        if not dim:
            return DenseLists[str](
                degraded=f"collection {store.name} holds no vectors (it was created without an embedder)"
            )
        given = int(np.asarray(vectors[0]).shape[0])
        if dim != given:
            return DenseLists[str](
                degraded=f"the collection holds {dim}-dimensional vectors but the embedder now gives {given}"
            )
        if not any(same_model(embedder_id, e) for e in self.r.embedders()):
            return DenseLists[str]()  # vectors not computed by this embedder (yet): nothing to fuse
        out = DenseLists[str]()
        for i, vec in enumerate(vectors):
            found = self._search(
                store.pieces, np.asarray(vec, np.float32).tolist(), "vec", 4 * n, PIECE_FIELDS, "IP"
            )
            ranked: list[str] = []
            if i == 0:
                out.best = max((sim for _, sim in found), default=None)
            for ent, sim in found:
                cid = str(ent["chunk_id"])
                if sim <= 0 or cid in ranked:
                    continue
                if i == 0:
                    out.spans[cid] = (int(ent["start_line"]), int(ent["end_line"]))
                ranked.append(cid)
                if len(ranked) >= n:
                    break
            out.lists.append(ranked)
        self.fetch(k for keys in out.lists for k in keys)
        out.lists = [self._passing(keys) for keys in out.lists]
        return out

    # -- candidates ------------------------------------------------------------------------------------

    def fetch(self, keys: Iterable[str]) -> None:
        need = [k for k in dict.fromkeys(keys) if k not in self.cands]
        c = self.store.client()
        for i in range(0, len(need), 500):
            rows = self.store.call("fetch chunks", c.get, self.store.chunks, ids=need[i : i + 500],
                                   output_fields=CHUNK_FIELDS)  # fmt: skip
            for r in rows:
                self.cands[str(r["id"])] = _cand(r)

    def chunk(self, key: str) -> Candidate:
        c = self.cands[key]
        if not self.r.all_workspaces:
            return replace(c, workspace="")
        return replace(c, root=self.r.root_of(c.workspace))

    def path(self, key: str) -> str:
        return self.cands[key].path

    def defines(self, key: str) -> tuple[str, ...]:
        return self.cands[key].defines

    def file_of(self, key: str) -> str:
        c = self.cands[key]
        return f"{c.workspace}\0{c.path}"

    def order(self, key: str) -> object:
        c = self.cands[key]
        return (c.workspace, c.path, c.start_line, key)


class MilvusRetriever:
    """This workspace in a Milvus collection (or every workspace of it), read through one connection."""

    def __init__(self, root: Path, settings: Settings, all_workspaces: bool = False,
                 alongside: MilvusRetriever | None = None) -> None:  # fmt: skip
        self.root = Path(root)
        self.settings = settings
        self.all_workspaces = all_workspaces
        self.ws = workspace_id(self.root, settings)
        self.name = collection_name(self.root, settings)
        self._store: MilvusStore | None = alongside.store() if alongside is not None else None
        self._lock = threading.Lock()
        self.metas: dict[str, dict[str, Any]] = {}
        self.workspace_files: dict[str, set[str]] = {}  # workspace -> its files
        self._vectors_missing = 0
        self._chunks = 0
        self._path_parts: dict[str, set[str]] = {}
        self._version = ""  # this workspace's committed version when last refreshed

    def store(self, create: bool = False) -> MilvusStore:
        """The connection (made on first use; a read-only store never creates its Lite folder)."""
        if self._store is None:
            self._store = connect(self.root, self.settings, create=create)
        return self._store

    # -- what was loaded -------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        return self._version

    @property
    def loaded(self) -> bool:
        return bool(self.metas)

    @property
    def vectors_missing(self) -> int:
        return self._vectors_missing

    @property
    def static_missing(self) -> int:
        """A Milvus collection keeps no static-tier vectors: every chunk lacks one when the tier is on."""
        from aide_tui.core.embed.factory import static_enabled

        return self._chunks if static_enabled(self.settings) else 0

    @property
    def path_parts(self) -> Mapping[str, set[str]]:
        return self._path_parts

    @property
    def term_stats(self) -> None:
        return None  # the engine keeps its vocabulary to itself: long queries keep every term

    @property
    def graph(self) -> None:
        """None: the symbol graph is kept by the local store only (see docs/architecture.md)."""
        return None

    def embedders(self) -> set[str]:
        """The embedders whose vectors the searched workspaces hold."""
        return {str(m.get("embedder", "none")) for m in self.metas.values()}

    def root_of(self, ws: str) -> str:
        """Where a workspace was indexed (written by whoever indexed it: hitlines.hit_root checks it)."""
        if ws == self.ws:
            return str(self.root)
        root = (self.metas.get(ws) or {}).get("root")
        return root if isinstance(root, str) else ""

    # -- loading ---------------------------------------------------------------------------------------

    def version_key(self) -> object | None:
        try:
            meta = self.store().meta(self.ws)
        except IndexProblem:
            return None
        return None if meta is None else meta.get("version")

    def refresh(self) -> bool:
        """Read the workspace records and file lists. Raises IndexMissing when nothing is indexed."""
        with self._lock:
            store = self.store()
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
            missing = chunks = 0
            for ws in metas:
                recs = store.records(ws)
                files[ws] = set(recs)
                chunks += sum(r.chunks for r in recs.values())
                if metas[ws].get("embedder", "none") != "none":
                    missing += sum(r.pieces - r.vectors for r in recs.values())
            self.metas, self.workspace_files, self._vectors_missing = metas, files, missing
            self._chunks = chunks
            self._version = str((metas.get(self.ws) or {}).get("version", ""))
            parts: dict[str, set[str]] = {}
            for ws_files in files.values():
                for p in ws_files:
                    segs = p.lower().split("/")
                    stem = segs[-1].rsplit(".", 1)[0]
                    for part in {*segs[:-1], stem, segs[-1]}:
                        parts.setdefault(part, set()).add(p)
            self._path_parts = parts
            return True

    def files(self) -> list[IndexedFile]:
        every = self.all_workspaces
        return [IndexedFile(p, ws if every else "", self.root_of(ws) if every else "")
                for ws, fs in self.workspace_files.items() for p in fs]  # fmt: skip

    def end_lines(self, files: Sequence[IndexedFile]) -> list[int]:
        return [1] * len(files)

    def engine_filter(self, parsed: ParsedQuery) -> tuple[str, bool]:
        """(filter expression, whether ``path:`` must still be checked on the candidates)."""
        parts: list[str] = []
        if not self.all_workspaces:
            parts.append(f"workspace == {literal(self.ws)}")
        post = False
        if parsed.langs:
            langs = set(parsed.langs)
            if langs & {"c", "cpp"}:  # a .h is either (chunked as C++ when it writes C++): its path decides
                langs |= {"c", "cpp"}
                post = True
            parts.append(f"language in [{', '.join(map(literal, sorted(langs)))}]")
        if parsed.path_globs:
            allowed = sorted(
                {p for fs in self.workspace_files.values() for p in fs if parsed.accepts_path(p)}
            )
            if len(allowed) <= MAX_FILTER_FILES:
                parts.append(f"path in [{', '.join(map(literal, allowed))}]" if allowed else 'path == ""')
            else:
                post = True
        return " and ".join(parts), post

    def begin(
        self, parsed: ParsedQuery, terms: list[str], weights: dict[str, float] | None
    ) -> MilvusRetrieval:
        return MilvusRetrieval(self, parsed, terms, weights)

    # -- the store around the search -------------------------------------------------------------------

    def status(self) -> IndexStatus:
        """What this workspace's rows hold (``missing`` until a first run has finished)."""
        try:
            store = self.store()
            if not store.exists():
                return IndexStatus("missing")
            meta = store.meta(self.ws)
            if meta is None or meta.get("version") is None:
                return IndexStatus("missing")
            records = store.records(self.ws)
        except IndexMissing:
            return IndexStatus("missing")
        except IndexProblem as exc:
            return IndexStatus("corrupt", error=str(exc))
        emb = str(meta.get("embedder") or "none")
        has_emb = emb != "none"
        missing = sum(r.pieces - r.vectors for r in records.values()) if has_emb else 0
        st = IndexStatus(
            state="ready" if missing == 0 else "partial",
            files=len(records),
            chunks=sum(r.chunks for r in records.values()),
            embedded=sum(r.chunks for r in records.values() if r.vectors >= r.pieces) if has_emb else 0,
            embedder=emb,
            last_indexed=meta.get("last_indexed"),
            vectors_missing=missing,
            skipped=int(meta.get("skipped", 0)),
        )
        backend = self.settings.embedding.backend
        reason = meta.get("degraded_reason")
        if backend != "none" and (reason or not has_emb):
            st.degraded_reason = str(reason) if reason else (
                f"index has no vectors although embedder {backend!r} is configured")  # fmt: skip
        st.degraded = st.degraded_reason is not None
        if st.degraded:
            st.state = "partial"
        st.extra = {
            "store": "milvus",
            "uri": shown_uri(store.uri),
            "collection": self.name,
            "workspace": self.ws,
        }
        return st

    def child_settings(self) -> Settings:
        """The settings for a front end's indexing process: this store's collection and workspace named
        explicitly, and for a Lite file the loopback address of its engine, which this process starts
        and hosts (Milvus Lite opens a store in one process at a time; the child connects to ours)."""
        st = replace(self.settings.store, collection=self.name, workspace=self.ws)
        store = self.store(create=not st.read_only)
        if store.local:
            store.client(create=not st.read_only)  # starts the engine here (or raises why it cannot)
            try:
                from milvus_lite.server_manager import server_manager_instance
            except ImportError as exc:
                raise StoreUnavailable(f"milvus-lite cannot be imported ({exc}): {INSTALL_HINT}") from None
            served = server_manager_instance.start_and_get_uri(store.uri)
            if not served:
                raise StoreUnavailable(f"Milvus Lite store {store.uri}: the engine did not start")
            st = replace(st, uri=served)
        return replace(self.settings, store=st)

    def close(self) -> None:
        """Close the connection and stop a Lite engine this process hosts (the file is free again)."""
        store = self._store
        if store is None:
            return
        store.close()
        if store.local:
            release_engine(store.uri)
