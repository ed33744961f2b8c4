"""Pure-numpy float32 BERT encoder (inference only) with exact (erf) GELU.

Sequences of a batch are *packed*: the dense layers run on the concatenated real tokens only and
self-attention runs per sequence over its own tokens, which is exactly equivalent to padding with a
-inf key mask but does no work on padding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_F32 = np.float32
_INV_SQRT2 = _F32(1.0 / math.sqrt(2.0))
# Numerical Recipes erfc (Chebyshev fit): erfc(z) = t*exp(-z^2 + P(t)), t = 1/(1+z/2), z >= 0;
# fractional error < 1.2e-7 everywhere, so GELU is exact to float32 rounding.
_ERFC_P = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
)
_ERFC_C0 = _F32(-1.26551223)
_BLOCK = 32768  # elements per GELU block (keeps the temporaries in L2)


class BertWeightsError(ValueError):
    """The checkpoint lacks a tensor or has an unexpected shape."""


def _half_erfc_abs(x: np.ndarray, z: np.ndarray, t: np.ndarray, p: np.ndarray) -> None:
    """p <- 0.5*erfc(|x|/sqrt2), using z and t as scratch (all 1-D float32, same size)."""
    np.abs(x, out=z)
    z *= _INV_SQRT2
    np.multiply(z, _F32(0.5), out=t)
    t += _F32(1.0)
    np.reciprocal(t, out=t)
    np.multiply(t, _F32(_ERFC_P[0]), out=p)
    for c in _ERFC_P[1:]:
        p += _F32(c)
        p *= t
    np.square(z, out=z)
    p -= z
    p += _ERFC_C0
    np.exp(p, out=p)
    p *= t
    p *= _F32(0.5)


def gelu_(h: np.ndarray) -> np.ndarray:
    """Exact GELU x*Phi(x) = 0.5*x*(1+erf(x/sqrt2)) in place on a C-contiguous float32 array."""
    flat = h.reshape(-1)
    n = flat.size
    size = min(n, _BLOCK)
    z, t, p = (np.empty(size, _F32) for _ in range(3))
    for s in range(0, n, _BLOCK):
        x = flat[s : s + _BLOCK]
        m = x.size
        zz, tt, pp = z[:m], t[:m], p[:m]
        _half_erfc_abs(x, zz, tt, pp)  # pp = Phi(-|x|)
        # Phi(x) = e + (1 - 2e) * (1 + sign x) / 2: exactly e for x < 0 (no cancellation in the tail)
        np.subtract(_F32(0.5), pp, out=zz)
        np.sign(x, out=tt)
        tt += _F32(1.0)
        zz *= tt
        pp += zz
        x *= pp
    return h


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised float32 erf (for tests and diagnostics)."""
    x = np.ascontiguousarray(x, dtype=_F32).reshape(-1) * _F32(math.sqrt(2.0))
    z, t, p = (np.empty_like(x) for _ in range(3))
    _half_erfc_abs(x, z, t, p)
    return np.asarray(np.copysign(_F32(1.0) - 2 * p, x))


def _gelu_tanh_(h: np.ndarray) -> np.ndarray:
    inner = h + _F32(0.044715) * h**3
    inner *= _F32(math.sqrt(2.0 / math.pi))
    np.tanh(inner, out=inner)
    inner += _F32(1.0)
    h *= inner
    h *= _F32(0.5)
    return h


_ACTIVATIONS = {
    "gelu": gelu_,
    "gelu_new": _gelu_tanh_,
    "gelu_pytorch_tanh": _gelu_tanh_,
    "gelu_fast": _gelu_tanh_,
    "relu": lambda h: np.maximum(h, 0, out=h),
}


def layer_norm_(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """In-place LayerNorm over the last axis of a 2-D float32 array."""
    x -= x.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)
    var *= _F32(1.0 / x.shape[1])
    var += _F32(eps)
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var[:, None]
    x *= g
    x += b
    return x


class BertEncoder:
    """BERT encoder from a ``{name: array}`` checkpoint and a HF ``config.json`` dict."""

    def __init__(self, tensors: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> None:
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.n_layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        act = str(config.get("hidden_act", "gelu"))
        if act not in _ACTIVATIONS:
            raise BertWeightsError(f"unsupported hidden_act {act!r}")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise BertWeightsError("only absolute position embeddings are supported")
        self.act = _ACTIVATIONS[act]
        if self.hidden % self.heads:
            raise BertWeightsError("hidden_size is not a multiple of num_attention_heads")
        self.head_dim = self.hidden // self.heads

        prefix = self._prefix(tensors)

        def get(name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
            key = prefix + name
            if key not in tensors and name.endswith(".weight") and "LayerNorm" in name:
                key = prefix + name[: -len("weight")] + "gamma"
            elif key not in tensors and name.endswith(".bias") and "LayerNorm" in name:
                key = prefix + name[: -len("bias")] + "beta"
            if key not in tensors:
                raise BertWeightsError(f"missing tensor {prefix + name}")
            arr = tensors[key]
            if shape is not None and tuple(arr.shape) != shape:
                raise BertWeightsError(f"tensor {key} has shape {tuple(arr.shape)}, expected {shape}")
            return arr if arr.dtype == _F32 else arr.astype(_F32)

        def dense(name: str, n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
            w = get(name + ".weight", (n_out, n_in))
            return np.ascontiguousarray(w.T), np.array(get(name + ".bias", (n_out,)))

        h = self.hidden
        inter = int(config.get("intermediate_size", 4 * h))
        self.word_emb = get("embeddings.word_embeddings.weight")
        if self.word_emb.ndim != 2 or self.word_emb.shape[1] != h:
            raise BertWeightsError("word embeddings do not match hidden_size")
        self.pos_emb = np.array(get("embeddings.position_embeddings.weight"))
        self.max_positions = min(self.max_positions, self.pos_emb.shape[0])
        self.type0 = np.array(get("embeddings.token_type_embeddings.weight")[0])
        self.emb_ln = (
            np.array(get("embeddings.LayerNorm.weight", (h,))),
            np.array(get("embeddings.LayerNorm.bias", (h,))),
        )
        scale = _F32(1.0 / math.sqrt(self.head_dim))
        self.layers: list[dict[str, np.ndarray]] = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            wq, bq = dense(p + "attention.self.query", h, h)
            wk, bk = dense(p + "attention.self.key", h, h)
            wv, bv = dense(p + "attention.self.value", h, h)
            wo, bo = dense(p + "attention.output.dense", h, h)
            wi, bi = dense(p + "intermediate.dense", h, inter)
            wout, bout = dense(p + "output.dense", inter, h)
            self.layers.append(
                {
                    "wqkv": np.ascontiguousarray(np.concatenate([wq * scale, wk, wv], axis=1)),
                    "bqkv": np.concatenate([bq * scale, bk, bv]),
                    "wo": wo,
                    "bo": bo,
                    "ln1_g": np.array(get(p + "attention.output.LayerNorm.weight", (h,))),
                    "ln1_b": np.array(get(p + "attention.output.LayerNorm.bias", (h,))),
                    "wi": wi,
                    "bi": bi,
                    "wout": wout,
                    "bout": bout,
                    "ln2_g": np.array(get(p + "output.LayerNorm.weight", (h,))),
                    "ln2_b": np.array(get(p + "output.LayerNorm.bias", (h,))),
                }
            )

    @staticmethod
    def _prefix(tensors: Mapping[str, np.ndarray]) -> str:
        suffix = "embeddings.word_embeddings.weight"
        for key in tensors:
            if key.endswith(suffix):
                return key[: -len(suffix)]
        raise BertWeightsError(f"missing tensor {suffix}")

    def forward_packed(self, ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Run the encoder on token-id sequences; return (packed hidden (T, H), row offsets (n+1,))."""
        lengths = np.fromiter((len(s) for s in ids), dtype=np.int64, count=len(ids))
        if lengths.size and (lengths.max() > self.max_positions or lengths.min() < 1):
            raise ValueError(f"sequence lengths must be within 1..{self.max_positions}")
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat_ids = np.fromiter((t for s in ids for t in s), dtype=np.int64, count=int(offsets[-1]))
        positions = np.concatenate([np.arange(n) for n in lengths]) if lengths.size else flat_ids
        x = self.word_emb[flat_ids]  # fancy indexing copies (also from a read-only memory map)
        x += self.pos_emb[positions]
        x += self.type0
        layer_norm_(x, *self.emb_ln, self.eps)
        nh, hd = self.heads, self.head_dim
        ctx = np.empty_like(x)
        bounds = list(zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True))
        for layer in self.layers:
            qkv = x @ layer["wqkv"]
            qkv += layer["bqkv"]
            for s, e in bounds:
                n = e - s
                blk = qkv[s:e].reshape(n, 3, nh, hd)
                q = blk[:, 0].transpose(1, 0, 2)  # (nh, n, hd); q is pre-scaled by 1/sqrt(hd)
                k = blk[:, 1].transpose(1, 2, 0)  # (nh, hd, n)
                v = blk[:, 2].transpose(1, 0, 2)  # (nh, n, hd)
                scores = q @ k  # (nh, n, n)
                scores -= scores.max(axis=2, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=2, keepdims=True)
                ctx[s:e].reshape(n, nh, hd)[...] = (scores @ v).transpose(1, 0, 2)
            attn = ctx @ layer["wo"]
            attn += layer["bo"]
            attn += x
            x = layer_norm_(attn, layer["ln1_g"], layer["ln1_b"], self.eps)
            inter = x @ layer["wi"]
            inter += layer["bi"]
            self.act(inter)
            out = inter @ layer["wout"]
            out += layer["bout"]
            out += x
            x = layer_norm_(out, layer["ln2_g"], layer["ln2_b"], self.eps)
        return x, offsets

    def forward_fixed(self, ids: np.ndarray) -> np.ndarray:
        """Run the encoder on a (batch, length) matrix of token ids, every sequence the same length (the
        static tier's distillation feeds each vocabulary token on its own); returns (batch, length, H).
        Attention is one batched product instead of a loop over sequences."""
        b, n = ids.shape
        if not 1 <= n <= self.max_positions:
            raise ValueError(f"sequence lengths must be within 1..{self.max_positions}")
        x = self.word_emb[ids.reshape(-1)]
        x += np.tile(self.pos_emb[:n], (b, 1))
        x += self.type0
        layer_norm_(x, *self.emb_ln, self.eps)
        nh, hd = self.heads, self.head_dim
        for layer in self.layers:
            qkv = x @ layer["wqkv"]
            qkv += layer["bqkv"]
            blk = qkv.reshape(b, n, 3, nh, hd)
            scores = blk[:, :, 0].transpose(0, 2, 1, 3) @ blk[:, :, 1].transpose(0, 2, 3, 1)  # (b, nh, n, n)
            scores -= scores.max(axis=3, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=3, keepdims=True)
            ctx = np.ascontiguousarray((scores @ blk[:, :, 2].transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3))
            attn = ctx.reshape(b * n, nh * hd) @ layer["wo"]
            attn += layer["bo"]
            attn += x
            x = layer_norm_(attn, layer["ln1_g"], layer["ln1_b"], self.eps)
            inter = x @ layer["wi"]
            inter += layer["bi"]
            self.act(inter)
            out = inter @ layer["wout"]
            out += layer["bout"]
            out += x
            x = layer_norm_(out, layer["ln2_g"], layer["ln2_b"], self.eps)
        return np.asarray(x.reshape(b, n, -1))

    @staticmethod
    def pool(hidden: np.ndarray, offsets: np.ndarray, mode: str = "mean") -> np.ndarray:
        """Pool packed hidden states per sequence: "mean", "cls" or "max"."""
        starts = offsets[:-1]
        if mode == "cls":
            return np.asarray(hidden[starts]).copy()
        if mode == "max":
            return np.maximum.reduceat(hidden, starts, axis=0)
        sums = np.add.reduceat(hidden, starts, axis=0)
        return sums / np.diff(offsets).astype(_F32)[:, None]
