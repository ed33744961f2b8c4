"""A big build on every core: helper processes read, chunk, tokenize and write whole segments.

Segments are self-contained (their own dictionary and postings), so files read together become a
finished segment in whichever process reads them: a helper writes it under the index's staging folder
(``index/.staging-<pid of the indexer>``, which only that indexer's commits keep), and the indexer
moves it into place and commits it like any other batch, in the order they finish. Each segment carries
its static vectors when the static tier's table is built; cached transformer vectors are added by the
indexer, which holds the cache.

The helpers share one backlog and one cursor into it: a helper's job claims the next few files
(``CLAIM_BYTES`` at a time) and reads them until its segment holds a batch's bytes, so every core stays
busy to the end of the backlog (fixed batches left one core idle for most of a batch at the end: 0.6 s
of textual's 2.6 s build). Helpers are forked (on Linux) from a process with a single thread (the
CLI's ``index``: nothing to re-import) and die with it; a process running other threads spawns them. They
start only for a backlog big enough to pay for them (``PARALLEL_MIN_BYTES``); a smaller one is read
in-process.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import dataclass, field, replace
from itertools import accumulate
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from aide_tui.core.config import Settings
from aide_tui.core.gcpause import gc_paused
from aide_tui.core.index.built import Built
from aide_tui.core.index.local_writer import build_segment
from aide_tui.core.index.reading import BatchNotes, read_batch
from aide_tui.core.index.scan import FileEntry, Scanner
from aide_tui.core.store.records import FileRecord

PARALLEL_MIN_BYTES = 2 << 20  # a smaller backlog is read in-process (textual, 3.4 MB: 4.6 -> 3.6 s, 2 cores)
MIN_BATCH_BYTES = 4 << 20
MAX_BATCH_BYTES = 16 << 20
CLAIM_BYTES = 64 << 10  # files a helper takes from the shared cursor at once (about 50 ms of work)
_PR_SET_PDEATHSIG = 1
_kept: list[object] = []  # a helper's last job's data, left to the end of the process


@dataclass
class Backlog:
    """The files of one build and what reading them needs: their previous records, where helpers
    write, the settings."""

    entries: list[FileEntry]
    prev: dict[str, FileRecord]
    staging: str
    settings: Settings
    keep_incomplete: bool
    root: str = ""  # the workspace (its ignore and generated-output rules)
    max_files: int | None = None  # files a segment may hold
    cache_keys: bool = True  # whether the indexer looks pieces up in a vector cache (their keys then)
    after: list[int] = field(init=False, repr=False)  # after[i]: bytes of entries[i:]

    def __post_init__(self) -> None:
        self.after = [*accumulate(reversed([e.size for e in self.entries]), initial=0)][::-1]


class Cursor:
    """The next unclaimed file of a backlog, shared by the helpers (or local to this process), and a
    flag that tells every job to stop claiming."""

    def __init__(self, n: int, ctx: BaseContext | None = None) -> None:
        self.n = n
        shared = ctx.Value("q", 0) if ctx is not None else None
        self._next: Any = shared if shared is not None else _Local()
        # the count itself, read without the lock: a helper killed while claiming leaves the lock held,
        # and the indexer asking what is left must not wait on it for ever
        self._count: Any = shared.get_obj() if shared is not None else self._next
        self._halt: Any = ctx.Value("b", 0, lock=False) if ctx is not None else _Local()

    def claim(self, backlog: Backlog, limit: int, most: int) -> tuple[int, int]:
        """Take the next files, up to ``limit`` bytes and ``most`` files (at least one file): their
        [start, end) range."""
        with self._next.get_lock():
            start = end = self._next.value
            size = 0
            stop = min(self.n, start + max(1, most))
            while end < stop and (end == start or size + backlog.entries[end].size <= limit):
                size += backlog.entries[end].size
                end += 1
            self._next.value = end
        return start, end

    def left(self) -> int:
        """Files not claimed yet."""
        return self.n - int(self._count.value)

    def halt(self) -> None:
        self._halt.value = 1

    def halted(self) -> bool:
        return bool(self._halt.value)


class _Local:
    """A Value stand-in for one process."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def get_lock(self) -> threading.Lock:
        return self._lock


_shared: tuple[Backlog, Cursor] | None = None  # a helper's backlog and cursor (set when it starts)


def _start_helper(backlog: Backlog, cursor: Cursor, parent: int) -> None:
    """A helper's set-up: the backlog it claims from. A helper forked from ``parent`` (0: spawned) dies
    with it (it holds copies of the indexer's files, locks included, and would never see its queue
    close) and takes the default signal handlers, not the indexer's."""
    global _shared
    _shared = (backlog, cursor)
    if not parent:
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the indexer went before the signal was asked for
        os._exit(1)


def build(target: int) -> Built:
    """Claim files from the shared backlog and read them until the segment holds ``target`` bytes (or
    the backlog is done), then write the segment in the staging folder (runs in a helper)."""
    assert _shared is not None
    _kept.clear()  # a job after what looked like the last one: its data goes as an earlier job's does
    with gc_paused():
        out, held = _job(*_shared, target)
        if _shared[1].left() == 0:
            # the helper's last job: what it read is never freed (the process ends first, without
            # freeing) and no collection walks it (frozen while collection is still paused): freeing it
            # took 15-30 ms of each helper's end on textual, and a walk over it 30-40 ms
            _kept.extend(held)
            gc.freeze()
    return out


def build_from(backlog: Backlog, cursor: Cursor, target: int) -> Built:
    """One job over ``cursor``'s backlog (in a helper, or in this process)."""
    return _job(backlog, cursor, target)[0]


def _job(backlog: Backlog, cursor: Cursor, target: int) -> tuple[Built, list[object]]:
    """One job, and what it read and built (for the caller to drop)."""
    from aide_tui.core.index.static_tier import static_tier_for
    from aide_tui.core.store.segment_write import write_segment

    s = backlog.settings.index
    notes = BatchNotes()
    content_rule = (
        Scanner.from_settings(Path(backlog.root), backlog.settings).content_skip_reason
        if backlog.root
        else None
    )
    delta = read_batch(
        _claimed(backlog, cursor, target),
        backlog.prev,
        s.max_file_kb * 1024,
        s.chunk_budget,
        backlog.keep_incomplete,
        notes,
        content_rule=content_rule,
    )
    tier = static_tier_for(backlog.settings)
    if tier is not None and tier.embedder.ready() and delta.pieces:  # never distils: the indexer does
        tier.start(lambda e: None)
        if tier.wait(lambda: True):
            delta.static = tier.vectors([p.embed_text for _, p in delta.pieces])
            delta.static_id = tier.id
    out = Built(
        None, delta.records, delta.same, delta.gone, notes, size=delta.size, static_id=delta.static_id
    )
    held: list[object] = [delta]
    if delta.records:
        staging = Path(backlog.staging)
        staging.mkdir(mode=0o700, exist_ok=True)
        held.append(segment := build_segment(delta))
        out.segment = write_segment(staging, segment).to_json()
        if backlog.cache_keys:  # a hash of each piece's text: 10-12 ms of a helper's job over textual
            out.piece_keys = [p.embed_key for _, p in delta.pieces]
        out.piece_files = [p.path for _, p in delta.pieces]
        out.piece_owners = [o for o, _ in delta.pieces]
    return out, held


def _claimed(backlog: Backlog, cursor: Cursor, target: int) -> Iterator[FileEntry]:
    """The files of one job, claimed a few at a time while it reads: up to ``target`` bytes, or to the
    end of the backlog when less than a job is left (every helper then reads on: none waits idle)."""
    got = files = 0
    while not cursor.halted() and not (backlog.max_files and files >= backlog.max_files):
        if got >= target and backlog.after[len(backlog.entries) - cursor.left()] >= target:
            return
        most = backlog.max_files - files if backlog.max_files else len(backlog.entries)
        start, end = cursor.claim(backlog, min(CLAIM_BYTES, max(1, target - got)), most)
        if start == end:
            return
        for e in backlog.entries[start:end]:
            got += e.size
            files += 1
            yield e


def batch_bytes(total: int, workers: int) -> int:
    """The size of a job for a backlog of ``total`` bytes shared by ``workers`` processes: a few
    each, at least 4 MiB (each job repeats a segment's fixed work: textual's 5 MB in three jobs took
    5 % more CPU than in one), at most 16 MiB (a helper's memory); a smaller backlog is one job each."""
    each = max(1, total // max(1, workers))
    return min(each, max(MIN_BATCH_BYTES, min(MAX_BATCH_BYTES, total // max(1, 4 * workers))))


def helpers_for(settings: Settings, total: int) -> int:
    """Helper processes for a backlog of ``total`` bytes (0: read in-process)."""
    if total < PARALLEL_MIN_BYTES:
        return 0
    cores = settings.index.build_workers or min(2, os.cpu_count() or 1)
    return cores if cores > 1 else 0  # one per core: this process commits what they build


def helper_context() -> tuple[BaseContext, bool]:
    """How to start helpers: on Linux, forked from a process with one thread (no lock another thread
    holds can be copied half-taken); spawned otherwise (macOS's system libraries are not safe to fork,
    which is why Python spawns there); and whether they are forked."""
    if threading.active_count() == 1 and sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork"), True
    return multiprocessing.get_context("spawn"), False


def run_backlog(
    backlog: Backlog,
    target: int,
    helpers: int,
    on_built: Callable[[Built], None],
    stop: Callable[[], bool],
    started: Callable[[], None] = lambda: None,
) -> str | None:
    """Build every file of ``backlog`` in jobs of about ``target`` bytes, ``helpers`` at a time in helper
    processes (one per core) that claim files from one cursor, while this process commits: ``on_built``
    gets each job's result as it finishes (in this process). Without helpers, or for a backlog of one
    job, this process builds it. ``stop()`` is asked between jobs; when it says so, the running jobs stop
    claiming, no new one starts, and the finished ones are still handed over. ``started()`` is called
    once the helpers run (or at once, without helpers).

    A helper that ends abruptly (killed: out of memory, a signal) loses only its running jobs: the files
    no finished job handed over are then built in this process, and the warning saying so is returned
    (None when nothing went wrong)."""
    if helpers <= 0 or backlog.after[0] <= target:
        started()
        _build_here(backlog, target, on_built, stop)
        return None
    ctx, forked = helper_context()
    if forked:  # a forked helper would write out what this process has not flushed yet
        sys.stdout.flush()
        sys.stderr.flush()
    cursor = Cursor(len(backlog.entries), ctx)
    pool = ProcessPoolExecutor(
        max_workers=helpers,
        mp_context=ctx,
        initializer=_start_helper,
        initargs=(backlog, cursor, os.getpid() if forked else 0),
    )
    running: set[Future[Built]] = set()
    handed: set[str] = set()  # the files of every job handed over
    begun = broken = False
    try:
        while True:
            try:
                while not broken and cursor.left() and len(running) < helpers and not stop():
                    running.add(pool.submit(build, target))
                    if not begun:  # the first job started the helpers
                        begun = True
                        started()
            except (BrokenProcessPool, OSError):  # a helper died, or could not be started
                broken = True
            if not running:
                break
            for fut in _finished(running):
                running.discard(fut)
                try:
                    built = fut.result()
                except BrokenProcessPool:  # every job still running is lost with it
                    broken = True
                    continue
                handed.update(built.records, built.same, built.notes.skipped)
                on_built(built)
            if broken or stop():  # the jobs still running hand over what they have read
                cursor.halt()
    finally:
        cursor.halt()
        for fut in running:
            fut.cancel()
        if broken:  # what the pool would not end (see _end_helpers)
            _end_helpers(pool)
        # every job handed over: the idle helpers are told to end, not waited for (20-40 ms of a
        # cold build); one still running (an error, a stop) is waited for: it may be writing in staging
        pool.shutdown(wait=bool(running), cancel_futures=True)
    if not broken or stop():
        return None
    if not begun:
        started()
    rest = [e for e in backlog.entries if e.rel not in handed]
    _build_here(replace(backlog, entries=rest), target, on_built, stop)
    return (
        f"a helper process of the index build ended abruptly (killed, or out of memory?): the "
        f"{len(rest)} files not committed yet were read in this process"
    )


def _end_helpers(pool: ProcessPoolExecutor) -> None:
    """End every helper of a broken pool. One started before the next one's start failed (a fork refused
    for want of memory) is never given a job nor told to stop; one whose spawn was still being written
    when another died is missing from the set the pool's own clean-up terminates, and that clean-up then
    joins it (CPython 3.11). Either way the interpreter's exit would wait for ever. The pool keeps its
    processes in a private table (CPython 3.8 to 3.13 alike)."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        with suppress(OSError, ValueError):
            proc.kill()


def _build_here(
    backlog: Backlog, target: int, on_built: Callable[[Built], None], stop: Callable[[], bool]
) -> None:
    """Every file of ``backlog`` built in this process, a job at a time, until ``stop()``."""
    cursor = Cursor(len(backlog.entries))
    while cursor.left() and not stop():
        with gc_paused():
            on_built(build_from(backlog, cursor, target))


def _finished(running: set[Future[Built]]) -> Iterator[Future[Built]]:
    """The helpers' jobs that are done, waiting for at least one."""
    done, _ = wait(running, return_when=FIRST_COMPLETED)
    return iter(sorted(done, key=id))


def prev_of(entries: list[FileEntry], prev: Mapping[str, FileRecord] | None) -> dict[str, FileRecord]:
    """The previous records of just these files (what a helper compares content hashes against)."""
    if prev is None:
        return {}
    return {e.rel: prev[e.rel] for e in entries if e.rel in prev}
