"""The app's search scheduling without an app (tui/search_loop.py, no Textual): one search at a time,
the latest request wins, answers overtaken by a newer request are dropped, failures become answers.
Searches run against a real index; a gate holds the first one so the order of events is certain."""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.search.searcher import Searcher
from aide_tui.tui.search_loop import SearchAnswer, SearchLoop, row_labels

WAIT = 10.0  # seconds: a bound against hangs, never a measurement


class GatedSearch:
    """A real searcher whose calls can be held at a gate; records what ran and how many at once."""

    def __init__(self, root: Path) -> None:
        settings = load_settings(root, {"embedding": {"backend": "none"}})
        Indexer(root, settings, None, None).run()
        self.searcher = Searcher(root, settings)
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.ran: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, query: str, limit: int, mode: str, everywhere: bool) -> SearchResponse:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        try:
            assert self.gate.wait(WAIT)
            self.ran.append(query)
            return self.searcher.search(query, limit=limit, mode=mode)
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def gated(workspace: Path) -> GatedSearch:
    return GatedSearch(workspace)


def _loop(search: GatedSearch, label: Any = None) -> tuple[SearchLoop, queue.SimpleQueue[SearchAnswer]]:
    """A started loop over ``search`` and the queue its answers land in (``label``: none by default)."""
    answers: queue.SimpleQueue[SearchAnswer] = queue.SimpleQueue()
    loop = SearchLoop(search, answers.put, limit=10, label=label)
    loop.start()
    return loop, answers


def test_one_search_at_a_time_and_the_latest_query_wins(gated: GatedSearch) -> None:
    loop, answers = _loop(gated)
    try:
        gated.gate.clear()
        gated.entered.clear()
        loop.submit("pars", "bm25")
        assert gated.entered.wait(WAIT)  # "pars" is running, held at the gate
        for query in ("parse", "parse_h", "parse_header"):  # typed while it runs
            loop.submit(query, "bm25")
        assert loop.busy
        gated.gate.set()
        got = answers.get(timeout=WAIT)
        assert got.request.query == "parse_header"  # the overtaken "pars" answer was dropped
        assert got.response.results[0].path == "src/httpclient/headers.py"
        assert gated.ran == ["pars", "parse_header"]  # the requests in between never ran
        assert gated.most_at_once == 1
        assert answers.empty()
    finally:
        loop.stop()


def test_an_answer_still_wanted_is_delivered(gated: GatedSearch) -> None:
    """Typing away and back to the same query while it runs: its answer is the one wanted."""
    loop, answers = _loop(gated)
    try:
        gated.gate.clear()
        gated.entered.clear()
        loop.submit("backoff", "bm25")
        assert gated.entered.wait(WAIT)
        loop.submit("backoffx", "bm25")
        loop.submit("backoff", "bm25")
        gated.gate.set()
        got = answers.get(timeout=WAIT)
        assert got.request.query == "backoff" and got.response.results
        assert gated.ran == ["backoff"]  # answered once
        loop.submit("redirects", "bm25")
        assert answers.get(timeout=WAIT).request.query == "redirects"
    finally:
        loop.stop()


def test_forget_drops_the_running_answer(gated: GatedSearch) -> None:
    loop, answers = _loop(gated)
    try:
        gated.gate.clear()
        gated.entered.clear()
        loop.submit("retry", "bm25")
        assert gated.entered.wait(WAIT)
        loop.forget()  # the query box was cleared
        gated.gate.set()
        loop.submit("client", "bm25")
        assert answers.get(timeout=WAIT).request.query == "client"
        assert answers.empty()
    finally:
        loop.stop()


def test_failures_become_answers_and_the_loop_goes_on(
    gated: GatedSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop, answers = _loop(gated)
    try:
        real = gated.searcher.search

        def broken(query: str, **kw: object) -> SearchResponse:
            if query == "corrupt":
                raise IndexCorrupt("index manifest is corrupt (test)")
            if query == "boom":
                raise RuntimeError("disk on fire")
            return real(query, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(gated.searcher, "search", broken)
        loop.submit("corrupt", "bm25")
        got = answers.get(timeout=WAIT)
        assert got.error and "corrupt" in got.error and got.response.results == []
        loop.submit("boom", "bm25")
        got = answers.get(timeout=WAIT)
        assert got.error == "search failed: RuntimeError: disk on fire"
        loop.submit("parse_header", "bm25")
        assert answers.get(timeout=WAIT).response.results
    finally:
        loop.stop()


def test_a_missing_index_says_so(tmp_path: Path) -> None:
    from aide_tui.core.errors import IndexMissing
    from aide_tui.tui.search_loop import SearchRequest, answer

    def missing(query: str, limit: int, mode: str, everywhere: bool) -> SearchResponse:
        raise IndexMissing("no index")

    got = answer(missing, SearchRequest(1, "x", "bm25"), 5)
    assert got.missing and got.error == "no index yet: indexing…"


def test_stop_ends_the_thread(gated: GatedSearch) -> None:
    loop, answers = _loop(gated)
    loop.stop()
    loop._thread.join(WAIT)
    assert not loop._thread.is_alive()
    loop.submit("client", "bm25")  # after stop: nothing runs, nothing is delivered
    assert answers.empty()


def test_the_loop_module_does_not_import_textual() -> None:
    import subprocess

    code = "import sys, aide_tui.tui.search_loop; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_rows_are_labelled_once_the_loop_is_idle(gated: GatedSearch) -> None:
    """The answer comes first, then (nothing newer waiting) the same answer with each row's label: the
    definition at its best line."""
    loop, answers = _loop(gated, label=row_labels)
    try:
        loop.submit("max_hops", "bm25")
        first, second = answers.get(timeout=WAIT), answers.get(timeout=WAIT)
        assert first.labels is None and second.response is first.response
        assert second.labels is not None and len(second.labels) == len(first.response.results)
        row = next(i for i, h in enumerate(first.response.results) if h.path == "src/httpclient/client.py")
        assert first.response.results[row].symbol == "class Client"  # the chunk: the whole class
        assert second.labels[row] == "class Client > def follow_redirects"  # where its best line is
    finally:
        loop.stop()


def test_an_answer_overtaken_while_its_rows_are_labelled_gets_no_labels(gated: GatedSearch) -> None:
    labelling, release = threading.Event(), threading.Event()

    def slow_labels(resp: SearchResponse, overtaken: object) -> list[str | None]:
        labelling.set()
        assert release.wait(WAIT)
        return [h.symbol for h in resp.results]

    loop, answers = _loop(gated, label=slow_labels)
    try:
        loop.submit("client", "bm25")
        assert answers.get(timeout=WAIT).labels is None
        assert labelling.wait(WAIT)
        loop.submit("retry", "bm25")  # typed while the rows of "client" were being labelled
        release.set()
        got = answers.get(timeout=WAIT)
        assert got.request.query == "retry" and got.labels is None  # no labels for "client"
        assert answers.get(timeout=WAIT).request.query == "retry"  # then "retry"'s own labels
    finally:
        loop.stop()


def test_labelling_stops_when_a_newer_query_is_typed(gated: GatedSearch) -> None:
    """The rows of "client" are being labelled when "retry" is typed: labelling gives way at once (the
    next search does not wait for it) and "client" gets no labels."""
    labelling, gave_way = threading.Event(), threading.Event()

    def patient_labels(resp: SearchResponse, overtaken: Callable[[], bool]) -> list[str | None] | None:
        labelling.set()
        deadline = time.monotonic() + WAIT
        while resp.query == "client" and time.monotonic() < deadline:
            if overtaken():
                gave_way.set()
                return None
            time.sleep(0.005)
        return [h.symbol for h in resp.results]  # never overtaken: the test fails below

    loop, answers = _loop(gated, label=patient_labels)
    try:
        loop.submit("client", "bm25")
        assert answers.get(timeout=WAIT).labels is None
        assert labelling.wait(WAIT)
        labelling.clear()
        loop.submit("retry", "bm25")
        assert gave_way.wait(WAIT)
        got = answers.get(timeout=WAIT)
        assert got.request.query == "retry" and got.labels is None  # "retry"'s rows, not "client"'s labels
        assert labelling.wait(WAIT)  # and now "retry" is labelled
    finally:
        loop.stop()


def test_row_labels_stop_when_overtaken(gated: GatedSearch) -> None:
    resp = gated("client", 10, "bm25", False)
    assert resp.results
    labels = row_labels(resp)
    assert labels is not None and len(labels) == len(resp.results)
    assert row_labels(resp, lambda: True) is None


def test_rows_are_labelled_after_the_front_end_painted_them(gated: GatedSearch) -> None:
    """With ``paint_wait``, labelling starts once the front end says the answer is painted (both want the
    interpreter; the rows are what the person waits for); a front end that never says so still gets
    labels after ``paint_wait``; an answer overtaken while it waits gets none."""
    labelling = threading.Event()

    def labels(resp: SearchResponse, overtaken: Callable[[], bool]) -> list[str | None] | None:
        labelling.set()
        return row_labels(resp, overtaken)

    answers: queue.SimpleQueue[SearchAnswer] = queue.SimpleQueue()
    loop = SearchLoop(gated, answers.put, limit=10, label=labels, paint_wait=WAIT * 10)
    loop.start()
    try:
        loop.submit("max_hops", "bm25")
        first = answers.get(timeout=WAIT)
        assert first.labels is None
        assert not labelling.wait(0.3)  # not painted yet: no labelling
        loop.painted(first.request.seq)
        second = answers.get(timeout=WAIT)
        assert labelling.is_set() and second.labels is not None and second.response is first.response
        labelling.clear()
        loop.submit("client", "bm25")
        third = answers.get(timeout=WAIT)
        loop.submit("retry", "bm25")  # typed before "client" was painted: "client" gets no labels
        fourth = answers.get(timeout=WAIT)
        assert (third.request.query, fourth.request.query) == ("client", "retry") and fourth.labels is None
        loop.painted(fourth.request.seq)
        fifth = answers.get(timeout=WAIT)
        assert fifth.request.query == "retry" and fifth.labels is not None
        assert answers.empty()
    finally:
        loop.stop()
    quick = SearchLoop(gated, answers.put, limit=10, label=labels, paint_wait=0.05)
    quick.start()
    try:
        quick.submit("max_hops", "bm25")
        assert answers.get(timeout=WAIT).labels is None
        assert answers.get(timeout=WAIT).labels is not None  # never told: labelled after paint_wait
    finally:
        quick.stop()
