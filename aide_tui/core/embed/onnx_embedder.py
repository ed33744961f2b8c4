"""The builtin model on onnxruntime as an embedder of its own variant (fp32 or int8), for measurement
and parity tests; the app and the settings reach onnxruntime through ``BuiltinEmbedder(runtime=...)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aide_tui.core.embed.base import check_vectors
from aide_tui.core.embed.bert import BertEncoder
from aide_tui.core.embed.builtin import BuiltinEmbedder, file_sha256
from aide_tui.core.embed.onnx_encoder import VARIANTS, OnnxEncoder, id_tag, load_encoder, require_onnx


class OnnxEmbedder:
    """The builtin model on onnxruntime, for measurement (not wired into the app or the settings).

    Loading, sha256 verification and tokenization are the wrapped :class:`BuiltinEmbedder`'s own, so
    both runtimes see the same ids; only the encoder is replaced. The id carries the variant's tag
    (``:onnx-int8-u8``, ``:onnx-fp32``) so vectors of two runtimes are never taken for each other.
    """

    def __init__(self, variant: str = "int8", **builtin_kwargs: Any) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown onnx variant {variant!r} ({', '.join(VARIANTS)})")
        self.variant = variant
        self.base = BuiltinEmbedder(**builtin_kwargs)
        self.encoder: OnnxEncoder | None = None

    @property
    def id(self) -> str:
        return f"{self.base.id}:{id_tag(self.variant)}"

    @property
    def dim(self) -> int:
        return self.base.dim

    def load(self) -> None:
        """Verify and load the weights (numpy side), then build or open the cached graph."""
        if self.encoder is not None:
            return
        require_onnx()
        base = self.base
        base.load()
        weights = base._expected.get("model.safetensors") or file_sha256(base.model_dir / "model.safetensors")
        assert isinstance(base._encoder, BertEncoder) and base._tokenizer is not None
        self.encoder = load_encoder(
            base._encoder, base._read_config(), base._pooling, weights, self.variant, base._tokenizer.vocab
        )

    def count_tokens(self, text: str) -> int:
        return self.base.count_tokens(text)

    def embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        """L2-normalised float32 vectors (len(texts), dim), batched as BuiltinEmbedder.embed does."""
        self.load()
        base, encoder = self.base, self.encoder
        assert encoder is not None and base._tokenizer is not None
        limit = min(base.max_query_tokens if kind == "query" else base.max_doc_tokens, encoder.max_positions)
        out = np.zeros((len(texts), encoder.hidden), dtype=np.float32)
        ids = [base._tokenizer.encode(t, limit) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for s in range(0, len(order), base.batch_size):
            idx = order[s : s + base.batch_size]
            out[idx] = encoder.encode([ids[i] for i in idx])
        return check_vectors(out, f"onnx embedder ({self.id})")
