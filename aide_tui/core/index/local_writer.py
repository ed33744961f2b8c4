"""Writing the local store: each batch of changed files becomes a segment and a new manifest.

A batch's lexical side and its static vectors are one commit (a new self-contained segment beside the
previous ones); transformer vectors computed later go into vector blocks of their segments, committed
every few seconds; a merge folds a bounded set of segments into one when they pile up or hold many
dead rows. Every commit is atomic (segments.py).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import same_model
from aide_tui.core.errors import IndexCorrupt, IndexMissing
from aide_tui.core.events import Committed, Progress
from aide_tui.core.index.built import Built, staging_dir
from aide_tui.core.index.embcache import EmbeddingCache
from aide_tui.core.index.scan import VERDICT_RULES
from aide_tui.core.index.term_rows import batch_rows
from aide_tui.core.index.writer import Delta, EmbedderState, MissingPiece, RunHooks, index_settings_key
from aide_tui.core.store.centrality import MAX_RANK_FILES, STALE_SHARE, file_rank
from aide_tui.core.store.filetable import column
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.part import Part
from aide_tui.core.store.records import FileRecord, PassedFiles
from aide_tui.core.store.segments import (
    Manifest,
    SegmentData,
    SegmentEntry,
    check_sizes,
    commit,
    consolidate,
    load_view,
    parse_segment,
    read_manifest,
    read_rank,
    write_block,
    write_rank,
    write_segment,
    write_static,
)
from aide_tui.core.store.version_meta import Counts, IndexMeta
from aide_tui.core.storekind import LOCAL

MAX_BLOCKS = 12  # more vector blocks in one segment than this are compacted into one
MAX_DEAD_SHARE = 0.3  # a segment is rewritten when this share of its chunk rows is dead
MERGE_CAP_CHUNKS = 60_000  # segments are merged into one of at most this many chunks (bounded merges)
MERGE_CAP_PIECES = 65_536  # ... and this many pieces: its postings keep two-byte rows (segment_write.py)
SMALL_SEGMENT = 2_000  # live chunks of a segment cheap enough to fold into any rewrite beside it
BATCH_FILES = 4000  # a cold build commits a segment every this many files...
BATCH_BYTES = 16 << 20  # ... or this many bytes of source, whichever comes first


def counts_of(files: dict[str, FileRecord], has_embedder: bool) -> Counts:
    """The manifest's counts, derived from its file records (the single source of truth)."""
    return Counts(
        files=len(files),
        chunks=sum(r.chunks for r in files.values()),
        pieces=sum(r.pieces for r in files.values()),
        embedded=sum(r.embedded for r in files.values()) if has_embedder else 0,
        vectors_missing=sum(r.pieces - r.vectors for r in files.values()) if has_embedder else 0,
    )


def build_segment(delta: Delta) -> SegmentData:
    """BM25 rows of the delta's chunks and pieces over their own sorted dictionary, with the vectors it
    carries (the transformer's known so far, the static tier's when it was ready)."""
    terms, cdocs, pdocs = batch_rows(delta.chunks, delta.pieces)
    return SegmentData(
        delta.chunks, [pc for _, pc in delta.pieces], np.asarray([o for o, _ in delta.pieces], np.int64),
        terms, cdocs, pdocs, delta.vectors, delta.present, GraphTable.from_files(delta.graphs),
        delta.static, delta.static_id,
    )  # fmt: skip


def _held(manifest: Manifest, path: str, segment: int) -> bool:
    """Whether the manifest says ``segment`` holds ``path`` (its rows there are live)."""
    rec = manifest.files.get(path)
    return rec is not None and rec.segment == segment


def _without_unheld(manifest: Manifest | None) -> Manifest | None:
    """The manifest without the segments no file is held by (every row dead: an edited file's earlier
    delta), its files renumbered; the same object when there are none."""
    if manifest is None:
        return None
    held = set(column(manifest.files, "segment"))
    keep = [i for i in range(len(manifest.segments)) if i in held]
    if len(keep) == len(manifest.segments):
        return manifest
    new_index = {old: new for new, old in enumerate(keep)}
    files = {p: replace(r, segment=new_index[r.segment]) for p, r in manifest.files.items()}
    return replace(manifest, segments=[manifest.segments[i] for i in keep], files=files)


def _dead_share(seg: SegmentEntry, live_chunks: int) -> float:
    """The share of a segment's chunk rows that no live file holds."""
    return (seg.n_chunks - live_chunks) / seg.n_chunks if seg.n_chunks else 0.0


def _announce(manifest: Manifest) -> Committed:
    c = manifest.counts
    return Committed(files=c.files, chunks=c.chunks, embedded=c.embedded, vectors_missing=c.vectors_missing,
                     static_missing=c.static_missing, version=manifest.version)  # fmt: skip


class LocalWriter:
    """The segments under ``<state>/index``. Each batch of changed files becomes a segment and a commit
    (a cold build is searchable batch by batch, and never holds the whole tree in memory)."""

    batch_files: int | None = BATCH_FILES
    batch_bytes: int | None = BATCH_BYTES
    inline_vectors = False
    stores_static = LOCAL.static_tier

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.static_id = ""  # the run's static tier ("" when it has none: the index's stays recorded)
        self.idx_dir = Path()
        self.manifest: Manifest | None = None
        self.run: RunHooks | None = None

    # -- the previous version ----------------------------------------------------------------------

    def open(
        self, state: Path, rebuild: bool, emb: EmbedderState, run: RunHooks
    ) -> Mapping[str, FileRecord] | None:
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

    # -- commits -----------------------------------------------------------------------------------

    def commit(self, delta: Delta, emb: EmbedderState) -> Committed | None:
        """Write the delta as a segment and commit the new manifest (also when only stat data, deletions
        or the embedder's state changed)."""
        prev = self.manifest
        if prev is not None and delta.empty and not self._meta_changed(prev, emb):
            return None
        assert self.run is not None
        self.run.check_cancel()
        files = {p: r for p, r in (prev.files.items() if prev is not None else ()) if p not in delta.gone}
        files.update(delta.same)
        segments = list(prev.segments) if prev is not None else []
        if delta.records:
            segments.append(self.write(delta))
            for path, rec in delta.records.items():
                files[path] = replace(rec, segment=len(segments) - 1)
        return self._commit(self._manifest(segments, files, emb, prev), prev)

    def commit_built(
        self, built: Built, gone: set[str], emb: EmbedderState, cache: EmbeddingCache | None
    ) -> Committed | None:
        """Commit a batch a helper wrote as a segment in the staging folder (parallel.py): move it into
        place, add the cached transformer vectors of its pieces, and commit it with the records."""
        prev = self.manifest
        assert self.run is not None
        files = {
            p: r for p, r in (prev.files.items() if prev is not None else ()) if p not in gone | built.gone
        }
        files.update(built.same)
        segments = list(prev.segments) if prev is not None else []
        if built.segment is not None:
            entry = parse_segment(built.segment)
            os.rename(staging_dir(self.idx_dir) / entry.name, self.idx_dir / entry.name)
            present = self._cached_block(entry, built, cache)
            if present is not None:
                entry = present[0]
            segments.append(entry)
            hits = present[1] if present is not None else np.zeros(len(built.piece_files), bool)
            for path, rec in built.records.items():
                files[path] = replace(rec, segment=len(segments) - 1)
            vectors, full = Counter[str](), dict[tuple[str, int], bool]()
            for path, owner, hit in zip(built.piece_files, built.piece_owners, hits.tolist(), strict=True):
                vectors[path] += hit
                full[(path, owner)] = full.get((path, owner), True) and hit
            embedded = Counter(path for (path, _), ok in full.items() if ok)
            for path in built.records:
                files[path] = replace(files[path], vectors=vectors[path], embedded=embedded[path])
        elif prev is not None and not gone and not built.gone and not built.same:
            return None
        return self._commit(self._manifest(segments, files, emb, prev), prev)

    def _cached_block(
        self, entry: SegmentEntry, built: Built, cache: EmbeddingCache | None
    ) -> tuple[SegmentEntry, np.ndarray] | None:
        """The segment with a vector block of its pieces' cached vectors (None when none is cached)."""
        if cache is None or not built.piece_keys:
            return None
        found = [
            (row, vec) for row, key in enumerate(built.piece_keys) if (vec := cache.lookup(key)) is not None
        ]
        if not found:
            return None
        rows = np.asarray([r for r, _ in found], np.int64)
        hits = np.zeros(len(built.piece_keys), bool)
        hits[rows] = True
        return write_block(self.idx_dir, entry, rows, np.stack([v for _, v in found])), hits

    def write(self, delta: Delta) -> SegmentEntry:
        """The delta as a new segment (not yet committed)."""
        return write_segment(self.idx_dir, build_segment(delta))

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
        static = self.static_id or (prev.meta.static if prev is not None else "")
        meta = IndexMeta(
            settings=index_settings_key(self.settings),
            embedder=emb_id,
            dim=dim,
            skipped=prev.meta.skipped if self.run.targeted and prev else len(report.skipped_files),
            degraded_reason=emb.error if emb.embedder is None else report.degraded_reason,
            static=static,
        )
        if prev is not None:  # the stored centrality carries over (an edit barely moves it)
            pm = prev.meta
            meta = replace(meta, rank_file=pm.rank_file, rank_size=pm.rank_size, rank_crc=pm.rank_crc)
        counts = counts_of(files, emb_id != "none")
        if static:
            lacking = {i for i, seg in enumerate(segments) if seg.static != static}
            counts = replace(
                counts, static_missing=sum(r.chunks for r in files.values() if r.segment in lacking)
            )
        return Manifest(f"v{time.time_ns():x}", "", segments, files, counts, meta, _verdicts(self.run))

    def _commit(self, manifest: Manifest, prev: Manifest | None) -> Committed:
        commit(self.idx_dir, manifest, prev)
        self.manifest = manifest
        return _announce(manifest)

    # -- vectors -----------------------------------------------------------------------------------

    def missing(self) -> tuple[list[MissingPiece], dict[str, int]]:
        """The live pieces without a vector (read from the segments that have any), and file sizes."""
        manifest = self.manifest
        if manifest is None:
            return [], {}
        out: list[MissingPiece] = []
        files = manifest.files
        lacking = zip(
            column(files, "segment"), column(files, "vectors"), column(files, "pieces"), strict=True
        )
        for i in sorted({seg for seg, vectors, pieces in lacking if vectors < pieces}):
            part = Part(self.idx_dir, manifest.segments[i])
            has = part.has_vector()
            paths = part.paths
            owner_path = part.c_path[part.p_owner] if part.n_pieces else np.zeros(0, np.int64)
            live = np.fromiter((_held(manifest, p, i) for p in paths), bool, len(paths))
            rows = np.flatnonzero(~has & live[owner_path]) if part.n_pieces else np.zeros(0, np.int64)
            for row, piece in part.pieces(rows.tolist()):
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
        return self._commit(new, manifest)

    def static_missing(self, static_id: str) -> list[int]:
        """Segments holding live files whose static vectors are missing or of another table."""
        manifest = self.manifest
        if manifest is None or not static_id:
            return []
        held = set(column(manifest.files, "segment"))
        return [i for i, s in enumerate(manifest.segments) if i in held and s.static != static_id]

    def piece_texts(self, segment: int) -> list[str]:
        """What the embedders read of every piece of a segment, in row order."""
        assert self.manifest is not None
        part = Part(self.idx_dir, self.manifest.segments[segment])
        return [piece.embed_text for _, piece in part.pieces()]

    def commit_static(self, vectors: dict[int, np.ndarray], static_id: str, emb: EmbedderState) -> Committed:
        """Add static vectors to segments written before the tier was ready, and commit."""
        manifest = self.manifest
        assert manifest is not None
        segments = list(manifest.segments)
        for i, vecs in vectors.items():
            segments[i] = write_static(self.idx_dir, segments[i], vecs, static_id)
        return self._commit(self._manifest(segments, dict(manifest.files), emb, manifest), manifest)

    # -- merging -----------------------------------------------------------------------------------

    def merge_plan(self, manifest: Manifest, cap: int = MERGE_CAP_CHUNKS) -> list[int]:
        """The segments to merge now (bounded: their live chunks fit ``cap`` and, unless one segment is
        rewritten alone, their live pieces ``MERGE_CAP_PIECES``), [] for none.

        Too many segments: the smallest are merged together. A segment with many dead rows, or too many
        vector blocks, is rewritten, with the small segments (``SMALL_SEGMENT``) that fit beside it: a
        rewrite never drags big segments along.
        """
        segs = manifest.segments
        live = Counter[int]()
        for seg, chunks in zip(
            column(manifest.files, "segment"), column(manifest.files, "chunks"), strict=True
        ):
            live[seg] += chunks
        # each segment's live pieces, estimated from its share of live chunks (whole numbers: a merge
        # exactly at a bound is allowed)
        pieces = {i: live[i] * s.n_pieces // max(s.n_chunks, 1) for i, s in enumerate(segs)}
        max_segments = max(1, self.settings.index.max_segments)
        needy = [
            i
            for i, s in enumerate(segs)
            if (len(s.blocks) > MAX_BLOCKS or _dead_share(s, live[i]) > MAX_DEAD_SHARE) and live[i] <= cap
        ]
        if len(segs) <= max_segments and not needy:
            return []
        by_size = sorted(range(len(segs)), key=lambda i: (live[i], i))
        plan: list[int] = list(needy[:1])
        size, size_pieces = sum(live[i] for i in plan), sum(pieces[i] for i in plan)
        for i in by_size:
            if i in plan:
                continue
            few_enough = len(segs) - len(plan) + 1 <= max_segments
            if few_enough and (len(plan) >= 2 or (needy and live[i] > SMALL_SEGMENT)):
                break
            if plan and (size + live[i] > cap or size_pieces + pieces[i] > MERGE_CAP_PIECES):
                break
            plan.append(i)
            size += live[i]
            size_pieces += pieces[i]
        if len(plan) < 2 and not needy:
            return []
        return sorted(plan)

    def compact(self, run: RunHooks) -> Committed | None:
        """Fold some segments into one when they pile up or hold many dead rows; gives way to newer work
        between the segments it reads (an edit never waits for a merge)."""
        held = _without_unheld(self.manifest)
        assert held is not None
        manifest = held
        plan = self.merge_plan(manifest, run.merge_cap or MERGE_CAP_CHUNKS)
        if not plan or run.should_yield():
            if manifest is not self.manifest:  # segments no file is held by go, read by nobody
                return self._commit(replace(manifest, version=f"v{time.time_ns():x}"), self.manifest)
            return None  # newer work first; the next run merges
        run.check_cancel()
        run.emit(Progress("merging", message=f"{len(plan)} of {len(manifest.segments)} segments"))
        data = consolidate(self.idx_dir, manifest, pieces=True, segments=plan, interrupt=run.should_yield)
        if data is None or run.should_yield():
            return None
        emb_id, dim = manifest.meta.embedder, manifest.meta.dim
        if emb_id != "none" and dim and len(plan) == len(manifest.segments):  # unused cached vectors go
            run.cache_for(emb_id, dim).save({p.embed_key for p in data.pieces})
        seg = SegmentData(
            data.chunks, data.pieces, data.owners, data.terms, data.docs, data.pdocs, data.vectors,
            data.present, data.graph, data.static, data.static_id,
        )  # fmt: skip
        run.check_cancel()
        entry = write_segment(self.idx_dir, seg)
        at = plan[0]
        keep = [i for i in range(len(manifest.segments)) if i not in plan or i == at]
        new_index = {old: new for new, old in enumerate(keep)}
        segments = [entry if i == at else manifest.segments[i] for i in keep]
        merged_at = new_index[at]
        files = {
            p: replace(r, segment=merged_at if r.segment in plan else new_index[r.segment])
            for p, r in manifest.files.items()
        }
        counts = manifest.counts
        if manifest.meta.static:
            lacking = {i for i, seg in enumerate(segments) if seg.static != manifest.meta.static}
            counts = replace(
                counts, static_missing=sum(r.chunks for r in files.values() if r.segment in lacking)
            )
        merged = Manifest(f"v{time.time_ns():x}", "", segments, files, counts, manifest.meta, manifest.passed)
        run.report.merged = True
        return self._commit(merged, self.manifest)

    def rank(self, run: RunHooks) -> Committed | None:
        """Store the files' centrality with the version when it has none or a tenth of the files are new
        to it (store/centrality.py): a reader then never walks the whole graph."""
        manifest = self.manifest
        if manifest is None or run.should_yield() or (manifest.meta.rank_file and not run.report.wrote):
            return None  # (a run that wrote nothing leaves the version its stored centrality was made for)
        view = load_view(self.idx_dir)
        graph = view.graph
        paths = graph.paths()
        stored = read_rank(self.idx_dir, manifest.meta)
        if stored is not None and sum(p in stored for p in paths) >= STALE_SHARE * len(paths):
            return None
        if len(paths) > MAX_RANK_FILES or not paths:
            if not manifest.meta.rank_file:
                return None
            ranks: dict[str, float] = {}  # too big for a prior: none is stored
        else:
            run.emit(Progress("ranking", message=f"centrality of {len(paths)} files"))
            ranks = file_rank(graph, view.path_parts, {})
        run.check_cancel()
        name, size, crc = write_rank(self.idx_dir, ranks) if ranks else ("", 0, 0)
        meta = replace(manifest.meta, rank_file=name, rank_size=size, rank_crc=crc)
        new = replace(manifest, version=f"v{time.time_ns():x}", written="", meta=meta)
        return self._commit(new, manifest)

    def passed_files(self) -> PassedFiles | None:
        """The files the previous version left out for their content (the indexer passes them over)."""
        return None if self.manifest is None else self.manifest.passed

    def finish(self, emb: EmbedderState, run: RunHooks) -> Committed | None:
        manifest = self.manifest
        assert manifest is not None
        passed = _verdicts(run)
        committed = None
        if passed != manifest.passed:  # a run that changed nothing else still keeps its verdicts
            old, manifest = manifest, replace(manifest, version=f"v{time.time_ns():x}", passed=passed)
            committed = self._commit(manifest, old)
        c = manifest.counts
        r = run.report
        r.files, r.chunks, r.embedded = c.files, c.chunks, c.embedded
        r.vectors_missing, r.embedder = c.vectors_missing, emb.emb_id
        r.static_missing, r.static = c.static_missing, manifest.meta.static
        return committed

    def close(self) -> None:
        pass


def _verdicts(run: RunHooks) -> PassedFiles:
    """The files the run left out for their content, as the version it commits keeps them."""
    return PassedFiles(VERDICT_RULES, dict(run.passed))
