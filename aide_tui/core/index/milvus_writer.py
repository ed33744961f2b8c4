"""Writing a Milvus store: each batch of changed files becomes rows, journalled so a kill is harmless.

The indexer reads, chunks and embeds; this writer turns a batch into chunk rows (our code-aware terms
for Milvus's BM25, the defined names for the exact-name lookup) and piece rows (with their vectors:
Milvus rows are written once, so vectors go in with them), then commits the batch's file records. A
batch's paths are written to the workspace's record before its rows change and cleared when the run
ends, so a run killed mid-batch purges and redoes exactly those files next time (no ghosts, no
duplicates). The workspace's record (embedder, version, the batch in flight) is written when the run ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.bm25 import chunk_terms
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import same_model
from aide_tui.core.errors import IndexCorrupt, StoreReadOnly
from aide_tui.core.events import Committed, Done
from aide_tui.core.index.writer import Delta, EmbedderState, MissingPiece, RunHooks, index_settings_key
from aide_tui.core.milvus.connection import (
    MAX_DEFINES,
    SCHEMA_VERSION,
    MilvusStore,
    check_layout,
    collection_record,
    connect,
    set_collection_record,
    workspace_id,
)
from aide_tui.core.milvus.terms import clip, names_text, row_id, terms_text
from aide_tui.core.store.records import FileRecord

FILE_BATCH = 64  # files per resumable batch (their paths are journalled in the workspace's record)
MAX_TEXT_BYTES = 60_000


class MilvusWriter:
    """This workspace's rows in a Milvus collection."""

    inline_vectors = True

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root)
        self.settings = settings
        self.ws = workspace_id(self.root, settings)
        self.batch_files: int | None = FILE_BATCH
        self.batch_bytes: int | None = None
        self._store: MilvusStore | None = None
        self.meta: dict[str, Any] = {}
        self.col_dim = 0
        self.run: RunHooks | None = None

    def store(self) -> MilvusStore:
        if self._store is None:
            self._store = connect(self.root, self.settings, create=True)
        return self._store

    # -- the run -----------------------------------------------------------------------------------

    def open(
        self, state: Path, rebuild: bool, emb: EmbedderState, run: RunHooks
    ) -> Mapping[str, FileRecord] | None:
        if self.settings.store.read_only:
            raise StoreReadOnly("the store is read-only (store.read_only / --read-only): not indexing")
        self.run = run
        store = self.store()
        store.ensure(emb.dim)
        self.meta = self._start(store, self.ws, rebuild, run.report, emb.dim)
        self.col_dim = store.vector_dim()
        col_emb = collection_record(store).get("embedder") or None
        other_model = col_emb is not None and not same_model(col_emb, emb.emb_id)
        if emb.embedder is not None and (self.col_dim != emb.dim or other_model):
            held = f"{self.col_dim}-d vectors of {col_emb}" if self.col_dim else "no vectors"
            emb.error = (f"collection {store.name} holds {held}; embedder {emb.emb_id} gives {emb.dim}-d: "
                         "use another store.collection or rebuild it")  # fmt: skip
            emb.embedder, emb.emb_id, emb.dim = None, "none", 0
        if emb.embedder is not None and col_emb is None:
            set_collection_record(store, embedder=emb.emb_id)
        records = store.records(self.ws)
        return records or None

    def _start(self, store: MilvusStore, ws: str, rebuild: bool, report: Done, dim: int) -> dict[str, Any]:
        """The workspace's record after any rebuild (settings or layout changed, or asked for) and after
        purging the files of a batch a killed run left unfinished."""
        key = index_settings_key(self.settings)
        meta = store.meta(ws)
        if meta is not None and not rebuild and meta.get("settings") != key:
            report.messages.append("index settings or format changed; rebuilding")
            rebuild = True
        try:
            check_layout(store)
        except IndexCorrupt as exc:
            if set(store.workspaces()) - {ws}:
                raise IndexCorrupt(
                    f"{exc.args[0].split(': run')[0]}, and other workspaces share it: drop it (all of them "
                    "re-index) or choose another store.collection"
                ) from None
            report.messages.append(f"{exc.args[0].split(': run')[0]}; rebuilding")
            rebuild = True
        if rebuild and not set(store.workspaces()) - {ws}:
            store.drop()  # alone in the collection: start it afresh (a new embedder may need a new schema)
            store.ensure(dim)
            meta = None
        elif rebuild and meta is not None:
            store.delete_workspace(ws)
            meta = None
        meta = dict(meta or {})
        pending = list(meta.get("pending") or [])
        if pending:  # a run was killed mid-batch: those files are purged and redone
            report.messages.append(f"resuming: redoing {len(pending)} files of an interrupted batch")
            store.delete_paths(ws, pending)
        meta.update(root=str(self.root), settings=key, schema=SCHEMA_VERSION, workspace=ws)
        return meta

    def commit(self, delta: Delta, emb: EmbedderState) -> Committed | None:
        """Same-content files get their new stat data; dropped files go; changed files' rows are
        replaced, journalled. Nothing is searchable as a new version before the run ends."""
        store, ws, report = self.store(), self.ws, self._report()
        if delta.same:
            store.put_records(ws, delta.same)
        for paths, records in ((delta.gone, True), (set(delta.records), False)):
            if not paths:
                continue
            self.meta["pending"] = sorted(paths)
            store.put_meta(ws, self.meta)
            store.delete_paths(ws, paths, records=records)
            report.wrote = True
        if delta.records:
            self._insert(delta)
            store.put_records(ws, delta.records)
        return None

    def _report(self) -> Done:
        assert self.run is not None
        return self.run.report

    def _insert(self, delta: Delta) -> None:
        """A batch's chunk and piece rows (with the vectors the delta carries)."""
        store, ws = self.store(), self.ws
        chunk_bodies, piece_bodies = delta.bodies()
        ids = [row_id(ws, c.path, c.start_line, c.end_line, c.id) for c in delta.chunks]
        rows = []
        for c, body, cid in zip(delta.chunks, chunk_bodies, ids, strict=True):
            rows.append({
                "id": cid, "workspace": ws, "path": c.path,
                "start_line": c.start_line, "end_line": c.end_line,
                "language": c.language[:64], "symbol": clip(c.symbol or "", 4000),
                "text": clip(c.text, MAX_TEXT_BYTES), "file_hash": delta.records[c.path].sha1,
                "defines": [d[:500] for d in c.defines[:MAX_DEFINES]], "names": names_text(c.defines),
                "tokens": terms_text(chunk_terms(c, body)),
            })  # fmt: skip
        store.insert(store.chunks, rows)
        dim = self.col_dim
        vectors = (
            delta.vectors
            if delta.vectors.shape[1:] == (dim,)
            else np.zeros((len(delta.pieces), dim), np.float32)
        )
        prow = []
        for i, ((owner, p), body) in enumerate(zip(delta.pieces, piece_bodies, strict=True)):
            row = {"id": row_id(ids[owner], i, p.start_line), "workspace": ws, "path": p.path,
                   "chunk_id": ids[owner], "language": p.language[:64],
                   "start_line": p.start_line, "end_line": p.end_line,
                   "tokens": terms_text(chunk_terms(p, body))}  # fmt: skip
            if dim:
                row["vec"] = vectors[i].tolist()
            prow.append(row)
        store.insert(store.pieces, prow)

    def missing(self) -> tuple[list[MissingPiece], dict[str, int]]:
        return [], {}  # vectors go in with their rows: a file missing some is read again next run

    def commit_vectors(self, found: Any, emb: EmbedderState) -> Committed:
        raise NotImplementedError("a Milvus store takes vectors with their rows")

    def compact(self, run: RunHooks) -> Committed | None:
        return None  # the engine compacts its own segments

    def finish(self, emb: EmbedderState, run: RunHooks) -> Committed | None:
        """Clear the journal, record the run in the workspace's record and fill the report."""
        store, ws, meta, report = self.store(), self.ws, self.meta, run.report
        records = store.records(ws)
        dim = self.col_dim or emb.dim
        meta["pending"] = []
        if emb.emb_id != "none" or not meta.get("embedder"):
            meta["embedder"] = emb.emb_id if dim else "none"
        meta["dim"] = dim
        meta["degraded_reason"] = emb.error or report.degraded_reason
        if not (run.targeted and "skipped" in meta):
            meta["skipped"] = len(report.skipped_files)
        if report.wrote or meta.get("version") is None:
            meta["version"] = f"v{time.time_ns():x}"
            meta["last_indexed"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        store.put_meta(ws, meta)
        has_emb = meta["embedder"] != "none"
        report.files = len(records)
        report.chunks = sum(r.chunks for r in records.values())
        report.embedded = sum(r.chunks for r in records.values() if r.vectors >= r.pieces) if has_emb else 0
        report.vectors_missing = sum(r.pieces - r.vectors for r in records.values()) if has_emb else 0
        report.embedder = emb.emb_id
        return Committed(files=report.files, chunks=report.chunks, embedded=report.embedded,
                         vectors_missing=report.vectors_missing, version=str(meta["version"]))  # fmt: skip

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
