"""Every error a user can meet, in one place: each message says what went wrong and what to do.

Front ends show them as they are: the app in its status line, the CLI on stderr with a non-zero exit,
``serve`` as ``{"error": ...}`` with a 4xx/5xx status, ``mcp`` as a tool error.
"""

from __future__ import annotations


class ConfigError(Exception):
    """A config file or variable is invalid; the message names the source and the key."""


class IndexProblem(Exception):
    """Base of the index's problems (missing, damaged, locked, unreachable)."""


class IndexMissing(IndexProblem):
    """No index has been built yet."""


class IndexCorrupt(IndexProblem):
    """The index exists but cannot be trusted (truncated, garbage, unknown format)."""


class LockTimeout(IndexProblem):
    """Another writer holds the index lock."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class StoreUnavailable(IndexProblem):
    """A shared store (Milvus) cannot be reached or read (the message says which and why)."""


class StoreReadOnly(IndexProblem):
    """A write was asked of a read-only store."""


class QueryError(ValueError):
    """The query's filters cannot be understood (e.g. an unknown ``lang:``); the message says why."""


class EmbedderError(Exception):
    """The embedder cannot be used; ``str(exc)`` is a one-line message a user can act on."""


class VectorDimensionMismatch(Exception):
    """The query vector's dimension differs from the stored vectors' (the model changed)."""


class RunCancelled(Exception):
    """Raised inside an indexing run when its cancel event is set (the run then reports Cancelled)."""
