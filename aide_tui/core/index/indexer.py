"""Indexing orchestration: scan → diff → read and chunk → vectors → commit → embed → compact, with events.

One indexer serves every store; a :class:`~aide_tui.core.index.writer.StoreWriter` turns its output
into the store's rows and versions. Each run is a sequence of small phases:

- **diff**: the scan (or just the files a watcher named) against the store's file records (size +
  mtime, then content hash);
- **read**: read and chunk the changed files (secrets masked) into chunks and dense pieces, in
  batches the writer commits one at a time (one batch for the local store);
- **vectors**: reuse cached vectors for unchanged piece texts; a writer that stores vectors with
  their rows gets the rest computed before its commit;
- **commit**: the lexical side of every change is searchable here, before any bulk embedding;
- **embed**: compute missing vectors (files the user looks at first, then small files), committing
  them every few seconds; a newer request preempts it between batches;
- **compact**: the writer folds its parts together when they pile up.

A run that finds nothing to do reads only the store's records and stats the tree.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.errors import EmbedderError, IndexCorrupt, RunCancelled
from aide_tui.core.events import Done, Event, Progress
from aide_tui.core.gcpause import gc_paused
from aide_tui.core.index.budget import BULK_PIECES, BulkJob, Wait, bulk_slot
from aide_tui.core.index.built import Built, staging_dir
from aide_tui.core.index.embcache import EmbeddingCache, usable_rows
from aide_tui.core.index.parallel import Backlog, batch_bytes, helpers_for, prev_of, run_backlog
from aide_tui.core.index.reading import BatchNotes, read_batch
from aide_tui.core.index.scan import VERDICT_RULES, FileEntry, Scanner
from aide_tui.core.index.static_tier import StaticTier
from aide_tui.core.index.writer import Delta, EmbedderState, MissingPiece, StoreWriter
from aide_tui.core.paths import state_dir
from aide_tui.core.store.records import FileRecord, PassedFile, PassedFiles, writer_lock

EMBED_BATCH = 32  # pieces per embedder call (split across workers), at most
MIN_EMBED_BATCH = 4
BATCH_SECONDS = 0.25  # a bulk embed sizes its batches to take about this long: the preemption granularity
COMMIT_EVERY_S = 10.0  # vectors are committed at least this often while embedding
PROGRESS_EVERY = 100  # files read between progress events


@dataclass
class Plan:
    """The scan against the store's records: what is unchanged, what must be read, what is gone."""

    total: int
    unchanged: dict[str, FileRecord]
    to_read: list[FileEntry]
    removed: set[str]


class Indexer:
    """Builds or incrementally updates one workspace's index in its store. One instance may serve many
    runs (the long-lived indexing process keeps it, with the writer's state and the embedding cache)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder | None = None,
        embedder_error: str | None = None,
        writer: StoreWriter | None = None,
        static: StaticTier | None | str = "settings",
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error
        if isinstance(static, str):  # the tier the settings ask for
            from aide_tui.core.index.static_tier import static_tier_for

            static = static_tier_for(settings)
        self.static = static
        if writer is None:
            from aide_tui.core.index.stores import open_writer

            writer = open_writer(self.root, settings)
        self.writer = writer
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
        merge_cap: int | None = None,
    ) -> Done:
        """Update the index; returns what happened. Raises LockTimeout if another writer holds it,
        IndexProblem when the store cannot be written.

        ``embed=False`` stops after the lexical commit (vectors already cached are still reused);
        ``should_yield`` is asked between embedding batches whether newer work is waiting; ``paths``
        (workspace-relative, from a file watcher) limits the run to those files: no walk of the tree,
        unless a folder, a link or an ignore file changed. ``merge_cap`` bounds the live chunks a merge
        may read in this run (a one-shot search keeps its merges small; the next ``index`` or host does
        the rest).
        """
        run = _Run(self, on_progress or (lambda e: None), cancel, set(priority), should_yield)
        run.paths = None if paths is None else set(paths)
        run.merge_cap = merge_cap
        started = time.monotonic()
        state = state_dir(self.root)
        with writer_lock(state / "index", timeout=self.settings.index.lock_timeout):
            try:
                run.execute(state, rebuild, embed)
            except RunCancelled:
                run.report.cancelled = True
            finally:
                self.writer.close()
        run.report.seconds = time.monotonic() - started
        run.report.count_skipped()
        return run.report

    def cache_for(self, state: Path, emb_id: str, dim: int) -> EmbeddingCache:
        """The embedding cache of this embedder (kept across runs)."""
        if self._cache is None or (self._cache.embedder_id, self._cache.dim) != (emb_id, dim):
            self._cache = EmbeddingCache(state, emb_id, dim)
        return self._cache


class _Run:
    """One run's phases and the state they share (the writer sees it as its RunHooks)."""

    def __init__(
        self,
        indexer: Indexer,
        emit: Callable[[Event], None],
        cancel: threading.Event | None,
        priority: set[str],
        should_yield: Callable[[], bool] | None,
    ) -> None:
        self.ix = indexer
        self.writer = indexer.writer
        self.settings = indexer.settings
        self.emit = emit
        self.cancel = cancel
        self.priority = priority
        self._should_yield = should_yield or (lambda: False)
        self.paths: set[str] | None = None
        self.content_rule: Callable[[str, str], str | None] | None = None  # generated output, by content
        self.turn_over: Callable[[int, int], bool] = _no_turns  # the bulk budget's turn (budget.py)
        self.targeted = False
        self.merge_cap: int | None = None
        self.passed: dict[str, PassedFile] = {}
        self._gone_dirs: tuple[str, ...] = ()
        self._done = 0
        self.report = Done()
        self.state = Path()

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled

    def should_yield(self) -> bool:
        return self._should_yield()

    def cache_for(self, emb_id: str, dim: int) -> EmbeddingCache:
        return self.ix.cache_for(self.state, emb_id, dim)

    def committed(self, event: Event | None) -> None:
        if event is not None:
            self.report.wrote = True
            self.emit(event)

    # -- orchestration -----------------------------------------------------------------------------

    def execute(self, state: Path, rebuild: bool, embed: bool) -> None:
        self.state = state
        emb = self.embedder_state()
        prev = self.writer.open(state, rebuild, emb, self)
        if self.static is not None:
            self.writer.static_id = self.static.id  # type: ignore[attr-defined]
        scanner = Scanner.from_settings(self.root, self.settings)
        self.content_rule = scanner.content_skip_reason
        entries = self.targeted_entries(scanner, prev)
        if entries is None:
            entries = self.walk(scanner)
        try:
            self.update(prev, emb, entries, embed)
        except IndexCorrupt as exc:  # a damaged segment under an intact manifest: start afresh
            restart = getattr(self.writer, "restart", None)
            if prev is None or restart is None:
                raise
            self.report.messages.append(str(exc))
            restart()
            self.targeted = False
            self.update(None, emb, self.walk(scanner), embed)
        self.finish(emb)

    @property
    def root(self) -> Path:
        return self.ix.root

    @property
    def static(self) -> StaticTier | None:
        """The run's static tier, when the writer stores one."""
        tier = self.ix.static
        return tier if tier is not None and getattr(self.writer, "stores_static", False) else None

    def walk(self, scanner: Scanner) -> list[FileEntry]:
        self.emit(Progress("scanning", message="walking the workspace"))
        scan = scanner.scan()
        self.report.skipped_files = {**scan.skipped, **scan.errors}
        self.report.warnings.extend(getattr(scan, "warnings", []))
        return scan.files

    def embedder_state(self) -> EmbedderState:
        """The run's embedder identity; an unusable embedder makes the run degraded, not failed."""
        embedder = self.ix.embedder
        if embedder is None:
            return EmbedderState(None, "none", 0, self.ix.embedder_error)
        try:
            return EmbedderState(embedder, embedder.id, int(embedder.dim))
        except EmbedderError as exc:
            return EmbedderState(None, "none", 0, str(exc))

    def targeted_entries(
        self, scanner: Scanner, prev: Mapping[str, FileRecord] | None
    ) -> list[FileEntry] | None:
        """The store's files with only ``self.paths`` re-examined (None: walk the whole tree).

        Unchanged files keep their recorded stat data, so the diff passes them over.
        """
        if self.paths is None or prev is None or not self.paths:
            return None
        found = targeted_scan(scanner, self.paths)
        if found is None:
            return None
        fresh, skipped, gone = found
        self.targeted = True
        self.report.skipped_files = skipped
        gone_dirs = self._gone_dirs = tuple(g + "/" for g in gone)
        entries = [
            # never read: size and mtime come from the records, so the diff passes them over
            FileEntry(p, os.path.join(scanner.root, p), r.size, r.mtime_ns, dev=-1, ino=-1)
            for p, r in prev.items()
            if p not in self.paths and not (gone_dirs and p.startswith(gone_dirs))
        ]
        return entries + fresh

    def update(self, prev: Mapping[str, FileRecord] | None, emb: EmbedderState, entries: list[FileEntry],
               embed: bool) -> None:  # fmt: skip
        plan = diff(self.pass_over(entries), prev)
        to_read = plan.to_read
        if (
            self.writer.inline_vectors and emb.embedder is not None
        ):  # vectors an earlier run could not compute
            seen = {e.rel for e in to_read}
            old = plan.unchanged
            to_read = to_read + [
                e
                for e in entries
                if e.rel not in seen and e.rel in old and old[e.rel].vectors < old[e.rel].pieces
            ]
        self.report.removed = len(plan.removed)
        total = sum(e.size for e in to_read)
        helpers = helpers_for(self.settings, total) if hasattr(self.writer, "commit_built") else 0
        if helpers:
            self.build_parallel(to_read, prev, plan.removed, emb, helpers, total)
        else:
            self.start_static()
            self.build_here(to_read, prev, plan.removed, emb)
        self.start_static()
        self.backfill_static(emb)
        if embed and emb.embedder is not None and not self.writer.inline_vectors:
            self.embed_missing(emb)
        if not self.report.preempted:
            self.committed(self.writer.compact(self))
        rank = getattr(self.writer, "rank", None)
        if rank is not None and not self.report.preempted:
            self.committed(rank(self))

    def start_static(self) -> None:
        """Open the static tier's table in the background (once): after a big build's helpers are
        forked, so that they are copies of a process with one thread."""
        if self.static is not None:
            self.static.start(self.emit)

    def pass_over(self, entries: list[FileEntry]) -> list[FileEntry]:
        """``entries`` less the files an earlier run left out for their content, unchanged since (not
        read again: their verdict and reason carry over; a targeted run keeps the others' verdicts)."""
        stored: PassedFiles | None = getattr(self.writer, "passed_files", lambda: None)()
        known = stored.files if stored is not None and stored.rules == VERDICT_RULES else {}
        paths, gone = self.paths or set(), self._gone_dirs
        self.passed = (
            {p: v for p, v in known.items() if p not in paths and not (gone and p.startswith(gone))}
            if self.targeted
            else {}
        )
        left: list[FileEntry] = []
        for e in entries:
            v = known.get(e.rel)
            if v is not None and v.size == e.size and v.mtime_ns == e.mtime_ns:
                self.passed[e.rel] = v
                self.report.skipped_files[e.rel] = v.reason
            else:
                left.append(e)
        return left

    def build_here(
        self,
        to_read: list[FileEntry],
        prev: Mapping[str, FileRecord] | None,
        removed: set[str],
        emb: EmbedderState,
    ) -> None:
        """Read, chunk and commit the batches in this process (a small backlog, or a journalled store)."""
        first = True
        for batch in batches(to_read, self.writer.batch_files, getattr(self.writer, "batch_bytes", None)):
            self.check_cancel()
            with gc_paused():
                delta = self.read(batch, prev, self._done, len(to_read))
                self._done += len(batch)
                if first:
                    delta.gone |= removed
                    first = False
                self.vectors(delta, emb)
                self.committed(self.writer.commit(delta, emb))
            self.report.changed += len(delta.records)

    def build_parallel(
        self,
        to_read: list[FileEntry],
        prev: Mapping[str, FileRecord] | None,
        removed: set[str],
        emb: EmbedderState,
        helpers: int,
        total: int,
    ) -> None:
        """Build a big backlog on every core (parallel.py): each batch a segment, committed as it lands."""
        idx_dir = state_dir(self.root) / "index"
        staging = staging_dir(idx_dir)
        keep = not self.writer.inline_vectors
        cache = self.cache_for(emb.emb_id, emb.dim) if emb.embedder is not None else None
        backlog = Backlog(to_read, prev_of(to_read, prev), str(staging), self.settings, keep,
                          str(self.root), self.writer.batch_files, cache is not None)  # fmt: skip
        gone = set(removed)
        done = 0

        def on_built(built: Built) -> None:
            nonlocal gone, done
            self.report.skipped_files.update(built.notes.skipped)
            self.passed.update(built.notes.passed)
            self.report.warnings.extend(built.notes.warnings)
            with gc_paused():
                self.committed(self.writer.commit_built(built, gone, emb, cache))  # type: ignore[attr-defined]
            gone = set()
            done += len(built.records) + len(built.same) + len(built.gone) + len(built.notes.skipped)
            self.report.changed += len(built.records)
            self.emit(Progress("indexing", min(done, len(to_read)), len(to_read),
                               message=f"{self.report.changed} changed"))  # fmt: skip

        def stop() -> bool:
            return self.cancel is not None and self.cancel.is_set()

        self.emit(Progress("indexing", 0, len(to_read), message=f"reading on {helpers} cores"))
        try:
            lost = run_backlog(
                backlog, batch_bytes(total, helpers), helpers, on_built, stop, self.start_static
            )
            if lost:
                self.report.warnings.append(lost)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.check_cancel()
        if gone:  # nothing was committed: the deletions still are
            self.committed(self.writer.commit(Delta(gone=gone), emb))

    def backfill_static(self, emb: EmbedderState) -> None:
        """Give the segments committed before the static tier was ready their static vectors (waiting
        for the table while no newer work is waiting)."""
        tier = self.static
        if tier is None:
            return
        missing = self.writer.static_missing(tier.id)  # type: ignore[attr-defined]
        if not missing:
            return

        def keep_waiting() -> bool:
            self.check_cancel()
            return not self.should_yield()

        if not tier.wait(keep_waiting):
            if tier.failed and tier.error:
                self.report.warnings.append(tier.error)
            return
        vectors = {}
        for i in missing:
            self.check_cancel()
            texts = self.writer.piece_texts(i)  # type: ignore[attr-defined]
            vectors[i] = tier.vectors(texts)
        self.committed(self.writer.commit_static(vectors, tier.id, emb))  # type: ignore[attr-defined]

    def finish(self, emb: EmbedderState) -> None:
        self.committed(self.writer.finish(emb, self))
        r = self.report
        if emb.embedder is None and emb.error and not r.degraded:
            r.degraded, r.degraded_reason = True, emb.error

    # -- reading -----------------------------------------------------------------------------------

    def read(
        self, entries: list[FileEntry], prev: Mapping[str, FileRecord] | None, done: int, total: int
    ) -> Delta:
        """Read and chunk a batch (see reading.py), with progress every ``PROGRESS_EVERY`` files."""

        def on_file(n: int, entry: FileEntry) -> None:
            if (done + n + 1) % PROGRESS_EVERY == 0:
                self.check_cancel()
                self.emit(Progress("indexing", done + n + 1, total, message=entry.rel))

        notes = BatchNotes(self.report.skipped_files, self.report.warnings, self.passed)
        s = self.settings.index
        keep = not self.writer.inline_vectors
        delta = read_batch(entries, prev, s.max_file_kb * 1024, s.chunk_budget, keep, notes, on_file,
                           self.content_rule)  # fmt: skip
        if entries:
            self.emit(
                Progress(
                    "indexing",
                    done + len(entries),
                    total,
                    message=f"{self.report.changed + len(delta.records)} changed",
                )
            )
        return delta

    # -- vectors -----------------------------------------------------------------------------------

    def vectors(self, delta: Delta, emb: EmbedderState) -> None:
        """Give the delta its cached vectors (and, for a writer that stores vectors with their rows, the
        rest computed now), then count each changed file's vectors and fully embedded chunks."""
        p = len(delta.pieces)
        delta.vectors = np.zeros((p, emb.dim), np.float32)
        delta.present = np.zeros(p, bool)
        if emb.embedder is not None and p:
            cache = self.cache_for(emb.emb_id, emb.dim)
            for i, (_, piece) in enumerate(delta.pieces):
                vec = cache.lookup(piece.embed_key)
                if vec is not None:
                    delta.vectors[i], delta.present[i] = vec, True
            self.report.warnings.extend(cache.dropped)
            cache.dropped.clear()
            if self.writer.inline_vectors:
                self.embed_inline(delta, emb, cache)
        tier = self.static
        if tier is not None and not tier.ready and tier.cached and p:  # a cached table: in this commit
            tier.wait(lambda: not (self.cancel is not None and self.cancel.is_set()))
        if tier is not None and tier.ready and p:
            delta.static = tier.vectors([piece.embed_text for _, piece in delta.pieces])
            delta.static_id = tier.id
        full: dict[int, bool] = {}
        for (owner, piece), has in zip(delta.pieces, delta.present, strict=True):
            full[owner] = full.get(owner, True) and bool(has)
            if has:
                delta.records[piece.path].vectors += 1
        per_file: Counter[str] = Counter(delta.chunks[o].path for o, ok in full.items() if ok)
        for path, rec in delta.records.items():
            rec.embedded = per_file.get(path, 0)

    def embed_inline(self, delta: Delta, emb: EmbedderState, cache: EmbeddingCache) -> None:
        """Compute the delta's missing vectors now; a failing embedder leaves the rest of the run lexical."""
        todo = [i for i in range(len(delta.pieces)) if not delta.present[i]]
        try:
            for k in range(0, len(todo), EMBED_BATCH):
                part = todo[k : k + EMBED_BATCH]
                vecs = emb.embedder.embed([delta.pieces[i][1].embed_text for i in part], kind="document")
                check_batch(vecs, len(part), emb.dim)
                cache.add([delta.pieces[i][1].embed_key for i in part], vecs)
                delta.vectors[part] = vecs
                delta.present[part] = True
                self.report.newly_embedded += len(part)
        except EmbedderError as exc:
            self.report.degraded, self.report.degraded_reason = True, str(exc)
            emb.embedder, emb.error = None, str(exc)
        cache.save()

    def embed_missing(self, emb: EmbedderState) -> None:
        """Embed stored pieces without vectors (the user's files, then small files first); commit often.
        A bulk job waits for a slot of the machine-wide budget first (see budget.py)."""
        assert emb.embedder is not None
        todo, sizes = self.writer.missing()
        if not todo:
            return
        if len(todo) <= BULK_PIECES:
            self.embed(emb, todo, sizes)
            return

        def keep_waiting() -> bool:
            self.check_cancel()
            if self.should_yield():
                self.report.preempted = True  # newer work first; the next run keeps its place in the queue
                return False
            return True

        idx = self.settings.index
        while todo:  # one turn at a time (budget.py): between turns, the jobs that waited go first
            job = BulkJob(str(self.root), len(todo), idx.max_bulk_jobs, idx.bulk_turn_seconds)

            def queued(wait: Wait, job: BulkJob = job) -> None:
                self.emit(Progress("queued", vectors_total=job.pieces, wait_seconds=wait.eta_s,
                                   message=wait.message(job.jobs, job.turn_s)))  # fmt: skip

            with bulk_slot(job, keep_waiting, queued, self.report.warnings.append) as turn:
                if turn is None:
                    return
                self.turn_over = turn.over
                try:
                    self.embed(emb, todo, sizes)
                finally:  # idle workers would hold a model's weights each until the host exits
                    self.turn_over = _no_turns
                    stop = getattr(emb.embedder, "stop_workers", None)
                    if stop is not None and not self.report.preempted and not turn.ended:
                        stop()
            if not turn.ended or self.report.preempted or self.report.degraded:
                return
            todo, sizes = self.writer.missing()

    def loaded(self, emb: EmbedderState) -> bool:
        """Load the embedder's model (seconds of reading and verifying weights on a busy machine) in a
        thread while newer work may still preempt the run: False when it did (the load goes on, and
        the next run finds the model ready)."""
        load = getattr(emb.embedder, "load", None)
        if load is None:
            return True
        failed: list[BaseException] = []

        def run() -> None:
            try:
                load()
            except BaseException as exc:  # noqa: BLE001 - handed to the indexing thread
                failed.append(exc)

        loader = threading.Thread(target=run, name="aide-embedder-load", daemon=True)
        loader.start()
        while loader.is_alive():
            loader.join(0.05)
            self.check_cancel()
            if loader.is_alive() and self.should_yield():
                self.report.preempted = True
                return False
        if failed:
            raise failed[0]
        return True

    def embed(self, emb: EmbedderState, todo: list[MissingPiece], sizes: dict[str, int]) -> None:
        """Compute ``todo``'s vectors in batches, committing every few seconds and at the end."""
        assert emb.embedder is not None
        try:
            if not self.loaded(emb):
                return
        except EmbedderError as exc:
            self.report.degraded, self.report.degraded_reason = True, str(exc)
            return
        cache = self.cache_for(emb.emb_id, emb.dim)
        todo.sort(key=lambda m: (m.path not in self.priority, sizes.get(m.path, 0), m.path))
        pending: list[tuple[MissingPiece, np.ndarray]] = []
        done, last = 0, time.monotonic()
        self.emit(Progress("embedding", vectors_done=0, vectors_total=len(todo)))
        size, start = MIN_EMBED_BATCH * 2, 0
        try:
            while start < len(todo):
                self.check_cancel()
                if start and self.should_yield():
                    self.report.preempted = True
                    break
                if start and self.turn_over(done, len(todo)):
                    break  # another workspace's turn: this job queues again behind it
                batch = todo[start : start + size]
                began = time.monotonic()
                vecs = emb.embedder.embed([m.text for m in batch], kind="document")
                size = batch_size(len(batch), time.monotonic() - began)
                start += len(batch)
                check_batch(vecs, len(batch), emb.dim)
                cache.add([m.key for m in batch], vecs)
                pending.extend(zip(batch, vecs, strict=True))
                done += len(batch)
                self.report.newly_embedded = done
                self.emit(Progress("embedding", vectors_done=done, vectors_total=len(todo)))
                if time.monotonic() - last > COMMIT_EVERY_S:
                    self.committed(self.writer.commit_vectors(pending, emb))
                    cache.save()
                    pending, last = [], time.monotonic()
        except EmbedderError as exc:
            self.report.degraded, self.report.degraded_reason = True, str(exc)
        finally:
            if pending or self.report.degraded:
                self.committed(self.writer.commit_vectors(pending, emb))
            cache.save()  # pruning needs every live key: merges do it


# -- pure helpers ------------------------------------------------------------------------------------


def _no_turns(done: int = 0, total: int = 0) -> bool:
    return False


def batch_size(last: int, took: float) -> int:
    """The next bulk batch's size: what takes about BATCH_SECONDS at the last batch's pace, so an edit
    waits at most that long for the embedder, whatever the model's speed or the machine's load."""
    per_piece = took / max(last, 1)
    if per_piece <= 0:
        return EMBED_BATCH
    return max(MIN_EMBED_BATCH, min(EMBED_BATCH, int(BATCH_SECONDS / per_piece)))


def batches(entries: list[FileEntry], max_files: int | None, max_bytes: int | None) -> list[list[FileEntry]]:
    """The files to read, cut into batches of at most ``max_files`` files and ``max_bytes`` bytes (by
    their stat size; None: no bound); one (maybe empty) batch when there is nothing to read, so a run
    that only deletes still commits."""
    out: list[list[FileEntry]] = []
    cur: list[FileEntry] = []
    size = 0
    for e in entries:
        if cur and ((max_files and len(cur) >= max_files) or (max_bytes and size + e.size > max_bytes)):
            out.append(cur)
            cur, size = [], 0
        cur.append(e)
        size += e.size
    out.append(cur)
    return out


def diff(entries: list[FileEntry], prev: Mapping[str, FileRecord] | None) -> Plan:
    """Split the scan into files whose size and mtime match the records and files to read."""
    old = prev if prev is not None else {}
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


def check_batch(vecs: np.ndarray, n: int, dim: int) -> None:
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
        reason = scanner.layout_skip_reason(rel) or scanner.stat_skip_reason(rel, st)
        if reason:
            skipped[rel] = reason
            continue
        entries.append(FileEntry(rel, abs_path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino))
    return entries, skipped, gone


def _in_virtualenv(root: str, rel: str) -> bool:
    parts = rel.split("/")[:-1]
    return any(os.path.exists(os.path.join(root, *parts[: i + 1], "pyvenv.cfg")) for i in range(len(parts)))
