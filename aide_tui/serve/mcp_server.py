"""``aide-tui mcp``: Model Context Protocol tools for coding agents, over stdio, on the official SDK.

Tools: ``search_code``, ``find_definition``, ``find_references``, ``index_status`` and ``read_span``.
The workspace is hosted here (indexed and watched) unless another process already hosts it; then this
one searches what that host commits. It is opened at start, so the first question finds it warm.
``read_span`` always reads locally, jailed.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
import mcp_types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from aide_tui.core.config import MODES, Settings
from aide_tui.core.errors import IndexProblem
from aide_tui.core.live import EmbedderReady, LiveEvent, Opened, Reloaded
from aide_tui.core.search.budget import Shape, budgeted_json
from aide_tui.core.search.response import Hit
from aide_tui.core.storekind import NeedsSharedStore, store_kind
from aide_tui.core.textsafe import printable
from aide_tui.host.shapes import search_json
from aide_tui.host.workspace import Workspace
from aide_tui.serve.jail import SpanRefused, is_unicode, read_span

MAX_LIMIT = 100
READY_TIMEOUT = 300.0
INSTRUCTIONS = (
    "Search this workspace's code by name and by meaning (BM25 + symbols + dense vectors, fused). "
    "Call search_code first, then read_span for more lines around a result. find_definition and "
    "find_references answer where a name is defined or used (path:line:col and the line)."
)
MAX_SYMBOL_LIMIT = 500
DEFAULT_MAX_TOKENS = 2000  # search_code's default answer budget (estimated tokens)
MIN_TOKENS, MAX_TOKENS = 50, 100_000
HINT_DEPTH = 40  # search_code looks this deep: a file ranked 11-15 is the near-miss hint
ROW_KEYS = ("path", "start_line", "end_line", "best_line", "symbol", "score", "text", "truncated", "columns")


def row_keys(all_workspaces: bool) -> tuple[str, ...]:
    """The keys of a ``search_code`` result row (``workspace`` too over every workspace)."""
    return ("workspace", *ROW_KEYS) if all_workspaces else ROW_KEYS


def _row_shape(all_workspaces: bool) -> Shape:
    """A budgeted row as ``search_code`` sends it (so the budget counts what is sent)."""
    keep = row_keys(all_workspaces)

    def shape(hit: Hit, row: dict[str, Any]) -> dict[str, Any]:
        return {k: row[k] for k in keep if k in row}

    return shape


class Backend:
    """The workspace the tools answer from: hosted by this process, or by the process that already hosts
    it (then searched here from what it commits, warm either way)."""

    def __init__(self, root: Path, settings: Settings, watch: bool = True) -> None:
        self.root = root
        self.settings = settings
        self.ws = Workspace(root, settings, self._on_event, watch=watch, front_end="mcp")
        self._index_ready = threading.Event()
        self._opened = threading.Event()  # the first load ended, with an index or without
        self._embedder_ready = threading.Event()

    def start(self) -> None:
        self.ws.start()
        if self.ws.problem is not None:  # one line; the tools answer from the index on disk, if any
            print(f"aide-tui: {printable(self.ws.problem)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.ws.close()

    @property
    def source(self) -> str:
        if self.ws.problem is not None:
            return f"in-process, not indexed: {self.ws.problem}"
        return "in-process" if self.ws.hosting else f"in-process, indexed by PID {self.ws.host_pid}"

    def _on_event(self, event: LiveEvent) -> None:
        if isinstance(event, Opened):
            self._opened.set()
        if isinstance(event, Opened) and event.error is None or isinstance(event, Reloaded):
            self._index_ready.set()
        elif isinstance(event, EmbedderReady):
            self._embedder_ready.set()

    def search(
        self,
        query: str,
        limit: int,
        mode: str,
        all_workspaces: bool = False,
        prefix: bool = False,
        max_tokens: int = 0,
    ) -> dict[str, Any]:
        """The search's JSON: hits fitted to ``max_tokens`` (0: each trimmed to 40 lines); ToolError when
        the index is not there or the query cannot be understood (an unknown ``lang:``: the error names
        the valid ones). The search looks a little deeper than ``limit`` so that its hints can name a
        near miss."""
        self._wait_index()
        if mode != "bm25" and self.settings.embedding.backend != "none":
            self._embedder_ready.wait(READY_TIMEOUT)
        try:
            resp = self.ws.search(
                query, limit=max(limit, HINT_DEPTH), mode=mode, all_workspaces=all_workspaces, prefix=prefix
            )
        except IndexProblem as exc:
            raise ToolError(f"index unavailable: {exc}") from None
        if resp.error is not None:
            raise ToolError(resp.error)
        if max_tokens:  # counted as sent: search_code's row keys, in its UTF-8 JSON
            return budgeted_json(resp, max_tokens, limit, _row_shape(all_workspaces), ascii=False)
        resp.results = resp.results[:limit]
        return search_json(resp, with_text=True)

    def symbol(self, what: str, name: str, limit: int) -> dict[str, Any]:
        """``find_definition`` / ``find_references``: the symbol graph's answer, or a ToolError."""
        self._wait_index()
        find = self.ws.definitions if what == "definitions" else self.ws.references
        try:
            answer = find(name, limit)
        except IndexProblem as exc:
            raise ToolError(f"index unavailable: {exc}") from None
        if answer.error:
            raise ToolError(answer.error)
        return answer.to_json()

    def _wait_index(self) -> None:
        """Until an index is loaded; ToolError when none comes (nobody builds one when this process
        cannot take the host lock: the error says why)."""
        if (
            self.ws.problem is not None
            and self._opened.wait(READY_TIMEOUT)
            and not self._index_ready.is_set()
        ):
            raise ToolError(f"no index: {self.ws.problem}")
        if not self._index_ready.wait(READY_TIMEOUT):
            raise ToolError("the index is still being built; try again shortly")

    def status(self) -> dict[str, Any]:
        return self.ws.current_status().to_json()


def _unicode(**args: str | None) -> None:
    """ToolError for an argument holding a lone surrogate: JSON can spell one, but no reply that echoes
    it could be encoded, and the client would wait forever."""
    for name, value in args.items():
        if value is not None and not is_unicode(value):
            raise ToolError(f"{name} is not valid Unicode text (a lone surrogate)")


def _filter_value(kind: str, value: str | None) -> str:
    if value is None or value == "":
        return ""
    if any(ch.isspace() for ch in value):
        raise ToolError(f"{kind} must not contain spaces")
    return f" {kind}:{value}"


def _full_query(query: str, path: str | None, lang: str | None, prefix: bool) -> str:
    """The query with the tool's ``path``/``lang`` as filters; with ``prefix`` the word being typed
    stays last (a space after it says it is complete)."""
    filters = _filter_value("path", path) + _filter_value("lang", lang)
    if prefix:
        return f"{filters} {' '.join(query.split())}".lstrip() + (" " if query[-1].isspace() else "")
    return " ".join(query.split()) + filters


def _tool_answer(answer: dict[str, Any], all_workspaces: bool, max_tokens: int) -> dict[str, Any]:
    """What ``search_code`` returns of the search's JSON."""
    keep = row_keys(all_workspaces)
    out = {k: answer.get(k) for k in ("query", "degraded", "degraded_reason", "confidence", "hints")}
    if max_tokens:
        out.update({k: answer[k] for k in ("max_tokens", "tokens_used", "left_out")})
    if "no_results" in answer:  # nothing supports the query: why, so an agent rephrases
        out["no_results"] = answer["no_results"]
    if "corrected" in answer:  # a misspelt name was searched as spelt here
        out["corrected"] = answer["corrected"]
    if "read_as" in answer:  # a question about one name: what it was answered as
        out["read_as"] = answer["read_as"]
    out["results"] = [{k: r.get(k) for k in keep if k in r} for r in answer["results"]]
    return out


def build_server(backend: Backend) -> MCPServer:
    """The MCP server with its three tools bound to ``backend``."""
    server: MCPServer = MCPServer(name="aide-tui", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    async def search_code(
        query: str,
        limit: int = 10,
        mode: str = "hybrid",
        path: str | None = None,
        lang: str | None = None,
        all_workspaces: bool = False,
        prefix: bool = False,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> Annotated[mcp_types.CallToolResult, dict[str, Any]]:
        """Search the workspace's code. Returns ranked results, each with its file path, the lines
        shown (around its best line), its best line, enclosing symbol, fused score and text; whole
        results in rank order while they fit max_tokens (default 2000, a limit: the answer says
        tokens_used and left_out; a result cut to part of one long line says its "columns"; 0: up to
        limit results of at most 40 lines). Also "confidence" (high, medium or low:
        how sure the first result is) and up to three "hints" to refine the query (a sibling symbol of
        the first result, a near-miss file, an alternate term). Use read_span for more lines.

        query: identifiers or a description in words; also an issue or a change description pasted
        whole, an error or log line, a line or a few lines of code (where it is), "who calls NAME" or
        "tests for NAME" (its uses, "read_as" says so), a name pattern ("*Transport", "test_*redirect*":
        the definitions whose names match), an environment variable (FORCE_COLOR), a command-line flag
        (--no-verify). mode: hybrid (default), bm25 or dense.
        path: a glob or folder to restrict results to (e.g. "src/*.py", "tests"). lang: e.g. "python".
        all_workspaces: search every workspace sharing the index (a Milvus store); each result then
        names its workspace (read_span reads this workspace's files only). prefix: search as you type
        (the query's last word also finds the words it begins: "timeou" finds "timeout").
        An unknown lang is an error that lists the valid names.
        """
        _unicode(query=query, mode=mode, path=path, lang=lang)
        if not query.strip():
            raise ToolError("query is empty")
        if mode not in MODES:
            raise ToolError(f"unknown mode {mode!r}: hybrid, bm25 or dense")
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_LIMIT}")
        if max_tokens != 0 and not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
            raise ToolError(f"max_tokens must be 0 or between {MIN_TOKENS} and {MAX_TOKENS}")
        if all_workspaces:
            try:
                store_kind(backend.settings).require_all_workspaces("all_workspaces")
            except NeedsSharedStore as exc:
                raise ToolError(str(exc)) from None
        full = _full_query(query, path, lang, prefix)
        answer = await anyio.to_thread.run_sync(
            backend.search, full, limit, mode, all_workspaces, prefix, max_tokens
        )
        return _compact(_tool_answer(answer, all_workspaces, max_tokens))

    @server.tool()
    async def find_definition(name: str, limit: int = 20) -> dict[str, Any]:
        """Where a name is defined: each definition's path, line, col, kind, qualified name, last line and
        the defining line's text. name: an identifier, or a qualified one (Client.send). "ambiguous" is
        true (with a "note") when the name has several definitions."""
        return await _symbol_tool(backend, "definitions", name, limit)

    @server.tool()
    async def find_references(name: str, limit: int = 50) -> dict[str, Any]:
        """Where a name is used: calls, imports, attribute uses and names, each with path, line, col, kind
        and the line's text (comments and strings are not references). References are matched by name:
        when the name has several definitions ("ambiguous"), they may be to any of them."""
        return await _symbol_tool(backend, "references", name, limit)

    @server.tool()
    async def index_status() -> dict[str, Any]:
        """The state of the workspace's index: files, chunks, vectors, embedder, last indexed time."""
        status = await anyio.to_thread.run_sync(backend.status)
        return {**status, "root": str(backend.root), "source": backend.source}

    @server.tool()
    async def read_span(path: str, start_line: int, end_line: int) -> dict[str, Any]:
        """Lines start_line..end_line (1-based, inclusive, at most 400) of a file, by its path relative to the
        workspace root (as search_code returns it). Secrets files, '..', absolute paths and symlinks are
        refused."""
        _unicode(path=path)
        try:
            span = await anyio.to_thread.run_sync(
                _read_span, backend.root, backend.settings, path, start_line, end_line
            )
        except SpanRefused as exc:
            raise ToolError(str(exc)) from None
        return span.to_json()

    return server


_read_span = read_span  # the tool above shadows the name inside build_server


def _compact(answer: dict[str, Any]) -> mcp_types.CallToolResult:
    """A tool's answer as its structured result and, for the text block, its compact JSON (the SDK
    would indent it, and the budget counts the rows as this JSON holds them)."""
    text = json.dumps(answer, ensure_ascii=False)
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)],
                                    structured_content=answer)  # fmt: skip


async def _symbol_tool(backend: Backend, what: str, name: str, limit: int) -> dict[str, Any]:
    _unicode(name=name)
    if not name.strip():
        raise ToolError("name is empty")
    if not 1 <= limit <= MAX_SYMBOL_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_SYMBOL_LIMIT}")
    return await anyio.to_thread.run_sync(backend.symbol, what, name, limit)  # type: ignore[no-any-return]


UNREADABLE = "the request is not valid Unicode text (it spells a lone surrogate such as \\ud800)"


def reply_to_unreadable(exc: Exception) -> SessionMessage | None:
    """An error reply to a line the SDK could not parse but which is a JSON-RPC request (the SDK's
    parser refuses a lone surrogate that JSON itself allows, and drops the request: its client would
    wait forever). A ``tools/call`` gets a tool error, any other method an invalid-params error."""
    errors = getattr(exc, "errors", None)
    try:
        line = errors()[0].get("input") if callable(errors) else None
        request = json.loads(line) if isinstance(line, str) else None
    except (ValueError, IndexError, TypeError, RecursionError):
        return None
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return None
    rid = request.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None  # a notification (no id) gets no reply
    if request["method"] == "tools/call":
        result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=UNREADABLE)],
                                          is_error=True)  # fmt: skip
        dumped = result.model_dump(by_alias=True, exclude_none=True)
        return SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=rid, result=dumped))
    error = mcp_types.ErrorData(code=mcp_types.INVALID_PARAMS, message=UNREADABLE)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=rid, error=error))


class InFlight:
    """The ids of the client's requests not answered yet, so that the end of its input (EOF right after
    a request, as ``printf '…' | aide-tui mcp`` gives) waits for their answers instead of dropping them
    with the session."""

    def __init__(self) -> None:
        self.ids: set[str | int] = set()
        self._changed = anyio.Event()

    def saw(self, item: SessionMessage) -> None:
        """Note a message from the client: a request is awaited; a cancellation is not any more (a
        cancelled request gets no answer)."""
        msg = item.message
        if isinstance(msg, mcp_types.JSONRPCRequest):
            self.ids.add(msg.id)
        elif isinstance(msg, mcp_types.JSONRPCNotification) and msg.method == "notifications/cancelled":
            rid = (msg.params or {}).get("requestId")
            if isinstance(rid, str | int):
                self._settle(rid)

    def answered(self, item: SessionMessage) -> None:
        """Note a message to the client: a response or an error settles its request."""
        msg = item.message
        if isinstance(msg, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError) and msg.id is not None:
            self._settle(msg.id)

    def _settle(self, rid: str | int) -> None:
        self.ids.discard(rid)
        self._changed.set()
        self._changed = anyio.Event()

    async def drained(self, timeout: float) -> None:
        """Return once every awaited request is answered, or after ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            while self.ids:
                await self._changed.wait()


DRAIN_TIMEOUT = 300.0  # seconds the answers to requests read before EOF may take (a cold first search)


async def serve_stdio(server: MCPServer) -> None:
    """``MCPServer.run_stdio_async``, with :func:`reply_to_unreadable` between the transport and the
    server, and the session kept open after EOF until the requests read before it are answered: every
    request gets an answer."""
    lowlevel = server._lowlevel_server
    flight = InFlight()
    async with stdio_server() as (read_stream, write_stream):
        relay: MemoryObjectSendStream[SessionMessage | Exception]
        relay, relayed = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        replies: MemoryObjectSendStream[SessionMessage]
        replies, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

        async def forward() -> None:
            async with relay:
                async for item in read_stream:
                    reply = reply_to_unreadable(item) if isinstance(item, Exception) else None
                    if reply is not None:
                        await write_stream.send(reply)
                    else:
                        if isinstance(item, SessionMessage):
                            flight.saw(item)
                        await relay.send(item)
                await flight.drained(DRAIN_TIMEOUT)

        async def answer() -> None:
            async with outgoing:
                async for item in outgoing:
                    await write_stream.send(item)
                    flight.answered(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            tg.start_soon(answer)
            async with replies:
                await lowlevel.run(relayed, replies, lowlevel.create_initialization_options())
            # ``forward`` closed the session once every request was answered (and written: ``answer``
            # notes an answer after sending it); the SDK may still hold clones of ``replies`` open, so
            # ``answer`` would wait for more: stop it.
            tg.cancel_scope.cancel()
        await write_stream.aclose()  # the transport's writer flushes what is left, then ends


def run_stdio(root: Path, settings: Settings, watch: bool = True) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    backend = Backend(root, settings, watch=watch)
    backend.start()
    try:
        anyio.run(serve_stdio, build_server(backend))
    finally:
        backend.close()
