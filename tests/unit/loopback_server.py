"""A real HTTP embedding server on 127.0.0.1 for tests (OpenAI-compatible and Ollama formats).

Usage::

    from loopback_server import LoopbackServer

    with LoopbackServer(dim=8) as srv:          # listening on srv.url (http://127.0.0.1:<port>)
        OpenAIEmbedder(srv.url).embed(["a"])    # POST /v1/embeddings -> {"data": [...]}
        OllamaEmbedder(srv.url).embed(["a"])    # POST /api/embed     -> {"embeddings": [...]}
        srv.set_mode("error", times=1)          # next request answers HTTP 500, then back to normal
        srv.requests[-1].body["input"]          # every request is recorded (method, path, JSON body)

As a fixture::

    @pytest.fixture
    def server() -> Iterator[LoopbackServer]:
        with LoopbackServer() as srv:
            yield srv

Modes (apply to POST requests): ``normal``, ``error`` (HTTP ``status``, default 500), ``wrong_dim``
(``dim + 1`` values), ``nan`` (a NaN in the first vector), ``fewer`` (one vector fewer than inputs),
``invalid_json``, ``hang`` (block until :meth:`release` or close), ``slow`` (sleep ``delay`` seconds first),
``reversed`` (OpenAI ``data`` listed in reverse index order), ``drip`` (the whole reply, status line and
headers included, one byte every ``delay`` seconds), ``silent`` (read the request, never answer, close on
:meth:`release` or close), ``zero`` (all-zero vectors), ``huge`` (values beyond float32 in the first
vector), ``endless`` (a 200 OK without length that streams zeros until the client leaves; stops at 1 GB),
``oversize`` (declares a 100 MB body). ``srv.handler = fn`` with
``fn(path, body) -> (status, body)`` overrides everything (dict/list bodies are sent as JSON, str/bytes raw).
GET ``/health`` answers ``{"status": "ok"}``. Vectors come from :func:`fake_vector` (deterministic, not
normalised). The server thread is a daemon; :meth:`close` releases hangs and shuts it down.
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

Handler = Callable[[str, Any], tuple[int, Any]]
MODES = (
    "normal", "error", "wrong_dim", "nan", "fewer", "invalid_json", "hang", "slow", "reversed",
    "drip", "silent", "zero", "huge", "endless", "oversize",
)  # fmt: skip
HANG_LIMIT = 30.0  # seconds a "hang" request blocks at most, even if never released


@dataclass(frozen=True)
class Request:
    """One request as received: method, path and the JSON body (None when absent or not JSON)."""

    method: str
    path: str
    body: Any


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic hashed bag-of-characters vector (equal texts give equal vectors; never all zero)."""
    vec = [0.0] * dim
    vec[0] = 0.5
    for ch in text:
        vec[zlib.crc32(ch.encode("utf-8")) % dim] += 1.0
    return vec


class LoopbackServer:
    """Threaded fake embedding server on 127.0.0.1 with a random free port; see the module docstring."""

    def __init__(self, dim: int = 8, mode: str = "normal") -> None:
        self.dim = dim
        self.handler: Handler | None = None
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.set_mode(mode)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="loopback-server",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def set_mode(self, mode: str, *, times: int | None = None, status: int = 500, delay: float = 0.5) -> None:
        """Answer the next ``times`` POSTs (all if None) in ``mode``, then go back to ``normal``."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        with self._lock:
            self.mode, self._times, self.status, self.delay = mode, times, status, delay

    def release(self) -> None:
        """Let every current and future ``hang`` request proceed."""
        self._release.set()

    @property
    def inputs(self) -> list[list[str]]:
        """The ``input`` list of each recorded POST, in arrival order."""
        out = []
        for r in self.requests:
            if r.method == "POST" and isinstance(r.body, dict):
                inp = r.body.get("input")
                out.append([inp] if isinstance(inp, str) else list(inp or []))
        return out

    def close(self) -> None:
        """Release hangs, stop serving and close the listening socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- request handling (server threads) ---------------------------------------------------------------

    def _record(self, method: str, path: str, body: Any) -> str:
        """Record a request and return the mode that applies to it."""
        with self._lock:
            self.requests.append(Request(method, path, body))
            if method != "POST":
                return "normal"
            mode = self.mode
            if self._times is not None:
                self._times -= 1
                if self._times <= 0:
                    self.mode, self._times = "normal", None
            return mode

    def _respond(self, method: str, path: str, body: Any) -> tuple[int, Any, str]:
        """(status, payload, mode) for one request; the handler applies the transport modes."""
        mode = self._record(method, path, body)
        if mode in ("silent", "endless", "oversize"):
            return 200, b"", mode
        status, payload = self._answer(method, path, body, mode)
        return status, payload, mode

    def _answer(self, method: str, path: str, body: Any, mode: str) -> tuple[int, Any]:
        if self.handler is not None:
            return self.handler(path, body)
        if method == "GET":
            return (200, {"status": "ok"}) if path.rstrip("/") == "/health" else (404, {"error": "not found"})
        if mode == "error":
            return self.status, {"error": {"code": self.status, "message": f"fake failure ({mode})"}}
        if mode == "invalid_json":
            return 200, "this is {not json"
        if mode == "hang":
            self._release.wait(HANG_LIMIT)
        elif mode == "slow":
            time.sleep(self.delay)
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list):
            return 400, {"error": {"code": 400, "message": "'input' must be a string or a list of strings"}}
        dim = self.dim + 1 if mode == "wrong_dim" else self.dim
        vectors = [fake_vector(str(t), dim) for t in texts]
        if mode == "nan" and vectors:
            vectors[0][0] = math.nan
        if mode == "zero":
            vectors = [[0.0] * dim for _ in vectors]
        if mode == "huge" and vectors:
            vectors[0] = [1e39] * dim  # finite in JSON and float64, inf as float32
        if mode == "fewer":
            vectors = vectors[:-1]
        model = body.get("model", "")
        if path.rstrip("/").endswith("/api/embed"):
            return 200, {"model": model, "embeddings": vectors}
        if path.rstrip("/").endswith("/embeddings"):
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            if mode == "reversed":
                data.reverse()
            return 200, {"object": "list", "model": model, "data": data, "usage": {"prompt_tokens": 0}}
        return 404, {"error": {"code": 404, "message": f"no route {path}"}}


class _RequestHandler(BaseHTTPRequestHandler):
    """Reads the body, asks the owning LoopbackServer, writes the answer (HTTP/1.0, one request each)."""

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner: LoopbackServer = self.server.owner  # type: ignore[attr-defined]
        status, payload, mode = owner._respond(method, self.path, body)
        if isinstance(payload, bytes):
            data, ctype = payload, "application/octet-stream"
        elif isinstance(payload, str):
            data, ctype = payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode("utf-8"), "application/json"
        try:
            if mode == "silent":
                owner._release.wait(HANG_LIMIT)
                return  # the connection closes without a byte of answer
            if mode == "endless":
                self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
                block = b"0" * (1 << 20)
                for _ in range(1024):
                    self.wfile.write(block)
                return
            if mode == "oversize":
                head = (
                    b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n"
                )
                self.wfile.write(head + b"[")
                return
            if mode == "drip":
                head = (
                    f"HTTP/1.0 {status} OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n"
                ).encode()
                for i in range(len(head) + len(data)):
                    if owner._release.is_set():
                        return
                    self.wfile.write((head + data)[i : i + 1])
                    self.wfile.flush()
                    time.sleep(owner.delay)
                return
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (e.g. timed out on a hang)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self._handle("POST")

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._handle("GET")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base class
        pass
