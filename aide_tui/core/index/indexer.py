"""Indexing orchestration: scan → diff → delta → rows → vectors → commit, incrementally, with events.

Each run is a sequence of small phases that hand dataclasses to each other:

- **diff**: the scan against the manifest's file records (size + mtime, then content hash);
- **delta**: read and chunk the changed files (secrets masked) into chunks and dense pieces;
- **rows**: tokenize only the delta into BM25 rows, growing the vocabulary;
- **vectors**: reuse cached vectors for unchanged piece texts;
- **commit**: write the delta as a new segment and switch the manifest (the lexical side of every
  change is searchable here, before any embedding);
- **embed**: compute missing vectors (files the user looks at first, then small files), committing
  vector blocks every few seconds; a newer request preempts it between batches;
- **merge**: fold segments and vector blocks into one base when they pile up.

A run that finds nothing to do reads only the manifest and stats the tree.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from aide_tui.core import bm25 as bm25_mod
from aide_tui.core.bm25 import DocTerms, chunk_terms, encode_docs
from aide_tui.core.chunk.base import CHUNKER_VERSION
from aide_tui.core.chunk.pieces import PIECE_BUDGET, dense_pieces
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, EmbedderError
from aide_tui.core.events import Committed, Done, Event, Progress
from aide_tui.core.index.embcache import EmbeddingCache, usable_rows
from aide_tui.core.index.scan import FileEntry, Scanner, read_entry
from aide_tui.core.model import EMBED_TEXT_VERSION, Chunk
from aide_tui.core.paths import state_dir
from aide_tui.core.store.segments import (
    FileRecord,
    IndexCorrupt,
    IndexMissing,
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
    writer_lock,
)
from aide_tui.core.tokens import TOKENIZER_VERSION, term_counts

EMBED_BATCH = 32  # pieces per embedder call (split across workers); also the preemption granularity
COMMIT_EVERY_S = 10.0  # vector blocks are committed at least this often while embedding
MAX_BLOCKS = 12  # more vector blocks in one segment than this are compacted into one
MAX_DEAD_SHARE = 0.3  # merge when this share of the stored chunk rows is dead


@dataclass
class IndexReport:
    """Outcome of one indexing run."""

    files: int = 0
    chunks: int = 0
    seconds: float = 0.0
    embedder: str = "none"
    degraded: bool = False
    degraded_reason: str | None = None
    changed: int = 0
    removed: int = 0
    embedded: int = 0
    newly_embedded: int = 0
    vectors_missing: int = 0
    cancelled: bool = False
    preempted: bool = False
    merged: bool = False
    wrote: bool = False
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)

    def to_event(self) -> Done:
        """The run's ``done`` event (skip reasons counted by kind)."""
        reasons: dict[str, int] = {}
        for why in self.skipped.values():
            kind = why.split(" (", 1)[0].split(":", 1)[0]
            reasons[kind] = reasons.get(kind, 0) + 1
        return Done(
            files=self.files, chunks=self.chunks, seconds=round(self.seconds, 3), embedder=self.embedder,
            degraded=self.degraded, degraded_reason=self.degraded_reason, changed=self.changed,
            removed=self.removed, embedded=self.embedded, vectors_missing=self.vectors_missing,
            newly_embedded=self.newly_embedded, skipped=len(self.skipped), skipped_reasons=reasons,
            messages=list(self.messages), warnings=[*self.warnings, *self.fallbacks],
            cancelled=self.cancelled, preempted=self.preempted, wrote=self.wrote,
        )  # fmt: skip


class Cancelled(Exception):
    """Raised inside a run when its cancel event is set."""


def index_settings_key(settings: Settings) -> dict[str, object]:
    """Settings that change what chunks and BM25 rows look like; a change forces a rebuild."""
    return {
        "chunker": CHUNKER_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "budget": settings.index.chunk_budget,
        "piece_budget": PIECE_BUDGET,
        "embed_text": EMBED_TEXT_VERSION,
        "bm25_fields": [bm25_mod.PATH_WEIGHT, bm25_mod.SYMBOL_WEIGHT, bm25_mod.NAME_TF],
        "max_file_kb": settings.index.max_file_kb,
        "exclude": list(settings.index.exclude),
        "include_sensitive": settings.index.include_sensitive,
    }


# -- phase data --------------------------------------------------------------------------------------


@dataclass
class Plan:
    """The scan against the manifest: what is unchanged, what must be read, what is gone."""

    total: int
    unchanged: dict[str, FileRecord]
    to_read: list[FileEntry]
    removed: set[str]


@dataclass
class Delta:
    """Changed files, read and chunked. ``same`` had new stat data but identical content."""

    records: dict[str, FileRecord] = field(default_factory=dict)
    same: dict[str, FileRecord] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    pieces: list[tuple[int, Chunk]] = field(default_factory=list)  # (index into chunks, piece)

    @property
    def empty(self) -> bool:
        return not self.records


@dataclass
class EmbedderState:
    """The embedder a run uses: None when there is none or it failed (then ``error`` says why)."""

    embedder: Embedder | None
    emb_id: str
    dim: int
    error: str | None = None


@dataclass
class Missing:
    """Pieces of one segment that still need a vector."""

    seg_index: int
    rows: list[int]
    texts: list[str]
    keys: list[str]
    paths: list[str]


# -- the indexer -------------------------------------------------------------------------------------


class Indexer:
    """Builds or incrementally updates one workspace's index. One instance may serve many runs (the
    long-lived indexing process keeps it, with its vocabulary and embedding cache loaded)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder | None = None,
        embedder_error: str | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error
        self._vocab: tuple[str, dict[str, int]] | None = None  # (manifest version, vocab)
        self._cache: EmbeddingCache | None = None

    def run(
        self,
        on_progress: Callable[[Event], None] | None = None,
        cancel: threading.Event | None = None,
        rebuild: bool = False,
        priority: Iterable[str] = (),
        embed: bool = True,
        should_yield: Callable[[], bool] | None = None,
        paths: Iterable[str] | None = None,
    ) -> IndexReport:
        """Update the index on disk; returns what happened. Raises LockTimeout if another writer holds it.

        ``embed=False`` stops after the lexical commit (vectors already cached are still reused);
        ``should_yield`` is asked between embedding batches whether newer work is waiting; ``paths``
        (workspace-relative, from a file watcher) limits the run to those files: no walk of the tree,
        unless a folder, a link or an ignore file changed.
        """
        run = _Run(self, on_progress or (lambda e: None), cancel, set(priority), should_yield)
        run.paths = None if paths is None else set(paths)
        started = time.monotonic()
        state = state_dir(self.root)
        idx_dir = state / "index"
        with writer_lock(idx_dir, timeout=self.settings.index.lock_timeout):
            try:
                run.execute(state, idx_dir, rebuild, embed)
            except Cancelled:
                run.report.cancelled = True
        run.report.seconds = time.monotonic() - started
        return run.report

    # -- state kept across runs --------------------------------------------------------------------

    def vocab_for(self, idx_dir: Path, manifest: Manifest) -> dict[str, int]:
        """The manifest's vocabulary (kept in memory while the manifest stays ours)."""
        if self._vocab is not None and self._vocab[0] == manifest.version:
            return self._vocab[1]
        return read_vocab(idx_dir, manifest)

    def remember_vocab(self, manifest: Manifest, vocab: dict[str, int]) -> None:
        self._vocab = (manifest.version, vocab)

    def cache_for(self, state: Path, emb_id: str, dim: int) -> EmbeddingCache:
        if self._cache is None or (self._cache.embedder_id, self._cache.dim) != (emb_id, dim):
            self._cache = EmbeddingCache(state, emb_id, dim)
        return self._cache


class _Run:
    """One run's phases and the state they share."""

    def __init__(
        self,
        indexer: Indexer,
        emit: Callable[[Event], None],
        cancel: threading.Event | None,
        priority: set[str],
        should_yield: Callable[[], bool] | None,
    ) -> None:
        self.ix = indexer
        self.settings = indexer.settings
        self.emit = emit
        self.cancel = cancel
        self.priority = priority
        self.should_yield = should_yield or (lambda: False)
        self.paths: set[str] | None = None
        self.targeted = False
        self.report = IndexReport()

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled

    # -- orchestration -----------------------------------------------------------------------------

    def execute(self, state: Path, idx_dir: Path, rebuild: bool, embed: bool) -> None:
        self.state = state
        prev = None if rebuild else self.previous(idx_dir)
        emb = self.embedder_state(prev)
        if prev is not None and emb.embedder is not None and not self.same_vectors(prev, emb):
            prev = None  # a new embedder or dimension: rebuild (vectors come back from the cache)
        scanner = Scanner(self.root, self.settings.index.max_file_kb * 1024, self.settings.index.exclude,
                          self.settings.index.include_sensitive)  # fmt: skip
        entries = self.targeted_entries(scanner, prev)
        if entries is None:
            self.emit(Progress("scanning", message="walking the workspace"))
            scan = scanner.scan()
            self.report.skipped = {**scan.skipped, **scan.errors}
            self.report.warnings.extend(getattr(scan, "warnings", []))
            entries = scan.files
        try:
            manifest = self.update(state, idx_dir, prev, emb, entries, embed)
        except IndexCorrupt as exc:  # a damaged segment under an intact manifest: start afresh
            if prev is None:
                raise
            self.report.messages.append(str(exc))
            self.targeted = False
            scan = scanner.scan()
            manifest = self.update(state, idx_dir, None, emb, scan.files, embed)
        self.finish(manifest, emb)

    def targeted_entries(self, scanner: Scanner, prev: Manifest | None) -> list[FileEntry] | None:
        """The manifest's files with only ``self.paths`` re-examined (None: walk the whole tree).

        Unchanged files keep their manifest stat data, so the diff phase passes them over.
        """
        if self.paths is None or prev is None or not self.paths:
            return None
        found = targeted_scan(scanner, self.paths)
        if found is None:
            return None
        fresh, skipped, gone = found
        self.targeted = True
        self.report.skipped = skipped
        gone_dirs = tuple(g + "/" for g in gone)
        entries = [
            # never read: size and mtime come from the manifest, so the diff passes them over
            FileEntry(p, os.path.join(scanner.root, p), r.size, r.mtime_ns, dev=-1, ino=-1)
            for p, r in prev.files.items()
            if p not in self.paths and not (gone_dirs and p.startswith(gone_dirs))
        ]
        return entries + fresh

    def update(
        self, state: Path, idx_dir: Path, prev: Manifest | None, emb: EmbedderState,
        entries: list[FileEntry], embed: bool,
    ) -> Manifest:  # fmt: skip
        plan = diff(entries, prev)
        delta = self.read_delta(plan, prev)
        manifest = prev
        if prev is None or delta.records or plan.removed or delta.same or self.meta_changed(prev, emb):
            manifest = self.commit_delta(state, idx_dir, prev, plan, delta, emb)
        assert manifest is not None
        if embed and emb.embedder is not None and manifest.counts.get("vectors_missing", 0):
            manifest = self.embed_missing(state, idx_dir, manifest, emb)
        if not self.report.preempted:
            manifest = self.maybe_merge(idx_dir, manifest)
        return manifest

    @property
    def root(self) -> Path:
        return self.ix.root

    def previous(self, idx_dir: Path) -> Manifest | None:
        try:
            prev = read_manifest(idx_dir)
            damage = check_sizes(idx_dir, prev)
            if damage:
                raise IndexCorrupt(damage)
        except IndexMissing:
            return None
        except IndexCorrupt as exc:
            self.report.messages.append(str(exc))
            return None
        if prev.meta.get("settings") != index_settings_key(self.settings):
            self.report.messages.append("index settings or format changed; rebuilding")
            return None
        return prev

    def embedder_state(self, prev: Manifest | None) -> EmbedderState:
        """The run's embedder identity; an unusable embedder makes the run degraded, not failed."""
        embedder = self.ix.embedder
        if embedder is None:
            return EmbedderState(None, "none", 0, self.ix.embedder_error)
        try:
            return EmbedderState(embedder, embedder.id, int(embedder.dim))
        except EmbedderError as exc:
            return EmbedderState(None, "none", 0, str(exc))

    def meta_changed(self, prev: Manifest, emb: EmbedderState) -> bool:
        """Whether the manifest must record a different embedder state (a server died or came back)."""
        return prev.meta.get("degraded_reason") != emb.error or (
            emb.embedder is not None and prev.meta.get("embedder") != emb.emb_id
        )

    def same_vectors(self, prev: Manifest, emb: EmbedderState) -> bool:
        """Whether ``prev``'s vectors came from this embedder at this dimension (else say what changed)."""
        old_id, old_dim = prev.meta.get("embedder", "none"), int(prev.meta.get("dim") or 0)
        if old_id in ("none", emb.emb_id) and old_dim in (0, emb.dim):
            return True
        if old_id != emb.emb_id:
            self.report.messages.append(f"embedder changed ({old_id} → {emb.emb_id}); re-embedding")
        else:
            self.report.messages.append(
                f"embedder {emb.emb_id} now gives {emb.dim}-dimensional vectors "
                f"(index has {old_dim}); re-embedding"
            )
        return False

    # -- delta -------------------------------------------------------------------------------------

    def read_delta(self, plan: Plan, prev: Manifest | None) -> Delta:
        """Read and chunk every file the diff could not rule out."""
        self.report.removed = len(plan.removed)
        delta = Delta()
        if not plan.to_read:
            return delta
        s = self.settings.index
        total = len(plan.to_read)
        for n, entry in enumerate(plan.to_read, 1):
            if n % 100 == 0:
                self.check_cancel()
                self.emit(Progress("indexing", n, total, message=entry.rel))
            text, raw, why = read_entry(entry, s.max_file_kb * 1024)
            if text is None or raw is None:
                self.report.skipped[entry.rel] = why or "unreadable"
                continue
            digest = hashlib.sha1(raw).hexdigest()
            old = prev.files.get(entry.rel) if prev is not None else None
            if old is not None and old.sha1 == digest:
                delta.same[entry.rel] = replace(old, size=len(raw), mtime_ns=entry.mtime_ns)
                continue
            # the chunkers load only when a file needs them (a no-op run that re-reads a binary
            # file it skipped before must not pay their import)
            from aide_tui.core.chunk.chunker import chunk_file_multi
            from aide_tui.core.secrets import mask_secrets

            try:
                file_chunks, small = chunk_file_multi(
                    entry.rel, mask_secrets(text), (s.chunk_budget, PIECE_BUDGET), self.report.fallbacks
                )
            except Exception as exc:  # a chunker bug must not cost the rest of the index
                self.report.skipped[entry.rel] = f"chunker failed: {exc.__class__.__name__}: {exc}"
                continue
            base = len(delta.chunks)
            file_pieces = dense_pieces(file_chunks, small)
            delta.pieces.extend((base + i, p) for i, p in file_pieces)
            delta.chunks.extend(file_chunks)
            delta.records[entry.rel] = FileRecord(
                len(raw), entry.mtime_ns, digest, chunks=len(file_chunks), pieces=len(file_pieces)
            )
        self.report.changed = len(delta.records)
        self.report.removed = len(plan.removed)
        if total:
            self.emit(Progress("indexing", total, total, message=f"{len(delta.records)} changed"))
        return delta

    def commit_delta(
        self, state: Path, idx_dir: Path, prev: Manifest | None, plan: Plan, delta: Delta, emb: EmbedderState
    ) -> Manifest:
        """Tokenize the delta, take cached vectors, write it as a segment and commit the new manifest."""
        self.check_cancel()
        vocab = dict(self.ix.vocab_for(idx_dir, prev)) if prev is not None else {}
        start = len(vocab)
        seg = build_segment(delta, vocab, emb.dim)
        seg.vocab_add = list(vocab)[start:]
        if emb.embedder is not None and len(seg.pieces):
            self.fill_from_cache(state, emb, seg)
        files = dict(plan.unchanged)
        files.update(delta.same)
        segments = list(prev.segments) if prev is not None else []
        if delta.records or prev is None:
            entry = write_segment(idx_dir, seg, start)
            segments.append(entry)
            for (owner, _), has in zip(delta.pieces, seg.present, strict=True):
                if has:
                    path = delta.chunks[owner].path
                    delta.records[path].vectors += 1
            for path, rec in delta.records.items():
                files[path] = replace(rec, segment=len(segments) - 1)
            _count_embedded(files, delta, seg.present)
        manifest = self.new_manifest(segments, files, emb, prev)
        commit(idx_dir, manifest, prev)
        self.ix.remember_vocab(manifest, vocab)
        self.report.wrote = True
        self.announce(manifest)
        return manifest

    def fill_from_cache(self, state: Path, emb: EmbedderState, seg: SegmentData) -> None:
        cache = self.ix.cache_for(state, emb.emb_id, emb.dim)
        for i, piece in enumerate(seg.pieces):
            vec = cache.lookup(piece.embed_key)
            if vec is not None:
                seg.vectors[i] = vec
                seg.present[i] = True
        self.report.warnings.extend(cache.dropped)
        cache.dropped.clear()

    def new_manifest(
        self,
        segments: list[SegmentEntry],
        files: dict[str, FileRecord],
        emb: EmbedderState,
        prev: Manifest | None,
    ) -> Manifest:
        """A manifest for ``segments`` and ``files``. ``embedder``/``dim`` name the stored vectors' model:
        while the embedder is unusable (or turned off) the previous one is kept, so its vectors stay
        usable when it comes back."""
        emb_id, dim = emb.emb_id, emb.dim
        if emb.embedder is None and prev is not None and prev.meta.get("embedder", "none") != "none":
            emb_id, dim = str(prev.meta["embedder"]), int(prev.meta.get("dim") or 0)
        meta = {
            "settings": index_settings_key(self.settings),
            "embedder": emb_id,
            "dim": dim,
            "skipped": int(prev.meta.get("skipped", 0))
            if self.targeted and prev
            else len(self.report.skipped),
            "degraded_reason": emb.error if emb.embedder is None else self.report.degraded_reason,
        }
        return Manifest(f"v{time.time_ns():x}", "", segments, files, counts_of(files, emb_id != "none"), meta)

    def announce(self, manifest: Manifest) -> None:
        c = manifest.counts
        self.emit(
            Committed(
                files=c["files"], chunks=c["chunks"], embedded=c["embedded"],
                vectors_missing=c["vectors_missing"], version=manifest.version,
            )
        )  # fmt: skip

    # -- embedding ---------------------------------------------------------------------------------

    def embed_missing(self, state: Path, idx_dir: Path, manifest: Manifest, emb: EmbedderState) -> Manifest:
        """Embed pieces without vectors, the user's files and small files first, committing as it goes."""
        assert emb.embedder is not None
        cache = self.ix.cache_for(state, emb.emb_id, emb.dim)
        todo = self.missing_pieces(idx_dir, manifest, cache)
        total = sum(len(m.rows) for m in todo.values())
        queue = sorted(
            ((seg, k) for seg, m in todo.items() for k in range(len(m.rows))),
            key=lambda sk: (todo[sk[0]].paths[sk[1]] not in self.priority,
                            manifest.files[todo[sk[0]].paths[sk[1]]].size, todo[sk[0]].paths[sk[1]]),
        )  # fmt: skip
        pending: dict[int, tuple[list[int], list[np.ndarray]]] = {}
        done = 0
        last = time.monotonic()
        self.emit(Progress("embedding", vectors_done=0, vectors_total=total))
        try:
            for start in range(0, len(queue), EMBED_BATCH):
                self.check_cancel()
                if start and self.should_yield():
                    self.report.preempted = True
                    break
                batch = queue[start : start + EMBED_BATCH]
                vecs = emb.embedder.embed([todo[s].texts[k] for s, k in batch], kind="document")
                check_vectors(vecs, len(batch), emb.dim)
                cache.add([todo[s].keys[k] for s, k in batch], vecs)
                for (s, k), v in zip(batch, vecs, strict=True):
                    rows, vs = pending.setdefault(s, ([], []))
                    rows.append(todo[s].rows[k])
                    vs.append(v)
                done += len(batch)
                self.report.newly_embedded = done
                self.emit(Progress("embedding", vectors_done=done, vectors_total=total))
                if time.monotonic() - last > COMMIT_EVERY_S:
                    manifest = self.commit_vectors(idx_dir, manifest, todo, pending, emb)
                    cache.save()
                    pending, last = {}, time.monotonic()
        except EmbedderError as exc:
            self.report.degraded, self.report.degraded_reason = True, str(exc)
        finally:
            if pending or self.report.degraded:
                manifest = self.commit_vectors(idx_dir, manifest, todo, pending, emb)
            cache.save()  # pruning needs every live key: merges do it
        return manifest

    def missing_pieces(self, idx_dir: Path, manifest: Manifest, cache: EmbeddingCache) -> dict[int, Missing]:
        """Per segment, the live pieces without a vector (read from the segments that have any)."""
        segs = sorted({r.segment for r in manifest.files.values() if r.vectors < r.pieces})
        out: dict[int, Missing] = {}
        for i in segs:
            entry = manifest.segments[i]
            data = read_segment(idx_dir, entry, pieces=True)
            m = Missing(i, [], [], [], [])
            for row, piece in enumerate(data.pieces):
                rec = manifest.files.get(piece.path)
                if data.present[row] or rec is None or rec.segment != i:
                    continue
                m.rows.append(row)
                m.texts.append(piece.embed_text)
                m.keys.append(piece.embed_key)
                m.paths.append(piece.path)
            if m.rows:
                out[i] = m
        return out

    def commit_vectors(
        self,
        idx_dir: Path,
        manifest: Manifest,
        todo: dict[int, Missing],
        pending: dict[int, tuple[list[int], list[np.ndarray]]],
        emb: EmbedderState,
    ) -> Manifest:
        """Write the new vectors as one block per segment and commit; file counts follow."""
        segments = list(manifest.segments)
        files = dict(manifest.files)
        for seg, (rows, vecs) in pending.items():
            segments[seg] = write_block(idx_dir, segments[seg], np.asarray(rows), np.stack(vecs))
            where = dict(zip(todo[seg].rows, todo[seg].paths, strict=True))
            for r in rows:
                files[where[r]] = replace(files[where[r]], vectors=files[where[r]].vectors + 1)
        for path, rec in files.items():
            if rec.vectors >= rec.pieces and rec.embedded != rec.chunks:
                files[path] = replace(rec, embedded=rec.chunks)
        new = self.new_manifest(segments, files, emb, manifest)
        if self.report.degraded:
            new.meta["degraded_reason"] = self.report.degraded_reason
        commit(idx_dir, new, manifest)
        self.ix.remember_vocab(new, self.ix.vocab_for(idx_dir, manifest))
        self.report.wrote = True
        self.announce(new)
        return new

    # -- merge -------------------------------------------------------------------------------------

    def maybe_merge(self, idx_dir: Path, manifest: Manifest) -> Manifest:
        """Fold segments into one base when they pile up or hold mostly dead rows."""
        stored = sum(s.n_chunks for s in manifest.segments)
        live = manifest.counts.get("chunks", 0)
        blocks = max((len(s.blocks) for s in manifest.segments), default=0)
        dead_share = (stored - live) / stored if stored else 0.0
        max_segments = max(1, self.settings.index.max_segments)
        if len(manifest.segments) <= max_segments and blocks <= MAX_BLOCKS and dead_share <= MAX_DEAD_SHARE:
            return manifest
        if self.should_yield():
            return manifest  # newer work first; the next run merges
        self.check_cancel()
        self.emit(Progress("merging", message=f"{len(manifest.segments)} segments"))
        vocab = self.ix.vocab_for(idx_dir, manifest)
        data = consolidate(idx_dir, manifest, vocab, pieces=True)
        if self.should_yield():
            return manifest
        emb_id, dim = str(manifest.meta.get("embedder") or "none"), int(manifest.meta.get("dim") or 0)
        if emb_id != "none" and dim:  # every live piece is at hand: drop cached vectors nothing uses
            self.ix.cache_for(self.state, emb_id, dim).save({p.embed_key for p in data.pieces})
        used = np.unique(np.concatenate([data.docs.term_ids, data.pdocs.term_ids]))
        remap = np.full(max(len(vocab), 1), -1, np.int64)
        remap[used] = np.arange(len(used))
        terms = list(vocab)
        seg = SegmentData(
            data.chunks, data.pieces, data.owners,
            DocTerms(data.docs.doc_ptr, remap[data.docs.term_ids].astype(np.int32), data.docs.tfs),
            DocTerms(data.pdocs.doc_ptr, remap[data.pdocs.term_ids].astype(np.int32), data.pdocs.tfs),
            data.vectors, data.present, [terms[i] for i in used.tolist()],
        )  # fmt: skip
        self.check_cancel()
        entry = write_segment(idx_dir, seg, 0)
        files = {p: replace(r, segment=0) for p, r in manifest.files.items()}
        merged = Manifest(
            f"v{time.time_ns():x}", "", [entry], files, dict(manifest.counts), dict(manifest.meta)
        )
        commit(idx_dir, merged, manifest)
        self.ix.remember_vocab(merged, {t: i for i, t in enumerate(seg.vocab_add)})
        self.report.merged = True
        self.announce(merged)
        return merged

    def finish(self, manifest: Manifest, emb: EmbedderState) -> None:
        c = manifest.counts
        r = self.report
        r.files, r.chunks, r.embedded = c["files"], c["chunks"], c["embedded"]
        r.vectors_missing, r.embedder = c["vectors_missing"], emb.emb_id
        if emb.embedder is None and emb.error:
            r.degraded, r.degraded_reason = True, emb.error


# -- pure helpers ------------------------------------------------------------------------------------


def diff(entries: list[FileEntry], prev: Manifest | None) -> Plan:
    """Split the scan into files whose size and mtime match the manifest and files to read."""
    old = prev.files if prev is not None else {}
    unchanged: dict[str, FileRecord] = {}
    to_read: list[FileEntry] = []
    for e in entries:
        rec = old.get(e.rel)
        if rec is not None and rec.size == e.size and rec.mtime_ns == e.mtime_ns:
            unchanged[e.rel] = rec
        else:
            to_read.append(e)
    seen = {e.rel for e in entries}
    return Plan(len(entries), unchanged, to_read, {p for p in old if p not in seen})


def build_segment(delta: Delta, vocab: dict[str, int], dim: int) -> SegmentData:
    """BM25 rows of the delta's chunks and pieces (pieces partition their chunk's lines, so each piece
    is tokenized once and a chunk's body counts are the sum of its pieces')."""
    piece_bodies = [term_counts(p.text) for _, p in delta.pieces]
    chunk_bodies: list[Counter[str]] = [Counter() for _ in delta.chunks]
    for (owner, _), body in zip(delta.pieces, piece_bodies, strict=True):
        chunk_bodies[owner].update(body)
    docs = encode_docs(map(chunk_terms, delta.chunks, chunk_bodies), vocab)
    pdocs = encode_docs(
        (chunk_terms(p, b) for (_, p), b in zip(delta.pieces, piece_bodies, strict=True)), vocab
    )
    p = len(delta.pieces)
    return SegmentData(
        delta.chunks, [pc for _, pc in delta.pieces], np.asarray([o for o, _ in delta.pieces], np.int64),
        docs, pdocs, np.zeros((p, dim), np.float32), np.zeros(p, bool),
    )  # fmt: skip


def _count_embedded(files: dict[str, FileRecord], delta: Delta, present: np.ndarray) -> None:
    """Set ``embedded`` (chunks whose every piece has a vector) on the delta's file records."""
    full: dict[int, bool] = {}
    for (owner, _), has in zip(delta.pieces, present, strict=True):
        full[owner] = full.get(owner, True) and bool(has)
    per_file: Counter[str] = Counter(delta.chunks[o].path for o, ok in full.items() if ok)
    for path in delta.records:
        files[path] = replace(files[path], embedded=per_file.get(path, 0))


def counts_of(files: dict[str, FileRecord], has_embedder: bool) -> dict[str, int]:
    """The manifest's counts, derived from its file records (the single source of truth)."""
    return {
        "files": len(files),
        "chunks": sum(r.chunks for r in files.values()),
        "pieces": sum(r.pieces for r in files.values()),
        "embedded": sum(r.embedded for r in files.values()) if has_embedder else 0,
        "vectors_missing": sum(r.pieces - r.vectors for r in files.values()) if has_embedder else 0,
    }


def check_vectors(vecs: np.ndarray, n: int, dim: int) -> None:
    """Reject a batch of the wrong shape or with non-finite or all-zero rows (never stored, never cached)."""
    if vecs.shape != (n, dim):
        raise EmbedderError(
            f"embedder returned vectors of shape {vecs.shape}, expected ({n}, {dim}); "
            "run `aide-tui index --rebuild`"
        )
    bad = int((~usable_rows(vecs)).sum())
    if bad:
        raise EmbedderError(f"embedder returned {bad} unusable vectors (NaN, infinite or all zero)")


def targeted_scan(
    scanner: Scanner, paths: Iterable[str]
) -> tuple[list[FileEntry], dict[str, str], set[str]] | None:
    """Entries for just ``paths`` (files that now exist and pass the scanner's rules), why others are
    left out, and which paths are gone (a gone folder takes its files with it); None when only a walk
    can tell (a folder or a link appeared, an ignore file changed)."""
    root = scanner.root
    entries: list[FileEntry] = []
    skipped: dict[str, str] = {}
    gone: set[str] = set()
    for rel in sorted(paths):
        name = rel.rsplit("/", 1)[-1]
        if name in (".gitignore", ".aideignore") or rel.startswith("/") or ".." in rel.split("/"):
            return None
        abs_path = os.path.join(root, rel)
        try:
            st = os.lstat(abs_path)
        except FileNotFoundError:
            gone.add(rel)  # deleted or renamed away: the diff drops it
            continue
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        parent = os.path.dirname(abs_path)
        if os.path.realpath(parent) != parent or scanner.is_ignored(rel) or _in_virtualenv(root, rel):
            if os.path.realpath(parent) != parent:
                return None  # reached through a linked folder: let the walk apply the symlink rules
            continue
        reason = scanner.file_skip_reason(rel, st.st_size)
        if reason:
            skipped[rel] = reason
            continue
        entries.append(FileEntry(rel, abs_path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino))
    return entries, skipped, gone


def _in_virtualenv(root: str, rel: str) -> bool:
    parts = rel.split("/")[:-1]
    return any(os.path.exists(os.path.join(root, *parts[: i + 1], "pyvenv.cfg")) for i in range(len(parts)))
