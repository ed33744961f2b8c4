"""A long-lived reader's heap: a replaced version is freed at once by reference counting (it holds no
reference cycle), and freezing what a load left alive still frees what cycles leave behind."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_workspace
from test_cli import run

from aide_tui.core.config import load_settings
from aide_tui.core.index import gcpause
from aide_tui.core.search.searcher import Searcher

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
