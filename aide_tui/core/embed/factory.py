"""Build the configured embedder; failures become a user-facing reason, never a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, recorded_runtime
from aide_tui.core.errors import EmbedderError

if TYPE_CHECKING:
    from aide_tui.core.embed.static import StaticEmbedder


def make_embedder(
    settings: Settings, for_indexing: bool = False, recorded: str | None = None, for_queries: bool = False
) -> Embedder | None:
    """The embedder the settings ask for, or None for ``none``. Raises EmbedderError if unusable.

    ``for_indexing`` lets the builtin encoder spread document batches over ``embedding.workers``
    processes (0 = one per core, at most 2). ``recorded``: the embedder id the index records; with the
    builtin runtime left to ``auto`` its runtime is used when this install has it (the index owns its
    embedder: another install searches it as it was built and never re-embeds it).

    ``for_queries``: the embedder only encodes queries. With the runtime left to ``auto`` that is the
    numpy encoder whatever the index's runtime (the same model, so its vectors compare with onnx ones):
    a query is a few tokens (milliseconds in numpy), while opening an onnx session costs most of a second
    of every one-shot search and another hundred MB.
    """
    e = settings.embedding
    if e.backend in ("none", "static"):
        return None  # "static": the static tier alone (make_static)
    if e.backend == "builtin":
        import os

        from aide_tui.core.embed.builtin import BuiltinEmbedder, resolve_runtime

        workers = e.workers or min(2, os.cpu_count() or 1)
        runtime = e.runtime
        if runtime == "auto" and for_queries and not for_indexing:
            runtime = "numpy"
        elif runtime == "auto" and recorded and not e.model_dir:
            runtime = _available(recorded_runtime(recorded)) or runtime
        # the runtime is resolved here ("auto" once), so the pooled workers get the same encoder
        opts = {
            "model_dir": e.model_dir or None,
            "max_doc_tokens": e.max_doc_tokens,
            "runtime": resolve_runtime(runtime),
        }
        if for_indexing and workers > 1:
            from aide_tui.core.embed.pool import PooledEmbedder

            return PooledEmbedder(workers, **opts)
        return BuiltinEmbedder(**opts)  # type: ignore[arg-type]
    from aide_tui.core.embed.http import OllamaEmbedder, OpenAIEmbedder

    cls = OpenAIEmbedder if e.backend == "openai" else OllamaEmbedder
    kwargs: dict[str, object] = {"allow_remote": e.allow_remote, "timeout": e.timeout}
    if e.url:
        kwargs["url"] = e.url
    if e.model:
        kwargs["model"] = e.model
    if e.prefixes is not None:
        kwargs["prefixes"] = e.prefixes
    try:
        return cls(**kwargs)  # type: ignore[arg-type]
    except EmbedderError:
        raise
    except Exception as exc:  # invalid URL and the like
        raise EmbedderError(f"{e.backend} embedder unusable: {exc}") from exc


def _available(runtime: str | None) -> str | None:
    """``runtime`` when this install can run it (onnx needs the extra), else numpy (always there)."""
    if runtime is None or runtime == "numpy":
        return runtime
    from aide_tui.core.embed.onnx_encoder import onnx_importable

    return runtime if onnx_importable() else "numpy"


_STATIC: dict[str, object] = {}


def static_enabled(settings: Settings) -> bool:
    """Whether these settings use the static tier: every embedder but ``none``, unless turned off
    (``[embedding] static = false``); ``static`` is the tier alone."""
    e = settings.embedding
    return e.backend == "static" or (e.backend != "none" and e.static)


def make_static(settings: Settings) -> StaticEmbedder | None:
    """The static tier's embedder (one per process and model), or None when the settings do not use it.
    Its table is opened (or distilled) on first use, not here."""
    if not static_enabled(settings):
        return None
    from aide_tui.core.embed.static import StaticEmbedder

    key = settings.embedding.model_dir or ""
    got = _STATIC.get(key)
    if got is None:
        got = _STATIC[key] = StaticEmbedder(model_dir=key or None)
    assert isinstance(got, StaticEmbedder)
    return got
