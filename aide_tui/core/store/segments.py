"""On-disk index: a manifest over immutable segments, atomic commits, checksums, the writer lock.

Layout under the state dir (``<root>/.aide/`` or the user cache dir, see paths.py)::

    index/manifest.json       the single source of truth: segments, files (and which segment holds
                              each), counts, settings, embedder; sizes and CRC32 of every file; its
                              last member is the CRC32 of the rest of the manifest itself
    index/s<stamp>-<pid>/     one immutable segment: chunks.json + texts.bin + text_offsets.npy,
                              pieces.json + owners.npy, BM25 rows (doc_ptr/term_ids/tfs, and p* for
                              pieces), vocab.json (the terms this segment added), the symbol graph of
                              its files (graph.json + refs.npy, see graphtable.py), and vector blocks
                              b<k>.vec.npy + b<k>.rows.npy (vectors of some of its pieces)
    index/lock                writer lock (flock) holding the writer's PID

A commit writes new files only (a new segment, or a new vector block inside a segment), fsyncs them,
then atomically replaces the manifest: a crash at any point leaves the previous manifest and every
file it names intact. Readers see base + deltas as one version: a chunk of an older segment is live
only while the manifest says its file is held by that segment. A merge folds everything into one new
base segment (vectors consolidated, dead rows and unused terms dropped).

Everything under ``.aide`` is treated as untrusted input (a cloned repository may ship one): files
are read without following symlinks, must be regular, ours, and exactly the size the manifest says.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import math
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from aide_tui.core.bm25 import DocTerms, Postings, concat, term_order
from aide_tui.core.errors import IndexCorrupt, IndexMissing, LockTimeout
from aide_tui.core.model import Chunk
from aide_tui.core.paths import MANIFEST
from aide_tui.core.safeio import UnsafeFile, crc32_mapped, load_npy, parse_npy, read_bounded
from aide_tui.core.store.chunktable import ChunkTable
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.version_meta import Counts, IndexMeta, VersionStamp
from aide_tui.core.store.view import IndexView, Part, VectorBlock

T = TypeVar("T")
# 6: the manifest carries a checksum of its own bytes. A format-5 manifest (none) is rebuilt like any
# other old format: the embedding cache keeps the vectors, so only chunking and BM25 are redone, and no
# manifest is ever trusted unverified (a damaged checksum cannot pass as an older format without one).
# 7: every segment holds the symbol graph of its files (graph.json, refs.npy).
FORMAT_VERSION = 7
MAX_MANIFEST_BYTES = 512 << 20
_ROW_ARRAYS = (
    "doc_ptr",
    "term_ids",
    "tfs",
    "pdoc_ptr",
    "pterm_ids",
    "ptfs",
    "owners",
    "text_offsets",
    "order",
    "porder",
    "plines",
)
SEGMENT_FILES = (
    "chunks.json", "texts.bin", "pieces.json", "vocab.json", "graph.json", "refs.npy",
    *(f"{a}.npy" for a in _ROW_ARRAYS),
)  # fmt: skip


@dataclass
class FileRecord:
    """What the index knows about one source file, and which segment holds its chunks."""

    size: int
    mtime_ns: int
    sha1: str
    segment: int = 0
    chunks: int = 0
    pieces: int = 0
    vectors: int = 0  # pieces with a vector
    embedded: int = 0  # chunks whose every piece has a vector

    def to_json(self) -> list[Any]:
        return [self.size, self.mtime_ns, self.sha1, self.segment, self.chunks, self.pieces, self.vectors,
                self.embedded]  # fmt: skip


@dataclass
class SegmentEntry:
    """A segment as the manifest names it."""

    name: str
    n_chunks: int
    n_pieces: int
    vocab: tuple[int, int]  # term ids [start, end) this segment added
    files: dict[str, tuple[int, int]]  # file name -> (size, crc32)
    blocks: list[str] = field(default_factory=list)  # vector blocks, oldest first
    dim: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "chunks": self.n_chunks, "pieces": self.n_pieces, "vocab": list(self.vocab),
            "files": {k: list(v) for k, v in self.files.items()}, "blocks": self.blocks, "dim": self.dim,
        }  # fmt: skip


@dataclass
class Manifest:
    """One committed index version."""

    version: str
    written: str
    segments: list[SegmentEntry]
    files: dict[str, FileRecord]
    counts: Counts
    meta: IndexMeta

    @property
    def vocab_size(self) -> int:
        return self.segments[-1].vocab[1] if self.segments else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "version": self.version,
            "written": self.written,
            "segments": [s.to_json() for s in self.segments],
            "files": {p: r.to_json() for p, r in self.files.items()},
            "counts": self.counts.to_json(),
            "meta": self.meta.to_json(),
        }


@dataclass
class SegmentData:
    """A segment's contents in memory: written once by the indexer, read back for merges and tests.

    Row i of ``docs`` belongs to ``chunks[i]``; row j of ``pdocs``/``owners``/``vectors``/``present``
    belongs to ``pieces[j]``, a finer span inside chunk ``owners[j]`` (see pieces.py).
    """

    chunks: list[Chunk]
    pieces: list[Chunk]
    owners: np.ndarray  # (p,) int64
    docs: DocTerms
    pdocs: DocTerms
    vectors: np.ndarray  # (p, dim) float32; rows with present=False are meaningless
    present: np.ndarray  # (p,) bool
    vocab_add: list[str] = field(default_factory=list)  # terms first seen in this segment, in id order
    graph: GraphTable = field(default_factory=GraphTable)  # the symbol graph of the segment's files


@dataclass
class IndexData:
    """Every live row of one version, consolidated (tests, merges): the old single-generation shape."""

    chunks: list[Chunk]
    files: dict[str, FileRecord]
    vocab: dict[str, int]
    docs: DocTerms
    pieces: list[Chunk]
    owners: np.ndarray
    pdocs: DocTerms
    vectors: np.ndarray
    present: np.ndarray
    meta: IndexMeta = field(default_factory=IndexMeta)
    graph: GraphTable = field(default_factory=GraphTable)


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
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
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
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return len(data), zlib.crc32(data)


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as ``.npy`` bytes (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _stamp(prefix: str) -> str:
    return f"{prefix}{time.time_ns():x}-{os.getpid()}"


# -- chunk and piece tables ------------------------------------------------------------------------


def _encode_chunks(chunks: list[Chunk]) -> tuple[bytes, bytes, bytes]:
    """Chunk metadata as one compact JSON table, texts as one UTF-8 blob plus byte offsets."""
    table = [
        [c.path, c.start_line, c.end_line, c.language, c.symbol, c.header, list(c.defines)] for c in chunks
    ]
    texts = [c.text.encode("utf-8", "surrogatepass") for c in chunks]
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return (
        json.dumps(table, ensure_ascii=True, separators=(",", ":")).encode(),
        b"".join(texts),
        npy_bytes(offsets),
    )


def _decode_chunks(table_raw: bytes, blob: bytes, offsets: np.ndarray) -> ChunkTable:
    """The chunk table, validated; chunks themselves are built when first read."""
    try:
        table = json.loads(table_raw)
    except (ValueError, RecursionError):
        raise IndexCorrupt("index chunk table is not valid JSON; rebuilding") from None
    if not isinstance(table, list) or len(offsets) != len(table) + 1 or int(offsets[-1]) != len(blob):
        raise IndexCorrupt("index chunk table and texts disagree; rebuilding")
    if offsets.size and (offsets[0] != 0 or bool(np.any(np.diff(offsets) < 0))):
        raise IndexCorrupt("index chunk offsets are out of order; rebuilding")
    for row in table:
        if not (isinstance(row, list) and len(row) == 7 and isinstance(row[0], str) and type(row[1]) is int
                and type(row[2]) is int and isinstance(row[6], list)):  # fmt: skip
            raise IndexCorrupt("index chunk table rows are malformed; rebuilding")
    return ChunkTable(table, blob, offsets.tolist())


def _encode_pieces(pieces: list[Chunk]) -> bytes:
    """Pieces as (start, end, symbol, header); path, language and text come from their owner chunk."""
    table = [[p.start_line, p.end_line, p.symbol, p.header] for p in pieces]
    return json.dumps(table, ensure_ascii=True, separators=(",", ":")).encode()


def _decode_pieces(raw: bytes, owners: np.ndarray, chunks: list[Chunk]) -> list[Chunk]:
    table = json.loads(raw)
    if not isinstance(table, list) or len(table) != len(owners):
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


# -- manifest --------------------------------------------------------------------------------------


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise IndexCorrupt(f"index manifest is malformed ({what}); rebuilding")


def _int(v: Any) -> bool:
    return type(v) is int and v >= 0


def _parse_segment(obj: Any) -> SegmentEntry:
    _need(isinstance(obj, dict), "segment is not an object")
    name, files, vocab, blocks = obj.get("name"), obj.get("files"), obj.get("vocab"), obj.get("blocks", [])
    _need(isinstance(name, str) and name.startswith("s") and "/" not in name and ".." not in name, "name")
    _need(isinstance(files, dict) and all(isinstance(k, str) and "/" not in k for k in files), "files")
    _need(all(isinstance(v, list) and len(v) == 2 and all(map(_int, v)) for v in files.values()), "sizes")
    _need(
        isinstance(vocab, list) and len(vocab) == 2 and all(map(_int, vocab)) and vocab[0] <= vocab[1],
        "vocab",
    )
    _need(isinstance(blocks, list) and all(isinstance(b, str) and b.isalnum() for b in blocks), "blocks")
    for key in ("chunks", "pieces", "dim"):
        _need(_int(obj.get(key, 0)), key)
    return SegmentEntry(
        name, obj["chunks"], obj["pieces"], (vocab[0], vocab[1]),
        {k: (v[0], v[1]) for k, v in files.items()}, list(blocks), int(obj.get("dim", 0)),
    )  # fmt: skip


_CHECKSUM_MEMBER = b', "checksum": "crc32:'


def _checksum(body: bytes) -> bytes:
    return b"%08x" % zlib.crc32(body)


def encode_manifest(obj: dict[str, Any]) -> bytes:
    """A manifest's JSON bytes, ending with ``"checksum": "crc32:<hex>"``: the CRC32 of the same bytes
    without that member (so the file stays plain JSON and the checksum covers every other byte)."""
    body = json.dumps(obj, ensure_ascii=True).encode()
    if not obj or not body.endswith(b"}"):
        raise ValueError("a manifest is a non-empty JSON object")
    return body[:-1] + _CHECKSUM_MEMBER + _checksum(body) + b'"}'


def _verify_checksum(raw: bytes) -> None:
    """IndexCorrupt unless ``raw`` ends with the checksum of the rest (see :func:`encode_manifest`)."""
    at = raw.rfind(_CHECKSUM_MEMBER)
    if at < 0 or not raw.endswith(b'"}'):
        raise IndexCorrupt("index manifest has no checksum (damaged); rebuilding")
    if raw[at + len(_CHECKSUM_MEMBER) : -2] != _checksum(raw[:at] + b"}"):
        raise IndexCorrupt("index manifest is corrupt (checksum mismatch: damaged on disk); rebuilding")


def parse_manifest(raw: bytes) -> Manifest:
    """Verify a manifest's checksum and validate its shape and types; IndexCorrupt (never another
    exception) when it is bad."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise IndexCorrupt(f"index manifest is corrupt ({exc.__class__.__name__}); rebuilding") from None
    _need(isinstance(obj, dict), "not an object")
    if obj.get("format") != FORMAT_VERSION:
        raise IndexCorrupt(
            f"index format {obj.get('format')!r} is not the supported {FORMAT_VERSION}; rebuilding"
        )
    _verify_checksum(raw)
    for key, kind in (
        ("version", str),
        ("segments", list),
        ("files", dict),
        ("counts", dict),
        ("meta", dict),
    ):
        _need(isinstance(obj.get(key), kind), f"{key!r} missing or not a {kind.__name__}")
    segments = [_parse_segment(s) for s in obj["segments"]]
    _need(len({s.name for s in segments}) == len(segments), "duplicate segment")
    files: dict[str, FileRecord] = {}
    for path, rec in obj["files"].items():
        _need(isinstance(rec, list) and len(rec) == 8, "file record")
        size, mtime, sha1, seg, *n = rec
        _need(
            _int(size) and type(mtime) is int and isinstance(sha1, str) and all(map(_int, n)), "file record"
        )
        _need(_int(seg) and seg < len(segments), "file record segment")
        files[path] = FileRecord(size, mtime, sha1, seg, *n)
    counts, meta = Counts.from_json(obj["counts"]), IndexMeta.from_json(obj["meta"])
    _need(isinstance(obj.get("written", ""), str), "written")
    return Manifest(obj["version"], obj.get("written", ""), segments, files, counts, meta)


_parsed: dict[str, tuple[tuple[int, int, int], Manifest]] = {}


def read_manifest(index_dir: Path) -> Manifest:
    """Load and validate the manifest; raise IndexMissing / IndexCorrupt. Treat the result as read-only:
    an unchanged file (same inode, size and mtime) gives back the manifest parsed before."""
    path = index_dir / MANIFEST
    try:
        st = os.lstat(path)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _parsed.get(str(path))
        if cached is not None and cached[0] == key and stat_is_regular(st):
            return cached[1]
    except OSError:
        key = None
    try:
        raw = read_bounded(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError as exc:
        raise IndexMissing(f"no index at {index_dir}") from exc
    except UnsafeFile as exc:
        raise IndexCorrupt(f"index manifest cannot be trusted ({exc}); rebuilding") from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot read {path}: {exc.strerror or exc}") from exc
    manifest = parse_manifest(raw)
    if key is not None:
        _parsed.clear()
        _parsed[str(path)] = (key, manifest)
    return manifest


def stat_is_regular(st: os.stat_result) -> bool:
    import stat

    return stat.S_ISREG(st.st_mode)


def referenced_bytes(manifest: Manifest) -> int:
    """Bytes on disk of the files this version references (what the index costs)."""
    return sum(size for s in manifest.segments for size, _ in s.files.values())


def check_sizes(index_dir: Path, manifest: Manifest) -> str | None:
    """Why the version's files on disk do not match the manifest (None when every size matches).

    A stat per file: cheap enough for ``status``; contents are verified when a reader loads them. A
    segment lacking a file readers need (an older layout) counts as damaged, so writers rebuild it.
    """
    for seg in manifest.segments:
        lacking = [n for n in SEGMENT_FILES if n not in seg.files]
        if lacking:
            return f"index segment {seg.name} lacks {lacking[0]}; rebuilding"
        for name, (size, _crc) in seg.files.items():
            try:
                st = os.lstat(index_dir / seg.name / name)
            except OSError:
                return f"index file {seg.name}/{name} is missing; rebuilding"
            if st.st_size != size:
                return f"index file {seg.name}/{name} has the wrong size; rebuilding"
    return None


# -- writing ---------------------------------------------------------------------------------------


def write_segment(index_dir: Path, seg: SegmentData, vocab_start: int) -> SegmentEntry:
    """Write a new immutable segment folder (not yet referenced by any manifest)."""
    name = _stamp("s")
    tmp = index_dir / f".tmp-{name}"
    tmp.mkdir(mode=0o700)
    try:
        table, texts, offsets = _encode_chunks(seg.chunks)
        graph_json, refs = seg.graph.encode()
        payloads: dict[str, bytes] = {
            "graph.json": graph_json,
            "refs.npy": npy_bytes(refs),
            "chunks.json": table,
            "texts.bin": texts,
            "text_offsets.npy": offsets,
            "pieces.json": _encode_pieces(seg.pieces),
            "owners.npy": npy_bytes(seg.owners.astype(np.int32)),
            "vocab.json": json.dumps(seg.vocab_add).encode(),
            "doc_ptr.npy": npy_bytes(seg.docs.doc_ptr.astype(np.int64)),
            "term_ids.npy": npy_bytes(seg.docs.term_ids.astype(np.int32)),
            "tfs.npy": npy_bytes(seg.docs.tfs.astype(np.float32)),
            "pdoc_ptr.npy": npy_bytes(seg.pdocs.doc_ptr.astype(np.int64)),
            "pterm_ids.npy": npy_bytes(seg.pdocs.term_ids.astype(np.int32)),
            "ptfs.npy": npy_bytes(seg.pdocs.tfs.astype(np.float32)),
            "order.npy": npy_bytes(term_order(seg.docs)),
            "plines.npy": npy_bytes(
                np.asarray([[p.start_line, p.end_line] for p in seg.pieces], np.int32).reshape(-1, 2)
            ),
            "porder.npy": npy_bytes(term_order(seg.pdocs)),
        }
        blocks: list[str] = []
        rows = np.flatnonzero(seg.present)
        if rows.size:
            payloads["b0.vec.npy"] = npy_bytes(seg.vectors[rows].astype(np.float32))
            payloads["b0.rows.npy"] = npy_bytes(rows.astype(np.int32))
            blocks.append("b0")
        files = {n: _write_file(tmp / n, data) for n, data in payloads.items()}
        _fsync_dir(tmp)
        os.rename(tmp, index_dir / name)
        _fsync_dir(index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    dim = int(seg.vectors.shape[1]) if seg.vectors.ndim == 2 else 0
    return SegmentEntry(
        name,
        len(seg.chunks),
        len(seg.pieces),
        (vocab_start, vocab_start + len(seg.vocab_add)),
        files,
        blocks,
        dim,
    )


def write_block(index_dir: Path, entry: SegmentEntry, rows: np.ndarray, vectors: np.ndarray) -> SegmentEntry:
    """Add a vector block (vectors of some of the segment's pieces) as new files; returns the new entry."""
    k = 0
    while f"b{k}" in entry.blocks or os.path.lexists(index_dir / entry.name / f"b{k}.vec.npy"):
        k += 1
    block = f"b{k}"
    seg_dir = index_dir / entry.name
    files = dict(entry.files)
    try:
        files[f"{block}.vec.npy"] = _write_file(
            seg_dir / f"{block}.vec.npy", npy_bytes(vectors.astype(np.float32))
        )
        files[f"{block}.rows.npy"] = _write_file(
            seg_dir / f"{block}.rows.npy", npy_bytes(rows.astype(np.int32))
        )
    except BaseException:
        for suffix in (".vec.npy", ".rows.npy"):
            with contextlib.suppress(OSError):
                os.unlink(seg_dir / f"{block}{suffix}")
        raise
    _fsync_dir(seg_dir)
    return replace(entry, files=files, blocks=[*entry.blocks, block], dim=int(vectors.shape[1]))


def commit(index_dir: Path, manifest: Manifest, previous: Manifest | None) -> None:
    """Atomically make ``manifest`` the current version, then retire what neither it nor ``previous``
    references (a reader may still be loading the previous version). Only the lock holder commits."""
    manifest.written = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    path = index_dir / MANIFEST
    atomic_write_bytes(path, encode_manifest(manifest.to_json()))
    with contextlib.suppress(OSError):  # the next run of this process need not parse what it just wrote
        st = os.lstat(path)
        _parsed.clear()
        _parsed[str(path)] = ((st.st_ino, st.st_size, st.st_mtime_ns), manifest)
    keep = {s.name for s in manifest.segments} | ({s.name for s in previous.segments} if previous else set())
    retire(index_dir, keep, manifest)


def retire(index_dir: Path, keep: set[str], current: Manifest | None) -> None:
    """Remove segments not in ``keep``, temp folders and files of dead or earlier writers, and vector
    block files the current version does not name. Runs under the writer lock: every temp left by
    another process is stale, whatever its PID now belongs to."""
    named = {(s.name, f) for s in current.segments for f in s.files} if current else set()
    with contextlib.suppress(OSError):
        for p in index_dir.iterdir():
            if p.name.startswith(".tmp-") or (p.name.startswith(".") and p.name.endswith(".tmp")):
                _remove(p)  # our own temps are renamed before any commit: these are all stale
            elif p.name.startswith(("s", "g")) and p.name[1:2].isalnum() and p.name not in keep:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
            elif current is not None and p.name in {s.name for s in current.segments}:
                for f in p.iterdir():
                    if f.name.startswith("b") and f.name.endswith(".npy") and (p.name, f.name) not in named:
                        _remove(f)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            p.unlink()


# -- reading ---------------------------------------------------------------------------------------


def _read_checked(seg_dir: Path, entry: SegmentEntry, name: str) -> bytes:
    size, crc = entry.files[name]
    try:
        blob = read_bounded(seg_dir / name, size, expect_size=size)
    except FileNotFoundError:
        raise IndexCorrupt(f"index file {entry.name}/{name} is missing; rebuilding") from None
    except UnsafeFile as exc:
        raise IndexCorrupt(f"index file {entry.name}/{name} cannot be trusted ({exc}); rebuilding") from None
    if zlib.crc32(blob) != crc:
        raise IndexCorrupt(f"index file {entry.name}/{name} is damaged (checksum mismatch); rebuilding")
    return blob


def _npy(seg_dir: Path, entry: SegmentEntry, name: str) -> np.ndarray:
    try:
        return parse_npy(_read_checked(seg_dir, entry, name))
    except ValueError as exc:
        raise IndexCorrupt(
            f"index file {entry.name}/{name} is not a valid array ({exc}); rebuilding"
        ) from None


def _vectors(seg_dir: Path, entry: SegmentEntry, block: str, mmap: bool) -> VectorBlock:
    """A vector block; memory-mapped blocks are checksummed once, here, so bit rot is never silent."""
    name = f"{block}.vec.npy"
    if not mmap:
        matrix = _npy(seg_dir, entry, name)
    else:
        size, crc = entry.files[name]
        try:
            matrix = load_npy(seg_dir / name, expect_size=size, mmap_mode=True)
        except (UnsafeFile, ValueError, OSError) as exc:
            raise IndexCorrupt(f"index file {entry.name}/{name} cannot be read ({exc}); rebuilding") from None
        if crc32_mapped(matrix) != crc:
            raise IndexCorrupt(f"index file {entry.name}/{name} is damaged (checksum mismatch); rebuilding")
    rows = _npy(seg_dir, entry, f"{block}.rows.npy").astype(np.int64)
    if matrix.ndim != 2 or len(rows) != len(matrix) or matrix.dtype != np.float32:
        raise IndexCorrupt(f"index vector block {entry.name}/{block} has the wrong shape; rebuilding")
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= entry.n_pieces):
        raise IndexCorrupt(f"index vector block {entry.name}/{block} points outside its pieces; rebuilding")
    return VectorBlock(matrix, rows=rows)


def _segment_files(index_dir: Path, entry: SegmentEntry) -> dict[str, Any]:
    seg_dir = index_dir / entry.name
    for name in SEGMENT_FILES:
        if name not in entry.files:
            raise IndexCorrupt(f"index segment {entry.name} lacks {name}; rebuilding")
    arrays = {a: _npy(seg_dir, entry, f"{a}.npy") for a in _ROW_ARRAYS}
    chunks = _decode_chunks(
        _read_checked(seg_dir, entry, "chunks.json"),
        _read_checked(seg_dir, entry, "texts.bin"),
        arrays["text_offsets"],
    )
    docs = DocTerms(arrays["doc_ptr"].astype(np.int64), arrays["term_ids"], arrays["tfs"])
    pdocs = DocTerms(arrays["pdoc_ptr"].astype(np.int64), arrays["pterm_ids"], arrays["ptfs"])
    owners = arrays["owners"].astype(np.int64)
    n, p = len(chunks), len(owners)
    if (n, p) != (entry.n_chunks, entry.n_pieces) or docs.n_docs != n or pdocs.n_docs != p:
        raise IndexCorrupt(f"index segment {entry.name} arrays disagree on their sizes; rebuilding")
    if p and (int(owners.min()) < 0 or int(owners.max()) >= n):
        raise IndexCorrupt(f"index segment {entry.name} pieces point outside its chunks; rebuilding")
    for d in (docs, pdocs):
        if d.doc_ptr[0] != 0 or np.any(np.diff(d.doc_ptr) < 0) or int(d.doc_ptr[-1]) != len(d.term_ids):
            raise IndexCorrupt(f"index segment {entry.name} BM25 rows are malformed; rebuilding")
        if d.term_ids.size and (int(d.term_ids.min()) < 0 or int(d.term_ids.max()) >= entry.vocab[1]):
            raise IndexCorrupt(f"index segment {entry.name} names unknown terms; rebuilding")
    for key, d in (("order", docs), ("porder", pdocs)):
        o = arrays[key]
        if len(o) != len(d.term_ids) or (o.size and (int(o.min()) < 0 or int(o.max()) >= len(o))):
            raise IndexCorrupt(f"index segment {entry.name} term order is malformed; rebuilding")
    plines = arrays["plines"]
    if plines.shape != (p, 2):
        raise IndexCorrupt(f"index segment {entry.name} piece lines are malformed; rebuilding")
    graph = GraphTable.decode(
        _read_checked(seg_dir, entry, "graph.json"), _npy(seg_dir, entry, "refs.npy"), entry.name
    )
    return {"chunks": chunks, "docs": docs, "pdocs": pdocs, "owners": owners, "order": arrays["order"],
            "plines": plines, "graph": graph,
            "porder": arrays["porder"]}  # fmt: skip


def _segment_vocab(index_dir: Path, entry: SegmentEntry) -> list[str]:
    try:
        terms = json.loads(_read_checked(index_dir / entry.name, entry, "vocab.json"))
    except ValueError:
        terms = None
    if not isinstance(terms, list) or len(terms) != entry.vocab[1] - entry.vocab[0]:
        raise IndexCorrupt(f"index segment {entry.name} vocabulary is malformed; rebuilding")
    return [str(t) for t in terms]


def read_vocab(index_dir: Path, manifest: Manifest) -> dict[str, int]:
    """The version's whole term → id map (each segment adds the terms it first saw)."""
    vocab: dict[str, int] = {}
    for entry in manifest.segments:
        if entry.vocab[0] != len(vocab):
            raise IndexCorrupt("index segments' vocabularies do not follow each other; rebuilding")
        for t in _segment_vocab(index_dir, entry):
            vocab.setdefault(t, len(vocab))
        if len(vocab) != entry.vocab[1]:
            raise IndexCorrupt("index vocabulary holds duplicate terms; rebuilding")
    return vocab


def _alive(part: Part, seg_index: int, files: Mapping[str, FileRecord]) -> np.ndarray | None:
    """Rows of a part whose file the manifest says this segment holds (None: all of them)."""
    owned = np.fromiter(
        ((r := files.get(p)) is not None and r.segment == seg_index for p in part.path_names),
        bool,
        len(part.path_names),
    )
    mask = owned[part.path_ids] if len(part.path_ids) else np.zeros(0, bool)
    return None if mask.all() else mask


def _retrying(index_dir: Path, read: Callable[[Manifest], T]) -> T:
    """Run ``read`` on the current manifest; when it fails because a newer commit retired what it was
    reading (two quick commits), read the newer manifest instead."""
    for attempt in range(4):
        manifest = read_manifest(index_dir)
        try:
            return read(manifest)
        except IndexCorrupt:
            if attempt == 3 or read_manifest(index_dir).version == manifest.version:
                raise
    raise AssertionError("unreachable")


def load_view(index_dir: Path, previous: IndexView | None = None) -> IndexView:
    """The current version as a query view. Segments and vector blocks ``previous`` already holds are
    reused, so picking up a delta costs what the delta holds."""
    return _retrying(index_dir, lambda m: _load_view(index_dir, m, previous))


def _load_view(index_dir: Path, manifest: Manifest, previous: IndexView | None) -> IndexView:
    reuse = {p.name: p for p in previous.parts} if previous is not None else {}
    vocab = _grown_vocab(index_dir, manifest, previous)
    parts: list[Part] = []
    for entry in manifest.segments:
        part = reuse.get(entry.name)
        if part is None:
            f = _segment_files(index_dir, entry)
            part = Part(
                entry.name, f["chunks"], Postings.build(f["docs"], entry.vocab[1], f["order"]),
                Postings.build(f["pdocs"], entry.vocab[1], f["porder"]), f["owners"],
                piece_spans=f["plines"], graph=f["graph"],
            )  # fmt: skip
        have = {b for b in part.block_names}
        if have - set(entry.blocks):  # blocks were merged away: reload the vectors as listed
            part = part.with_blocks([], [])
            have = set()
        new = [b for b in entry.blocks if b not in have]
        if new:
            seg_dir = index_dir / entry.name
            part = part.with_blocks(
                [*part.blocks, *(_vectors(seg_dir, entry, b, mmap=True) for b in new)],
                [*part.block_names, *new],
            )
        parts.append(part)
    alive = [_alive(p, i, manifest.files) for i, p in enumerate(parts)]
    stamp = VersionStamp(
        manifest.meta, manifest.counts, manifest.version, manifest.written, _vocab_key(manifest)
    )
    view = IndexView(parts, alive, manifest.files, vocab, stamp)
    view.adopt_lexicon(previous)
    return view


def _grown_vocab(index_dir: Path, manifest: Manifest, previous: IndexView | None) -> dict[str, int]:
    """The version's vocabulary: the previous view's when the segments are the same, extended by the
    new segments' terms when they only add to it (a delta), else read whole."""
    key = _vocab_key(manifest)
    if previous is None:
        return read_vocab(index_dir, manifest)
    old_key = previous.stamp.vocab_key
    if old_key == key:
        return previous.vocab
    kept = old_key.split("|") if old_key else []
    if not kept or key.split("|")[: len(kept)] != kept:
        return read_vocab(index_dir, manifest)
    vocab = dict(previous.vocab)
    for entry in manifest.segments[len(kept) :]:
        if entry.vocab[0] != len(vocab):
            return read_vocab(index_dir, manifest)
        for t in _segment_vocab(index_dir, entry):
            vocab.setdefault(t, len(vocab))
        if len(vocab) != entry.vocab[1]:
            raise IndexCorrupt("index vocabulary holds duplicate terms; rebuilding")
    return vocab


def _vocab_key(manifest: Manifest) -> str:
    return "|".join(f"{s.name}:{s.vocab[1]}" for s in manifest.segments)


def read_segment(index_dir: Path, entry: SegmentEntry, pieces: bool = True) -> SegmentData:
    """A segment's whole contents (chunks, pieces, BM25 rows, vectors of every block)."""
    f = _segment_files(index_dir, entry)
    seg_dir = index_dir / entry.name
    piece_list = (
        _decode_pieces(_read_checked(seg_dir, entry, "pieces.json"), f["owners"], f["chunks"])
        if pieces
        else []
    )
    vectors = np.zeros((entry.n_pieces, entry.dim), np.float32)
    present = np.zeros(entry.n_pieces, bool)
    for b in entry.blocks:
        block = _vectors(seg_dir, entry, b, mmap=False)
        if block.matrix.shape[1] != entry.dim:
            raise IndexCorrupt(f"index vector block {entry.name}/{b} has the wrong dimension; rebuilding")
        rows = block.piece_rows()
        vectors[rows] = block.matrix
        present[rows] = True
    return SegmentData(
        f["chunks"], piece_list, f["owners"], f["docs"], f["pdocs"], vectors, present, graph=f["graph"]
    )


def read_index(index_dir: Path, pieces: bool = True) -> IndexData:
    """Every live row of the current version, consolidated into one set of arrays."""
    return _retrying(index_dir, lambda m: consolidate(index_dir, m, read_vocab(index_dir, m), pieces))


def _held_by(manifest: Manifest, seg_index: int) -> Callable[[str], bool]:
    """Whether the manifest says a file is held by segment ``seg_index`` (its rows there are live)."""

    def held(path: str) -> bool:
        rec = manifest.files.get(path)
        return rec is not None and rec.segment == seg_index

    return held


def consolidate(index_dir: Path, manifest: Manifest, vocab: dict[str, int], pieces: bool = True) -> IndexData:
    """Gather the live rows of every segment, in segment order (what a merge writes as one base)."""
    chunks: list[Chunk] = []
    piece_list: list[Chunk] = []
    docs: list[DocTerms] = []
    pdocs: list[DocTerms] = []
    owners: list[np.ndarray] = []
    vecs: list[np.ndarray] = []
    present: list[np.ndarray] = []
    graphs: list[GraphTable] = []
    dim = manifest.meta.dim
    for i, entry in enumerate(manifest.segments):
        seg = read_segment(index_dir, entry, pieces)
        graphs.append(seg.graph.take(_held_by(manifest, i)))
        keep = [
            r for r, c in enumerate(seg.chunks) if (rec := manifest.files.get(c.path)) and rec.segment == i
        ]
        new_row = np.full(len(seg.chunks), -1, np.int64)
        new_row[keep] = np.arange(len(keep)) + len(chunks)
        mapped = new_row[seg.owners] if len(seg.owners) else np.zeros(0, np.int64)
        prow = np.flatnonzero(mapped >= 0)
        chunks.extend(seg.chunks[r] for r in keep)
        if pieces:
            piece_list.extend(seg.pieces[r] for r in prow)
        docs.append(seg.docs.take(keep))
        pdocs.append(seg.pdocs.take(prow.tolist()))
        owners.append(mapped[prow])
        v = np.zeros((len(prow), dim), np.float32)
        pr = np.zeros(len(prow), bool)
        if entry.dim == dim and dim:
            v[:] = seg.vectors[prow]
            pr[:] = seg.present[prow]
        vecs.append(v)
        present.append(pr)
    return IndexData(
        chunks, dict(manifest.files), vocab, concat(docs), piece_list,
        np.concatenate(owners or [np.zeros(0, np.int64)]).astype(np.int64), concat(pdocs),
        np.concatenate(vecs or [np.zeros((0, dim), np.float32)]),
        np.concatenate(present or [np.zeros(0, bool)]),
        manifest.meta,
        GraphTable.concat(graphs),
    )  # fmt: skip


# -- writer lock -----------------------------------------------------------------------------------


@contextlib.contextmanager
def writer_lock(index_dir: Path, timeout: float = 30.0, poll: float = 0.1) -> Iterator[None]:
    """Hold the index's exclusive writer lock; wait up to ``timeout`` s, then raise LockTimeout.

    flock is released by the kernel when its holder dies, so a stale lock is taken over at once.
    """
    index_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = index_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    wait = timeout if math.isfinite(timeout) and timeout >= 0 else 0.0
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    pid = lock_holder(index_dir)
                    who = f"process {pid}" if pid else "another process"
                    raise LockTimeout(
                        f"index is locked by {who} (another aide-tui is indexing {index_dir.parent.parent}); "
                        f"gave up after {wait:g} s",
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


def lock_holder(index_dir: Path) -> int | None:
    """The PID written by the current (or last) holder of the writer lock."""
    try:
        return int(read_bounded(index_dir / "lock", 64).decode().strip() or 0) or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def lock_is_held(index_dir: Path) -> bool:
    """Whether some process holds the writer lock right now."""
    try:
        fd = os.open(index_dir / "lock", os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
