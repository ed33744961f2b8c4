"""Writing the local store: each batch becomes a delta segment and a new manifest (atomic commits).

A run's lexical side is one commit (a new segment over the previous ones); vectors computed later go
into vector blocks of their segments, committed every few seconds; a merge folds the segments into one
base when they pile up or hold mostly dead rows. The vocabulary of the current manifest is kept in
memory across runs (the indexing process keeps this writer).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from aide_tui.core.bm25 import DocTerms, chunk_terms, encode_docs
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import same_model
from aide_tui.core.errors import IndexCorrupt, IndexMissing
from aide_tui.core.events import Committed, Progress
from aide_tui.core.index.writer import Delta, EmbedderState, MissingPiece, RunHooks, index_settings_key
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.segments import (
    FileRecord,
    Manifest,
    SegmentData,
    SegmentEntry,
    check_sizes,
    commit,
    consolidate,
    read_manifest,
    read_segment,
    read_vocab,
    write_block,
    write_segment,
)
from aide_tui.core.store.version_meta import Counts, IndexMeta

MAX_BLOCKS = 12  # more vector blocks in one segment than this are compacted into one
MAX_DEAD_SHARE = 0.3  # merge when this share of the stored chunk rows is dead


def counts_of(files: dict[str, FileRecord], has_embedder: bool) -> Counts:
    """The manifest's counts, derived from its file records (the single source of truth)."""
    return Counts(
        files=len(files),
        chunks=sum(r.chunks for r in files.values()),
        pieces=sum(r.pieces for r in files.values()),
        embedded=sum(r.embedded for r in files.values()) if has_embedder else 0,
        vectors_missing=sum(r.pieces - r.vectors for r in files.values()) if has_embedder else 0,
    )


def build_segment(delta: Delta, vocab: dict[str, int]) -> SegmentData:
    """BM25 rows of the delta's chunks and pieces, with the vectors it carries."""
    chunk_bodies, piece_bodies = delta.bodies()
    docs = encode_docs(map(chunk_terms, delta.chunks, chunk_bodies), vocab)
    pdocs = encode_docs(
        (chunk_terms(p, b) for (_, p), b in zip(delta.pieces, piece_bodies, strict=True)), vocab
    )
    return SegmentData(
        delta.chunks, [pc for _, pc in delta.pieces], np.asarray([o for o, _ in delta.pieces], np.int64),
        docs, pdocs, delta.vectors, delta.present, graph=GraphTable.from_files(delta.graphs),
    )  # fmt: skip


def _announce(manifest: Manifest) -> Committed:
    c = manifest.counts
    return Committed(files=c.files, chunks=c.chunks, embedded=c.embedded,
                     vectors_missing=c.vectors_missing, version=manifest.version)  # fmt: skip


class LocalWriter:
    """The segments under ``<state>/index``."""

    batch_files: int | None = None
    inline_vectors = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._vocab: tuple[str, dict[str, int]] | None = None  # (manifest version, vocab)
        self.idx_dir = Path()
        self.manifest: Manifest | None = None
        self.run: RunHooks | None = None

    # -- the previous version ----------------------------------------------------------------------

    def open(
        self, state: Path, rebuild: bool, emb: EmbedderState, run: RunHooks
    ) -> dict[str, FileRecord] | None:
        self.idx_dir = state / "index"
        self.run = run
        prev = None if rebuild else self._previous(run)
        if prev is not None and emb.embedder is not None and not self._same_vectors(prev, emb, run):
            prev = None  # a new embedder or dimension: rebuild (vectors come back from the cache)
        self.manifest = prev
        return None if prev is None else prev.files

    def restart(self) -> None:
        """Forget the previous version (a damaged segment under an intact manifest): build afresh."""
        self.manifest = None

    def _previous(self, run: RunHooks) -> Manifest | None:
        try:
            prev = read_manifest(self.idx_dir)
            damage = check_sizes(self.idx_dir, prev)
            if damage:
                raise IndexCorrupt(damage)
        except IndexMissing:
            return None
        except IndexCorrupt as exc:
            run.report.messages.append(str(exc))
            return None
        if prev.meta.settings != index_settings_key(self.settings):
            run.report.messages.append("index settings or format changed; rebuilding")
            return None
        return prev

    @staticmethod
    def _same_vectors(prev: Manifest, emb: EmbedderState, run: RunHooks) -> bool:
        """Whether ``prev``'s vectors came from this embedder at this dimension (else say what changed)."""
        old_id, old_dim = prev.meta.embedder, prev.meta.dim
        if (old_id == "none" or same_model(old_id, emb.emb_id)) and old_dim in (0, emb.dim):
            return True
        if old_id != emb.emb_id:
            run.report.messages.append(f"embedder changed ({old_id} → {emb.emb_id}); re-embedding")
        else:
            run.report.messages.append(
                f"embedder {emb.emb_id} now gives {emb.dim}-dimensional vectors (index has {old_dim}); "
                "re-embedding"
            )
        return False

    def _vocab_for(self, manifest: Manifest) -> dict[str, int]:
        """The manifest's vocabulary (kept in memory while the manifest stays ours)."""
        if self._vocab is not None and self._vocab[0] == manifest.version:
            return self._vocab[1]
        return read_vocab(self.idx_dir, manifest)

    # -- commits -----------------------------------------------------------------------------------

    def commit(self, delta: Delta, emb: EmbedderState) -> Committed | None:
        """Tokenize the delta, write it as a segment and commit the new manifest (also when only stat
        data, deletions or the embedder's state changed)."""
        prev = self.manifest
        if prev is not None and delta.empty and not self._meta_changed(prev, emb):
            return None
        assert self.run is not None
        self.run.check_cancel()
        vocab = dict(self._vocab_for(prev)) if prev is not None else {}
        start = len(vocab)
        seg = build_segment(delta, vocab)
        seg.vocab_add = list(vocab)[start:]
        files = dict(delta.unchanged)
        files.update(delta.same)
        segments = list(prev.segments) if prev is not None else []
        if delta.records or prev is None:
            segments.append(write_segment(self.idx_dir, seg, start))
            for path, rec in delta.records.items():
                files[path] = replace(rec, segment=len(segments) - 1)
        return self._commit(self._manifest(segments, files, emb, prev), prev, vocab)

    def _meta_changed(self, prev: Manifest, emb: EmbedderState) -> bool:
        """Whether the manifest must record a different embedder state (a server died or came back)."""
        return prev.meta.degraded_reason != emb.error or (
            emb.embedder is not None and not same_model(prev.meta.embedder, emb.emb_id)
        )

    def _manifest(
        self,
        segments: list[SegmentEntry],
        files: dict[str, FileRecord],
        emb: EmbedderState,
        prev: Manifest | None,
    ) -> Manifest:
        """A manifest for ``segments`` and ``files``. ``embedder``/``dim`` name the stored vectors' model:
        while the embedder is unusable (or turned off) the previous one is kept, so its vectors stay
        usable when it comes back."""
        assert self.run is not None
        report = self.run.report
        emb_id, dim = emb.emb_id, emb.dim
        if prev is not None and prev.meta.has_vectors:
            recorded = prev.meta.embedder
            if emb.embedder is None or same_model(recorded, emb_id):  # the index owns its embedder's id
                emb_id, dim = recorded, prev.meta.dim
        meta = IndexMeta(
            settings=index_settings_key(self.settings),
            embedder=emb_id,
            dim=dim,
            skipped=prev.meta.skipped if self.run.targeted and prev else len(report.skipped_files),
            degraded_reason=emb.error if emb.embedder is None else report.degraded_reason,
        )
        return Manifest(f"v{time.time_ns():x}", "", segments, files, counts_of(files, emb_id != "none"), meta)

    def _commit(self, manifest: Manifest, prev: Manifest | None, vocab: dict[str, int]) -> Committed:
        commit(self.idx_dir, manifest, prev)
        self._vocab = (manifest.version, vocab)
        self.manifest = manifest
        return _announce(manifest)

    # -- vectors -----------------------------------------------------------------------------------

    def missing(self) -> tuple[list[MissingPiece], dict[str, int]]:
        """The live pieces without a vector (read from the segments that have any), and file sizes."""
        manifest = self.manifest
        if manifest is None:
            return [], {}
        out: list[MissingPiece] = []
        for i in sorted({r.segment for r in manifest.files.values() if r.vectors < r.pieces}):
            data = read_segment(self.idx_dir, manifest.segments[i], pieces=True)
            for row, piece in enumerate(data.pieces):
                rec = manifest.files.get(piece.path)
                if data.present[row] or rec is None or rec.segment != i:
                    continue
                out.append(MissingPiece((i, row), piece.embed_text, piece.embed_key, piece.path))
        return out, {p: r.size for p, r in manifest.files.items()}

    def commit_vectors(
        self, found: Sequence[tuple[MissingPiece, np.ndarray]], emb: EmbedderState
    ) -> Committed:
        """Write the new vectors as one block per segment and commit; file counts follow."""
        manifest = self.manifest
        assert manifest is not None and self.run is not None
        segments = list(manifest.segments)
        files = dict(manifest.files)
        by_seg: dict[int, tuple[list[int], list[np.ndarray]]] = {}
        for piece, vec in found:
            rows, vecs = by_seg.setdefault(piece.handle[0], ([], []))
            rows.append(piece.handle[1])
            vecs.append(vec)
            files[piece.path] = replace(files[piece.path], vectors=files[piece.path].vectors + 1)
        for seg, (rows, vecs) in by_seg.items():
            segments[seg] = write_block(self.idx_dir, segments[seg], np.asarray(rows), np.stack(vecs))
        for path, rec in files.items():
            if rec.vectors >= rec.pieces and rec.embedded != rec.chunks:
                files[path] = replace(rec, embedded=rec.chunks)
        new = self._manifest(segments, files, emb, manifest)
        if self.run.report.degraded:
            new.meta = replace(new.meta, degraded_reason=self.run.report.degraded_reason)
        return self._commit(new, manifest, self._vocab_for(manifest))

    # -- merging -----------------------------------------------------------------------------------

    def compact(self, run: RunHooks) -> Committed | None:
        """Fold segments into one base when they pile up or hold mostly dead rows."""
        manifest = self.manifest
        assert manifest is not None
        stored = sum(s.n_chunks for s in manifest.segments)
        live = manifest.counts.chunks
        blocks = max((len(s.blocks) for s in manifest.segments), default=0)
        dead_share = (stored - live) / stored if stored else 0.0
        max_segments = max(1, self.settings.index.max_segments)
        if len(manifest.segments) <= max_segments and blocks <= MAX_BLOCKS and dead_share <= MAX_DEAD_SHARE:
            return None
        if run.should_yield():
            return None  # newer work first; the next run merges
        run.check_cancel()
        run.emit(Progress("merging", message=f"{len(manifest.segments)} segments"))
        vocab = self._vocab_for(manifest)
        data = consolidate(self.idx_dir, manifest, vocab, pieces=True)
        if run.should_yield():
            return None
        emb_id, dim = manifest.meta.embedder, manifest.meta.dim
        if emb_id != "none" and dim:  # every live piece is at hand: drop cached vectors nothing uses
            run.cache_for(emb_id, dim).save({p.embed_key for p in data.pieces})
        used = np.unique(np.concatenate([data.docs.term_ids, data.pdocs.term_ids]))
        remap = np.full(max(len(vocab), 1), -1, np.int64)
        remap[used] = np.arange(len(used))
        terms = list(vocab)
        seg = SegmentData(
            data.chunks, data.pieces, data.owners,
            DocTerms(data.docs.doc_ptr, remap[data.docs.term_ids].astype(np.int32), data.docs.tfs),
            DocTerms(data.pdocs.doc_ptr, remap[data.pdocs.term_ids].astype(np.int32), data.pdocs.tfs),
            data.vectors, data.present, [terms[i] for i in used.tolist()], data.graph,
        )  # fmt: skip
        run.check_cancel()
        entry = write_segment(self.idx_dir, seg, 0)
        files = {p: replace(r, segment=0) for p, r in manifest.files.items()}
        merged = Manifest(f"v{time.time_ns():x}", "", [entry], files, manifest.counts, manifest.meta)
        run.report.merged = True
        return self._commit(merged, manifest, {t: i for i, t in enumerate(seg.vocab_add)})

    def finish(self, emb: EmbedderState, run: RunHooks) -> Committed | None:
        manifest = self.manifest
        assert manifest is not None
        c = manifest.counts
        r = run.report
        r.files, r.chunks, r.embedded = c.files, c.chunks, c.embedded
        r.vectors_missing, r.embedder = c.vectors_missing, emb.emb_id
        return None

    def close(self) -> None:
        pass
