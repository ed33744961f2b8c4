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
import mmap
import os
import re
import threading
import zlib
from collections.abc import Callable, Sequence
from functools import partial
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


TABLE_BLOCK = 1 << 16  # bytes under one recorded CRC-32 of the cached table


class TableDamaged(ValueError):
    """A block of the cached table does not match the sum recorded when it was distilled."""


def block_sums(data: bytes) -> dict[str, object]:
    """What the table's record keeps to check it a block at a time: its size and each block's CRC-32."""
    view = memoryview(data)
    return {
        "size": len(view),
        "blocks": [zlib.crc32(view[i : i + TABLE_BLOCK]) for i in range(0, len(view), TABLE_BLOCK)],
    }


class MappedTable:
    """The cached table mapped read-only; rows are read once the blocks holding them match their
    recorded CRC-32s (each block checked once). A query reads a few dozen rows: reading the 15 MB file
    and its sha256 was 23 ms of every process that embeds a query."""

    def __init__(self, path: Path, size: int, blocks: Sequence[int]) -> None:
        from aide_tui.core.safeio import load_npy

        if len(blocks) != -(-size // TABLE_BLOCK):
            raise ValueError("the table's record has the wrong number of block sums")
        arr = load_npy(path, expect_size=size, mmap_mode=True)
        if not isinstance(arr.base, mmap.mmap) or arr.ndim != 2:
            raise ValueError("the table is not a mapped 2-d array")
        self.array: np.ndarray = arr
        self._view: memoryview = memoryview(arr.base)
        self._sums: list[int] = list(blocks)
        self._ok: np.ndarray = np.zeros(len(blocks), bool)
        self._data: int = size - arr.nbytes  # where the rows start
        self._row: int = arr.strides[0]
        self._check([0])  # the header read above

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def __len__(self) -> int:
        return len(self.array)

    def _check(self, blocks: Sequence[int]) -> None:
        for b in blocks:
            if not self._ok[b]:
                if zlib.crc32(self._view[b * TABLE_BLOCK : (b + 1) * TABLE_BLOCK]) != self._sums[b]:
                    raise TableDamaged(f"block {b}")
                self._ok[b] = True

    def rows(self, ids: Sequence[int]) -> np.ndarray:
        """``table[ids]``, verified."""
        starts = [self._data + i * self._row for i in ids]
        self._check(
            sorted({s // TABLE_BLOCK for s in starts} | {(s + self._row - 1) // TABLE_BLOCK for s in starts})
        )
        return np.asarray(self.array[ids])

    def whole(self) -> np.ndarray:
        """Every row, verified."""
        self._check(range(len(self._sums)))
        return np.asarray(self.array)


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
        self._table: np.ndarray | MappedTable | None = None  # (vocabulary, d) float16 rows
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
    def _read(path: Path) -> np.ndarray | MappedTable | None:
        """The cached table when its record vouches for it (None otherwise): mapped, checked a block at a
        time as rows are read; a table recorded before block sums is read whole and matched against its
        sha256, and its record gains the block sums."""
        meta_path = path.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            size, blocks = meta.get("size"), meta.get("blocks")
            if type(size) is int and isinstance(blocks, list) and all(type(b) is int for b in blocks):
                return MappedTable(path, size, blocks)
            want = meta.get("sha256")
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
        if table.ndim != 2 or table.dtype != np.float16:
            return None
        with contextlib.suppress(OSError):  # the next process maps it
            _write_atomic(meta_path, json.dumps({**meta, **block_sums(raw)}).encode())
        return table

    def _build(self, path: Path, progress: Progress | None) -> np.ndarray | MappedTable:
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
                    **block_sums(data),
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
            table = self._table
            assert table is not None
            whole = self._verified(table.whole) if isinstance(table, MappedTable) else table
            got = self.__dict__["_table32"] = whole.astype(np.float32)
        return got

    def _verified(self, read: Callable[[], np.ndarray]) -> np.ndarray:
        """What ``read`` takes from the mapped table; a damaged block drops the table and its record (the
        next use distils it again) and raises EmbedderError."""
        try:
            return read()
        except TableDamaged as exc:
            path = self.table_path()
            with contextlib.suppress(OSError):
                path.with_suffix(".json").unlink()
            self._table = None
            self.__dict__.pop("_table32", None)
            raise EmbedderError(
                f"static tier: the table at {path} is damaged ({exc}); it is distilled again on next use"
            ) from None

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
                rows = (
                    self._verified(partial(table.rows, ids)) if isinstance(table, MappedTable) else table[ids]
                )
                out[i] = rows.sum(axis=0, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out
