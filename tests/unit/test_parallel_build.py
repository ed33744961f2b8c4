"""A cold build on every core: helpers claim files from one backlog as they read, so each file is read
once, a job holds about a batch, and the last share of the backlog is split between the helpers
instead of left to one of them; helpers are forked only from a process with a single thread."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.index.parallel import (
    MAX_BATCH_BYTES,
    PARALLEL_MIN_BYTES,
    Backlog,
    Cursor,
    _claimed,
    batch_bytes,
    helper_context,
)
from aide_tui.core.index.scan import FileEntry

REPO = Path(__file__).resolve().parents[2]


def _backlog(tmp_path: Path, sizes: list[int], max_files: int | None = None) -> Backlog:
    entries = [
        FileEntry(f"f{i:03}.py", str(tmp_path / f"f{i:03}.py"), s, 0, 0, i) for i, s in enumerate(sizes)
    ]
    return Backlog(entries, {}, str(tmp_path), load_settings(tmp_path, environ={}), True, "", max_files)


def test_one_job_after_another_reads_each_file_once_and_the_last_takes_a_short_rest(tmp_path: Path) -> None:
    backlog = _backlog(tmp_path, [10_000] * 95)
    cursor = Cursor(len(backlog.entries))
    jobs: list[list[str]] = []
    while cursor.left():
        jobs.append([e.rel for e in _claimed(backlog, cursor, 200_000)])
    assert [rel for job in jobs for rel in job] == [e.rel for e in backlog.entries]
    # 20 files a job; at 40 files short of a third job's end, less than a job is left: the third takes it
    assert [len(j) for j in jobs] == [20, 20, 20, 35]


def test_helpers_reading_side_by_side_share_the_end_of_the_backlog(tmp_path: Path) -> None:
    """Two jobs claiming in turn (as two helpers do) both read to the end: neither is left idle while the
    other reads the rest alone, and no file is read twice or skipped."""
    backlog = _backlog(tmp_path, [10_000] * 100)
    cursor = Cursor(len(backlog.entries))
    first = [e.rel for e in _claimed(backlog, cursor, 300_000)]  # one helper's first job: 30 files
    a, b = _claimed(backlog, cursor, 300_000), _claimed(backlog, cursor, 300_000)
    got_a, got_b = [], []
    for x, y in zip(a, b, strict=False):
        got_a.append(x.rel)
        got_b.append(y.rel)
    got_a += [e.rel for e in a]
    got_b += [e.rel for e in b]
    assert len(first) == 30 and not set(first) & set(got_a + got_b)
    assert sorted(first + got_a + got_b) == [e.rel for e in backlog.entries]
    # each job reached a batch (30 files) with less than a job left, so both read on to the end
    assert len(got_a) >= 30 and len(got_b) >= 30
    assert abs(len(got_a) - len(got_b)) <= 6  # a claim is at most 64 KiB: 6 of these files


def test_every_backlog_built_in_parallel_gives_each_helper_a_job_and_a_big_one_bounded_jobs(
    tmp_path: Path,
) -> None:
    """From the size a build goes parallel at, a job is at most half the backlog (both cores read: a
    job as big as the backlog is built in the indexer's own process); a small backlog is one job per
    helper, a big one several of at most ``MAX_BATCH_BYTES`` (a helper's memory)."""
    for total in (PARALLEL_MIN_BYTES, 3 << 20, 5_035_583, 40 << 20, 400 << 20):
        target = batch_bytes(total, 2)
        assert 0 < target <= total // 2 and target <= MAX_BATCH_BYTES, (total, target)
        sizes = [64 << 10] * (total // (64 << 10))
        backlog = _backlog(tmp_path, sizes)
        cursor = Cursor(len(backlog.entries))
        a, b = _claimed(backlog, cursor, target), _claimed(backlog, cursor, target)
        jobs = [0, 0]
        for x, y in zip(a, b, strict=False):  # two helpers claiming in turn
            jobs[0] += x.size
            jobs[1] += y.size
        assert jobs[0] > 0 and jobs[1] > 0, (total, jobs)
    assert batch_bytes(5_035_583, 2) == 5_035_583 // 2  # textual: one job each, not three in all
    assert batch_bytes(400 << 20, 2) == MAX_BATCH_BYTES


def test_a_job_stops_at_the_files_a_segment_may_hold_and_when_halted(tmp_path: Path) -> None:
    backlog = _backlog(tmp_path, [100] * 50, max_files=8)
    cursor = Cursor(len(backlog.entries))
    assert len(list(_claimed(backlog, cursor, 1 << 20))) == 8
    cursor.halt()
    assert list(_claimed(backlog, cursor, 1 << 20)) == [] and cursor.left() == 42


def test_helpers_are_forked_only_from_a_process_with_one_thread() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        ctx, forked = helper_context()
        assert not forked and ctx.get_start_method() == "spawn"
    finally:
        stop.set()
        t.join()
    code = (
        "from aide_tui.core.index.parallel import helper_context\n"
        "ctx, forked = helper_context()\nprint(ctx.get_start_method(), forked)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["fork", "True"]


def test_a_helper_killed_while_claiming_does_not_block_the_indexer() -> None:
    """A helper SIGKILLed inside ``Cursor.claim`` (the kernel's OOM killer does not wait) leaves the
    cursor's lock held for ever; the indexer still reads what is left (it asks between jobs)."""
    import multiprocessing
    import os
    import signal

    ctx = multiprocessing.get_context("fork")
    cursor = Cursor(100, ctx)

    def claim_and_die() -> None:
        cursor._next.get_lock().acquire()  # as a helper inside claim()
        os.kill(os.getpid(), signal.SIGKILL)

    helper = ctx.Process(target=claim_and_die)
    helper.start()
    helper.join()
    assert helper.exitcode == -signal.SIGKILL
    answer: list[int] = []
    reader = threading.Thread(target=lambda: answer.append(cursor.left()), daemon=True)
    reader.start()
    reader.join(30)
    assert answer == [100]


def test_a_helper_that_cannot_be_started_leaves_no_process_and_every_file_built_once(tmp_path: Path) -> None:
    """The second helper's fork fails (EAGAIN, as under memory pressure; the failure is injected where
    the pool starts a process, the one place a fork can be refused on demand): the first helper, which
    nothing would ever give a job or stop, is ended, and every file is built once in the indexer's
    process. Run in a fresh interpreter: helpers are forked only from a process with one thread."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(40):
        (src / f"m{i:02}.py").write_text(
            "".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(100))
        )
    code = f"""
import json, multiprocessing, sys
from pathlib import Path
from concurrent.futures import ProcessPoolExecutor
from aide_tui.core.config import load_settings
from aide_tui.core.index.parallel import Backlog, run_backlog
from aide_tui.core.index.scan import FileEntry

src = Path({str(src)!r})
entries = []
for p in sorted(src.iterdir()):
    st = p.stat()
    entries.append(FileEntry(p.name, str(p), st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino))
backlog = Backlog(entries, {{}}, str(src.parent / "staging"), load_settings(src, environ={{}}), True, "")
start = ProcessPoolExecutor._spawn_process
tries = []
def second_fails(pool):
    tries.append(1)
    if len(tries) >= 2:
        raise OSError(11, "Resource temporarily unavailable")
    start(pool)
ProcessPoolExecutor._spawn_process = second_fails
built, told = [], []
warning = run_backlog(backlog, 40_000, 2, lambda b: built.extend([*b.records, *b.same, *b.notes.skipped]),
                      lambda: False, lambda: told.append(1))
for child in multiprocessing.active_children():
    child.join(10)
print(json.dumps({{"warning": warning, "built": sorted(built), "files": [e.rel for e in entries],
                  "told": told, "tries": len(tries),
                  "alive": [c.pid for c in multiprocessing.active_children() if c.is_alive()]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr  # an orphaned helper made the interpreter's exit wait for ever
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["tries"] == 2 and got["warning"] and "ended abruptly" in got["warning"]
    assert got["built"] == got["files"]  # each once
    assert got["told"] == [1]  # the static tier's start is still told
    assert got["alive"] == []
