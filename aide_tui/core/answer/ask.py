"""Ask the code: retrieve → select → prompt → stream, as events a front end renders.

``ask(question, search, settings.answer, cancel=ev)`` yields, in order: one :class:`Retrieved` (the
hits and the excerpts sent, with their token estimate), the answer's :class:`TokenText` pieces as
they arrive, then exactly one of :class:`Answered` (with citations and usage), :class:`AskFailed`
(a one-line message; ``setup`` when no model server is configured or answers) or
:class:`AskCancelled`. It never raises for bad input or a failing server. The whole run — retrieval
included — has one deadline (``answer.timeout``); setting ``cancel`` ends it at the next piece or
immediately if the server is silent. Nothing is written to disk.

``search`` is the front end's own search pipeline (``Searcher.search``), so asking ranks exactly as
searching does.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from aide_tui.core.answer.chat import (
    DEFAULT_URLS,
    ChatClient,
    ChatError,
    StreamDone,
    StreamError,
    TokenText,
    Usage,
    make_chat,
)
from aide_tui.core.answer.citations import Citation, resolve
from aide_tui.core.answer.prompt import Excerpt, HitLike, build_prompt
from aide_tui.core.config import AnswerSettings

MAX_QUESTION = 20_000  # characters
PROBE_TIMEOUT = 2.0  # seconds to wait for the model server to accept a connection


class ResponseLike(Protocol):
    """What ``search`` returns (``SearchResponse``): read only."""

    @property
    def results(self) -> Sequence[HitLike]: ...

    @property
    def error(self) -> str | None: ...

    @property
    def degraded_reason(self) -> str | None: ...


SearchFn = Callable[[str, int], ResponseLike]


@dataclass(frozen=True)
class Retrieved:
    """The context of the answer: the hits found and the excerpts sent (numbered from 1)."""

    results: list[Any]
    excerpts: list[Excerpt]
    context_tokens: int  # estimated tokens of the excerpts
    budget: int  # answer.max_context_tokens
    prompt_tokens: int  # estimated tokens of the whole prompt
    left_out: int  # hits with text that did not fit the budget
    degraded_reason: str | None  # the search ran without its dense side
    rerank: str | None  # "ok", "degraded: <reason>" or None (reranking off)
    took_ms: float  # retrieval and prompt building
    messages: list[dict[str, str]] = field(repr=False, default_factory=list)  # the prompt as sent


@dataclass
class AskResult:
    """A complete answer: what ``ask --json`` prints."""

    question: str
    answer: str
    citations: list[Citation]
    unknown_citations: list[int]
    model: str
    backend: str
    excerpts: list[Excerpt]
    usage: Usage = field(default_factory=Usage)
    took_ms: float = 0.0
    first_token_ms: float | None = None  # from the start of the run to the first piece of the answer
    tokens_per_s: float | None = None  # completion tokens over the streaming time
    context_tokens: int = 0
    budget: int = 0
    degraded_reason: str | None = None  # the search ran without its dense side
    rerank: str | None = None  # reranking on: "ok" or "degraded: <reason>"

    def to_json(self) -> dict[str, object]:
        """The ``ask --json`` object (``degraded_reason`` and ``rerank`` only when set)."""
        extra = {k: v for k, v in (("degraded_reason", self.degraded_reason), ("rerank", self.rerank)) if v}
        return {
            "question": self.question,
            "answer": self.answer,
            "citations": [c.to_json() for c in self.citations],
            "unknown_citations": self.unknown_citations,
            "model": self.model,
            "backend": self.backend,
            "results": [e.to_json() for e in self.excerpts],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "context": {"tokens": self.context_tokens, "budget": self.budget},
            "took_ms": round(self.took_ms, 3),
            **extra,
        }


@dataclass(frozen=True)
class Answered:
    """The answer is complete."""

    result: AskResult


@dataclass(frozen=True)
class AskFailed:
    """The run stopped: ``message`` is one line; ``setup`` says it is about having no usable model
    server (none answers, or ``[answer]`` names one that cannot be used); ``partial`` is what was
    answered before (may be empty)."""

    message: str
    setup: bool = False
    partial: str = ""


@dataclass(frozen=True)
class AskCancelled:
    """``cancel`` was set; ``partial`` is what was answered before."""

    partial: str = ""


AskEvent = Retrieved | TokenText | Answered | AskFailed | AskCancelled


def setup_hint(settings: AnswerSettings, reason: str = "") -> str:
    """One line: no model server answers, and how to start one."""
    url = settings.url or DEFAULT_URLS.get(settings.backend, DEFAULT_URLS["openai"])
    why = f" ({reason})" if reason else ""
    return (
        f"no model server answers at {url}{why}: start one, e.g. `llama-server -m MODEL.gguf --port 8080`, "
        "or `ollama serve` and ask with --backend ollama --model NAME (set [answer] url/model to keep it)"
    )


def chat_for(settings: AnswerSettings) -> ChatClient:
    """The chat client ``[answer]`` describes; ChatError when it cannot be used."""
    return make_chat(settings.backend, settings.url, settings.model, allow_remote=settings.allow_remote,
                     timeout=settings.timeout)  # fmt: skip


def probe(settings: AnswerSettings, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The one-line setup hint when the configured server does not accept a connection, else None
    (a front end can show it as soon as its ask mode opens). Configuration problems are reported as
    they are (a refused remote URL, no model name for ollama)."""
    try:
        client = chat_for(settings)
    except ChatError as exc:
        return str(exc)
    client.close()
    parts = urlsplit(client.endpoint)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return None
    except (OSError, ValueError) as exc:
        reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else str(exc) or "no answer"
        return setup_hint(settings, reason)


def ask(
    question: str,
    search: SearchFn,
    settings: AnswerSettings,
    *,
    cancel: threading.Event | None = None,
    client: ChatClient | None = None,
) -> Iterator[AskEvent]:
    """Answer ``question`` from the code ``search`` finds; see the module docstring."""
    t0 = time.monotonic()
    deadline = t0 + settings.timeout
    question = question.strip()
    if not question:
        yield AskFailed("ask needs a question")
        return
    if len(question) > MAX_QUESTION:
        yield AskFailed(f"the question is longer than {MAX_QUESTION} characters")
        return
    try:
        client = client or chat_for(settings)
    except ChatError as exc:
        yield AskFailed(str(exc), setup=True)
        return
    yield from _run(question, search, settings, client, cancel, t0, deadline)


def _retrieve(question: str, search: SearchFn, settings: AnswerSettings, t0: float) -> Retrieved | AskFailed:
    """Search, then choose the excerpts within the budget."""
    try:
        resp = search(question, max(2 * settings.limit, settings.limit + 5))
    except Exception as exc:  # noqa: BLE001 - the index may be missing, locked or corrupt: one line
        return AskFailed(f"search failed: {exc}")
    if resp.error:
        return AskFailed(resp.error)
    prompt = build_prompt(question, resp.results, settings.limit, settings.max_context_tokens)
    if not prompt.excerpts:
        return AskFailed("no indexed code matches the question; nothing to ask the model about")
    return Retrieved(
        list(resp.results), prompt.excerpts, prompt.context_tokens, prompt.budget, prompt.prompt_tokens,
        prompt.left_out, resp.degraded_reason, getattr(resp, "rerank", None),
        (time.monotonic() - t0) * 1000, prompt.messages,
    )  # fmt: skip


def _run(question: str, search: SearchFn, settings: AnswerSettings, client: ChatClient,
         cancel: threading.Event | None, t0: float, deadline: float) -> Iterator[AskEvent]:  # fmt: skip
    got = _retrieve(question, search, settings, t0)
    if isinstance(got, AskFailed):
        yield got
        return
    yield got
    if cancel is not None and cancel.is_set():
        yield AskCancelled()
        return
    pieces: list[str] = []
    usage, model = Usage(), client.model
    first: float | None = None
    for event in client.stream(got.messages, deadline=deadline, cancel=cancel,
                               context_tokens=got.prompt_tokens):  # fmt: skip
        if isinstance(event, TokenText):
            first = time.monotonic() if first is None else first
            pieces.append(event.text)
            yield event
            if cancel is not None and cancel.is_set():  # the front end cancelled while rendering it
                yield AskCancelled("".join(pieces))
                return
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, StreamDone):
            model = event.model
        elif isinstance(event, StreamError):
            yield _failure(event, settings, "".join(pieces))
            return
    answer = "".join(pieces)
    refs = resolve(answer, got.excerpts)
    end = time.monotonic()
    result = AskResult(question, answer, refs.cited, refs.unknown, model, client.backend, got.excerpts,
                       usage, (end - t0) * 1000, None if first is None else (first - t0) * 1000,
                       _rate(usage, len(pieces), first, end), got.context_tokens, got.budget,
                       got.degraded_reason, got.rerank)  # fmt: skip
    yield Answered(result)


def _failure(event: StreamError, settings: AnswerSettings, partial: str) -> AskFailed | AskCancelled:
    if event.kind == "cancelled":
        return AskCancelled(partial)
    if event.kind == "unreachable":
        return AskFailed(setup_hint(settings, event.reason), setup=True, partial=partial)
    return AskFailed(event.message, partial=partial)


def _rate(usage: Usage, pieces: int, first: float | None, end: float) -> float | None:
    """Completion tokens per second from the first piece to the end (pieces when not reported)."""
    if first is None or end <= first:
        return None
    count = usage.completion_tokens if usage.completion_tokens is not None else pieces
    return count / (end - first)
