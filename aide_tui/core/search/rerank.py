"""Opt-in reranking of the top fused hits by a local server (``[search] rerank = "http"``).

The request is llama.cpp's ``POST /v1/rerank`` (``llama-server --reranking``), the shape TEI, Jina and
Cohere-style servers take: ``{"model", "query", "documents": [...], "top_n"}`` → ``{"results":
[{"index", "relevance_score"}]}`` (a bare list, and ``score`` for the score, are accepted too). The
scored hits come first by score (ties keep the fused order), the others follow in fused order; each
scored hit gets ``ranks["rerank"]``, its ``score`` stays the fused one. A slow, failing or malformed
reranker leaves the fused order and sets ``resp.rerank = "degraded: <reason>"``; a server that did not
answer is not asked again for :data:`COOLDOWN` seconds. Imports httpx only when reranking is on.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

from aide_tui.core.config import SearchSettings

DEFAULT_URL = "http://127.0.0.1:8080"
PATH = "/v1/rerank"
MAX_DOC_CHARS = 2000  # of each hit's text (a reranker's window is a few hundred tokens)
MAX_BODY = 4 << 20  # bytes of the answer
COOLDOWN = 30.0
REMOTE_OPT_IN = (
    "your code would leave this machine; pass --allow-remote-reranker (or AIDE_SEARCH_RERANK_ALLOW_REMOTE=1,"
    " or rerank_allow_remote = true under [search] in ~/.config/aide-tui/config.toml) to allow it"
)

_cooldown: dict[str, tuple[float, str]] = {}  # endpoint -> (not before, reason)
_cooldown_lock = threading.Lock()


class RerankFailed(Exception):
    """Why the reranker's answer cannot be used (the message is the "degraded: " reason)."""


def depth(s: SearchSettings, limit: int) -> int:
    """How many fused hits the search should keep: at least ``rerank_top`` while reranking is on."""
    return max(limit, s.rerank_top) if s.rerank == "http" else limit


def rerank_response(s: SearchSettings, query: str, resp: Any, limit: int) -> None:
    """Rerank ``resp.results`` in place when ``s.rerank`` is on, then keep the first ``limit``.

    Skipped for a query error, an empty query text (a file listing) or fewer than two hits."""
    try:
        if s.rerank != "http" or resp.error is not None or not query.strip() or len(resp.results) < 2:
            return
        top = resp.results[: s.rerank_top]
        try:
            scores = _scores(s, query, top)
        except RerankFailed as exc:
            resp.rerank = f"degraded: {exc}"
            return
        order = sorted(range(len(top)), key=lambda i: (scores.get(i) is None, -(scores.get(i) or 0.0), i))
        for rank, i in enumerate((i for i in order if i in scores), start=1):
            top[i].ranks["rerank"] = rank
        resp.results[: len(top)] = [top[i] for i in order]
        resp.rerank = "ok"
    finally:
        del resp.results[limit:]


def reset_cooldown() -> None:
    """Forget servers that did not answer (tests; a settings change)."""
    with _cooldown_lock:
        _cooldown.clear()


def _document(hit: Any) -> str:
    return f"{hit.path}\n{(hit.text or '')[:MAX_DOC_CHARS]}"


def _endpoint(s: SearchSettings) -> str:
    from aide_tui.core.embed.policy import endpoint_url, request_problem

    url = endpoint_url(s.rerank_url or DEFAULT_URL, PATH)
    problem = request_problem(url, s.rerank_allow_remote, "rerank endpoint", REMOTE_OPT_IN)
    if problem is not None:
        raise RerankFailed(problem)
    return url


def _scores(s: SearchSettings, query: str, hits: list[Any]) -> dict[int, float]:
    """Relevance score of each hit position the server scored."""
    from aide_tui.core.secrets import mask_secrets

    url = _endpoint(s)
    with _cooldown_lock:
        until, why = _cooldown.get(url, (0.0, ""))
    if until > time.monotonic():
        raise RerankFailed(f"{why} (not tried again for {until - time.monotonic():.0f}s)")
    documents = [mask_secrets(_document(h)) for h in hits]
    body: dict[str, Any] = {"query": mask_secrets(query), "documents": documents, "top_n": len(hits)}
    if s.rerank_model:
        body["model"] = s.rerank_model
    try:
        payload = _post(url, body, s.rerank_timeout)
    except _Unanswered as exc:
        with _cooldown_lock:
            _cooldown[url] = (time.monotonic() + COOLDOWN, str(exc))
        raise RerankFailed(str(exc)) from None
    with _cooldown_lock:
        _cooldown.pop(url, None)
    return parse_scores(payload, len(hits))


class _Unanswered(Exception):
    """The server did not answer in time or at all (worth a cooldown)."""


def _post(url: str, body: dict[str, Any], timeout: float) -> Any:
    """POST ``body``; the decoded JSON answer. The whole exchange is bounded by ``timeout``."""
    import httpx

    from aide_tui.core.httpclient import shared_client
    from aide_tui.core.watchdog import SocketWatchdog

    dog = SocketWatchdog(timeout)
    late = f"no answer within {timeout:g}s"
    try:
        with shared_client().stream(
            "POST", url, json=body, timeout=httpx.Timeout(timeout), extensions={"trace": dog.trace}
        ) as resp:
            raw = b""
            for chunk in resp.iter_bytes():
                raw += chunk
                if len(raw) > MAX_BODY:
                    raise RerankFailed(f"answer larger than {MAX_BODY >> 20} MB")
            status = resp.status_code
    except httpx.TimeoutException:
        raise _Unanswered(late) from None
    except httpx.ConnectError as exc:
        reason = "connection refused" if "refused" in str(exc).lower() else str(exc)[:120]
        raise _Unanswered(f"not reachable ({reason})") from None
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise _Unanswered(late if dog.fired else f"connection broken ({str(exc)[:120]})") from None
    finally:
        dog.cancel()
    if dog.fired:
        raise _Unanswered(late)
    if status != 200:
        text = " ".join(raw.decode("utf-8", errors="replace").split())[:120]
        raise RerankFailed(f"HTTP {status}" + (f": {text}" if text else ""))
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise RerankFailed("invalid JSON in the answer") from None


def parse_scores(payload: Any, n: int) -> dict[int, float]:
    """``{index: score}`` from a rerank answer for ``n`` documents; RerankFailed when malformed."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise RerankFailed("malformed answer (no results list)")
    out: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RerankFailed("malformed answer (a result is not an object)")
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if type(index) is not int or not 0 <= index < n:
            raise RerankFailed(f"malformed answer (index {str(index)[:20]} for {n} documents)")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankFailed(f"malformed answer (score {str(score)[:20]} of document {index})")
        if index in out:
            raise RerankFailed(f"malformed answer (document {index} scored twice)")
        out[index] = float(score)
    if not out:
        raise RerankFailed("malformed answer (no scores)")
    return out
