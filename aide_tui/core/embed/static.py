"""The static embedding tier: one vector per word piece, distilled once, locally, from the built-in
MiniLM weights; a text's vector is the mean of its word pieces' rows.

The table follows Model2Vec's recipe: every vocabulary token goes through the transformer on its own
(``[SEP] token [CLS]``, mean-pooled over the three positions), the outputs are reduced by PCA and
weighted by SIF with frequencies estimated from the vocabulary's (Zipf) order. Distilling takes about
half a minute of CPU once per machine (numpy, no download); embedding then needs no model at all: a
piece costs its tokenization and a sum of rows (thousands of pieces per CPU-second, where the
transformer does about 25). Queries must be encoded the same way: the static and the transformer
spaces do not compare.

The table lives in the user cache beside the onnx graphs (``$XDG_CACHE_HOME/aide-tui/models/``),
named by the weights' sha256 and the recipe, written atomically with its own sha256 beside it, and is
checked when loaded; a damaged or missing table is distilled again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from aide_tui.core.embed.base import Kind
from aide_tui.core.embed.builtin import PACKAGED_NAME, BuiltinEmbedder, file_sha256
from aide_tui.core.embed.wordpiece import WordPieceTokenizer
from aide_tui.core.errors import EmbedderError

RECIPE = "m2v1"  # bump when the distillation below changes: older tables are then ignored
TEXT_RECIPE = "2"  # bump when how a text is read changes (2: camelCase split): its vectors change
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
STATIC_DIM = 256
SIF_COEFFICIENT = 1e-4
MAX_TOKENS = 512  # word pieces of a text that count (a longer text is read from its start)
_BATCH = 512  # vocabulary tokens per forward pass while distilling
_SKIP_PREFIX = ("[unused",)

Progress = Callable[[int, int], None]  # (tokens done, tokens in all)


def models_cache_dir() -> Path:
    """Where derived model files are cached (see :func:`aide_tui.core.paths.models_dir`)."""
    from aide_tui.core.paths import models_dir

    return models_dir()


def distill(
    encoder_source: BuiltinEmbedder, dims: int = STATIC_DIM, progress: Progress | None = None
) -> np.ndarray:
    """The (vocabulary, ``dims``) float16 table of ``encoder_source``'s loaded numpy encoder."""
    from aide_tui.core.embed.bert import BertEncoder

    encoder, tokenizer = encoder_source.numpy_parts()
    assert isinstance(encoder, BertEncoder)
    vocab = tokenizer.vocab
    n = encoder.word_emb.shape[0]
    raw = np.zeros((n, encoder.hidden), np.float32)
    for start in range(0, n, _BATCH):
        ids = np.arange(start, min(n, start + _BATCH))
        batch = np.stack([np.full(len(ids), tokenizer.sep_id), ids, np.full(len(ids), tokenizer.cls_id)], 1)
        raw[ids] = encoder.forward_fixed(batch).mean(axis=1)
        if progress is not None:
            progress(int(ids[-1]) + 1, n)
    keep = np.ones(n, bool)
    for token, i in vocab.items():
        if i < n and token.startswith(_SKIP_PREFIX):
            keep[i] = False
    return _post_process(raw, keep, dims)


def _post_process(raw: np.ndarray, keep: np.ndarray, dims: int) -> np.ndarray:
    """PCA of the kept rows to ``dims`` (centred), then SIF weights from each kept token's rank in the
    vocabulary (Zipf: frequency ~ 1/rank); rows not kept are zero (never part of a text's mean)."""
    rows = raw[keep].astype(np.float64)
    centred = rows - rows.mean(axis=0)
    vals, vecs = np.linalg.eigh(centred.T @ centred)
    top = vecs[:, np.argsort(vals)[::-1][: min(dims, rows.shape[1])]]
    reduced = centred @ top
    inv_rank = 1.0 / np.arange(2, len(reduced) + 2)
    proba = inv_rank / inv_rank.sum()
    reduced *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + proba))[:, None]
    table = np.zeros((len(raw), reduced.shape[1]), np.float16)
    table[keep] = reduced.astype(np.float16)
    return table


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


def _write_atomic(path: Path, data: bytes) -> None:
    import tempfile  # only when a table is written (once per machine), not by every search

    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        _fsync_replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def split_camel(text: str) -> str:
    """``parseHeader`` → ``parse Header``, ``HTTPClient`` → ``HTTP Client``: the word-piece vocabulary
    knows the words, not the identifiers code glues them into (public eval, held-out: nl2code MRR
    .815 → .821, questions .907 → .920)."""
    return _CAMEL.sub(" ", text)


class StaticEmbedder:
    """The static tier of the built-in model (or of a user's BERT folder): ``embed`` averages table rows.

    ``load(progress)`` opens the cached table, distilling it first when it is missing or damaged (two
    processes never distil at once: the second waits for the first's table). ``ready()`` says whether a
    table is cached without building one.
    """

    def __init__(self, model_dir: str | Path | None = None, dims: int = STATIC_DIM) -> None:
        self._source = BuiltinEmbedder(model_dir=model_dir, runtime="numpy")
        self.dims = dims
        self._lock = threading.Lock()
        self._table: np.ndarray | None = None  # (vocabulary, d) float16 rows
        self._tokenizer: WordPieceTokenizer | None = None
        self._id: str | None = None

    @property
    def id(self) -> str:
        """``static:all-MiniLM-L6-v2:53aa5117:m2v1-256-t2``: the weights it was distilled from, the table's
        recipe and dimension, and how texts are read."""
        if self._id is None:
            base = self._source.id.split(":")
            self._id = f"static:{':'.join(base[1:3])}:{RECIPE}-{self.dims}-t{TEXT_RECIPE}"
        return self._id

    @property
    def dim(self) -> int:
        return self.dims

    @property
    def source_name(self) -> str:
        return PACKAGED_NAME if self._source.model_dir is None else self._source.model_dir.name

    def table_path(self) -> Path:
        """Where this table is cached: named by the weights' sha256, the recipe and the dimension."""
        d = self._source.model_dir
        sha = self._source.expected_weights_sha256() or file_sha256(d / "model.safetensors")
        return models_cache_dir() / f"{sha[:16]}-static-{RECIPE}-{self.dims}.npy"

    def ready(self) -> bool:
        """Whether the table is loaded or cached (no distillation needed)."""
        if self._table is not None:
            return True
        try:
            return self.table_path().is_file()
        except (EmbedderError, OSError):  # an unreadable models folder (EACCES) is no table
            return False

    def load(self, progress: Progress | None = None) -> None:
        """Open the table, distilling it first if needed. Raises EmbedderError. Idempotent, thread-safe."""
        if self._table is not None:
            return
        with self._lock:
            if self._table is not None:
                return
            path = self.table_path()
            table = self._read(path)
            if table is None:
                table = self._build(path, progress)
            tokenizer = self._source.load_tokenizer()
            if max(tokenizer.vocab.values(), default=0) >= len(table):
                raise EmbedderError(f"static tier: the table at {path} is shorter than the vocabulary")
            self._tokenizer = tokenizer
            self._table = table

    @staticmethod
    def _read(path: Path) -> np.ndarray | None:
        """The cached table when it is there and matches its recorded sha256 (None otherwise)."""
        meta = path.with_suffix(".json")
        try:
            want = json.loads(meta.read_text(encoding="utf-8")).get("sha256")
            raw = path.read_bytes()
        except (OSError, ValueError, AttributeError):
            return None
        if not isinstance(want, str) or hashlib.sha256(raw).hexdigest() != want:
            return None
        from aide_tui.core.safeio import parse_npy

        try:
            table = parse_npy(raw)
        except ValueError:
            return None
        return table if table.ndim == 2 and table.dtype == np.float16 else None

    def _build(self, path: Path, progress: Progress | None) -> np.ndarray:
        """Distil the table under a lock file (a second process waits, then reads the first one's)."""
        from aide_tui.core.paths import private_dir

        try:
            private_dir(path.parent)
            fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise EmbedderError(f"static tier: cannot write {path.parent}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            table = self._read(path)  # another process may have built it while we waited
            if table is not None:
                return table
            self._source.load()
            table = distill(self._source, self.dims, progress)
            buf = io.BytesIO()
            np.save(buf, table, allow_pickle=False)
            data = buf.getvalue()
            try:
                _write_atomic(path, data)
                meta = {
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "recipe": RECIPE,
                    "source": self._source.id,
                }
                _write_atomic(path.with_suffix(".json"), json.dumps(meta).encode())
            except OSError as exc:
                raise EmbedderError(f"static tier: cannot write {path}: {exc.strerror or exc}") from None
            return table
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _rows32(self) -> np.ndarray:
        got = self.__dict__.get("_table32")
        if got is None:
            assert self._table is not None
            got = self.__dict__["_table32"] = self._table.astype(np.float32)
        return got

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """L2-normalised float32 vectors of shape (len(texts), dim): the mean of each text's rows."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a string")
        self.load()
        table = self._table
        assert table is not None
        if len(texts) > 64:  # a batch: its rows add 4x faster in float32 (a 31 MB copy, made once)
            table = self._rows32()
        out = np.zeros((len(texts), table.shape[1]), np.float32)
        tok = self._tokenizer
        assert tok is not None
        unk = tok.unk_id
        for i, text in enumerate(texts):
            ids = tok.tokenize_ids(split_camel(text), MAX_TOKENS)
            if unk in ids:
                ids = [t for t in ids if t != unk]
            if ids:
                out[i] = table[ids].sum(axis=0, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out
