"""Search scheduling for a search-as-you-type front end, without Textual: one search at a time on one
long-lived thread, the latest request wins, and an answer overtaken by a newer request is dropped.

The front end calls :meth:`SearchLoop.submit` on every keystroke; requests made while a search runs
replace each other, and the newest runs as soon as the current one returns. ``deliver`` is called
(from the loop's thread) only with answers that are still wanted, so the results on screen stay until
newer ones arrive. Measured against a Textual thread worker per keystroke (``docs/benchmarks.md``):
one thread, no thread start per key and no worker bookkeeping on the UI thread.

Once an answer is delivered and no newer request waits, the loop labels its rows by the definition at
each hit's best line (``label``; a few milliseconds per screenful) and delivers the answer again with
its ``labels``: the rows appear as soon as the search returns and get their labels right after. A key
typed meanwhile stops the labelling at once: the next search never waits for the last one's labels.
A front end that says when it has painted an answer (``paint_wait``, then :meth:`SearchLoop.painted`)
gets the labelling after that paint, not during it: both want the interpreter, and the rows on screen
are what the person waits for (py-spy on the monorepo benchmark: labelling was a third of the search
thread's time while typing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from aide_tui.core.errors import IndexMissing, IndexProblem
from aide_tui.core.search.hitlines import symbol_at_best_line
from aide_tui.core.search.response import SearchResponse

LABELLED = 60  # rows labelled by the definition at their best line (more than a screen shows)
LABEL_CHECK = 4  # rows labelled between two looks for a newer query (a row: about a millisecond)


@dataclass(frozen=True)
class SearchRequest:
    """One query to answer; ``seq`` orders requests (the newest wins)."""

    seq: int
    query: str
    mode: str
    everywhere: bool = False  # every workspace of a shared collection

    @property
    def key(self) -> tuple[str, str, bool]:
        """What the answer depends on: two requests with the same key have the same answer."""
        return (self.query, self.mode, self.everywhere)


@dataclass(frozen=True)
class SearchAnswer:
    """The answer to ``request`` (``error``: why there are no results; ``missing``: no index yet)."""

    request: SearchRequest
    response: SearchResponse
    error: str | None = None
    missing: bool = False
    labels: list[str | None] | None = None  # each row's symbol at its best line (the second delivery)


SearchFn = Callable[[str, int, str, bool], SearchResponse]  # (query, limit, mode, all_workspaces)


def answer(search: SearchFn, request: SearchRequest, limit: int) -> SearchAnswer:
    """Run one search; a missing or unreadable index, or any failure, becomes an answer with a reason
    (the loop's thread must outlive every bad answer)."""
    try:
        resp = search(request.query, limit, request.mode, request.everywhere)
    except IndexMissing:
        return SearchAnswer(request, _empty(request), "no index yet: indexing…", missing=True)
    except IndexProblem as exc:
        return SearchAnswer(request, _empty(request), str(exc))
    except Exception as exc:  # noqa: BLE001 - reported on the status line, the loop goes on
        return SearchAnswer(request, _empty(request), f"search failed: {exc.__class__.__name__}: {exc}")
    return SearchAnswer(request, resp)


def row_labels(
    resp: SearchResponse, overtaken: Callable[[], bool] = lambda: False
) -> list[str | None] | None:
    """Each row's label: the definition at its hit's best line (the first :data:`LABELLED` rows); None
    as soon as ``overtaken()`` says a newer query waits (its search must not wait for these labels)."""
    labels: list[str | None] = []
    for i, h in enumerate(resp.results):
        if i < LABELLED and i % LABEL_CHECK == 0 and overtaken():
            return None
        labels.append(symbol_at_best_line(h) if i < LABELLED else h.symbol)
    return labels


def _empty(request: SearchRequest) -> SearchResponse:
    return SearchResponse(query=request.query, results=[], mode=request.mode)


class SearchLoop:
    """One search thread; see the module docstring."""

    def __init__(
        self,
        search: SearchFn,
        deliver: Callable[[SearchAnswer], None],
        limit: int = 50,
        label: Callable[[SearchResponse, Callable[[], bool]], list[str | None] | None] | None = row_labels,
        paint_wait: float = 0.0,
    ) -> None:
        self.search = search
        self.deliver = deliver
        self.limit = limit
        self.label = label
        self.paint_wait = paint_wait  # seconds labelling waits for painted() (0: it does not wait)
        self._painted = 0  # the newest request whose answer the front end has painted
        self._cond = threading.Condition()
        self._seq = 0
        self._wanted: SearchRequest | None = None  # the newest request not started yet
        self._running: SearchRequest | None = None
        self._newest_key: tuple[str, str, bool] | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="aide-search", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the thread after the search it runs (if any); nothing is delivered after this."""
        with self._cond:
            self._stopped = True
            self._wanted = None
            self._cond.notify_all()

    def submit(self, query: str, mode: str, everywhere: bool = False) -> SearchRequest:
        """Ask for ``query``: it runs now if the thread is idle, else right after the current search
        (replacing any request still waiting)."""
        with self._cond:
            self._seq += 1
            request = SearchRequest(self._seq, query, mode, everywhere)
            self._wanted = request
            self._newest_key = request.key
            self._cond.notify_all()
            return request

    def painted(self, seq: int) -> None:
        """The front end has painted the answer to request ``seq`` (its rows may be labelled now)."""
        with self._cond:
            self._painted = max(self._painted, seq)
            self._cond.notify_all()

    def forget(self) -> None:
        """Drop the waiting request and the running one's answer (the query was cleared)."""
        with self._cond:
            self._seq += 1
            self._wanted = None
            self._newest_key = None

    @property
    def busy(self) -> bool:
        """Whether a search is running or waiting."""
        with self._cond:
            return self._running is not None or self._wanted is not None

    def _next(self) -> SearchRequest | None:
        with self._cond:
            while self._wanted is None and not self._stopped:
                self._cond.wait()
            if self._stopped:
                return None
            self._running, self._wanted = self._wanted, None
            return self._running

    def _still_wanted(self, request: SearchRequest) -> bool:
        """Not overtaken: no newer request was made, or the newer one asks for the same answer."""
        with self._cond:
            self._running = None
            if self._stopped:
                return False
            if request.seq == self._seq:
                return True
            wanted = self._wanted
            if wanted is not None and wanted.key == request.key:
                self._wanted = None  # the waiting request is answered by this one
                return True
            return False

    def _idle(self, request: SearchRequest) -> bool:
        """No newer request (other than one asking the same) was made since ``request``."""
        with self._cond:  # reentrant: also asked with the lock held (_shown)
            newer = self._wanted is not None or self._stopped
            return not newer and (request.seq == self._seq or self._newest_key == request.key)

    def _shown(self, request: SearchRequest) -> bool:
        """Wait (up to ``paint_wait`` seconds) until the answer to ``request`` is painted; whether no newer
        request was made meanwhile."""
        deadline = time.monotonic() + self.paint_wait
        with self._cond:
            while self._painted < request.seq and self._idle(request):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self._idle(request)

    def _loop(self) -> None:
        while (request := self._next()) is not None:
            result = answer(self.search, request, self.limit)
            if not self._still_wanted(request):
                continue
            self.deliver(result)
            if self.label is None or not result.response.results or not self._shown(request):
                continue
            try:
                labels = self.label(result.response, lambda: not self._idle(request))
            except Exception:  # noqa: BLE001, S112 - the rows keep their chunks' symbols
                continue
            if labels is not None and self._idle(request):
                self.deliver(replace(result, labels=labels))
