"""A big build on every core: helper processes read, chunk, tokenize and write whole segments.

Segments are self-contained (their own dictionary and postings), so a batch of files becomes a
finished segment in whichever process reads it: a helper writes it under the index's staging folder
(``index/.staging-<pid of the indexer>``, which only that indexer's commits keep), and the indexer
moves it into place and commits it like any other batch, in the order they finish. The indexer's own
process takes its share of batches too. Each batch carries its static vectors when the static tier's
table is built; cached transformer vectors are added by the indexer, which holds the cache.

Helpers are started with ``spawn`` (the indexer may run threads) and only for a backlog big enough to
pay their start-up (``PARALLEL_MIN_BYTES``); a smaller one is read in-process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.index.built import Built
from aide_tui.core.index.gcpause import gc_paused
from aide_tui.core.index.local_writer import build_segment
from aide_tui.core.index.reading import BatchNotes, read_batch
from aide_tui.core.index.scan import FileEntry, Scanner
from aide_tui.core.store.records import FileRecord

PARALLEL_MIN_BYTES = 2 << 20  # a smaller backlog is read in-process (textual, 3.4 MB: 4.6 -> 3.6 s, 2 cores)
MIN_BATCH_BYTES = 1 << 20
MAX_BATCH_BYTES = 16 << 20


@dataclass
class Job:
    """One batch for a helper: the files, their previous records, where to write, the settings."""

    entries: list[FileEntry]
    prev: dict[str, FileRecord]
    staging: str
    settings: Settings
    keep_incomplete: bool
    root: str = ""  # the workspace (its ignore and generated-output rules)


def build(job: Job) -> Built:
    """Read, chunk and write one batch as a segment in the staging folder (runs in a helper)."""
    with gc_paused():
        return _build(job)


def _build(job: Job) -> Built:
    from aide_tui.core.index.static_tier import static_tier_for
    from aide_tui.core.store.segment_write import write_segment

    s = job.settings.index
    notes = BatchNotes()
    content_rule = (
        Scanner.from_settings(Path(job.root), job.settings).content_skip_reason if job.root else None
    )
    delta = read_batch(
        job.entries,
        job.prev,
        s.max_file_kb * 1024,
        s.chunk_budget,
        job.keep_incomplete,
        notes,
        content_rule=content_rule,
    )
    tier = static_tier_for(job.settings)
    if tier is not None and tier.embedder.ready() and delta.pieces:  # never distils: the indexer does
        tier.start(lambda e: None)
        if tier.wait(lambda: True):
            delta.static = tier.vectors([p.embed_text for _, p in delta.pieces])
            delta.static_id = tier.id
    out = Built(
        None, delta.records, delta.same, delta.gone, notes, size=delta.size, static_id=delta.static_id
    )
    if delta.records:
        staging = Path(job.staging)
        staging.mkdir(mode=0o700, exist_ok=True)
        out.segment = write_segment(staging, build_segment(delta)).to_json()
        out.piece_keys = [p.embed_key for _, p in delta.pieces]
        out.piece_files = [p.path for _, p in delta.pieces]
        out.piece_owners = [o for o, _ in delta.pieces]
    return out


def batch_bytes(total: int, workers: int) -> int:
    """The size of a batch for a backlog of ``total`` bytes shared by ``workers`` processes: a few
    batches each (the load evens out: a batch of rendered pages read and left out costs a tenth of one
    of code), each at least 1 MiB, at most 16 MiB (a helper's memory)."""
    return max(MIN_BATCH_BYTES, min(MAX_BATCH_BYTES, total // max(1, 4 * workers)))


def helpers_for(settings: Settings, total: int) -> int:
    """Helper processes for a backlog of ``total`` bytes (0: read in-process)."""
    if total < PARALLEL_MIN_BYTES:
        return 0
    cores = settings.index.build_workers or min(2, os.cpu_count() or 1)
    return cores if cores > 1 else 0  # one per core: this process commits what they build


def run_batches(
    jobs: list[Job],
    helpers: int,
    on_built: Callable[[Built], None],
    stop: Callable[[], bool],
    in_process: Callable[[Job], Built] = build,
) -> None:
    """Build every job, ``helpers`` of them at a time in helper processes (one per core), a helper taking
    the next job as soon as it is free, while this process commits: ``on_built`` gets each result as it
    finishes (in this process). Without helpers, or for a single job, this process builds them. ``stop()``
    is asked between batches: when it says so, no new batch is started and the finished ones are still
    handed over."""
    if helpers <= 0 or len(jobs) < 2:
        for job in jobs:
            if stop():
                return
            on_built(in_process(job))
        return
    todo = list(jobs)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=helpers, mp_context=ctx) as pool:
        running: set[Future[Built]] = set()
        try:
            while todo or running:
                while todo and len(running) < helpers and not stop():
                    running.add(pool.submit(build, todo.pop(0)))
                for fut in _finished(running):
                    running.discard(fut)
                    on_built(fut.result())
                if stop():
                    todo.clear()
        finally:
            for fut in running:
                fut.cancel()


def _finished(running: set[Future[Built]]) -> Iterator[Future[Built]]:
    """The helpers' jobs that are done, waiting for at least one (none when nothing runs)."""
    if not running:
        return iter(())
    done, _ = wait(running, return_when=FIRST_COMPLETED)
    return iter(sorted(done, key=id))


def prev_of(entries: list[FileEntry], prev: Mapping[str, FileRecord] | None) -> dict[str, FileRecord]:
    """The previous records of just these files (what a helper compares content hashes against)."""
    if prev is None:
        return {}
    return {e.rel: prev[e.rel] for e in entries if e.rel in prev}
