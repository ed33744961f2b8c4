"""A real HTTP model server on 127.0.0.1 for tests: chat (OpenAI SSE, Ollama NDJSON) and rerank.

It speaks the wire formats as llama.cpp's ``llama-server`` and Ollama do (HTTP/1.1, chunked)::

    POST /v1/chat/completions  {"messages", "stream": true}  -> text/event-stream:
        data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],...}
        data: {"choices":[{"index":0,"delta":{"content":"piece"},"finish_reason":null}],...}   (each piece)
        data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],...}
        data: {"choices":[],"usage":{"prompt_tokens":P,"completion_tokens":C,"total_tokens":T},...}
        data: [DONE]
    POST /api/chat  {"model", "messages", "stream": true}  -> application/x-ndjson:
        {"model":M,"created_at":..,"message":{"role":"assistant","content":"piece"},"done":false}   (each)
        {"model":M,...,"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",
         "prompt_eval_count":P,"eval_count":C}
    POST /v1/rerank  {"model", "query", "documents", "top_n"}  -> {"model":..,"object":"list",
        "usage":{..},"results":[{"index":i,"relevance_score":s}, ...]}  (best first)

The answer is ``srv.reply`` (a string, or ``fn(body) -> str``; default: cites every excerpt number the
prompt lists); it is streamed in word-sized pieces. Rerank scores come from ``srv.scores``
(``fn(query, documents) -> list[float]``; default: how many query words each document holds).
Every request is recorded in ``srv.requests`` (method, path, JSON body); ``srv.prompt()`` is the last
chat request's messages joined.

Modes (``srv.set_mode(mode, delay=...)``, for every POST): ``normal``; ``slow_first`` (sleep ``delay``
before the status line); ``drip`` (sleep ``delay`` before each piece); ``cut`` (half the pieces, then the
connection closes without the stream's end); ``error`` (HTTP 500 with a JSON error); ``invalid_json``
(a stream line, or the rerank body, that is not JSON); ``stream_error`` (a mid-stream error object);
``old_error`` (llama.cpp 2025's ``error: {...}`` SSE field); ``hold`` (OpenAI SSE: half the pieces, then
nothing more until :meth:`release`: an answer caught mid-stream); ``silent`` (read the request, never answer
until :meth:`release` or close); ``out_of_range`` (rerank: an index beyond the documents);
``no_done`` (the body ends cleanly but without ``[DONE]`` / ``done: true``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

MODES = ("normal", "slow_first", "drip", "cut", "error", "invalid_json", "stream_error", "old_error",
         "silent", "out_of_range", "no_done", "hold")  # fmt: skip
HANG_LIMIT = 30.0
MODEL = "fake-coder-1b"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any


def cite_everything(body: Any) -> str:
    """The default answer: one sentence citing each excerpt the prompt lists."""
    text = "\n".join(m.get("content", "") for m in body.get("messages", []))
    numbers = re.findall(r"^\[(\d+)\] \S+:\d+-\d+", text, re.M)
    cites = "".join(f"[{n}]" for n in numbers)
    return f"The answer is in the excerpts {cites}." if numbers else "I cannot tell from the excerpts."


def word_overlap(query: str, documents: list[str]) -> list[float]:
    """The default rerank score: how many of the query's words each document holds."""
    words = set(re.findall(r"\w+", query.lower()))
    return [float(len(words & set(re.findall(r"\w+", d.lower())))) for d in documents]


def pieces(text: str) -> list[str]:
    """Word-sized pieces whose concatenation is ``text``."""
    return re.findall(r"\s*\S+|\s+", text) or [""]


class ModelServer:
    """Threaded fake model server on a free 127.0.0.1 port; see the module docstring."""

    def __init__(self, mode: str = "normal", delay: float = 0.5, port: int = 0) -> None:
        """``port``: 0 (any free one), or a fixed one where the URL must not change (snapshots)."""
        self.reply: str | Callable[[Any], str] = cite_everything
        self.scores: Callable[[str, list[str]], list[float]] = word_overlap
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.set_mode(mode, delay=delay)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="model-server", daemon=True)  # fmt: skip
        self._thread.start()
        self._closed = False

    def set_mode(self, mode: str, delay: float = 0.5) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self.mode, self.delay = mode, delay

    def release(self) -> None:
        self._release.set()

    def prompt(self) -> str:
        """The messages of the last chat request, joined by newlines."""
        chats = [r for r in self.requests if r.path.endswith(("/chat/completions", "/api/chat"))]
        assert chats, "no chat request arrived"
        return "\n".join(m["content"] for m in chats[-1].body["messages"])

    def answer_for(self, body: Any) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.close()


def _sse_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"finish_reason": finish, "index": 0, "delta": delta}], "created": int(time.time()),
            "id": "chatcmpl-test", "model": MODEL, "system_fingerprint": "b0-test",
            "object": "chat.completion.chunk"}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> ModelServer:
        return self.server.owner  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.owner.requests.append(Request("GET", self.path, None))
        self._json(200 if self.path == "/health" else 404, {"status": "ok"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        owner = self.owner
        with owner._lock:
            owner.requests.append(Request("POST", self.path, body))
        mode = owner.mode
        self.close_connection = True
        try:
            if mode == "silent":
                owner._release.wait(HANG_LIMIT)
                return
            if mode == "slow_first":
                time.sleep(owner.delay)
            if mode == "error":
                self._json(500, {"error": {"code": 500, "message": "fake failure", "type": "server_error"}})
                return
            if self.path.endswith("/v1/rerank"):
                self._rerank(body, mode)
            elif self.path.endswith("/v1/chat/completions"):
                self._openai(body, mode)
            elif self.path.endswith("/api/chat"):
                self._ollama(body, mode)
            else:
                self._json(404, {"error": "not found"})
        except OSError:
            pass  # the client left

    # -- framing -------------------------------------------------------------------------------------------

    def _json(self, status: int, payload: Any, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _pieces(self, body: Any, mode: str) -> tuple[list[str], bool]:
        """(pieces to send, whether to cut the connection after them)."""
        parts = pieces(self.owner.answer_for(body))
        if mode == "cut":
            return parts[: max(1, len(parts) // 2)], True
        return parts, False

    def _pause(self, mode: str) -> bool:
        """Between pieces; False once the server is closing."""
        if mode == "drip":
            self.owner._release.wait(self.owner.delay)
        return not self.owner._closed

    # -- formats -------------------------------------------------------------------------------------------

    def _openai(self, body: Any, mode: str) -> None:
        self._start_stream("text/event-stream")

        def event(obj: Any) -> None:
            self._chunk(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

        event(_sse_chunk({"role": "assistant", "content": None}))
        parts, cut = self._pieces(body, mode)
        for i, piece in enumerate(parts):
            if not self._pause(mode):
                return
            if mode == "hold" and i == max(1, len(parts) // 2):
                self.owner._release.wait(HANG_LIMIT)
            if mode == "invalid_json" and i == 1:
                event(b'{"choices": [{"delta": {"content": "x"')
            if mode == "stream_error" and i == 1:
                event({"error": {"code": 500, "message": "model crashed mid-answer", "type": "server_error"}})
                event(b"[DONE]")
                self._end_stream()
                return
            if mode == "old_error" and i == 1:
                self._chunk(b'error: {"code":400,"message":"the request exceeds the available context size",'
                            b'"type":"invalid_request_error"}\n\n')  # fmt: skip
                event(b"[DONE]")
                self._end_stream()
                return
            event(_sse_chunk({"content": piece}))
        if cut:
            return  # no terminating chunk: the connection just closes
        prompt = sum(len(m.get("content", "")) for m in body["messages"]) // 4
        event(_sse_chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": prompt, "completion_tokens": len(parts),
                     "total_tokens": prompt + len(parts)}  # fmt: skip
            event({**_sse_chunk({}), "choices": [], "usage": usage})
        if mode != "no_done":
            event(b"[DONE]")
        self._end_stream()

    def _ollama(self, body: Any, mode: str) -> None:
        self._start_stream("application/x-ndjson")
        model = body.get("model") or MODEL

        def line(obj: Any) -> None:
            self._chunk((obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n")

        parts, cut = self._pieces(body, mode)
        stamp = "2025-01-01T00:00:00Z"
        for i, piece in enumerate(parts):
            if not self._pause(mode):
                return
            if mode == "hold" and i == max(1, len(parts) // 2):
                self.owner._release.wait(HANG_LIMIT)
            if mode == "invalid_json" and i == 1:
                line(b'{"model": "x", "message": {"content"')
            if mode == "stream_error" and i == 1:
                line({"error": "model runner has unexpectedly stopped"})
                self._end_stream()
                return
            line({"model": model, "created_at": stamp, "message": {"role": "assistant", "content": piece},
                  "done": False})  # fmt: skip
        if cut:
            return
        if mode != "no_done":
            prompt = sum(len(m.get("content", "")) for m in body["messages"]) // 4
            line({"model": model, "created_at": stamp, "message": {"role": "assistant", "content": ""},
                  "done": True, "done_reason": "stop", "total_duration": 1000, "prompt_eval_count": prompt,
                  "eval_count": len(parts)})  # fmt: skip
        self._end_stream()

    def _rerank(self, body: Any, mode: str) -> None:
        if mode == "invalid_json":
            self._json(200, None, raw=b'{"results": [{"index": 0, "relevance')
            return
        docs = body.get("documents") or []
        scores = self.owner.scores(body.get("query", ""), docs)
        results = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                         key=lambda r: -r["relevance_score"])  # fmt: skip
        if mode == "out_of_range":
            results.append({"index": len(docs) + 3, "relevance_score": 1.0})
        if mode == "drip":
            time.sleep(self.owner.delay)
        self._json(200, {"model": body.get("model") or MODEL, "object": "list",
                         "usage": {"prompt_tokens": 10, "total_tokens": 10}, "results": results})  # fmt: skip
