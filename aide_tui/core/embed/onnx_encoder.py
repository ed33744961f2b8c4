"""The built-in BERT encoder as an ONNX graph run by onnxruntime (optional extra ``aide-tui[onnx]``,
``[embedding] runtime``).

The graph is built here with ``onnx.helper`` from the same verified safetensors weights the numpy
encoder uses (taken from a loaded :class:`BertEncoder`, so name resolution and shape checks are
shared): embeddings + LayerNorm, per layer a fused ``com.microsoft.Attention`` (QKV projection,
scaled dot-product attention under a padding mask), output projection + residual + LayerNorm
(``SkipLayerNormalization``), exact-erf GELU (``BiasGelu``), and pooling over the real tokens.
Tokenization stays ours, so both runtimes see the same ids. ``int8`` is the fp32 graph passed
through ``onnxruntime.quantization.quantize_dynamic`` (per-channel uint8 weights, uint8 activations
quantized per call: see :data:`WEIGHT_TYPE` for why not int8 weights), after exact rewrites that
keep the few huge activation channels of this model out of the int8 products (:class:`QuantPrep`,
calibrated on vocabulary tokens: no data, no network). One intra-op thread per session (the indexer
runs one process per core), sequential execution, all graph optimizations.

Measured on the public eval and ``tests/benchmarks/bench_embed.py`` (docs/benchmarks.md): int8 is
2.2x the numpy encoder's rate, fp32 1.06x; see there why it is not the app's encoder.

Built graphs live in the user cache, ``$XDG_CACHE_HOME/aide-tui/models/``, named by the weights'
sha256 prefix, the variant and a digest of everything else the graph depends on; they are written
atomically (temporary file + rename) and never inside a workspace. Nothing here touches the network.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.embed.bert import BertEncoder
from aide_tui.core.errors import EmbedderError

VARIANTS = ("fp32", "int8")
GRAPH_VERSION = 2  # bump when the graph below changes: old cache files are then ignored
# The int8 graph's weights are uint8 (U8U8 products), not int8 (U8S8). onnxruntime runs U8S8 products on
# CPUs without VNNI (AVX2, AVX-512 without VNNI) with vpmaddubsw, which adds two u8 x s8 products into a
# saturating int16: 2 x 255 x 127 overflows, and this model's vectors then drift to a cosine of ~0.979
# to the numpy encoder's (0.998 with VNNI). U8U8 products widen to int16 first and never saturate, so
# every CPU computes the same integers (measured in docs/benchmarks.md, "onnx int8 on CPUs without VNNI").
WEIGHT_TYPE = "QUInt8"
# The embedder id's tag per variant: vectors of the int8 graph with int8 weights ("onnx-int8", graph 1)
# are not this graph's, so indexes and caches built with it are re-embedded, never mixed.
ID_TAGS = {"fp32": "onnx-fp32", "int8": "onnx-int8-u8"}
INSTALL_HINT = "pip install 'aide-tui[onnx]'"
_OPSET = 17
# int8 preparation (see QuantPrep): calibration = 64 sequences of 126 vocabulary tokens; per layer, the
# 32 intermediate channels with the largest activations are split off, and the 16 (intermediate
# projection input) / 8 (QKV input) largest hidden channels are scaled down to the others' range.
CALIBRATION_SHAPE = (64, 126)
OUTLIERS = {"down": 32, "ffn": 16, "qkv": 8}
_MS = "com.microsoft"


@functools.cache
def onnx_importable() -> bool:
    """True when ``onnx`` (graph building) and ``onnxruntime`` (running it) are installed, found without
    importing them: ``auto`` asks on every start, and importing ``onnx`` costs a large share of a CLI
    search although only building a graph (once) needs it."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("onnx", "onnxruntime"))
    except (ImportError, ValueError):  # a broken install counts as missing
        return False


def require_onnx() -> tuple[Any, Any]:
    """``onnx`` and ``onnxruntime`` (building a graph needs both)."""
    try:
        import onnx
    except Exception as exc:  # noqa: BLE001
        raise EmbedderError(f"builtin embedder runtime 'onnx' needs onnx ({exc}); {INSTALL_HINT}") from None
    return onnx, require_ort()


def require_ort() -> Any:
    """``onnxruntime`` (running a built graph needs only it)."""
    try:
        import onnxruntime
    except Exception as exc:  # noqa: BLE001
        raise EmbedderError(
            f"builtin embedder runtime 'onnx' needs onnxruntime ({exc}); {INSTALL_HINT}"
        ) from None
    return onnxruntime


def models_cache_dir() -> Path:
    """Where derived model files are cached (see :func:`aide_tui.core.paths.models_dir`)."""
    from aide_tui.core.paths import models_dir

    return models_dir()


def _act_name(config: Mapping[str, object]) -> str:
    act = str(config.get("hidden_act", "gelu"))
    if act == "gelu":
        return "gelu"
    if act in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return "gelu_tanh"
    if act == "relu":
        return "relu"
    raise EmbedderError(f"builtin embedder: hidden_act {act!r} has no onnx graph")


def graph_key(
    encoder: BertEncoder,
    config: Mapping[str, object],
    pooling: str,
    calibration: Sequence[Sequence[int]] = (),
) -> str:
    """Digest of what the graph depends on besides the weights: shapes, eps, activation, pooling and, for
    int8, the outlier settings and the calibration token ids."""
    parts = {
        "graph": GRAPH_VERSION,
        "opset": _OPSET,
        "hidden": encoder.hidden,
        "heads": encoder.heads,
        "layers": encoder.n_layers,
        "eps": encoder.eps,
        "positions": encoder.max_positions,
        "act": _act_name(config),
        "pooling": pooling,
        "int8": [CALIBRATION_SHAPE, OUTLIERS, WEIGHT_TYPE] if calibration else None,
        "calibration": hashlib.sha256(np.asarray(calibration, np.int64).tobytes()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:8]


def id_tag(variant: str) -> str:
    """What an embedder id carries for vectors of this graph variant (``onnx-fp32``, ``onnx-int8-u8``)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown onnx variant {variant!r}")
    return ID_TAGS[variant]


def cached_model_path(weights_sha256: str, variant: str, key: str) -> Path:
    """``<cache>/models/<weights sha256[:16]>-<variant>-<graph key>.onnx``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown onnx variant {variant!r}")
    return models_cache_dir() / f"{weights_sha256[:16]}-{variant}-{key}.onnx"


# -- graph ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QuantPrep:
    """Exact (in fp32) rewrites that keep activation outliers away from int8 activation quantization.

    ``smooth[f"l{i}_qkv" | f"l{i}_ffn"]``: per-channel divisors s of the input of layer i's QKV /
    intermediate projection: the graph computes (x / s) @ (s * W). ``split[f"l{i}_down"]``: channels
    of the intermediate activation computed apart: their GELU and their share of the output projection
    run in fp32 on a few columns (nodes named ``*_outlier``, never quantized); the int8 product gets
    those channels as exact zeros.
    """

    smooth: Mapping[str, np.ndarray] = field(default_factory=dict)
    split: Mapping[str, np.ndarray] = field(default_factory=dict)


def build_graph(
    encoder: BertEncoder,
    config: Mapping[str, object],
    pooling: str = "mean",
    prep: QuantPrep | None = None,
) -> Any:
    """fp32 ModelProto: inputs ``input_ids`` int64 (B, S), ``attention_mask`` int32 (B, S) with 1 for real
    tokens (right padding); output ``pooled`` float32 (B, hidden), not normalised."""
    onnx, _ = require_onnx()
    from onnx import TensorProto, helper, numpy_helper

    if pooling not in ("mean", "cls", "max"):
        raise EmbedderError(f"builtin embedder: pooling {pooling!r} has no onnx graph")
    act = _act_name(config)
    prep = prep or QuantPrep()
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, dtype=arr.dtype), name))
        return name

    def node(op: str, inputs: Sequence[str], out: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, list(inputs), [out], name=out, domain=domain, **attrs))
        return out

    def smoothed(x: str, w: np.ndarray, key: str) -> tuple[str, np.ndarray]:
        if key not in prep.smooth:
            return x, w
        s = np.asarray(prep.smooth[key], np.float32)
        return node("Mul", [x, const(key + "_inv_s", (1 / s).astype(np.float32))], key + "_in"), w * s[
            :, None
        ]

    def activation(z: str, bias: np.ndarray, out: str) -> str:
        if act == "gelu":
            return node("BiasGelu", [z, const(out + "_b", bias)], out, domain=_MS)
        z = node("Add", [z, const(out + "_b", bias)], out + "_biased")
        op, dom = ("FastGelu", _MS) if act == "gelu_tanh" else ("Relu", "")
        return node(op, [z], out, domain=dom)

    h, eps = encoder.hidden, encoder.eps
    # embeddings: word[ids] + position[:S] + token_type[0], LayerNorm
    word = node(
        "Gather", [const("word_embeddings", encoder.word_emb.astype(np.float32)), "input_ids"], "emb_word"
    )
    seq = node("Shape", ["input_ids"], "seq_len", start=1, end=2)
    pos = node(
        "Slice",
        [const("position_embeddings", encoder.pos_emb), const("zero_i64", np.zeros(1, np.int64)), seq],
        "emb_pos",
    )
    x = node("Add", [word, pos], "emb_word_pos")
    x = node("Add", [x, const("token_type0", encoder.type0)], "emb_sum")
    x = node(
        "LayerNormalization",
        [x, const("emb_ln_g", encoder.emb_ln[0]), const("emb_ln_b", encoder.emb_ln[1])],
        "emb_out",
        axis=-1,
        epsilon=eps,
    )
    for i, layer in enumerate(encoder.layers):
        p = f"l{i}_"
        xq, wqkv = smoothed(x, layer["wqkv"], p + "qkv")
        # q is pre-scaled by 1/sqrt(head_dim) in wqkv/bqkv, hence scale=1
        ctx = node(
            "Attention",
            [xq, const(p + "wqkv", wqkv), const(p + "bqkv", layer["bqkv"]), "attention_mask"],
            p + "ctx",
            domain=_MS,
            num_heads=encoder.heads,
            scale=1.0,
        )
        attn = node("MatMul", [ctx, const(p + "wo", layer["wo"])], p + "attn_proj")
        x = node(
            "SkipLayerNormalization",
            [attn, x, const(p + "ln1_g", layer["ln1_g"]), const(p + "ln1_b", layer["ln1_b"]),
             const(p + "bo", layer["bo"])],
            p + "attn_out",
            domain=_MS,
            epsilon=eps,
        )  # fmt: skip
        xf, wi = smoothed(x, layer["wi"], p + "ffn")
        bi, wout, skip = layer["bi"], layer["wout"], x
        split = prep.split.get(p + "down")
        if split is not None and len(split):
            o = np.asarray(split, np.int64)
            keep = np.ones(wi.shape[1], np.float32)
            keep[o] = 0  # act(0) = 0: these intermediate channels are exact zeros in the int8 product
            zo = node("MatMul", [xf, const(p + "wi_outlier", wi[:, o])], p + "inter_proj_outlier")
            inter_o = activation(zo, bi[o], p + "inter_outlier")
            side = node("MatMul", [inter_o, const(p + "wout_outlier", wout[o])], p + "out_proj_outlier")
            skip = node("Add", [x, side], p + "skip_plus_outlier")
            wi, bi, wout = wi * keep, bi * keep, wout * keep[:, None]
        inter = node("MatMul", [xf, const(p + "wi", wi)], p + "inter_proj")
        inter = activation(inter, bi, p + "inter")
        out = node("MatMul", [inter, const(p + "wout", wout)], p + "out_proj")
        x = node(
            "SkipLayerNormalization",
            [out, skip, const(p + "ln2_g", layer["ln2_g"]), const(p + "ln2_b", layer["ln2_b"]),
             const(p + "bout", layer["bout"])],
            p + "out",
            domain=_MS,
            epsilon=eps,
        )  # fmt: skip
    _pool(node, const, x, pooling)
    graph = helper.make_graph(
        nodes,
        "aide_bert_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", h])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)],
        producer_name="aide-tui",
    )
    model.ir_version = min(model.ir_version, 9)  # readable by older onnxruntime builds too
    onnx.checker.check_model(model)
    return model


def _pool(node: Any, const: Any, x: str, pooling: str) -> None:
    if pooling == "cls":
        node("Gather", [x, const("zero_scalar", np.array(0, np.int64))], "pooled", axis=1)
        return
    mask = node("Cast", ["attention_mask"], "mask_f", to=1)  # FLOAT
    mask = node("Unsqueeze", [mask, const("axis_last", np.array([-1], np.int64))], "mask_3d")
    axis = const("axis_seq", np.array([1], np.int64))
    if pooling == "max":
        neg = const("neg_big", np.array(np.finfo(np.float32).min, np.float32))
        keep = node("Cast", [mask], "mask_bool", to=9)  # BOOL
        masked = node("Where", [keep, x, neg], "masked_hidden")
        node("ReduceMax", [masked], "pooled", axes=[1], keepdims=0)  # opset 17: axes is an attribute
        return
    summed = node("ReduceSum", [node("Mul", [x, mask], "masked_hidden"), axis], "sum_hidden", keepdims=0)
    count = node("ReduceSum", [mask, axis], "token_count", keepdims=0)
    node("Div", [summed, count], "pooled")


# -- int8 preparation -----------------------------------------------------------------------------
def calibration_ids(vocab: Mapping[str, int]) -> list[list[int]]:
    """Deterministic, data-free calibration input: ordinary vocabulary tokens in id order, evenly
    strided over the whole vocabulary, framed by [CLS] / [SEP]. Depends only on vocab.txt."""
    n, length = CALIBRATION_SHAPE
    plain = sorted(i for t, i in vocab.items() if not (t.startswith("[") and t.endswith("]")))
    step = max(1, len(plain) // (n * length))
    ids = plain[::step][: n * length]
    cls, sep = vocab.get("[CLS]", 101), vocab.get("[SEP]", 102)
    rows = [ids[r * length : (r + 1) * length] for r in range(n)]
    return [[cls, *row, sep] for row in rows if row]


def _activation_absmax(
    model: Any, n_layers: int, calibration: Sequence[Sequence[int]]
) -> dict[str, np.ndarray]:
    """Per-channel max |activation| over the calibration input at the inputs of the QKV (``l<i>_qkv``),
    intermediate (``l<i>_ffn``) and output (``l<i>_down``) projections, from the fp32 graph."""
    from onnx import helper

    ort = require_ort()
    taps = {}
    for i in range(n_layers):
        taps[f"l{i}_qkv"] = "emb_out" if i == 0 else f"l{i - 1}_out"
        taps[f"l{i}_ffn"] = f"l{i}_attn_out"
        taps[f"l{i}_down"] = f"l{i}_inter"
    probe = type(model)()
    probe.CopyFrom(model)
    for tensor in taps.values():
        probe.graph.output.append(helper.make_empty_tensor_value_info(tensor))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
    absmax: dict[str, np.ndarray] = {}
    for start in range(0, len(calibration), 16):
        rows = calibration[start : start + 16]
        ids = np.asarray(rows, np.int64)  # all rows have the same length
        outs = sess.run(
            list(taps.values()), {"input_ids": ids, "attention_mask": np.ones(ids.shape, np.int32)}
        )
        for key, out in zip(taps, outs, strict=True):
            m = np.abs(out).reshape(-1, out.shape[-1]).max(axis=0)
            absmax[key] = np.maximum(absmax[key], m) if key in absmax else m
    return absmax


def quant_prep(model: Any, n_layers: int, calibration: Sequence[Sequence[int]]) -> QuantPrep:
    """The QuantPrep for a fp32 graph built without one (see OUTLIERS)."""
    absmax = _activation_absmax(model, n_layers, calibration)
    split: dict[str, np.ndarray] = {}
    smooth: dict[str, np.ndarray] = {}
    for key, a in absmax.items():
        kind = key.split("_", 1)[1]
        top = np.sort(np.argsort(a)[-OUTLIERS[kind] :])
        if kind == "down":
            split[key] = top
            continue
        rest = np.delete(a, top).max()
        s = np.ones_like(a)
        s[top] = np.maximum(a[top] / max(rest, 1e-6), 1.0)
        smooth[key] = s
    return QuantPrep(smooth=smooth, split=split)


# -- building and caching -------------------------------------------------------------------------
class _DropQuantizerAdvice(logging.Filter):
    """quantize_dynamic logs advice ("consider pre-processing") on the root logger: not for our users."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname


@contextlib.contextmanager
def _quiet_quantizer() -> Any:
    root, flt = logging.getLogger(), _DropQuantizerAdvice()
    root.addFilter(flt)
    try:
        yield
    finally:
        root.removeFilter(flt)


def _fsync_replace(tmp: Path, path: Path) -> None:
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def ensure_model(
    encoder: BertEncoder,
    config: Mapping[str, object],
    pooling: str,
    weights_sha256: str,
    variant: str,
    vocab: Mapping[str, int] | None = None,
) -> Path:
    """Path of the cached graph for these weights and ``variant``, building it (atomically) if missing.
    ``int8`` needs the ``vocab`` (its calibration input)."""
    calibration = calibration_ids(vocab or {}) if variant == "int8" else []
    if variant == "int8" and not calibration:
        raise EmbedderError("builtin embedder: the onnx int8 graph needs the model's vocabulary")
    path = cached_model_path(weights_sha256, variant, graph_key(encoder, config, pooling, calibration))
    if path.is_file():
        return path
    onnx, _ = require_onnx()  # only building the graph needs onnx (importing it is slow)
    from aide_tui.core.paths import private_dir

    try:
        private_dir(path.parent)
    except OSError as exc:
        raise EmbedderError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    model = build_graph(encoder, config, pooling)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    fp32_tmp = tmp.with_suffix(".fp32.tmp")
    try:
        if variant == "fp32":
            onnx.save(model, str(tmp))
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            prep = quant_prep(model, encoder.n_layers, calibration)
            model = build_graph(encoder, config, pooling, prep)
            onnx.save(model, str(fp32_tmp))
            fp32_only = [n.name for n in model.graph.node if n.name.endswith("_outlier")]
            del model
            with _quiet_quantizer():
                quantize_dynamic(
                    str(fp32_tmp),
                    str(tmp),
                    op_types_to_quantize=["MatMul", "Attention"],
                    nodes_to_exclude=fp32_only,
                    per_channel=True,  # per-tensor int8 weights: cosine 0.94 to numpy; per-channel: 0.994
                    weight_type=getattr(QuantType, WEIGHT_TYPE),  # never saturates (see WEIGHT_TYPE)
                    # shape inference does not type the com.microsoft nodes' outputs: they are all float
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
        _fsync_replace(tmp, path)
    except OSError as exc:
        raise EmbedderError(f"cannot write {path}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - the quantizer's own failures
        raise EmbedderError(f"builtin embedder: cannot build the onnx {variant} graph ({exc})") from None
    finally:
        for leftover in (tmp, fp32_tmp):
            with contextlib.suppress(OSError):
                leftover.unlink()
    return path


class OnnxEncoder:
    """An onnxruntime session over a cached graph; ``encode`` returns pooled (not normalised) vectors."""

    def __init__(self, path: Path, hidden: int, max_positions: int) -> None:
        ort = require_ort()
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1  # the indexer already runs one process per core
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 3
        self.path = path
        self.hidden = hidden
        self.max_positions = max_positions
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def encode(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Pooled hidden states (len(ids), hidden) of token-id sequences (padded here, masked in-graph)."""
        n = len(ids)
        width = max((len(s) for s in ids), default=0)
        if n == 0:
            return np.zeros((0, self.hidden), np.float32)
        if width > self.max_positions or min(len(s) for s in ids) < 1:
            raise ValueError(f"sequence lengths must be within 1..{self.max_positions}")
        input_ids = np.zeros((n, width), np.int64)
        mask = np.zeros((n, width), np.int32)
        for r, s in enumerate(ids):
            input_ids[r, : len(s)] = s
            mask[r, : len(s)] = 1
        (pooled,) = self.session.run(["pooled"], {"input_ids": input_ids, "attention_mask": mask})
        return np.asarray(pooled, dtype=np.float32)


def load_encoder(
    encoder: BertEncoder,
    config: Mapping[str, object],
    pooling: str,
    weights_sha256: str,
    variant: str,
    vocab: Mapping[str, int] | None = None,
) -> OnnxEncoder:
    """Build (once, cached) and open the onnxruntime encoder; a broken cache file is rebuilt once."""
    path = ensure_model(encoder, config, pooling, weights_sha256, variant, vocab)
    try:
        return OnnxEncoder(path, encoder.hidden, encoder.max_positions)
    except EmbedderError:
        raise
    except Exception:  # noqa: BLE001 - an unreadable cache file: rebuild it once
        with contextlib.suppress(OSError):
            path.unlink()
    path = ensure_model(encoder, config, pooling, weights_sha256, variant, vocab)
    try:
        return OnnxEncoder(path, encoder.hidden, encoder.max_positions)
    except Exception as exc:  # noqa: BLE001
        raise EmbedderError(f"builtin embedder: onnxruntime cannot run {path.name} ({exc})") from None
