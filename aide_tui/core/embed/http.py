"""HTTP embedding backends: llama.cpp's OpenAI-compatible server and Ollama (loopback by default)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import httpx
import numpy as np

from aide_tui.core.embed.base import Kind, check_vectors
from aide_tui.core.embed.policy import check_endpoint, display_url, is_loopback_host
from aide_tui.core.errors import EmbedderError
from aide_tui.core.watchdog import SocketWatchdog as _Watchdog

MAX_BATCH = 16
BACKOFF = (0.2, 0.5, 1.0)  # seconds before retry 1, 2, 3+
PREFIXES: dict[str, str] = {"document": "search_document: ", "query": "search_query: "}
DIM_PROBE_TEXT = "dim probe"
MAX_BODY = 64 * 1024 * 1024  # bytes of one response body
COOLDOWN = 30.0  # seconds a failed endpoint fails fast before it is tried again


class _Retryable(Exception):
    """A failed attempt worth retrying; carries the final user-facing message."""


class _Unavailable(EmbedderError):
    """The server did not answer usefully (timeout, unreachable, 5xx): what the breaker remembers."""


class _Deadline(Exception):
    """The whole answer did not arrive in time (not retried: a retry would wait as long again)."""


# Circuit breaker shared by every embedder of the process: (endpoint, model) -> (until, message).
# Only an endpoint that did not answer (timeout, refused, 5xx) is remembered: those failures cost time.
_breakers: dict[tuple[str, str], tuple[float, str]] = {}
_breakers_lock = threading.Lock()


def reset_breakers() -> None:
    """Forget every recorded failure (tests; a user action such as a settings change)."""
    with _breakers_lock:
        _breakers.clear()


def _excerpt(text: str, limit: int = 200) -> str:
    """One-line, bounded excerpt of a response body."""
    flat = " ".join(text.split())
    if not flat:
        return "(empty body)"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _HTTPEmbedder:
    """Shared machinery: endpoint policy, batching, retries, validation, normalisation."""

    _name = ""  # id prefix, e.g. "openai"
    _paths: tuple[str, ...] = ()  # suffixes stripped from a user URL; the first is the endpoint path
    default_url = ""
    default_model = ""

    def __init__(
        self,
        url: str | None = None,
        model: str | None = None,
        *,
        prefixes: bool | None = None,
        allow_remote: bool = False,
        timeout: float = 30.0,
        retries: int = 2,
        batch_size: int = MAX_BATCH,
        client: httpx.Client | None = None,
        cooldown: float = COOLDOWN,
    ) -> None:
        """``url``/``model`` default to the backend's; ``prefixes`` None = the backend's rule.

        ``timeout`` bounds each request as a whole (connect, headers and body); ``retries`` apply
        to document batches only (a query gets one attempt); after a failure the endpoint fails
        fast with the same message for ``cooldown`` seconds (0 = never).
        """
        url = self.default_url if url is None else url
        model = self.default_model if model is None else model
        prefixes = self._default_prefixes(model) if prefixes is None else prefixes
        if not model:
            raise EmbedderError(f"no embedding model name given for the {self._name} backend")
        check_endpoint(url, allow_remote)
        self.model = model
        self.prefixes = prefixes
        self.url = self._base_url(url)
        self.endpoint = self.url + self._paths[0]
        try:
            host = httpx.URL(self.endpoint).host
        except (httpx.InvalidURL, ValueError) as exc:
            raise EmbedderError(f"invalid embedding endpoint URL {display_url(url)}: {exc}") from None
        if not allow_remote and not is_loopback_host(host):  # guard against URL-parser disagreement
            check_endpoint(f"http://{host}/", allow_remote)
        self._shown = display_url(self.url)
        self._connect_timeout = min(timeout, 10.0)
        self._timeout = httpx.Timeout(timeout, connect=self._connect_timeout)
        self._timeout_s = timeout
        self._retries = max(0, retries)
        self._cooldown = max(0.0, cooldown)
        self._batch_size = max(1, min(batch_size, MAX_BATCH))
        self._owns_client = client is None
        # trust_env=False: never route a loopback request through an HTTP(S)_PROXY from the environment.
        # No keep-alive: each request opens its own connection, so the watchdog always has its socket.
        self._client = (
            client
            if client is not None
            else httpx.Client(
                trust_env=False, follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0)
            )
        )
        self._lock = threading.RLock()
        self._dim: int | None = None
        self._closed = False

    # -- identity ---------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """``<backend>:<model>`` plus ``:p`` when nomic-style task prefixes are used."""
        return f"{self._name}:{self.model}" + (":p" if self.prefixes else "")

    @property
    def dim(self) -> int:
        """Vector dimension; the first access without a prior embed makes one probe request."""
        if self._dim is None:
            self.embed([DIM_PROBE_TEXT], "document")
        assert self._dim is not None
        return self._dim

    # -- lifecycle --------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        with self._lock:
            self._closed = True
            if self._owns_client:
                self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self._shown!r}, model={self.model!r}, prefixes={self.prefixes})"

    # -- embedding --------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Embed ``texts`` in batches of at most 16; L2-normalised float32 of shape (len(texts), dim)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        if kind not in PREFIXES:
            raise ValueError(f"kind must be 'document' or 'query', not {kind!r}")
        items = list(texts)
        if not all(isinstance(t, str) for t in items):
            raise TypeError("embed() takes a sequence of strings")
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        if self.prefixes:
            items = [PREFIXES[kind] + t for t in items]
        attempts = 1 if kind == "query" else self._retries + 1
        key = (self.endpoint, self.model)
        with self._lock:
            if self._closed:
                raise EmbedderError(f"embedder for {self._shown} is closed")
            with _breakers_lock:
                until, message = _breakers.get(key, (0.0, ""))
            left = until - time.monotonic()
            if left > 0:
                raise EmbedderError(f"{message} (not tried again for {left:.0f}s)")
            try:
                out = [
                    self._embed_batch(items[i : i + self._batch_size], attempts)
                    for i in range(0, len(items), self._batch_size)
                ]
            except _Unavailable as exc:  # a fast, definite answer (bad vectors, 4xx) is not remembered
                if self._cooldown > 0:
                    with _breakers_lock:
                        _breakers[key] = (time.monotonic() + self._cooldown, str(exc))
                raise
            with _breakers_lock:
                _breakers.pop(key, None)
        return check_vectors(np.concatenate(out, axis=0), f"embedding server at {self._shown}")

    def _embed_batch(self, batch: list[str], attempts: int) -> np.ndarray:
        payload = self._request(self._body(batch), attempts)
        raw = self._vectors(payload, len(batch))
        if len(raw) != len(batch):
            raise EmbedderError(
                f"embedding server at {self._shown} returned {len(raw)} vectors for {len(batch)} inputs"
            )
        dims = {len(v) if isinstance(v, list) else -1 for v in raw}
        if -1 in dims:
            raise EmbedderError(f"embedding server at {self._shown} returned an embedding that is not a list")
        if len(dims) > 1:
            raise EmbedderError(
                f"embedding server at {self._shown} returned vectors of inconsistent dimensions "
                f"{sorted(dims)} in one response"
            )
        (dim,) = dims
        if dim == 0:
            raise EmbedderError(f"embedding server at {self._shown} returned empty vectors")
        if self._dim is not None and dim != self._dim:
            raise EmbedderError(
                f"embedding server at {self._shown} returned vectors of dimension {dim}, "
                f"expected {self._dim} (did the model behind it change?)"
            )
        if not all(type(x) in (int, float) for v in raw for x in v):
            raise EmbedderError(f"embedding server at {self._shown} returned non-numeric embedding values")
        try:
            arr = np.asarray(raw, dtype=np.float64)
        except OverflowError:  # an integer beyond float64
            raise EmbedderError(
                f"embedding server at {self._shown} returned non-finite values (beyond float range)"
            ) from None
        if not np.isfinite(arr).all():
            raise EmbedderError(f"embedding server at {self._shown} returned non-finite values (NaN or inf)")
        with np.errstate(over="ignore"):
            vec = arr.astype(np.float32)
        vec = check_vectors(vec, f"embedding server at {self._shown}", normalise=False)
        if self._dim is None:
            self._dim = dim
        return vec

    def _request(self, body: dict[str, Any], attempts: int) -> Any:
        """POST ``body``; connection errors and 5xx are retried (``attempts`` in all), a request that
        ran out of time is not. Returns the decoded JSON."""
        for attempt in range(attempts):
            try:
                return self._attempt(body)
            except _Deadline as exc:
                raise _Unavailable(str(exc)) from None
            except _Retryable as exc:
                if attempt + 1 >= attempts:
                    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
                    raise _Unavailable(f"{exc}{suffix}") from None
                time.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
        raise AssertionError("unreachable")

    def _attempt(self, body: dict[str, Any]) -> Any:
        where = f"embedding server at {self._shown}"
        late = f"{where} did not answer within {self._timeout_s:g}s (timeout)"
        deadline = time.monotonic() + self._timeout_s
        watchdog = _Watchdog(self._timeout_s)
        try:
            with self._client.stream(
                "POST", self.endpoint, json=body, timeout=self._timeout, extensions={"trace": watchdog.trace}
            ) as resp:
                status = resp.status_code
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > MAX_BODY:
                    raise EmbedderError(f"{where} sent a {int(declared) >> 20} MB answer (limit 64 MB)")
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes(1 << 16):
                    size += len(chunk)
                    if size > MAX_BODY:
                        raise EmbedderError(f"{where} sent more than 64 MB")
                    if time.monotonic() > deadline:
                        raise _Deadline(late)
                    chunks.append(chunk)
        except httpx.ConnectTimeout:
            refused = f"{where} did not accept a connection within {self._connect_timeout:g}s"
            raise _Deadline(refused) from None
        except httpx.TimeoutException:
            raise _Deadline(late) from None
        except httpx.ConnectError as exc:
            reason = "connection refused" if "refused" in str(exc).lower() else _excerpt(str(exc), 120)
            raise _Retryable(f"{where} is not reachable ({reason})") from None
        except (httpx.TransportError, httpx.StreamError) as exc:
            if watchdog.fired:
                raise _Deadline(late) from None
            raise _Retryable(f"{where} failed: {_excerpt(str(exc) or type(exc).__name__, 120)}") from None
        except RuntimeError as exc:  # e.g. a closed client supplied by the caller
            raise EmbedderError(f"{where} cannot be used: {exc}") from None
        finally:
            watchdog.cancel()
        data = b"".join(chunks)
        if not 200 <= status < 300:  # redirects are not followed (they could leave loopback)
            text = data.decode("utf-8", errors="replace")
            message = f"{where} returned HTTP {status} for POST {self._paths[0]}: {_excerpt(text)}"
            if status >= 500:
                raise _Retryable(message)
            raise EmbedderError(message)
        try:
            return json.loads(data)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, absurd nesting
            text = data.decode("utf-8", errors="replace")
            raise EmbedderError(f"{where} returned invalid JSON: {_excerpt(text, 120)}") from None

    # -- backend specifics ------------------------------------------------------------------------------

    @classmethod
    def _base_url(cls, url: str) -> str:
        """``url`` without a trailing slash or a known endpoint path."""
        base = url.strip().rstrip("/")
        for suffix in cls._paths:
            if base.lower().endswith(suffix):
                return base[: -len(suffix)].rstrip("/")
        return base

    @staticmethod
    def _default_prefixes(model: str) -> bool:
        """Whether ``search_document:``/``search_query:`` prefixes are used when not configured."""
        return False

    def _body(self, batch: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": batch}

    def _vectors(self, payload: Any, n: int) -> list[Any]:  # pragma: no cover - overridden
        raise NotImplementedError


class OpenAIEmbedder(_HTTPEmbedder):
    """llama.cpp server (or any OpenAI-compatible server): POST {url}/v1/embeddings."""

    _name = "openai"
    _paths = ("/v1/embeddings", "/embeddings", "/v1")
    default_url = "http://127.0.0.1:8080"
    default_model = "default"

    def _vectors(self, payload: Any, n: int) -> list[Any]:
        where = f"embedding server at {self._shown}"
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbedderError(
                f"{where} returned an unexpected response (no 'data' list): {_excerpt(str(payload))}"
            )
        if not all(isinstance(d, dict) and "embedding" in d for d in data):
            raise EmbedderError(f"{where} returned an unexpected response (a 'data' item has no 'embedding')")
        if all("index" in d for d in data):
            indices = [d["index"] for d in data]
            if not all(type(i) is int for i in indices) or sorted(indices) != list(range(len(data))):
                raise EmbedderError(
                    f"{where} returned bad 'index' values for {n} inputs: {_excerpt(str(indices))}"
                )
            data = sorted(data, key=lambda d: d["index"])
        return [d["embedding"] for d in data]


class OllamaEmbedder(_HTTPEmbedder):
    """Ollama: POST {url}/api/embed with {"model", "input"} -> {"embeddings": [...]}."""

    _name = "ollama"
    _paths = ("/api/embed", "/api/embeddings", "/api")
    default_url = "http://127.0.0.1:11434"
    default_model = "nomic-embed-text"

    @staticmethod
    def _default_prefixes(model: str) -> bool:
        """nomic embedding models expect task prefixes."""
        return "nomic" in model.lower()

    def _vectors(self, payload: Any, n: int) -> list[Any]:
        vectors = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(vectors, list):
            raise EmbedderError(
                f"embedding server at {self._shown} returned an unexpected response (no 'embeddings' list): "
                f"{_excerpt(str(payload))}"
            )
        return vectors
