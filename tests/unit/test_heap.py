"""A long-lived reader's heap: a replaced version is freed at once by reference counting (it holds no
reference cycle), and freezing what a load left alive still frees what cycles leave behind."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import write_workspace
from test_cli import run

from aide_tui.core.config import load_settings
from aide_tui.core.index import gcpause
from aide_tui.core.live import LiveEvent, LiveWorkspace, Reloaded, ReloadFailed
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import read_manifest

BM25 = {"embedding": {"backend": "none"}}


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The cyclic collector off for the test (only reference counting frees anything)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_a_replaced_version_is_freed_without_the_cycle_collector(tmp_path: Path, collector_off: None) -> None:
    root = write_workspace(tmp_path / "ws")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    s = Searcher(root, load_settings(root, BM25))
    s.refresh()
    s.warm()
    for query, prefix in (("retry backoff", False), ("timeou", True), ("Client.send", False)):
        assert s.search(query, 10, "bm25", prefix=prefix).results
    old = weakref.ref(s.retriever.view)  # type: ignore[attr-defined]
    (root / "src/httpclient/zebra.py").write_text("def zebrafish_count():\n    return 'zebras'\n")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    assert s.refresh()
    s.warm()
    assert s.search("zebrafish", 10, "bm25").results
    assert old() is None, [type(r).__name__ for r in gc.get_referrers(old())]


def test_segments_a_rebuild_drops_are_freed_without_the_cycle_collector(
    tmp_path: Path, collector_off: None
) -> None:
    """A segment no version holds any more closes its maps at once (its tables never point back at it:
    an old segment kept open holds its deleted files' disk space)."""
    root = write_workspace(tmp_path / "ws")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    s = Searcher(root, load_settings(root, BM25))
    s.refresh()
    s.warm()
    assert s.search("retry backoff", 10, "bm25").results and s.definitions("backoff_delays").total == 1
    old_parts = [weakref.ref(p) for p in s.retriever.view.parts]  # type: ignore[attr-defined]
    assert run("index", str(root), "--embedder", "none", "--rebuild").returncode == 0
    assert s.refresh()
    s.warm()
    assert s.search("retry backoff", 10, "bm25").results
    assert old_parts and all(p() is None for p in old_parts)


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cycle collector frees it


def test_freezing_keeps_cycles_collectable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcpause, "_freezes", 0)
    try:
        gcpause.freeze_heap()  # the first call is a full one
        assert gc.get_freeze_count() > 0
        held = _Node()
        gone = weakref.ref(held)
        gcpause.freeze_heap()  # frozen while still in use
        del held
        assert gone() is not None  # frozen: the cheap collections skip it
        for _ in range(gcpause.FULL_EVERY):
            gcpause.freeze_heap()
        assert gone() is None  # a full call unfroze and collected it
    finally:
        gc.unfreeze()


def test_damage_found_while_warming_is_reported_and_the_next_version_loads(tmp_path: Path) -> None:
    """Warming checks whole files, so it can meet damage no query touched yet: the workspace says so and
    its reloader lives on to load the rebuilt version."""
    root = write_workspace(tmp_path / "ws")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    seg = read_manifest(index_dir_for(root)).segments[0].name
    doc = index_dir_for(root) / seg / "c_doc.npy"
    raw = bytearray(doc.read_bytes())
    raw[-1] ^= 0x01
    doc.write_bytes(bytes(raw))
    events: list[LiveEvent] = []
    live = LiveWorkspace(root, load_settings(root, BM25), events.append, watch=False, index=False)
    live.start()
    try:
        assert live.index_ready.wait(30)
        assert _wait(lambda: any(isinstance(e, ReloadFailed) and "damaged" in e.message for e in events))
        assert run("index", str(root), "--embedder", "none", "--rebuild").returncode == 0
        live.reload()
        assert _wait(lambda: any(isinstance(e, Reloaded) for e in events))
        assert live.search("retry backoff", mode="bm25").results
    finally:
        live.close()


def _wait(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()
