"""The Embedder protocol every dense backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from aide_tui.core.errors import EmbedderError

Kind = Literal["document", "query"]


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
    """Return float32 rows scaled to unit length (zero rows stay zero).

    The norm is taken in float64: float32 squares of values near 1e20 would overflow to inf.
    """
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(v / norms, dtype=np.float32)


def check_vectors(vectors: np.ndarray, where: str, normalise: bool = True) -> np.ndarray:
    """The embedder boundary: float32 rows that are finite and not all zero, else EmbedderError.

    ``where`` names the embedder in the message ("embedding server at http://…"). Values beyond
    the float32 range become inf in the cast, so the check runs on the float32 rows. Returns the
    rows L2-normalised (or as float32 unchanged with ``normalise=False``).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise EmbedderError(f"{where} returned vectors of shape {v.shape}, expected (n, dim)")
    bad = ~np.isfinite(v).all(axis=1)
    if bad.any():
        raise EmbedderError(
            f"{where} returned non-finite values (NaN, inf or beyond float32) in {int(bad.sum())} of "
            f"{len(v)} vectors"
        )
    zero = ~v.any(axis=1)
    if zero.any():
        raise EmbedderError(f"{where} returned all-zero vectors for {int(zero.sum())} of {len(v)} inputs")
    return l2_normalise(v) if normalise else v


def embedder_family(embedder_id: str) -> str:
    """The model an embedder id names, without the runtime that computed its vectors: the builtin model
    on numpy (``builtin:all-MiniLM-L6-v2:53aa5117``) and on onnxruntime (``…:onnx-int8-u8``) is one model
    whose vectors agree to a cosine of .998, so an index may hold vectors of both."""
    if embedder_id.startswith("builtin:"):
        return ":".join(embedder_id.split(":")[:3])
    return embedder_id


def same_model(a: str, b: str) -> bool:
    """Whether vectors of embedder ids ``a`` and ``b`` can be compared (see :func:`embedder_family`)."""
    return a == b or embedder_family(a) == embedder_family(b)


def recorded_runtime(embedder_id: str) -> str | None:
    """The builtin runtime that computed an index's vectors (``numpy``, ``onnx-int8``, ``onnx-fp32``), or
    None for another embedder."""
    if not embedder_id.startswith("builtin:"):
        return None
    tag = embedder_id.split(":")[3] if embedder_id.count(":") >= 3 else ""
    return {"": "numpy", "onnx-fp32": "onnx-fp32"}.get(
        tag, "onnx-int8" if tag.startswith("onnx-int8") else None
    )
