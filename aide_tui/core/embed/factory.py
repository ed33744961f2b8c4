"""Build the configured embedder; failures become a user-facing reason, never a traceback."""

from __future__ import annotations

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.errors import EmbedderError


def make_embedder(settings: Settings, for_indexing: bool = False) -> Embedder | None:
    """The embedder the settings ask for, or None for ``none``. Raises EmbedderError if unusable.

    ``for_indexing`` lets the builtin encoder spread document batches over ``embedding.workers``
    processes (0 = one per core, at most 2).
    """
    e = settings.embedding
    if e.backend == "none":
        return None
    if e.backend == "builtin":
        import os

        from aide_tui.core.embed.builtin import BuiltinEmbedder, resolve_runtime

        workers = e.workers or min(2, os.cpu_count() or 1)
        # the runtime is resolved here ("auto" once), so the pooled workers get the same encoder
        opts = {
            "model_dir": e.model_dir or None,
            "max_doc_tokens": e.max_doc_tokens,
            "runtime": resolve_runtime(e.runtime),
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
