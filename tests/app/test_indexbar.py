"""Issue 33 #12: the index line says what the indexer does once every file is read ("indexing 973/973
files · ETA 0:00" stood for 23 s on SQLAlchemy while the index was written), and an ETA follows the
recent rate (it was the run's average: 25-33 minutes off when the rate changed). Issue 33 #7: an app
that attaches to a host whose embedding is queued says so (it said "ready")."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from apphelpers import index_bar, indexed, make_app, screen_text, wait_for
from loopback_server import LoopbackServer
from test_host import big_workspace, until

from aide_tui.core.config import load_settings
from aide_tui.core.events import Committed, Progress
from aide_tui.core.index.budget import BulkJob, bulk_slot
from aide_tui.host.workspace import Workspace
from aide_tui.tui.messages import IndexCommitted


class Clock:
    """A clock the test moves (the bar's rates and times read it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _bar_line(app: object) -> str:
    return next(line for line in screen_text(app) if "files" in line or "vectors" in line)  # type: ignore[arg-type]


async def test_after_the_last_file_the_line_says_the_index_is_written(workspace: Path) -> None:
    clock = Clock()
    app = make_app(workspace, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        bar = index_bar(app)
        for n in (100, 500, 900):
            clock.now += 2
            bar.progress(Progress("indexing", n, 973), clock.now)
        assert "ETA" in bar.label
        clock.now += 1
        bar.progress(Progress("indexing", 973, 973, message="971 changed"), clock.now)
        assert bar.label == "writing the index of 973 files: chunks, BM25 rows, symbol graph · 0:00"
        clock.now += 17
        await wait_for(pilot, lambda: "· 0:17" in bar.label, "the time it has taken, counting")
        await wait_for(pilot, lambda: "writing the index of 973 files" in _bar_line(app), "the line drawn")
        assert "ETA" not in _bar_line(app) and "973/973" not in _bar_line(app)
        bar.post_message(IndexCommitted(Committed(files=971, chunks=27324)))
        want = "indexed 971 files, 27324 chunks: searchable"
        await wait_for(pilot, lambda: bar.label == want, "the commit")


async def test_an_eta_follows_the_recent_rate(workspace: Path) -> None:
    clock = Clock()
    app = make_app(workspace, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        bar = index_bar(app)
        total, done = 90_000, 0
        for _ in range(60):  # a minute at 100 vectors a second
            clock.now += 1
            done += 100
            bar.progress(Progress("embedding", vectors_done=done, vectors_total=total), clock.now)
        assert "100/s" in bar.label
        for _ in range(60):  # then the machine gets busy: 10 a second
            clock.now += 1
            done += 10
            bar.progress(Progress("embedding", vectors_done=done, vectors_total=total), clock.now)
        minutes = (total - done) / 10 / 60  # 139 minutes at the rate of the last half minute
        assert "10/s" in bar.label and f"ETA {int(minutes)}:" in bar.label, bar.label  # the average: 41 min


@pytest.fixture
def embedder() -> Iterator[LoopbackServer]:
    with LoopbackServer(dim=8) as srv:
        yield srv


async def test_an_attached_app_says_its_host_is_queued(tmp_path: Path, embedder: LoopbackServer) -> None:
    """A host whose bulk embedding waits for the per-user slot (held here, as another workspace's job
    would) said "queued" before the app opened; the app attaches and must say so too, not "ready"."""
    root = big_workspace(tmp_path / "ws")
    settings = load_settings(root, {"embedding": {"backend": "openai", "url": embedder.url}})
    held, release = threading.Event(), threading.Event()

    def hold_the_slot() -> None:
        with bulk_slot(BulkJob("other-workspace", 100_000), lambda: True, lambda _wait: None):
            held.set()
            release.wait(120)

    holder = threading.Thread(target=hold_the_slot, daemon=True)
    holder.start()
    assert held.wait(30)
    seen: list[object] = []
    host = Workspace(root, settings, seen.append, watch=False, front_end="serve")
    try:
        host.start()
        assert host.hosting
        until(lambda: any(isinstance(e, Progress) and e.state == "queued" for e in seen), "the host queued")
        until(lambda: (root / ".aide" / "serve.sock").exists(), "the host's socket")
        app = make_app(root, settings)
        async with app.run_test(size=(120, 40)) as pilot:
            attached = lambda: app.live.host_pid == os.getpid() and not app.live.hosting  # noqa: E731
            await wait_for(pilot, attached, "the app attached to the host")
            await wait_for(pilot, lambda: index_bar(app).state == "queued", "the host's state")
            line = next((line for line in screen_text(app) if "queued" in line), "")
            assert "waiting for another workspace's embedding" in line, screen_text(app)
    finally:
        release.set()
        holder.join(30)
        host.close()
