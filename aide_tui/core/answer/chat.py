"""Streaming chat clients for local model servers, as typed events.

Two wire formats: OpenAI-style ``POST /v1/chat/completions`` with ``"stream": true`` (llama.cpp's
``llama-server``, llamafile, LM Studio, vLLM), server-sent events ending with ``data: [DONE]``; and
Ollama's ``POST /api/chat``, one JSON object per line ending with ``"done": true``. A client never
raises for what the server does: the stream's last event is :class:`StreamDone` or
:class:`StreamError` (refused, too slow, cut mid-answer, HTTP error, invalid JSON, cancelled).
Endpoints are loopback unless the user opted in (:mod:`aide_tui.core.embed.policy`).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from aide_tui.core.embed.policy import display_url, endpoint_url, request_problem
from aide_tui.core.httpclient import shared_client
from aide_tui.core.watchdog import SocketWatchdog

MAX_LINE = 1 << 20  # bytes of one stream line
MAX_STREAM = 32 << 20  # bytes of a whole answer
ERROR_BODY = 4096  # bytes of an HTTP error's body kept for the message
TEMPERATURE = 0.2  # answers from excerpts, not stories
REMOTE_OPT_IN = (
    "your code would leave this machine; pass --allow-remote-model (or AIDE_ANSWER_ALLOW_REMOTE=1, "
    "or allow_remote = true under [answer] in ~/.config/aide-tui/config.toml) to allow it"
)
BACKENDS = ("openai", "ollama")
DEFAULT_URLS = {"openai": "http://127.0.0.1:8080", "ollama": "http://127.0.0.1:11434"}


# -- events ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenText:
    """A piece of the answer as it arrives."""

    text: str


@dataclass(frozen=True)
class Usage:
    """Token counts as the server reported them (None: not reported)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class StreamDone:
    """The answer is complete. ``model`` as the server named it (else as configured)."""

    model: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class StreamError:
    """The answer stopped. ``kind``: unreachable | timeout | cancelled | http | protocol | server."""

    kind: str
    message: str
    reason: str = ""  # unreachable: why, in a few words ("connection refused")


StreamEvent = TokenText | Usage | StreamDone | StreamError


class ChatError(ValueError):
    """The client cannot be built (unknown backend, refused URL, no model name); the message says why."""


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    if not flat:
        return "(empty body)"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


# -- wire formats ------------------------------------------------------------------------------------


class _Parser:
    """Turns stream lines into events; ``finished`` once the terminal event was produced."""

    def __init__(self, model: str, where: str) -> None:
        self.model = model
        self.where = where
        self.finished = False
        self.tokens = 0

    def feed(self, line: str) -> list[StreamEvent]:  # pragma: no cover - overridden
        raise NotImplementedError

    def end(self) -> StreamError:
        """The connection closed before the terminal event."""
        return StreamError(
            "protocol",
            f"{self.where} ended the stream before it was complete ({self._terminal} missing; "
            f"cut after {self.tokens} pieces of the answer)",
        )

    _terminal = ""

    def _json(self, text: str) -> Any:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return _INVALID

    def _invalid(self, text: str) -> StreamError:
        self.finished = True
        return StreamError("protocol", f"{self.where} sent invalid JSON in the stream: {_excerpt(text, 120)}")

    def _server_error(self, err: Any) -> StreamError:
        self.finished = True
        message = err.get("message") if isinstance(err, dict) else err
        return StreamError("server", f"{self.where} reported an error: {_excerpt(str(message))}")

    def _token(self, content: Any) -> list[StreamEvent]:
        if isinstance(content, str) and content:
            self.tokens += 1
            return [TokenText(content)]
        return []


_INVALID = object()


class _SSEParser(_Parser):
    """OpenAI-style server-sent events: ``data: {chunk}`` lines, then ``data: [DONE]``."""

    _terminal = "data: [DONE]"

    def __init__(self, model: str, where: str) -> None:
        super().__init__(model, where)
        self.usage: Usage | None = None
        self.finish: str | None = None

    def feed(self, line: str) -> list[StreamEvent]:
        if line.startswith("error:"):  # llama.cpp builds of 2025 sent mid-stream errors as this field
            payload = self._json(line[6:].strip())
            return [self._server_error(payload if payload is not _INVALID else line[6:].strip())]
        if not line.startswith("data:"):
            return []  # blank line, comment (": ping"), event:, id:, retry:
        data = line[5:].removeprefix(" ")
        if data.strip() == "[DONE]":
            self.finished = True
            head: list[StreamEvent] = [self.usage] if self.usage is not None else []
            return [*head, StreamDone(self.model, self.finish)]
        chunk = self._json(data)
        if chunk is _INVALID:
            return [self._invalid(data)]
        if not isinstance(chunk, dict):
            self.finished = True
            return [StreamError("protocol", f"{self.where} sent an unexpected event: {_excerpt(data, 120)}")]
        if "error" in chunk:
            return [self._server_error(chunk["error"])]
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
        out: list[StreamEvent] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                out += self._token(delta.get("content"))
            if isinstance(choice.get("finish_reason"), str):
                self.finish = choice["finish_reason"]
        return out


class _NDJSONParser(_Parser):
    """Ollama: one JSON object per line, ``message.content`` pieces, then ``"done": true``."""

    _terminal = '"done": true'

    def feed(self, line: str) -> list[StreamEvent]:
        if not line.strip():
            return []
        obj = self._json(line)
        if obj is _INVALID:
            return [self._invalid(line)]
        if not isinstance(obj, dict):
            self.finished = True
            return [StreamError("protocol", f"{self.where} sent an unexpected line: {_excerpt(line, 120)}")]
        if "error" in obj:
            return [self._server_error(obj["error"])]
        if isinstance(obj.get("model"), str) and obj["model"]:
            self.model = obj["model"]
        message = obj.get("message")
        out = self._token(message.get("content")) if isinstance(message, dict) else []
        if obj.get("done") is True:
            self.finished = True
            reason = obj.get("done_reason")
            out += [
                Usage(_count(obj.get("prompt_eval_count")), _count(obj.get("eval_count"))),
                StreamDone(self.model, reason if isinstance(reason, str) else None),
            ]
        return out


# -- clients -----------------------------------------------------------------------------------------


class ChatClient:
    """Streams one chat completion at a time from a local model server; see the module docstring."""

    backend = ""
    _path = ""

    def __init__(self, url: str = "", model: str = "", *, allow_remote: bool = False, timeout: float = 120.0,
                 client: httpx.Client | None = None) -> None:  # fmt: skip
        """``url`` empty = the backend's loopback default; ``timeout`` bounds a whole answer."""
        self.url = (url or DEFAULT_URLS[self.backend]).strip()
        self.model = model.strip()
        self.endpoint = endpoint_url(self.url, self._path)
        problem = request_problem(self.endpoint, allow_remote, "model server", REMOTE_OPT_IN)
        if problem is not None:
            raise ChatError(problem)
        self.shown = display_url(self.url)
        self.where = f"model server at {self.shown}"
        self.timeout = timeout
        self._client = client or shared_client()  # no proxy, no redirects, a socket per request

    def close(self) -> None:
        """Nothing to release: the HTTP client is the process's shared one, or the caller's."""

    def body(self, messages: list[dict[str, str]], context_tokens: int | None) -> dict[str, Any]:
        """The request body for ``messages`` (``context_tokens``: the prompt's estimated size)."""
        raise NotImplementedError  # pragma: no cover - overridden

    def _parser(self) -> _Parser:
        raise NotImplementedError  # pragma: no cover - overridden

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        context_tokens: int | None = None,
    ) -> Iterator[StreamEvent]:
        """The answer's events; the last is StreamDone or StreamError. ``deadline`` (monotonic seconds)
        ends a stream that takes longer (default: now + timeout); setting ``cancel`` ends it at once."""
        deadline = time.monotonic() + self.timeout if deadline is None else deadline
        left = deadline - time.monotonic()
        if left <= 0:
            yield StreamError("timeout", f"{self.where}: no time left for the answer")
            return
        parser = self._parser()
        dog = SocketWatchdog(left, cancel)
        timeout = httpx.Timeout(left, connect=min(left, 10.0))
        try:
            with self._client.stream("POST", self.endpoint, json=self.body(messages, context_tokens),
                                     timeout=timeout, extensions={"trace": dog.trace}) as resp:  # fmt: skip
                if resp.status_code != 200:
                    yield self._http_error(resp)
                    return
                for line in _lines(resp, self.where):
                    if isinstance(line, StreamError):
                        yield line
                        return
                    yield from parser.feed(line)
                    if parser.finished:
                        return
            yield self._cut(dog, parser, cancel)
        except httpx.ConnectTimeout:
            reason = "no connection accepted in time"
            yield StreamError("unreachable", f"{self.where}: {reason}", reason)
        except httpx.ConnectError as exc:
            reason = "connection refused" if "refused" in str(exc).lower() else _excerpt(str(exc), 120)
            yield StreamError("unreachable", f"{self.where} is not reachable ({reason})", reason)
        except (httpx.TransportError, httpx.StreamError) as exc:
            yield self._cut(dog, parser, cancel, exc)
        except RuntimeError as exc:  # e.g. a closed client supplied by the caller
            yield StreamError("protocol", f"{self.where} cannot be used: {exc}")
        finally:
            dog.cancel()

    def _cut(self, dog: SocketWatchdog, parser: _Parser, cancel: threading.Event | None,
             exc: Exception | None = None) -> StreamError:  # fmt: skip
        """Why the stream stopped early: cancelled, out of time, or the server broke off."""
        if dog.cancelled or (cancel is not None and cancel.is_set()):
            return StreamError("cancelled", "cancelled")
        if dog.fired or isinstance(exc, httpx.TimeoutException):
            return StreamError("timeout", f"{self.where} did not finish the answer within {self.timeout:g}s")
        if exc is not None and not isinstance(exc, httpx.RemoteProtocolError):
            detail = _excerpt(str(exc) or type(exc).__name__, 120)
            return StreamError("protocol", f"{self.where} broke off the answer ({detail})")
        return parser.end()

    def _http_error(self, resp: httpx.Response) -> StreamError:
        raw = b""
        for chunk in resp.iter_bytes(ERROR_BODY):
            raw += chunk
            if len(raw) >= ERROR_BODY:
                break
        text = raw.decode("utf-8", errors="replace")
        try:
            data = json.loads(text)
            err = data.get("error", data) if isinstance(data, dict) else data
            text = str(err.get("message", err)) if isinstance(err, dict) else str(err)
        except (ValueError, RecursionError):
            pass
        return StreamError("http", f"{self.where} returned HTTP {resp.status_code}: {_excerpt(text)}")


def _lines(resp: httpx.Response, where: str) -> Iterator[str | StreamError]:
    """The body's lines as they arrive (``\\r`` stripped), bounded in length and in total."""
    buf = b""
    total = 0
    for chunk in resp.iter_bytes():
        total += len(chunk)
        if total > MAX_STREAM:
            yield StreamError("protocol", f"{where} sent more than {MAX_STREAM >> 20} MB")
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.rstrip(b"\r").decode("utf-8", errors="replace")
        if len(buf) > MAX_LINE:
            yield StreamError("protocol", f"{where} sent a line longer than {MAX_LINE >> 20} MB")
            return
    if buf.strip():
        yield buf.rstrip(b"\r").decode("utf-8", errors="replace")  # "data: [DONE]" without a newline


class OpenAIChat(ChatClient):
    """``POST {url}/v1/chat/completions`` with ``stream: true`` (llama.cpp, llamafile, LM Studio, vLLM)."""

    backend = "openai"
    _path = "/v1/chat/completions"

    def body(self, messages: list[dict[str, str]], context_tokens: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": TEMPERATURE,
        }
        if self.model:  # llama.cpp answers with the model it loaded; others need the name
            out["model"] = self.model
        return out

    def _parser(self) -> _Parser:
        return _SSEParser(self.model, self.where)


class OllamaChat(ChatClient):
    """Ollama's ``POST {url}/api/chat`` (NDJSON stream). The context window is sized to the prompt:
    Ollama's default one would silently cut a longer prompt."""

    backend = "ollama"
    _path = "/api/chat"

    def __init__(self, url: str = "", model: str = "", **kwargs: Any) -> None:
        if not model.strip():
            raise ChatError(
                "the ollama backend needs a model name: --model NAME or model under [answer] "
                "(e.g. qwen2.5-coder:7b after `ollama pull qwen2.5-coder:7b`)"
            )
        super().__init__(url, model, **kwargs)

    def body(self, messages: list[dict[str, str]], context_tokens: int | None) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": TEMPERATURE}
        if context_tokens:
            options["num_ctx"] = context_window(context_tokens)
        return {"model": self.model, "messages": messages, "stream": True, "options": options}

    def _parser(self) -> _Parser:
        return _NDJSONParser(self.model, self.where)


ANSWER_ROOM = 1024  # tokens left for the answer in a context window sized to the prompt
MIN_WINDOW = 4096


def context_window(prompt_tokens: int) -> int:
    """A context window for a prompt of about ``prompt_tokens``: room for the answer, rounded up to
    1024 (so a few different prompts share one loaded model), never below Ollama's 4096."""
    return max(MIN_WINDOW, math.ceil((prompt_tokens + ANSWER_ROOM) / 1024) * 1024)


def make_chat(backend: str, url: str = "", model: str = "", *, allow_remote: bool = False,
              timeout: float = 120.0) -> ChatClient:  # fmt: skip
    """The client for ``backend`` (openai | ollama); ChatError when it cannot be used."""
    if backend not in BACKENDS:
        raise ChatError(f"unknown answer backend {backend!r} ({', '.join(BACKENDS)})")
    cls: type[ChatClient] = OpenAIChat if backend == "openai" else OllamaChat
    return cls(url, model, allow_remote=allow_remote, timeout=timeout)
