"""A workspace as a front end holds it: hosted by this process, or attached to the process that hosts it.

:class:`Workspace` has the interface of :class:`~aide_tui.core.live.LiveWorkspace` (search, reindex,
cancel, current_status, start, close) and plays one role at a time (:mod:`aide_tui.host.role`; its
:class:`~aide_tui.host.tenure.Tenure` owns the host lock and the role):

- **host** (warming, then hosting): it takes the workspace's host lock, indexes and watches the
  workspace, and answers the workspace protocol on its socket (other front ends' searches, reindex
  requests, ``/events``);
- **attached**: another process hosts the workspace. This one still searches in-process (the index on
  disk is immutable segments under an atomic manifest; a Milvus store is read through the host's engine),
  reloads each version the host commits, shows the host's progress and sends it reindex requests. When
  the host goes away (its event stream ends) it takes over, or attaches to whoever did. A host that
  holds the lock but does not answer yet is waited for (waiting) while this one searches what is on disk.

A host checks every few seconds, and before each indexing run, that its workspace folder is still there
and that its lock file is still the one it holds (see :mod:`aide_tui.host.lock`): a removed or replaced
lock file is taken back when nobody else holds it; otherwise another process hosts now, and this one
stops hosting (lock lost: ``serve`` and a background host exit; the app and ``mcp`` attach to it); a
moved or deleted folder stops it (root lost). A lock file this process cannot open leaves it searching
the index on disk (read-only), with the reason in :attr:`problem`.

Its events (the LiveWorkspace's, the host's progress, and :class:`Hosting` / :class:`Attached`) reach
``on_event`` from background threads.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from aide_tui.core.config import Settings, is_network_uri
from aide_tui.core.events import Cancelled, Committed, Done, Event, Failed, Progress, event_from_json
from aide_tui.core.live import Attached, Hosting, LiveEvent, LiveWorkspace
from aide_tui.core.paths import MANIFEST, index_dir_for, state_dir
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.search.symbols import MAX_LOCATIONS, LineSymbols, SymbolAnswer
from aide_tui.core.status import IndexStatus
from aide_tui.core.storekind import store_kind
from aide_tui.host.client import ServeClient, ServeUnavailable, connect
from aide_tui.host.lock import HostLockUnusable, host_pid
from aide_tui.host.role import HOLDS_LOCK, Role
from aide_tui.host.routes import Hub
from aide_tui.host.server import HostServer
from aide_tui.host.tenure import EngineHost, Tenure

WARM_WAIT = 30.0  # seconds a new host waits for its index and encoder before its socket appears
ATTACH_WAIT = 10.0  # seconds an attaching front end waits for the host's socket to answer
TAKEOVER_PAUSE = 0.2  # seconds between attempts to host or attach after a host went away
WAIT_POLL = 0.5  # seconds between attempts to reach a host that did not answer within ATTACH_WAIT
ROOT_CHECK = 2.0  # seconds between checks that the hosted workspace folder and its lock are still there
WARM_POLL = 0.2  # seconds between looks at whether a warming host was closed meanwhile
ATTACHING = frozenset({Role.STARTING, Role.WAITING, Role.TAKING_OVER, Role.LOCK_LOST})  # may attach or host


class Workspace:
    """One workspace, hosted here or attached to its host (see the module docstring). ``tenure``: one
    that already holds the host lock (``serve``, a background host); ``front_end``: who this is in
    ``/host`` and the Hosting/Attached events (app, serve, mcp, background)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        on_event: Callable[[LiveEvent], None],
        *,
        watch: bool = True,
        index: bool = True,
        front_end: str = "app",
        tenure: Tenure | None = None,
        on_release: Callable[[], None] | None = None,
        listen: bool = True,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.on_event = on_event
        self.front_end = front_end
        self.want_watch = watch
        self.store = store_kind(settings)
        self.index_enabled = index and self.store.writable
        self.tenure = tenure if tenure is not None else Tenure(self.root)
        self.hub = Hub()
        self.host_pid: int | None = None
        self._on_release = on_release
        self._listen = listen  # answer on the socket (serve opens its own listeners: False)
        self._on_lost = on_lost  # the folder went away or another process took the lock (serve exits)
        self._server: HostServer | None = None
        self._closed = threading.Event()
        self._mutex = threading.Lock()
        self.problem: str | None = None  # why this process cannot host (a lock file it cannot open)
        self._priority: Callable[[], Iterable[str]] = lambda: ()
        self._active = time.monotonic()  # the last search or reindex request
        self._root_id: tuple[int, int] | None = None  # the hosted folder (device, inode)
        self.live = self._open_live()

    @property
    def role(self) -> Role:
        """What this process is for the workspace now."""
        return self.tenure.role

    @property
    def hosting(self) -> bool:
        """Whether this process hosts the workspace (warming up or answering)."""
        return self.tenure.role in HOLDS_LOCK

    def _open_live(self, *, indexing: bool = False, store_uri: str | None = None) -> LiveWorkspace:
        """The one place a LiveWorkspace is made: a reading one, or the host's (``indexing``: it indexes
        and, when asked, watches); ``store_uri``: read a Lite store through its host's engine."""
        settings = self.settings
        if store_uri is not None:
            settings = replace(settings, store=replace(settings.store, uri=store_uri))
        engine = EngineHost() if self.store.needs_engine_host else None
        live = LiveWorkspace(self.root, settings, self._event, watch=indexing and self.want_watch,
                             index=indexing, engine=engine)  # fmt: skip
        live.priority = self._priority
        live.service.may_run = self._lock_kept
        return live

    # -- the LiveWorkspace interface ---------------------------------------------------------------

    @property
    def priority(self) -> Callable[[], Iterable[str]]:
        return self._priority

    @priority.setter
    def priority(self, value: Callable[[], Iterable[str]]) -> None:
        self._priority = value
        self.live.priority = value

    @property
    def index_ready(self) -> threading.Event:
        return self.live.index_ready

    @property
    def embedder_ready(self) -> threading.Event:
        return self.live.embedder_ready

    @property
    def status(self) -> IndexStatus:
        return self.live.status

    def search(
        self,
        query: str,
        limit: int = 20,
        mode: str | None = None,
        all_workspaces: bool = False,
        prefix: bool = False,
        hints: bool = True,
    ) -> SearchResponse:
        """See LiveWorkspace.search (``prefix``: search as you type, the app turns it on; ``hints``:
        the refine hints, which the app does not show)."""
        self._active = time.monotonic()
        return self.live.search(query, limit=limit, mode=mode, all_workspaces=all_workspaces, prefix=prefix,
                                hints=hints)  # fmt: skip

    def definitions(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` is defined (the symbol graph of the loaded version)."""
        self._active = time.monotonic()
        return self.live.definitions(name, limit)

    def references(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
        """Where ``name`` is used (the symbol graph of the loaded version)."""
        self._active = time.monotonic()
        return self.live.references(name, limit)

    def line_symbols(self, path: str, line: int, names: list[str]) -> LineSymbols:
        """What the symbol graph says of ``path``'s line ``line`` and of ``names`` (which name ``d``/``r``
        take there)."""
        return self.live.line_symbols(path, line, names)

    def last_active(self) -> float:
        """When this workspace last had work: now while indexing runs or is queued, else the last
        search or reindex request (monotonic seconds)."""
        if self.hosting and self.live.service.running:
            return time.monotonic()
        return self._active

    def current_status(self) -> IndexStatus:
        return self.live.current_status()

    def reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> None:
        """Ask for a reindex: run here when hosting, else sent to the host."""
        self._active = time.monotonic()
        if self.hosting:
            self.live.reindex(rebuild=rebuild, paths=paths)
        elif self.index_enabled:
            wanted = None if paths is None else list(paths)
            threading.Thread(target=self._ask_host, args=(rebuild, wanted), daemon=True).start()

    def reindex_and_wait(
        self, rebuild: bool = False, paths: Iterable[str] | None = None, timeout: float | None = None
    ) -> Event | None:
        """Reindex here (hosting) and wait for the run's outcome event; None when not hosting."""
        self._active = time.monotonic()
        return self.live.reindex_and_wait(rebuild, paths, timeout) if self.hosting else None

    def request_reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> int | None:
        """Reindex here (hosting) without waiting: the request's number (None when not hosting)."""
        self._active = time.monotonic()
        return self.live.request_reindex(rebuild, paths) if self.hosting else None

    def wait_reindex(self, asked: int, timeout: float | None = None) -> Event | None:
        """The outcome of the run that covered request ``asked`` (None: not yet within ``timeout``)."""
        return self.live.wait_reindex(asked, timeout)

    def cancel(self) -> None:
        if self.hosting:
            self.live.cancel()

    def host_info(self) -> dict[str, Any]:
        """Who hosts, for ``/host`` (and the address of a Milvus Lite engine this process serves, so a
        front end that attaches reads the store through it)."""
        info: dict[str, Any] = {"pid": os.getpid(), "role": self.front_end}
        st = self.live.service.settings.store
        if self.store.embedded_engine and is_network_uri(st.uri):
            info["store_uri"] = st.uri
        return info

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Host the workspace (the lock given, or taken now), or attach to the process that hosts it;
        read-only when it may not index."""
        if self.tenure.holds or (self.index_enabled and self._try_lock()):
            self._host(fresh=True)
        elif not self.index_enabled or self.problem is not None:
            self.tenure.roles.move(Role.READ_ONLY)
            self.live.start()
        else:
            self._attach(first=True)

    def _try_lock(self) -> bool:
        """:meth:`Tenure.take`; False also when the lock file cannot be opened (said once, in
        :attr:`problem` and a Failed event: nobody of ours can host, so nobody is waited for)."""
        try:
            return self.tenure.take()
        except HostLockUnusable as exc:
            if self.problem is None:
                self.problem = f"{exc.strerror}: searching the index on disk, not indexing"
                self.on_event(Failed(self.problem))
            return False

    def close(self) -> None:
        """Stop hosting (the lock is released: another front end takes over) or stop following the host."""
        self._closed.set()
        self.tenure.roles.move_from(frozenset(Role) - {Role.CLOSED}, Role.CLOSED)
        with self._mutex:
            server, self._server = self._server, None
        if server is not None:
            self.hub.close_threadsafe()
            server.close()
        self.live.close()
        self.tenure.release()

    def _event(self, event: LiveEvent) -> None:
        if self.hosting:
            self.hub.publish_threadsafe(event)
        if not self._closed.is_set():
            self.on_event(event)

    # -- hosting -------------------------------------------------------------------------------------

    def _host(self, fresh: bool = False) -> None:
        """Index and watch here, and answer on the socket once the index and the encoder are warm (the
        first search through a new host must not pay for loading them). ``fresh``: the workspace is not
        open yet (it opens as the indexing one; a front end that was attached turns indexing on)."""
        if not self.tenure.roles.move_from(ATTACHING, Role.WARMING):
            self.tenure.release()  # closed meanwhile: the lock just taken goes at once
            return
        try:
            st = os.stat(self.root)
            self._root_id = (st.st_dev, st.st_ino)
        except OSError:
            self._root_id = None  # gone already: the guard says so at once
        if fresh:
            self.live = self._open_live(indexing=True)
            self.live.start()
        else:
            self.live.begin_indexing(self.want_watch)
        self.on_event(Hosting(self.front_end))
        threading.Thread(target=self._guard_root, name="aide-host-root", daemon=True).start()
        threading.Thread(target=self._answer_when_warm, name="aide-host-open", daemon=True).start()

    def wait_warm(self, timeout: float = WARM_WAIT) -> None:
        """Until the index is loaded and the encoder too (or ``timeout``; a new workspace has no index to
        load: its host answers once the first version lands)."""
        deadline = time.monotonic() + timeout
        for ready in (self.live.index_ready, self.live.embedder_ready):
            while not ready.wait(min(WARM_POLL, max(0.0, deadline - time.monotonic()))):
                if self._closed.is_set() or not self.hosting or time.monotonic() >= deadline:
                    return  # stopped hosting meanwhile (the folder was moved, the lock taken)

    def _answer_when_warm(self) -> None:
        """Warming, then hosting: the socket opens (``serve`` opens its own listeners)."""
        self.wait_warm()
        if not self.tenure.roles.move_from({Role.WARMING}, Role.HOSTING) or not self._listen:
            return
        try:
            server = HostServer(self.root, state_dir(self.root), self.settings, self, self.hub,
                                on_release=self._on_release)  # fmt: skip
            server.open()
        except OSError as exc:  # the workspace is still indexed here; others cannot attach
            self.on_event(Failed(f"cannot answer on the workspace socket: {exc}"))
            return
        with self._mutex:
            if self._closed.is_set():
                server.close()
                return
            self._server = server
        server.start()

    def _guard_root(self) -> None:
        """Every few seconds: stop hosting when the workspace folder is deleted or moved away (say so;
        never recreate it), and keep the host lock (:meth:`_lock_kept`)."""
        while not self._closed.wait(ROOT_CHECK) and self.hosting:
            if not self._lock_kept():
                return

    def _root_moved(self) -> bool:
        """Whether the hosted folder is gone from its path (deleted, moved, replaced by another)."""
        try:
            st = os.stat(self.root)
        except OSError:
            return True
        return self._root_id != (st.st_dev, st.st_ino)

    def _lose_root(self) -> None:
        """The folder went: say so and stop hosting (``serve`` and a background host then exit)."""
        if not self.tenure.roles.move_from(HOLDS_LOCK, Role.ROOT_LOST):
            return
        why = f"{self.root} was moved or deleted: no longer indexing it"
        self.on_event(Failed(why))
        self.close()
        if self._on_lost is not None:
            self._on_lost(why)

    def _lock_kept(self) -> bool:
        """Whether this process still hosts: its folder is there and the host lock at its path is its
        own (taken back when the file was removed or replaced and nobody else holds the new one). When
        the folder went or another process holds the lock, this one stops hosting (in the background:
        this runs in the indexing service's thread too, before each run) and the answer is False."""
        if not self.hosting:
            return False
        if self._root_moved():  # before the lock, whose file went with the folder
            threading.Thread(target=self._lose_root, name="aide-host-root-lost", daemon=True).start()
            return False
        why = self.tenure.keep()
        if why is None:
            return True
        if self.tenure.roles.move_from(HOLDS_LOCK, Role.LOCK_LOST):  # no more runs, no socket opened
            threading.Thread(target=self._give_up_hosting, args=(why,), name="aide-host-lost",
                             daemon=True).start()  # fmt: skip
        return False

    def _give_up_hosting(self, why: str) -> None:
        """Another process hosts now: stop indexing and answering here (the lock file is not ours to
        remove), say why, then stop (serve, a background host) or attach to it (the app, mcp)."""
        self.on_event(Failed(why))
        with self._mutex:
            server, self._server = self._server, None
        if server is not None:
            self.hub.close_threadsafe()
            server.close()
        if self._on_lost is not None:
            self.close()
            self._on_lost(why)
            return
        reader = self._open_live()  # searches go on meanwhile: the reader is open before it replaces this one
        reader.start()
        old, self.live = self.live, reader
        self.hub = Hub()  # the closed one ended its streams; a later takeover answers afresh
        old.close()
        self.tenure.release()  # its file was removed or replaced: the lock at that path is the other host's
        if not self._closed.is_set():
            self._attach()

    # -- attached ------------------------------------------------------------------------------------

    def _attach(self, first: bool = False) -> None:
        """Follow the host: wait for its socket, then read its events until they end. A host that does not
        answer within ATTACH_WAIT (still warming on a loaded machine) is waited for in the background
        while this front end searches what is on disk."""
        client = self._connect(ATTACH_WAIT, first)
        if client is not None:
            self._attached(client, first)
        elif not self._closed.is_set() and not self.hosting:
            if first:
                self.live.start()
            if not self.tenure.roles.move_from(ATTACHING - {Role.WAITING}, Role.WAITING):
                return
            pid = host_pid(state_dir(self.root))
            self.on_event(Progress("waiting", message=f"for the process hosting this workspace (PID {pid}) "
                                   "to answer; searching the index on disk meanwhile"))  # fmt: skip
            threading.Thread(target=self._attach_later, name="aide-host-wait", daemon=True).start()

    def _connect(self, wait: float | None, first: bool) -> ServeClient | None:
        """A client of the host's socket; None when ``wait`` s pass first, when this process took the
        host lock (the host went away meanwhile: hosting here now) or when closed."""
        deadline = None if wait is None else time.monotonic() + wait
        seen = self._manifest_stamp()
        while not self._closed.is_set():
            if host_pid(state_dir(self.root)) is None and self._try_lock():
                self._host(fresh=first)
                return None
            client = connect(self.root, self.settings, any_settings=True)
            if client is not None:
                return client
            if deadline is not None and time.monotonic() > deadline:
                return None
            if wait is None and (now := self._manifest_stamp()) != seen:
                seen = now
                self.live.reload()  # meanwhile, follow the versions the host commits
            time.sleep(TAKEOVER_PAUSE if wait is not None else WAIT_POLL)
        return None

    def _manifest_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(index_dir_for(self.root, create=False) / MANIFEST)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    def _attach_later(self) -> None:
        client = self._connect(None, first=False)
        if client is not None:
            self._attached(client, first=False)

    def _attached(self, client: ServeClient, first: bool) -> None:
        try:
            info = client.host()
        except ServeUnavailable:
            info = {}
        self.host_pid = int(info.get("pid") or 0)
        if not self.tenure.roles.move_from(ATTACHING, Role.ATTACHED):
            client.close()
            return
        if first:
            store_uri = info.get("store_uri")
            if self.store.shared and isinstance(
                store_uri, str
            ):  # a Lite file: read through the host's engine
                self.live = self._open_live(store_uri=store_uri)
            self.live.start()
        else:
            self.live.reload()
        self.on_event(Attached(self.host_pid, str(info.get("role") or "")))
        threading.Thread(target=self._follow, args=(client,), name="aide-host-feed", daemon=True).start()

    def _follow(self, client: ServeClient) -> None:
        """Forward the host's progress; each version it commits is loaded here. When the stream ends the
        host is gone: take over (or attach to whoever did)."""
        try:
            for obj in client.events():
                event = event_from_json(obj)
                if isinstance(event, Progress | Committed | Done | Failed | Cancelled):
                    if not self._closed.is_set():
                        self.on_event(event)
                    if isinstance(event, Committed | Done):
                        self.live.reload()
        except ServeUnavailable:
            pass
        finally:
            client.close()
        if self._closed.is_set():
            return
        time.sleep(TAKEOVER_PAUSE)
        if not self.tenure.roles.move_from({Role.ATTACHED}, Role.TAKING_OVER):
            return
        if self.store.shared and self.live.settings.store.uri != self.settings.store.uri:
            self.live.close()  # it read the old host's engine: open the store afresh
            self.live = self._open_live()
            if self._try_lock():
                self._host(fresh=True)
                return
            self.live.start()
            self._attach()
            return
        if self._try_lock():
            self.live.reload()
            self._host()
            return
        self._attach()

    def _ask_host(self, rebuild: bool, paths: list[str] | None) -> None:
        client = connect(self.root, self.settings, any_settings=True)
        if client is None:
            return
        try:
            client.reindex(rebuild, paths)
        except ServeUnavailable as exc:
            self.on_event(Failed(f"the host did not take the reindex request: {exc}"))
        finally:
            client.close()
