"""The Embedder protocol every dense backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

Kind = Literal["document", "query"]


class EmbedderError(Exception):
    """The embedder cannot be used; ``str(exc)`` is a one-line message a user can act on."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (len(texts), dim)."""

    @property
    def id(self) -> str:
        """Model identity; a change of id re-embeds the index."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Embed ``texts``; raise EmbedderError when the backend is unusable."""
        ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit length (zero rows stay zero)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (v / norms).astype(np.float32, copy=False)
