"""The workspace protocol every host answers (``aide-tui serve``, the app, ``mcp``, the background
indexer): a thin Starlette layer over the host's workspace.

    GET  /status   the ``status --json`` object
    GET  /host     who hosts: ``pid``, ``role`` (app, serve, mcp, background) and, for a Milvus Lite store,
                   ``store_uri``, the address of the engine this host serves
    POST /search   {"query", "limit", "mode", "text", "all_workspaces", "prefix"} -> one ``search --json``
                   line (CONTRACT.md; with all_workspaces each result also names its workspace; with
                   prefix, search as you type: the last word also finds the words it begins); a query
                   error (an unknown lang:) is a 400 with the error
    POST /defs     {"name", "limit"} -> the ``defs --json`` object (where NAME is defined; a qualified
                   name such as Client.send works); a name that is not an identifier is a 400
    POST /refs     {"name", "limit"} -> the ``refs --json`` object (where NAME is used)
    POST /reindex  {"rebuild": bool, "paths": [str]} -> 202; the run shows up in /events; with
                   "wait": true, 200 and the run's done (or error, cancelled) event when it ends
    POST /release  a background host stops hosting (409 from any other host)
    GET  /events   Server-Sent Events: the ``index --progress`` objects (progress, commit, done, error,
                   cancelled), one ``data:`` line each; a reader that comes while a run is on gets
                   the run's latest progress first (an attached app says "queued", not "ready")

Every error is ``{"error": message}`` with its status; request bodies are read in pieces and refused past
1 MB. Searches run in worker threads (LiveWorkspace.search is thread-safe and blocking). A reindex
request that waits holds no worker thread while its run goes on: every waiting request is answered
from one thread that follows the runs (:class:`RunWaits`), so any number of them leave the workers to
``/search`` and ``/status``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aide_tui.core.config import MODES, Settings
from aide_tui.core.errors import IndexMissing, IndexProblem
from aide_tui.core.events import Cancelled, Committed, Done, Failed, Progress, event_to_json
from aide_tui.core.events import Event as IndexEvent
from aide_tui.core.live import EmbedderReady, LiveEvent, Opened, Reloaded
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.search.symbols import MAX_LOCATIONS, NO_GRAPH, SymbolAnswer, split_name
from aide_tui.core.status import IndexStatus
from aide_tui.core.storekind import NeedsSharedStore, store_kind
from aide_tui.host.client import PID_HEADER, SETTINGS_HEADER
from aide_tui.host.shapes import search_json

MAX_BODY = 1 << 20  # bytes of a request body
MAX_LIMIT = 1000  # results per query
MAX_SYMBOL_LIMIT = 100_000  # locations per /defs or /refs answer
MAX_SUBSCRIBERS = 64  # concurrent /events streams
SUBSCRIBER_BACKLOG = 1000  # events kept for a slow /events reader (oldest progress dropped first)
HEARTBEAT = 15.0  # seconds between SSE comments, so a vanished reader is noticed
READY_TIMEOUT = 600.0  # seconds a search waits for the first index / the embedder
RUN_POLL = 1.0  # seconds the waiting requests' one thread blocks at a time (then looks at them again)


class HostedWorkspace(Protocol):
    """What the routes ask of the host's workspace (:class:`~aide_tui.host.workspace.Workspace`)."""

    @property
    def index_ready(self) -> threading.Event: ...

    @property
    def embedder_ready(self) -> threading.Event: ...

    def current_status(self) -> IndexStatus: ...

    def host_info(self) -> dict[str, Any]: ...

    def search(
        self,
        query: str,
        limit: int = 20,
        mode: str | None = None,
        all_workspaces: bool = False,
        prefix: bool = False,
    ) -> SearchResponse: ...

    def definitions(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer: ...

    def references(self, name: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer: ...

    def reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> None: ...

    def request_reindex(self, rebuild: bool = False, paths: Iterable[str] | None = None) -> int | None: ...

    def wait_reindex(self, asked: int, timeout: float | None = None) -> IndexEvent | None: ...


class ApiError(Exception):
    """A request we refuse, with its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Subscriber:
    """One /events reader: a bounded backlog filled from the loop thread."""

    def __init__(self) -> None:
        self.items: deque[IndexEvent | None] = deque()
        self.wake = asyncio.Event()

    def push(self, event: IndexEvent | None) -> None:
        if len(self.items) >= SUBSCRIBER_BACKLOG:
            stale = next((e for e in self.items if isinstance(e, Progress)), None)
            if stale is not None:
                self.items.remove(stale)
            elif isinstance(event, Progress):
                return
            else:
                self.items.popleft()
        self.items.append(event)
        self.wake.set()


class Hub:
    """Carries LiveWorkspace events (from background threads) onto the event loop: readiness flags and the
    /events subscribers."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.subscribers: set[Subscriber] = set()
        self.opened = asyncio.Event()
        self.index_ready = asyncio.Event()
        self.embedder_ready = asyncio.Event()
        self.index_failed: str | None = None  # why the first index could not be built (searches stop waiting)
        self.running: Progress | None = None  # the run's latest progress (a new /events reader gets it first)
        self.changed = asyncio.Event()
        self.closed = False

    def bind(self, loop: asyncio.AbstractEventLoop, live: HostedWorkspace) -> None:
        """Carry events onto ``loop`` from now on; what the workspace reached before is taken as it is
        (the host starts its workspace before the socket appears)."""
        self.loop = loop
        if live.index_ready.is_set():
            self.opened.set()
            self.index_ready.set()
        if live.embedder_ready.is_set():
            self.embedder_ready.set()

    def publish_threadsafe(self, event: LiveEvent) -> None:
        if isinstance(event, Progress):  # kept before the socket opens too (a run queues during warm-up)
            self.running = event
        elif isinstance(event, Done | Failed | Cancelled):
            self.running = None  # the run ended: a reader that comes now has nothing to catch up on
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._publish, event)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _publish(self, event: LiveEvent) -> None:
        self.changed.set()
        if isinstance(event, Failed):
            self.index_failed = event.message
        if isinstance(event, Opened):
            self.opened.set()
            if event.error is None:
                self.index_ready.set()
        elif isinstance(event, Reloaded):
            self.opened.set()
            self.index_ready.set()
        elif isinstance(event, EmbedderReady):
            self.embedder_ready.set()
        elif isinstance(event, Progress | Committed | Done | Failed | Cancelled):
            for sub in list(self.subscribers):
                sub.push(event)

    def close(self) -> None:
        """End every /events stream (server shutdown)."""
        self.closed = True
        for sub in list(self.subscribers):
            sub.push(None)

    def close_threadsafe(self) -> None:
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.close)
            except RuntimeError:
                pass


class RunWaits:
    """Reindex requests waiting for the runs that cover them (``live.request_reindex`` numbers them),
    on the event loop: one worker thread at a time blocks on the lowest number still waited for, and
    each run's end answers every request it covered."""

    def __init__(self, live: HostedWorkspace) -> None:
        self.live = live
        self.waiting: dict[int, list[asyncio.Future[IndexEvent]]] = {}
        self._drainer: asyncio.Task[None] | None = None

    async def wait(self, asked: int, timeout: float) -> IndexEvent | None:
        """The outcome event of the run that covers request ``asked``; None after ``timeout`` s."""
        future: asyncio.Future[IndexEvent] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(asked, []).append(future)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None
        finally:
            futures = self.waiting.get(asked, [])
            if future in futures:
                futures.remove(future)
                if not futures:
                    del self.waiting[asked]

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self.waiting:
            lowest = min(self.waiting)
            started = loop.time()
            outcome = await anyio.to_thread.run_sync(self.live.wait_reindex, lowest, RUN_POLL)
            if outcome is None:
                if loop.time() - started < RUN_POLL / 2:  # not indexing any more: no busy loop
                    await asyncio.sleep(RUN_POLL)
                continue
            for asked in sorted(self.waiting):  # numbered in order: a run covers every one before it
                got = outcome if asked == lowest else self.live.wait_reindex(asked, 0)
                if got is None:
                    break
                for future in self.waiting.pop(asked):
                    if not future.done():
                        future.set_result(got)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def read_json(request: Request) -> Any:
    """The request body as JSON (None when empty); 413 past MAX_BODY, read piece by piece."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise ApiError(413, f"request body over {MAX_BODY} bytes")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > MAX_BODY:
            raise ApiError(413, f"request body over {MAX_BODY} bytes")
    if not body.strip():
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        raise ApiError(400, "malformed JSON") from None
    try:  # JSON may spell a lone surrogate ("\ud800"); no answer that echoes it could be encoded
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "request body is not valid Unicode text (a lone surrogate)") from None
    return obj


def _int_field(obj: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{key} must be an integer")
    if not lo <= value <= hi:
        raise ApiError(400, f"{key} out of range ({lo}..{hi})")
    return value


@dataclass(frozen=True)
class SearchRequest:
    """A parsed /search body."""

    query: str
    limit: int
    mode: str
    with_text: bool = False
    all_workspaces: bool = False
    prefix: bool = False


def _bool_field(obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise ApiError(400, f"{key} must be true or false")
    return value


def parse_search(body: Any, default_mode: str) -> SearchRequest:
    """The /search body's fields, or ApiError(400)."""
    if not isinstance(body, dict):
        raise ApiError(400, "expected a JSON object with a query")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "no query")
    limit = _int_field(body, "limit", 20, 0, MAX_LIMIT)
    mode = body.get("mode")
    if mode is None:
        mode = default_mode
    if mode not in MODES:
        raise ApiError(400, f"unknown mode {mode!r} (hybrid, bm25 or dense)")
    return SearchRequest(query, limit, mode, _bool_field(body, "text"), _bool_field(body, "all_workspaces"),
                         _bool_field(body, "prefix"))  # fmt: skip


class Service:
    """The routes' view of the host: its workspace, the event hub and what to do on ``/release``."""

    def __init__(self, live: HostedWorkspace, hub: Hub, settings: Settings, *, ready_timeout: float,
                 on_release: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.live = live
        self.hub = hub
        self.settings = settings
        self.ready_timeout = ready_timeout
        self.on_release = on_release
        self.runs = RunWaits(live)

    async def _wait(self, event: asyncio.Event, what: str) -> None:
        try:
            await asyncio.wait_for(event.wait(), self.ready_timeout)
        except TimeoutError:
            raise ApiError(503, f"{what} is not ready yet") from None

    async def _wait_index(self) -> None:
        """Until the first index is loaded; 503 at once when building it failed, or after the timeout."""
        hub = self.hub
        deadline = asyncio.get_running_loop().time() + self.ready_timeout
        while not hub.index_ready.is_set():
            if hub.index_failed is not None:
                raise ApiError(503, f"no index: {hub.index_failed}")
            hub.changed.clear()
            left = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(hub.changed.wait(), max(left, 0))
            except TimeoutError:
                raise ApiError(503, "the index is not ready yet") from None

    # -- routes --------------------------------------------------------------------------------------

    async def status(self, request: Request) -> Response:
        st = await anyio.to_thread.run_sync(self.live.current_status)
        return JSONResponse(st.to_json())

    async def host(self, request: Request) -> Response:
        return JSONResponse(self.live.host_info())

    async def search(self, request: Request) -> Response:
        req = parse_search(await read_json(request), self.settings.search.mode)
        if req.all_workspaces:
            try:
                store_kind(self.settings).require_all_workspaces("all_workspaces")
            except NeedsSharedStore as exc:
                raise ApiError(400, str(exc)) from None
        await self._wait_index()
        if req.mode != "bm25" and self.settings.embedding.backend != "none":
            await self._wait(self.hub.embedder_ready, "the embedder")
        try:
            resp = await anyio.to_thread.run_sync(
                self.live.search, req.query, req.limit, req.mode, req.all_workspaces, req.prefix
            )
        except IndexMissing as exc:
            raise ApiError(503, str(exc)) from None
        except IndexProblem as exc:
            raise ApiError(503, f"index unreadable: {exc}") from None
        if resp.error is not None:  # the query cannot be understood (an unknown lang:, with the valid names)
            raise ApiError(400, resp.error)
        return JSONResponse(search_json(resp, req.with_text))

    async def defs(self, request: Request) -> Response:
        return await self._symbols(request, "definitions")

    async def refs(self, request: Request) -> Response:
        return await self._symbols(request, "references")

    async def _symbols(self, request: Request, what: str) -> Response:
        """The symbol graph's answer for the body's name (what ``defs`` / ``refs --json`` print)."""
        body = await read_json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "expected a JSON object with a name")
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ApiError(400, "no name")
        if split_name(name) is None:
            raise ApiError(400, f"not an identifier: {name!r}")
        limit = _int_field(body, "limit", MAX_LOCATIONS, 1, MAX_SYMBOL_LIMIT)
        if not store_kind(self.settings).symbol_graph:
            raise ApiError(400, NO_GRAPH)
        await self._wait_index()
        find = self.live.definitions if what == "definitions" else self.live.references
        try:
            answer = await anyio.to_thread.run_sync(find, name, limit)
        except IndexMissing as exc:
            raise ApiError(503, str(exc)) from None
        except IndexProblem as exc:
            raise ApiError(503, f"index unreadable: {exc}") from None
        if answer.error:
            raise ApiError(400, answer.error)
        return JSONResponse(answer.to_json())

    async def reindex(self, request: Request) -> Response:
        body = await read_json(request)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise ApiError(400, "expected a JSON object")
        rebuild = body.get("rebuild", False)
        if not isinstance(rebuild, bool):
            raise ApiError(400, "rebuild must be true or false")
        paths = body.get("paths")
        if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)):
            raise ApiError(400, "paths must be a list of workspace-relative file paths")
        if _bool_field(body, "wait"):  # the CLI's `index` on a hosted workspace: the run's done event
            asked = await anyio.to_thread.run_sync(lambda: self.live.request_reindex(rebuild, paths))
            outcome = None if asked is None else await self.runs.wait(asked, self.ready_timeout)
            if outcome is None:
                raise ApiError(504, "the run did not finish in time (it goes on; see /events)")
            return JSONResponse(event_to_json(outcome))
        await anyio.to_thread.run_sync(lambda: self.live.reindex(rebuild=rebuild, paths=paths))
        return JSONResponse({"accepted": True, "rebuild": rebuild}, status_code=202)

    async def release(self, request: Request) -> Response:
        """Ask a background host to stop hosting (a front end that wants to host takes over)."""
        if self.on_release is None:
            raise ApiError(409, "this host does not give hosting away (an app, serve or mcp)")
        self.on_release()
        return JSONResponse({"released": True}, status_code=202)

    async def events(self, request: Request) -> Response:
        if request.method == "HEAD":  # no stream to hold open for a request that wants no body
            return Response(media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        if len(self.hub.subscribers) >= MAX_SUBSCRIBERS:
            raise ApiError(503, "too many event streams")
        sub = Subscriber()
        self.hub.subscribers.add(sub)
        if self.hub.running is not None:  # what the host does now (queued, embedding 4/900): said once
            sub.push(self.hub.running)
        if self.hub.closed:
            sub.push(None)
        return StreamingResponse(
            self._stream(sub),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, sub: Subscriber) -> AsyncIterator[bytes]:
        try:
            yield b": connected\n\n"
            while True:
                if not sub.items:
                    sub.wake.clear()
                    try:
                        await asyncio.wait_for(sub.wake.wait(), HEARTBEAT)
                    except TimeoutError:
                        yield b": ping\n\n"
                        continue
                event = sub.items.popleft()
                if event is None:
                    return
                data = json.dumps(event_to_json(event))
                yield f"event: {event.kind}\ndata: {data}\n\n".encode()
        finally:
            self.hub.subscribers.discard(sub)

    # -- lifespan ------------------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.hub.bind(asyncio.get_running_loop(), self.live)
        try:
            yield
        finally:
            self.hub.close()


def _handled(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error(exc.status, exc.message)

    return run


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: "no such route", 405: "method not allowed"}
    return error(exc.status_code, messages.get(exc.status_code, str(exc.detail)), dict(exc.headers or {}))


async def _crash(request: Request, exc: Exception) -> Response:
    return error(500, f"internal error: {exc.__class__.__name__}")


class Guard:
    """Outermost layer of one listener. On TCP (a token given): requests from browsers are refused (an
    ``Origin`` header, or a ``Host`` that is not a loopback name: DNS rebinding), then the Bearer token is
    checked; the Unix socket is protected by its 0600 mode and folder. Only admitted requests get the
    settings fingerprint + PID headers (clients use a server only when it runs with their own
    settings); a refusal tells nothing about the server."""

    def __init__(
        self, app: ASGIApp, fingerprint: str, token: str | None = None, hosts: frozenset[bytes] = frozenset()
    ) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token is not None else None
        self.hosts = hosts
        self.extra = [
            (SETTINGS_HEADER.encode(), fingerprint.encode()),
            (PID_HEADER.encode(), str(os.getpid()).encode()),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> Response | None:
        """The answer to a request this listener does not admit (None: admit it). It closes the
        connection: a client without the token holds no kept-alive connection (see deadline.py)."""
        if self.expected is None:
            return None
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(name, value)
        close = {"Connection": "close"}
        if b"origin" in headers:
            return error(403, "requests from web pages are refused (Origin header)", close)
        if headers.get(b"host", b"").lower() not in self.hosts:
            why = "Host must be a loopback name (127.0.0.1, localhost, [::1]) with this port"
            return error(403, why, close)
        if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
            return error(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer", **close})
        return None


def create_app(
    live: HostedWorkspace, hub: Hub, settings: Settings, *, ready_timeout: float = READY_TIMEOUT,
    on_release: Callable[[], None] | None = None,
) -> tuple[Starlette, Service]:  # fmt: skip
    """The routes over a started workspace and its event hub. Each listener wraps the app in its own
    :class:`Guard`; the app's lifespan (which binds the hub to the loop) must run once."""
    service = Service(live, hub, settings, ready_timeout=ready_timeout, on_release=on_release)
    routes = [
        Route("/status", _handled(service.status), methods=["GET"]),
        Route("/host", _handled(service.host), methods=["GET"]),
        Route("/search", _handled(service.search), methods=["POST"]),
        Route("/defs", _handled(service.defs), methods=["POST"]),
        Route("/refs", _handled(service.refs), methods=["POST"]),
        Route("/reindex", _handled(service.reindex), methods=["POST"]),
        Route("/release", _handled(service.release), methods=["POST"]),
        Route("/events", _handled(service.events), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=service.lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _crash},
    )
    return app, service
