"""A live workspace: the searcher, the query embedder, the indexing service and the file watcher behind
one object, shared by every long-running front end (the app, ``serve``, ``mcp``), over either store:
the local segments or a Milvus collection (whose other workspaces it can search too). A store whose
indexing needs an engine host (a Milvus Lite file's engine runs in the hosting process, and the indexing
process connects to it) is indexed once its :class:`EngineGate` (the host's) has opened the engine.

Front ends call :meth:`LiveWorkspace.search` from their own worker threads and receive
:data:`LiveEvent` objects through ``on_event`` (called from background threads: a front end hands
them to its own loop). Every index version the indexer commits is loaded as soon as it lands, so
what a front end shows is what is on disk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.errors import IndexCorrupt, IndexMissing, IndexProblem
from aide_tui.core.events import Committed, Done, Event, Failed
from aide_tui.core.gcpause import freeze_heap
from aide_tui.core.index.service import IndexService
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.search.stores import open_retriever
from aide_tui.core.search.symbols import MAX_LOCATIONS, LineSymbols, SymbolAnswer
from aide_tui.core.status import IndexStatus
from aide_tui.core.storekind import LOCAL, store_kind


@dataclass
class Opened:
    """The index was opened at start (``error`` says why not: missing, corrupt)."""

    status: IndexStatus
    error: str | None = None
    missing: bool = False
    corrupt: bool = False  # the store holds something unreadable (not merely unreachable or busy)


@dataclass
class Reloaded:
    """A newly committed index version is loaded; searches now see it."""

    status: IndexStatus
    version: str = ""


@dataclass
class ReloadFailed:
    """A committed version could not be loaded (searches keep the previous one)."""

    message: str


@dataclass
class EmbedderReady:
    """The query embedder finished loading (``error``: why the dense side is unavailable)."""

    embedder_id: str | None
    error: str | None = None


@dataclass
class FilesChanged:
    """The watcher saw changes worth reindexing."""

    paths: set[str] = field(default_factory=set)


@dataclass
class WatchFailed:
    """File watching stopped."""

    message: str


RETRY_FIRST, RETRY_MAX = 2.0, 60.0  # seconds before a shared store's failed run is tried again
NO_ENGINE_GATE = "a store that needs an engine host is indexed through its host's EngineGate (host/tenure.py)"
EVERYWHERE_TTL = 10.0  # seconds an all-workspaces view is used before the workspace list is read again
QUIET_SECONDS = 1.0  # no search for this long before a loaded version is frozen out of the collector's walks


@dataclass
class Hosting:
    """This process hosts the workspace: it indexes and watches it and answers on its socket."""

    role: str = ""


@dataclass
class Attached:
    """Another process hosts (indexes) the workspace; this one searches what it commits."""

    pid: int
    role: str = ""


LiveEvent = (
    Event | Opened | Reloaded | ReloadFailed | EmbedderReady | FilesChanged | WatchFailed | Hosting | Attached
)


class EngineGate(Protocol):
    """What indexing a store that needs an engine host waits for (the host's, see host/tenure.py)."""

    @property
    def ready(self) -> bool:
        """Whether the engine is hosted: indexing requests go through."""

    def open(self, live: LiveWorkspace) -> IndexProblem | None:
        """Host the engine for ``live``'s indexing process and send its first run; why it cannot be."""

    def hold(self, rebuild: bool) -> tuple[bool, bool]:
        """Whether a request waits for the engine, and whether to try opening it again now."""


class LiveWorkspace:
    """Keeps one workspace's index loaded, fresh and searchable. ``engine``: the gate indexing a store
    that needs an engine host waits for (required to index one)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        on_event: Callable[[LiveEvent], None],
        *,
        watch: bool = True,
        index: bool = True,
        engine: EngineGate | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.on_event = on_event
        self.watch_enabled = watch
        self.store = store_kind(settings)
        self.index_enabled = index and self.store.writable
        if self.store.needs_engine_host and engine is None and self.index_enabled:
            raise ValueError(NO_ENGINE_GATE)
        self.engine = engine
        self.searcher = Searcher(self.root, settings)
        self._everywhere: Searcher | None = None  # the searcher over every workspace of a shared collection
        self.embedder: Embedder | None = None
        self.embedder_error: str | None = None
        self.status: IndexStatus = IndexStatus("missing")
        self.service = IndexService(self.root, settings, self._service_event)
        self.priority: Callable[[], Iterable[str]] = lambda: ()  # files the user is looking at
        self.index_ready = threading.Event()  # a version is loaded and searchable
        self.embedder_ready = threading.Event()  # the query encoder loaded (or failed)
        self._stop = threading.Event()
        self._reload_wanted = threading.Event()
        self._lock = threading.Lock()
        self._retry_delay = 0.0  # a shared store's failed run is retried after this (doubling, ≤ 60 s)
        self._retry_timer: threading.Timer | None = None
        self._everywhere_at = 0.0
        self._threads: list[threading.Thread] = []
        self._searched_at = 0.0  # when the last search or lookup started (monotonic)
        self._reloading = False  # the reloader is loading a version (a search waits for it: _load_pending)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the index and load the embedder (in the background), start indexing and watching."""
        self._spawn(self._open, "aide-open")
        self._spawn(self._reloader, "aide-reload")
        if self.index_enabled and self.engine is None:  # else once the engine is hosted (in _open)
            self.service.request(priority=self.priority())
        if self.watch_enabled:
            self._spawn(self._watch, "aide-watch")

    def begin_indexing(self, watch: bool) -> None:
        """Start indexing (and, with ``watch``, watching) a workspace opened without: this process now
        hosts it (another host went away)."""
        if self._stop.is_set() or not self.store.writable:
            return
        if self.store.needs_engine_host and self.engine is None:
            raise ValueError(NO_ENGINE_GATE)
        with self._lock:
            started, self.index_enabled = self.index_enabled, True
        if not started:
            if self.engine is not None:
                self._spawn(self._host_again, "aide-host")
            else:
                self.service.request(priority=self.priority())
        if watch and not self.watch_enabled:
            self.watch_enabled = True
            self._spawn(self._watch, "aide-watch")

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._stop.is_set()

    def reload(self) -> None:
        """Load the newest committed version soon (another process committed it)."""
        self._reload_wanted.set()

    def close(self) -> None:
        """Stop watching and indexing; wait briefly for the background threads."""
        self._stop.set()
        self._reload_wanted.set()
        with self._lock:
            timer = self._retry_timer
        if timer is not None:
            timer.cancel()
        self.service.close(timeout=3.0)
        for t in self._threads:
            t.join(timeout=2.0)
        close = getattr(self.embedder, "close", None)
        if close is not None:
            close()
        if self.store.needs_engine_host:
            self.searcher.retriever.close()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _emit(self, event: LiveEvent) -> None:
        if not self._stop.is_set():
            self.on_event(event)

    # -- opening -----------------------------------------------------------------------------------

    def _open(self) -> None:
        from aide_tui.core.embed.factory import make_embedder
        from aide_tui.core.errors import EmbedderError
        from aide_tui.core.index.stores import recorded_embedder

        try:
            embedder = make_embedder(
                self.settings, recorded=recorded_embedder(self.root, self.settings), for_queries=True
            )
            error = None
        except EmbedderError as exc:
            embedder, error = None, str(exc)
        self.searcher.embedder_error = error
        hosted = self.engine.open(self) if self.engine is not None else None
        try:
            if hosted is not None:
                raise hosted
            self.searcher.refresh()
            opened = Opened(self.current_status())
            self.index_ready.set()
        except IndexProblem as exc:
            if exc is hosted:  # reading the status would wait for the same store again
                self.status = IndexStatus(
                    "corrupt" if isinstance(exc, IndexCorrupt) else "missing", error=str(exc)
                )
            else:
                self.current_status()
            opened = Opened(
                self.status, str(exc), isinstance(exc, IndexMissing), isinstance(exc, IndexCorrupt)
            )
        self._emit(opened)
        try:
            if embedder is None:
                self._set_embedder(None, error, None)
                return
            try:
                if hasattr(embedder, "load"):
                    embedder.load()  # builtin: about a second of weights loading
                else:
                    _ = embedder.dim  # HTTP: one probe request tells whether the server answers
                emb_id = embedder.id
            except EmbedderError as exc:
                self._set_embedder(None, str(exc), None)
                return
            self._set_embedder(embedder, None, emb_id)
        finally:
            if self.index_ready.is_set():
                self._warm_and_settle()  # the app searches as one types

    def _warm_and_settle(self) -> None:
        """Warm the loaded version, then settle the heap. Warming checks whole files, so it finds damage
        a query might not have touched yet: that is reported like a failed load, and the thread goes on
        (the reloader must outlive any bad version)."""
        try:
            self.searcher.warm(self._load_waits)
        except IndexProblem as exc:
            self._emit(ReloadFailed(str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - as the reloader's own loads
            self._emit(ReloadFailed(f"{exc.__class__.__name__}: {exc}"))
            return
        self._settle_heap()

    def _load_waits(self) -> bool:
        """A newer version waits to be loaded, or the workspace closes (warming the loaded one stops)."""
        return self._reload_wanted.is_set() or self._stop.is_set()

    def _settle_heap(self) -> None:
        """Once no search has run for ``QUIET_SECONDS``, collect and freeze what the loaded version holds
        (see gcpause.freeze_heap: its full collection holds the interpreter for a few hundred ms in the
        app, so it waits for a pause in the typing); a newer version to load, or closing, skips it (the
        next load settles)."""
        while not self._load_waits():
            quiet = QUIET_SECONDS - (time.monotonic() - self._searched_at)
            if quiet <= 0:
                freeze_heap()
                return
            if self._reload_wanted.wait(quiet):
                return

    def _host_again(self) -> None:
        """A request after hosting the engine failed: try again (the other process may have let it go)."""
        failed = self.engine.open(self) if self.engine is not None else None
        if failed is not None:
            self._service_event(Failed(str(failed)))

    def _set_embedder(self, embedder: Embedder | None, error: str | None, emb_id: str | None) -> None:
        self.embedder, self.embedder_error = embedder, error
        self.searcher.embedder, self.searcher.embedder_error = embedder, error  # _all_searcher copies it
        self.embedder_ready.set()
        self._emit(EmbedderReady(emb_id, error))

    # -- searching ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 20,
        mode: str | None = None,
        all_workspaces: bool = False,
        prefix: bool = False,
        hints: bool = True,
    ) -> SearchResponse:
        """Answer ``query`` from the loaded version (thread-safe). Raises IndexMissing before the first
        index exists, IndexProblem when it cannot be read. While the query encoder is still loading, a
        hybrid answer is lexical only and says so (``degraded``, "the encoder is loading").
        ``all_workspaces``: every workspace of a shared (Milvus) collection, each hit labelled with
        its workspace; ValueError for the local store. ``prefix``: search as you type (the word being
        typed also finds the words it begins, see Searcher.search); ``hints``: see Searcher.search."""
        self._used()
        if not all_workspaces:
            self._load_pending()
        searcher = self._all_searcher() if all_workspaces else self.searcher
        if all_workspaces and time.monotonic() - self._everywhere_at > EVERYWHERE_TTL:
            searcher.refresh()  # other workspaces change without this one committing
            self._everywhere_at = time.monotonic()
        resp: SearchResponse = searcher.search(query, limit=limit, mode=mode, prefix=prefix, hints=hints)
        loading = not self.embedder_ready.is_set() and self.settings.embedding.backend != "none"
        if loading and resp.mode != "bm25" and not resp.degraded:
            resp.degraded, resp.degraded_reason = True, "the encoder is loading"
        return resp

    def _load_pending(self) -> None:
        """A version committed and not loaded yet (the reloader is busy, or loading it now): load it here
        first, so a search never answers from an older version than the status reports. The local store
        only (its check is a stat; a shared store's reload reads the server); a version that fails to
        load is the reloader's to report, and this search answers from the one loaded."""
        if self.store is not LOCAL or not (self._reload_wanted.is_set() or self._reloading):
            return
        with suppress(IndexProblem):
            self.searcher.refresh()

    def _used(self) -> None:
        """A search or a lookup starts now (the heap is settled only after QUIET_SECONDS without one)."""
        self._searched_at = time.monotonic()

    def definitions(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` is defined in the loaded version (thread-safe; see Searcher.definitions)."""
        self._used()
        return self.searcher.definitions(name, limit)

    def references(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` is used in the loaded version (thread-safe; see Searcher.references)."""
        self._used()
        return self.searcher.references(name, limit)

    def line_symbols(self, path: str, line: int, names: list[str]) -> LineSymbols:
        """What the loaded version's symbol graph says of a line and of ``names`` (thread-safe)."""
        self._used()
        return self.searcher.line_symbols(path, line, names)

    def _all_searcher(self) -> Searcher:
        with self._lock:
            if self._everywhere is None:
                # one connection: a Lite engine serves one process
                retriever = open_retriever(
                    self.root, self.settings, all_workspaces=True, alongside=self.searcher.retriever
                )
                self._everywhere = Searcher(self.root, self.settings, retriever=retriever)
            searcher = self._everywhere
        searcher.embedder, searcher.embedder_error = self.embedder, self.embedder_error
        return searcher

    def current_status(self) -> IndexStatus:
        """What the index holds now (read from the store)."""
        self.status = self.searcher.retriever.status()
        return self.status

    # -- indexing ----------------------------------------------------------------------------------

    def reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> None:
        """Ask for a reindex (coalesced with a run in progress). ``paths``: files known to have changed
        (they are looked at alone, and their vectors come first); None walks the whole tree."""
        if not self.index_enabled:
            return
        if self.engine is not None:
            held, again = self.engine.hold(rebuild)
            if held:  # the first run walks the whole tree anyway
                if again:
                    self._spawn(self._host_again, "aide-host")
                return
        changed = None if paths is None else list(paths)
        self.service.request(rebuild=rebuild, priority=[*(changed or ()), *self.priority()], paths=changed)

    def reindex_and_wait(
        self, rebuild: bool = False, paths: Iterable[str] | None = None, timeout: float | None = None
    ) -> Event | None:
        """:meth:`reindex`, then wait for the run that covers it: its Done, Failed or Cancelled (None:
        not indexing here, or not finished within ``timeout``)."""
        asked = self.request_reindex(rebuild, paths)
        return None if asked is None else self.wait_reindex(asked, timeout)

    def request_reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> int | None:
        """:meth:`reindex` without waiting: the request's number for :meth:`wait_reindex` (None: not
        indexing here)."""
        if not self.index_enabled or (self.engine is not None and not self.engine.ready):
            return None
        changed = None if paths is None else list(paths)
        return self.service.request(
            rebuild=rebuild, priority=[*(changed or ()), *self.priority()], paths=changed
        )

    def wait_reindex(self, asked: int, timeout: float | None = None) -> Event | None:
        """The outcome of the run that covered request ``asked`` once it ended (None: not within
        ``timeout``, or the service closed)."""
        return self.service.wait_for(asked, timeout)

    def cancel(self) -> None:
        """Stop the current indexing run."""
        self.service.cancel()

    def _service_event(self, event: Event) -> None:
        self._emit(event)
        if isinstance(event, Committed | Done):
            self._reload_wanted.set()
        if isinstance(event, Done):
            self._retry_delay = 0.0
        elif isinstance(event, Failed) and self.store.needs_engine_host and self.index_enabled:
            self._retry_later()

    def _retry_later(self) -> None:
        """A Milvus server can be down or restarting: try the run again later (2 s, doubling up to 60 s;
        one pending retry at a time, cancelled by close)."""
        with self._lock:
            if self._stop.is_set() or (self._retry_timer is not None and self._retry_timer.is_alive()):
                return
            self._retry_delay = min(RETRY_MAX, max(RETRY_FIRST, self._retry_delay * 2))
            timer = threading.Timer(
                self._retry_delay, lambda: None if self._stop.is_set() else self.reindex()
            )
            timer.daemon = True
            self._retry_timer = timer
        timer.start()

    def _reloader(self) -> None:
        """Load every committed version as it lands (coalesced: one reload covers several commits)."""
        while True:
            self._reload_wanted.wait()
            if self._stop.is_set():
                return
            self._reloading = True
            self._reload_wanted.clear()
            try:
                self.searcher.refresh()
                if self._everywhere is not None:
                    self._everywhere.refresh()
                    self._everywhere_at = time.monotonic()
            except IndexProblem as exc:
                self._emit(ReloadFailed(str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - the reloader must outlive any bad version
                self._emit(ReloadFailed(f"{exc.__class__.__name__}: {exc}"))
                continue
            finally:
                self._reloading = False
            self.index_ready.set()
            self._emit(Reloaded(self.current_status(), self.searcher.version))
            self._warm_and_settle()

    # -- watching ----------------------------------------------------------------------------------

    def _watch(self) -> None:
        from aide_tui.core.index.watch import watch_batches

        try:
            for paths in watch_batches(self.root, self.settings, self._stop):
                if paths:
                    self._emit(FilesChanged(paths))
                    self.reindex(paths=sorted(paths))
        except Exception as exc:  # noqa: BLE001 - any watcher failure is reported, the rest goes on
            if not self._stop.is_set():
                self._emit(WatchFailed(f"file watching stopped: {exc}"))
