"""A long-lived reader's heap: a replaced version is freed at once by reference counting (it holds no
reference cycle), and freezing what a load left alive still frees what cycles leave behind."""

from __future__ import annotations

import gc
import os
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import write_workspace
from test_cli import run

from aide_tui.cli.console import StderrConsole
from aide_tui.core import gcpause
from aide_tui.core.config import load_settings
from aide_tui.core.live import LiveEvent, LiveWorkspace, Reloaded, ReloadFailed
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import parse_manifest, read_manifest
from aide_tui.host.oneshot import open_workspace

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


@pytest.fixture
def collections() -> Iterator[list[set[str]]]:
    """Each cyclic collection that starts during the test, as the functions on the stack then (the
    collector's threshold at one container: every allocation outside a pause starts one)."""
    seen: list[set[str]] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            names, frame = set(), sys._getframe(1)
            while frame is not None:
                names.add(frame.f_code.co_qualname)
                frame = frame.f_back
            seen.append(names)

    was = gc.get_threshold()
    gc.callbacks.append(note)
    gc.set_threshold(1)
    try:
        yield seen
    finally:
        gc.set_threshold(*was)
        gc.callbacks.remove(note)


def _during(seen: list[set[str]], function: str) -> int:
    """How many of the collections seen started inside ``function``."""
    return sum(function in names for names in seen)


def test_a_one_shot_search_loads_and_answers_without_a_collection_and_freezes_what_it_loaded(
    tmp_path: Path, collections: list[set[str]]
) -> None:
    """A one-shot command walks no heap while it loads or answers (each walk would cover the whole
    loaded version), keeps the version out of later walks, and leaves the collector on for the rest."""
    root = write_workspace(tmp_path / "ws")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    settings = load_settings(root, BM25)
    gc.unfreeze()
    try:
        plain = Searcher(root, settings)
        plain.refresh()
        assert plain.search("retry backoff", 10, "bm25").results
        # the same load and query, not paused: collections ran inside both
        assert _during(collections, "Searcher.refresh") and _during(collections, "Searcher.search")
        collections.clear()
        shot = open_workspace(root, settings, StderrConsole(), mode="bm25", update=False)
        try:
            assert gc.get_freeze_count() > 0  # the loaded version is out of later walks
            for query in ("retry backoff", "Client.send", "zebra nothing"):
                shot.search(query, 10, "bm25")
            assert shot.search("retry backoff", 10, "bm25").results
        finally:
            shot.close()
        assert _during(collections, "Searcher.refresh") == 0 and _during(collections, "Searcher.search") == 0
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_manifest_parses_without_a_collection(tmp_path: Path, collections: list[set[str]]) -> None:
    root = write_workspace(tmp_path / "ws")
    assert run("index", str(root), "--embedder", "none").returncode == 0
    path = index_dir_for(root) / "manifest.json"
    assert parse_manifest(path.read_bytes()).files
    assert _during(collections, "parse_manifest")  # the parse alone, not paused: collections ran
    collections.clear()
    os.utime(path, ns=(1, 1))  # another mtime: read_manifest parses it again
    assert read_manifest(index_dir_for(root)).files
    assert _during(collections, "parse_manifest") == 0 and gc.isenabled()


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
