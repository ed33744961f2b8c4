"""On-disk index: versioned manifest, generation folders, atomic writes, checksums, writer lock.

Layout under ``<root>/.aide/`` (or the user cache dir when the workspace is read-only)::

    config.toml                 workspace settings, kept across rebuilds
    index/manifest.json         the single source of truth: format, embedder, files, checksums
    index/g<stamp>/...          one immutable generation: chunks.json + texts.bin, pieces.json, *.npy
    index/lock                  writer lock (flock) holding the writer's PID
    cache/embeddings/<id>/      vectors keyed by chunk-text hash, per embedder id

A writer builds a complete new generation folder, fsyncs it, then atomically replaces the manifest;
a crash at any point leaves the previous manifest and its generation intact.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import os
import shutil
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aide_tui.core.bm25 import DocTerms, Postings
from aide_tui.core.model import EMBED_TEXT_VERSION, Chunk
from aide_tui.core.paths import MANIFEST
from aide_tui.core.view import IndexView, Part, VectorBlock

FORMAT_VERSION = 4
_ARRAYS = ("doc_ptr", "term_ids", "tfs", "pdoc_ptr", "pterm_ids", "ptfs", "vectors", "present", "owners")


class IndexError_(Exception):
    """Base of index problems; the message is meant for the user."""


class IndexMissing(IndexError_):
    """No index has been built yet."""


class IndexCorrupt(IndexError_):
    """The index exists but cannot be trusted (truncated, garbage, unknown format)."""


class LockTimeout(IndexError_):
    """Another writer holds the index lock."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


@dataclass
class FileRecord:
    """What the index knows about one source file."""

    size: int
    mtime_ns: int
    sha1: str


@dataclass
class IndexData:
    """Everything one generation holds, in memory.

    Row i of ``docs`` belongs to ``chunks[i]``; row j of ``vectors``/``present``/``owners`` belongs to
    ``pieces[j]``, a finer span inside chunk ``owners[j]`` (see pieces.py).
    """

    chunks: list[Chunk]
    files: dict[str, FileRecord]
    vocab: dict[str, int]
    docs: DocTerms
    pieces: list[Chunk]
    owners: np.ndarray  # (p,) int32: chunk row of each piece
    pdocs: DocTerms  # BM25 rows of the pieces (same vocabulary)
    vectors: np.ndarray  # (p, dim) float32; rows with present=False are meaningless
    present: np.ndarray  # (p,) bool
    meta: dict[str, Any] = field(default_factory=dict)  # embedder, dim, settings, skipped, ...


# -- atomic primitives -----------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a user-only temp file, fsync and rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _write_file(path: Path, data: bytes) -> tuple[int, int]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return len(data), zlib.crc32(data)


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _encode_chunks(chunks: list[Chunk]) -> tuple[bytes, bytes, bytes]:
    """Chunk metadata as one compact JSON table, texts as one UTF-8 blob plus byte offsets.

    Texts stay out of JSON: loading a large index decodes one blob instead of parsing 10 MB of
    escaped strings (textual 8.2.8: index load 1.3 s → well under half).
    """
    table = [
        [c.path, c.start_line, c.end_line, c.language, c.symbol, c.header, list(c.defines)] for c in chunks
    ]
    texts = [c.text.encode("utf-8", "surrogatepass") for c in chunks]
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return (
        json.dumps(table, ensure_ascii=True, separators=(",", ":")).encode(),
        b"".join(texts),
        _npy_bytes(offsets),
    )


def _decode_chunks(table_raw: bytes, blob: bytes, offsets: np.ndarray) -> list[Chunk]:
    table = json.loads(table_raw)
    if len(offsets) != len(table) + 1 or (len(table) and int(offsets[-1]) != len(blob)):
        raise IndexCorrupt("index chunk table and texts disagree; rebuilding")
    offs = offsets.tolist()
    return [
        Chunk(
            p,
            int(s),
            int(e),
            lang,
            sym,
            hdr,
            blob[offs[i] : offs[i + 1]].decode("utf-8", "surrogatepass"),
            tuple(d),
        )
        for i, (p, s, e, lang, sym, hdr, d) in enumerate(table)
    ]


def _encode_pieces(pieces: list[Chunk]) -> bytes:
    """Pieces as (start, end, symbol, header); path, language and text come from their owner chunk."""
    table = [[p.start_line, p.end_line, p.symbol, p.header] for p in pieces]
    return json.dumps(table, ensure_ascii=True, separators=(",", ":")).encode()


def _decode_pieces(raw: bytes, owners: np.ndarray, chunks: list[Chunk]) -> list[Chunk]:
    table = json.loads(raw)
    if len(table) != len(owners):
        raise IndexCorrupt("index piece table disagrees with its owners; rebuilding")
    lines: dict[int, list[str]] = {}
    out: list[Chunk] = []
    for (s, e, sym, hdr), o in zip(table, owners.tolist(), strict=True):
        if not 0 <= o < len(chunks):
            raise IndexCorrupt("index piece table points outside the chunk list; rebuilding")
        c = chunks[o]
        if not c.start_line <= s <= e <= c.end_line:
            raise IndexCorrupt("index piece lies outside its chunk; rebuilding")
        if o not in lines:
            lines[o] = c.text.split("\n")
        text = "\n".join(lines[o][s - c.start_line : e - c.start_line + 1])
        out.append(Chunk(c.path, int(s), int(e), c.language, sym, hdr, text))
    return out


# -- index read/write ------------------------------------------------------------------------------


def write_index(index_dir: Path, data: IndexData) -> str:
    """Persist ``data`` as a new generation and switch the manifest to it; returns the generation name."""
    index_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    gen = f"g{time.time_ns():x}-{os.getpid()}"
    tmp_dir = index_dir / f".tmp-{gen}"
    tmp_dir.mkdir(mode=0o700)
    checksums: dict[str, list[int]] = {}
    try:
        table, texts, offsets = _encode_chunks(data.chunks)
        payloads: dict[str, bytes] = {
            "chunks.json": table,
            "texts.bin": texts,
            "text_offsets.npy": offsets,
            "pieces.json": _encode_pieces(data.pieces),
            "owners.npy": _npy_bytes(data.owners.astype(np.int32)),
            "vocab.json": json.dumps(sorted(data.vocab, key=data.vocab.__getitem__)).encode(),
            "doc_ptr.npy": _npy_bytes(data.docs.doc_ptr.astype(np.int64)),
            "term_ids.npy": _npy_bytes(data.docs.term_ids.astype(np.int32)),
            "tfs.npy": _npy_bytes(data.docs.tfs.astype(np.float32)),
            "pdoc_ptr.npy": _npy_bytes(data.pdocs.doc_ptr.astype(np.int64)),
            "pterm_ids.npy": _npy_bytes(data.pdocs.term_ids.astype(np.int32)),
            "ptfs.npy": _npy_bytes(data.pdocs.tfs.astype(np.float32)),
            "vectors.npy": _npy_bytes(data.vectors.astype(np.float32)),
            "present.npy": _npy_bytes(data.present.astype(bool)),
        }
        for name, payload in payloads.items():
            checksums[name] = list(_write_file(tmp_dir / name, payload))
        _fsync_dir(tmp_dir)
        os.rename(tmp_dir, index_dir / gen)
        _fsync_dir(index_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    manifest = {
        "format": FORMAT_VERSION,
        "generation": gen,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": {p: [r.size, r.mtime_ns, r.sha1] for p, r in data.files.items()},
        "counts": {
            "files": len(data.files),
            "chunks": len(data.chunks),
            "embedded": embedded_chunks(data),
            "vectors_missing": int((~data.present).sum())
            if data.meta.get("embedder", "none") != "none"
            else 0,
        },
        "checksums": checksums,
        "meta": data.meta,
    }
    atomic_write_bytes(index_dir / MANIFEST, json.dumps(manifest, ensure_ascii=True).encode())
    _remove_old_generations(index_dir, keep={gen})
    return gen


def missing_vectors(data: IndexData) -> int:
    """Dense pieces without a vector (0 when the index has no embedder)."""
    return int((~data.present).sum()) if data.meta.get("embedder", "none") != "none" else 0


def embedded_chunks(data: IndexData) -> int:
    """Chunks whose every dense piece has a vector."""
    missing = np.unique(data.owners[~data.present]) if len(data.owners) else np.zeros(0)
    return len(data.chunks) - len(missing) if data.meta.get("embedder", "none") != "none" else 0


def _remove_old_generations(index_dir: Path, keep: set[str]) -> None:
    """Delete generations older than the newest two (a reader may still be loading the previous one)."""
    gens = sorted(
        (p for p in index_dir.iterdir() if p.name.startswith("g") and p.is_dir()), key=os.path.getmtime
    )
    stale = [p for p in gens if p.name not in keep][:-1]
    stale += [p for p in index_dir.iterdir() if p.name.startswith(".tmp-g") and not _pid_alive_from_tmp(p)]
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)


def _pid_alive_from_tmp(path: Path) -> bool:
    try:
        return _pid_alive(int(path.name.rsplit("-", 1)[-1]))
    except ValueError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_manifest(index_dir: Path) -> dict[str, Any]:
    """Load and validate the manifest; raise IndexMissing / IndexCorrupt."""
    path = index_dir / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise IndexMissing(f"no index at {index_dir}") from exc
    except OSError as exc:
        raise IndexCorrupt(f"cannot read {path}: {exc.strerror}") from exc
    try:
        manifest = json.loads(raw)
        if not isinstance(manifest, dict):
            raise ValueError("not an object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexCorrupt(f"index manifest is corrupt ({exc.__class__.__name__}); rebuilding") from exc
    if manifest.get("format") != FORMAT_VERSION:
        raise IndexCorrupt(
            f"index format {manifest.get('format')!r} is not the supported {FORMAT_VERSION}; rebuilding"
        )
    for key in ("generation", "files", "checksums", "meta", "counts"):
        if key not in manifest:
            raise IndexCorrupt(f"index manifest lacks {key!r}; rebuilding")
    return manifest


def referenced_bytes(manifest: dict[str, Any]) -> int:
    """Bytes on disk of the files the manifest's version references (what the index costs)."""
    return sum(int(v[0]) for v in manifest.get("checksums", {}).values() if isinstance(v, list) and v)


def check_sizes(index_dir: Path, manifest: dict[str, Any]) -> str | None:
    """Why the version's files on disk do not match the manifest (None when every size matches).

    A stat per file: cheap enough for ``status``; contents are verified when a reader loads them.
    """
    gen_dir = index_dir / str(manifest["generation"])
    for name, (size, _crc) in manifest["checksums"].items():
        try:
            st = os.lstat(gen_dir / name)
        except OSError:
            return f"index file {name} is missing; rebuilding"
        if st.st_size != size:
            return f"index file {name} has the wrong size; rebuilding"
    return None


def read_index(index_dir: Path, mmap: bool = False, pieces: bool = True) -> IndexData:
    """Load the current generation, verifying sizes and checksums; raise IndexMissing / IndexCorrupt.

    A writer may retire the generation being read (two quick reindexes): then the newer manifest is
    read again instead of reporting corruption. ``pieces=False`` skips rebuilding the dense pieces'
    texts (searching needs only their owners and vectors); ``IndexData.pieces`` is then empty.
    """
    for _ in range(3):
        manifest = read_manifest(index_dir)
        try:
            return _read_generation(index_dir, manifest, mmap, pieces)
        except IndexCorrupt:
            if read_manifest(index_dir).get("generation") == manifest["generation"]:
                raise
    return _read_generation(index_dir, read_manifest(index_dir), mmap, pieces)


def _read_generation(index_dir: Path, manifest: dict[str, Any], mmap: bool, with_pieces: bool) -> IndexData:
    gen_dir = index_dir / str(manifest["generation"])
    blobs: dict[str, bytes] = {}
    try:
        for name, (size, crc) in manifest["checksums"].items():
            if name == "vectors.npy" and mmap:
                if os.path.getsize(gen_dir / name) != size:
                    raise IndexCorrupt(f"index file {name} has the wrong size; rebuilding")
                continue
            blob = (gen_dir / name).read_bytes()
            if len(blob) != size or zlib.crc32(blob) != crc:
                raise IndexCorrupt(f"index file {name} is damaged (checksum mismatch); rebuilding")
            blobs[name] = blob
        vocab_list = json.loads(blobs["vocab.json"])
        arrays = {}
        for name in _ARRAYS:
            if name == "vectors" and mmap:
                arrays[name] = np.load(gen_dir / "vectors.npy", mmap_mode="r", allow_pickle=False)
            else:
                arrays[name] = np.load(io.BytesIO(blobs[f"{name}.npy"]), allow_pickle=False)
        files = {p: FileRecord(int(v[0]), int(v[1]), str(v[2])) for p, v in manifest["files"].items()}
        offsets = np.load(io.BytesIO(blobs["text_offsets.npy"]), allow_pickle=False)
        chunks = _decode_chunks(blobs["chunks.json"], blobs["texts.bin"], offsets)
        pieces = _decode_pieces(blobs["pieces.json"], arrays["owners"], chunks) if with_pieces else []
    except IndexCorrupt:
        raise
    except FileNotFoundError as exc:
        raise IndexCorrupt(f"index generation {manifest['generation']} is missing files; rebuilding") from exc
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise IndexCorrupt(f"index is unreadable ({exc.__class__.__name__}: {exc}); rebuilding") from exc
    docs = DocTerms(arrays["doc_ptr"], arrays["term_ids"], arrays["tfs"])
    n = len(chunks)
    owners = arrays["owners"]
    p = len(owners)
    pdocs = DocTerms(arrays["pdoc_ptr"], arrays["pterm_ids"], arrays["ptfs"])
    if pdocs.n_docs != p or (with_pieces and len(pieces) != p):
        raise IndexCorrupt("index piece rows disagree with the piece list; rebuilding")
    if docs.n_docs != n or len(arrays["present"]) != p or arrays["vectors"].shape[0] != p or len(owners) != p:
        raise IndexCorrupt("index arrays disagree on the number of chunks; rebuilding")
    if p and (int(owners.min()) < 0 or int(owners.max()) >= n):
        raise IndexCorrupt("index piece table points outside the chunk list; rebuilding")
    return IndexData(
        chunks=chunks,
        files=files,
        vocab={t: i for i, t in enumerate(vocab_list)},
        docs=docs,
        pieces=pieces,
        owners=owners.astype(np.int64),
        pdocs=pdocs,
        vectors=arrays["vectors"],
        present=arrays["present"].astype(bool),
        meta=dict(manifest["meta"], written=manifest.get("written"), generation=manifest["generation"]),
    )


def load_view(index_dir: Path, previous: IndexView | None = None) -> IndexView:
    """The current index version as a query view; parts of ``previous`` that are still current are reused."""
    data = read_index(index_dir, mmap=True, pieces=False)
    gen = str(data.meta["generation"])
    reuse = {p.name: p for p in previous.parts} if previous is not None else {}
    part = reuse.get(gen)
    if part is None:
        vocab_size = len(data.vocab)
        part = Part(
            gen,
            data.chunks,
            Postings.build(data.docs, vocab_size),
            Postings.build(data.pdocs, vocab_size),
            data.owners,
            [VectorBlock(data.vectors, present=data.present)],
        )
    return IndexView([part], [None], data.files, data.vocab, data.meta)


def read_pieces(index_dir: Path, data: IndexData) -> list[Chunk]:
    """Decode the dense pieces of ``data``'s generation (loaded earlier with ``pieces=False``)."""
    gen_dir = index_dir / str(data.meta["generation"])
    try:
        raw = (gen_dir / "pieces.json").read_bytes()
        return _decode_pieces(raw, data.owners, data.chunks)
    except (OSError, ValueError, TypeError) as exc:
        raise IndexCorrupt(f"index pieces are unreadable ({exc.__class__.__name__}); rebuilding") from exc


# -- writer lock -----------------------------------------------------------------------------------


@contextlib.contextmanager
def writer_lock(index_dir: Path, timeout: float = 30.0, poll: float = 0.1) -> Iterator[None]:
    """Hold the index's exclusive writer lock; wait up to ``timeout`` s, then raise LockTimeout.

    flock is released by the kernel when its holder dies, so a stale lock is taken over at once.
    """
    index_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = index_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + max(timeout, 0.0)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    pid = _read_pid(path)
                    who = f"process {pid}" if pid else "another process"
                    raise LockTimeout(
                        f"index is locked by {who} (another aide-tui is indexing {index_dir.parent.parent}); "
                        f"gave up after {timeout:g} s",
                        pid,
                    ) from None
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


# -- embedding cache -------------------------------------------------------------------------------


class EmbeddingCache:
    """Vectors keyed by chunk-text hash for one embedder id; survives reindexing and renames."""

    def __init__(self, state: Path, embedder_id: str, dim: int) -> None:
        slug = hashlib.sha1(f"{embedder_id}\0{EMBED_TEXT_VERSION}".encode()).hexdigest()[:16]
        self.dir = state / "cache" / "embeddings" / slug
        self.embedder_id = embedder_id
        self.dim = dim
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, dim), np.float32)
        self._new_keys: list[str] = []
        self._new_vecs: list[np.ndarray] = []
        self._load()

    def _load(self) -> None:
        try:
            meta = json.loads((self.dir / "keys.json").read_text())
            matrix = np.load(self.dir / "vectors.npy", allow_pickle=False)
            keys = meta["keys"]
            if meta.get("embedder") != self.embedder_id or matrix.shape != (len(keys), self.dim):
                return
            self.rows = {k: i for i, k in enumerate(keys)}
            self.matrix = matrix.astype(np.float32, copy=False)
        except (OSError, ValueError, KeyError, TypeError):
            return  # a missing or damaged cache only costs re-embedding

    def lookup(self, key: str) -> np.ndarray | None:
        """The cached vector for ``key``, or None."""
        row = self.rows.get(key)
        return None if row is None else self.matrix[row]

    def add(self, keys: list[str], vectors: np.ndarray) -> None:
        """Remember new vectors (saved by ``save``)."""
        for key, vec in zip(keys, vectors, strict=True):
            if key not in self.rows:
                self.rows[key] = len(self.rows)
                self._new_keys.append(key)
                self._new_vecs.append(np.asarray(vec, np.float32))

    def save(self, live_keys: set[str]) -> None:
        """Write the cache atomically; prune to ``live_keys`` once it holds twice as many as needed."""
        if self._new_vecs:
            self.matrix = np.vstack([self.matrix, np.stack(self._new_vecs)]).astype(np.float32)
            self._new_keys, self._new_vecs = [], []
        elif not self.rows:
            return
        keys = sorted(self.rows, key=self.rows.__getitem__)
        if len(keys) > 2 * max(len(live_keys), 1000):
            keep = [i for i, k in enumerate(keys) if k in live_keys]
            keys = [keys[i] for i in keep]
            self.matrix = self.matrix[keep]
            self.rows = {k: i for i, k in enumerate(keys)}
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_bytes(self.dir / "vectors.npy", _npy_bytes(self.matrix))
        atomic_write_bytes(
            self.dir / "keys.json", json.dumps({"embedder": self.embedder_id, "keys": keys}).encode()
        )
