"""On-disk index: a manifest over immutable, self-contained segments; atomic commits; checksums.

Layout under the state dir (``<root>/.aide/`` or the user cache dir, see paths.py)::

    index/manifest.json       the single source of truth: segments, files (and which segment holds
                              each), counts, settings, embedder; the size and CRC32 of every file (and
                              of each 64 KiB block of a bigger one); its last member is the CRC32 of
                              the rest of the manifest itself
    index/s<stamp>-<pid>/     one immutable segment (segment_write.py lists its files): chunk and
                              piece tables, its own term dictionary and postings, symbols, its part of
                              the symbol graph, the static tier's vectors, transformer vector blocks
    index/lock                writer lock (flock) holding the writer's PID

A commit writes new files only (a new segment, or a new vector block inside a segment), fsyncs them,
then atomically replaces the manifest: a crash at any point leaves the previous manifest and every
file it names intact. Readers see the segments as one version: a chunk of a segment is live only while
the manifest says its file is held by that segment. Readers map the files and check each block when
they first touch it (mapped.py), so a query costs what it reads.

Everything under ``.aide`` is treated as untrusted input (a cloned repository may ship one): files
are read without following symlinks, must be regular, ours, and exactly the size the manifest says.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from aide_tui.core.bm25 import DocTerms, concat
from aide_tui.core.errors import IndexCorrupt, IndexMissing
from aide_tui.core.gcpause import gc_paused
from aide_tui.core.model import Chunk
from aide_tui.core.paths import MANIFEST
from aide_tui.core.safeio import UnsafeFile, read_bounded
from aide_tui.core.store.filetable import FileTable, segments_of
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.mapped import FileSum
from aide_tui.core.store.part import Part
from aide_tui.core.store.quantize import current
from aide_tui.core.store.records import FileRecord, PassedFile, PassedFiles
from aide_tui.core.store.segment_write import (
    BASE_FILES,
    SEGMENT_FILES,
    SegmentData,
    SegmentEntry,
    fsync_dir,
    npy_bytes,
    write_block,
    write_new_file,
    write_segment,
    write_static,
)
from aide_tui.core.store.version_meta import Counts, IndexMeta, VersionStamp
from aide_tui.core.store.view import IndexView

__all__ = [
    "FORMAT_VERSION", "IndexData", "Manifest", "SEGMENT_FILES", "SegmentData", "SegmentEntry",
    "atomic_write_bytes", "check_sizes", "commit", "consolidate", "encode_manifest", "load_view",
    "npy_bytes", "parse_manifest", "parse_segment", "read_index",
    "read_manifest", "read_rank", "read_segment", "referenced_bytes", "retire", "write_block",
    "write_rank", "write_segment", "write_static",
]  # fmt: skip

T = TypeVar("T")
# 6: the manifest carries a checksum of its own bytes. A format-5 manifest (none) is rebuilt like any
# other old format: the embedding cache keeps the vectors, so only chunking and BM25 are redone, and no
# manifest is ever trusted unverified (a damaged checksum cannot pass as an older format without one).
# 7: every segment holds the symbol graph of its files (graph.json, refs.npy).
# 8: self-contained segments read in place (a term dictionary and term-major postings of their own,
#    tables as arrays, per-block checksums), and the static tier's vectors.
# 9: static vectors as int8 rows with a scale, chunk texts compressed, whole-number tfs as uint16.
# 10: postings of a segment of at most 65,536 rows as uint16, pieces name their chunk's header by 0.
# 11: headers stored without the file and symbol lines their rows already hold (headers.py).
# 12: the file records as columns (filetable.py). A format-11 manifest still reads: nothing else moved.
# 13: static vectors four bits a value (uint8), reference rows without their name column, uint32
#     offsets. Format 11 and 12 still read: their segments' rows are read as they are (by dtype and
#     shape), and a merge writes them anew; an older reader sees 13 and rebuilds rather than misread.
FORMAT_VERSION = 13
READABLE_FORMATS = (11, 12, FORMAT_VERSION)
MAX_MANIFEST_BYTES = 512 << 20


@dataclass
class Manifest:
    """One committed index version."""

    version: str
    written: str
    segments: list[SegmentEntry]
    files: Mapping[str, FileRecord]  # read-only: a writer copies it into a dict
    counts: Counts
    meta: IndexMeta
    passed: PassedFiles = field(default_factory=PassedFiles)  # left out for their content, not re-read

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "version": self.version,
            "written": self.written,
            "segments": [s.to_json() for s in self.segments],
            "file_table": FileTable.to_json(self.files),
            "counts": self.counts.to_json(),
            "meta": self.meta.to_json(),
            "passed": self.passed.to_json(),
        }


@dataclass
class IndexData:
    """Every live row of one version, consolidated (tests, merges)."""

    chunks: list[Chunk]
    files: dict[str, FileRecord]
    terms: list[str]
    docs: DocTerms
    pieces: list[Chunk]
    owners: np.ndarray
    pdocs: DocTerms
    vectors: np.ndarray
    present: np.ndarray
    meta: IndexMeta = field(default_factory=IndexMeta)
    graph: GraphTable = field(default_factory=GraphTable)
    static: np.ndarray | None = None  # (pieces, d) float16, when every live piece has a static vector
    static_id: str = ""

    @property
    def vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.terms)}


# -- atomic primitives -----------------------------------------------------------------------------


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
    fsync_dir(path.parent)


# -- manifest --------------------------------------------------------------------------------------


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise IndexCorrupt(f"index manifest is malformed ({what}); rebuilding")


def _int(v: Any) -> bool:
    return type(v) is int and v >= 0


def _file_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and bool(name)
        and "/" not in name
        and name not in (".", "..")
        and "\0" not in name
    )


def parse_segment(obj: Any) -> SegmentEntry:
    _need(isinstance(obj, dict), "segment is not an object")
    name, files, blocks = obj.get("name"), obj.get("files"), obj.get("blocks", [])
    _need(isinstance(name, str) and name.startswith("s") and "/" not in name and ".." not in name, "name")
    _need(isinstance(files, dict) and all(_file_name(k) for k in files), "files")
    sums = {k: FileSum.from_json(v) for k, v in files.items()}
    _need(all(v is not None for v in sums.values()), "sizes")
    _need(isinstance(blocks, list) and all(isinstance(b, str) and b.isalnum() for b in blocks), "blocks")
    for key in ("chunks", "pieces", "dim"):
        _need(_int(obj.get(key, 0)), key)
    static, static_file = obj.get("static", ""), obj.get("static_file", "")
    _need(isinstance(static, str) and isinstance(static_file, str), "static")
    _need(not static_file or (static_file in sums and bool(static)), "static file")
    return SegmentEntry(
        name, obj["chunks"], obj["pieces"], {k: v for k, v in sums.items() if v is not None}, list(blocks),
        int(obj.get("dim", 0)), static, static_file,
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
    form = obj.get("format")
    if form not in READABLE_FORMATS:
        raise IndexCorrupt(f"index format {form!r} is not the supported {FORMAT_VERSION}; rebuilding")
    _verify_checksum(raw)
    for key, kind in (("version", str), ("segments", list), ("counts", dict), ("meta", dict)):
        _need(isinstance(obj.get(key), kind), f"{key!r} missing or not a {kind.__name__}")
    segments = [parse_segment(s) for s in obj["segments"]]
    _need(len({s.name for s in segments}) == len(segments), "duplicate segment")
    files = (
        _table(obj.get("file_table"), len(segments)) if form != 11
        else _records(obj.get("files"), len(segments))
    )  # fmt: skip
    counts, meta = Counts.from_json(obj["counts"]), IndexMeta.from_json(obj["meta"])
    _need(isinstance(obj.get("written", ""), str), "written")
    passed = _parse_passed(obj.get("passed", {"rules": "", "files": {}}))
    return Manifest(obj["version"], obj.get("written", ""), segments, files, counts, meta, passed)


def _table(obj: Any, n_segments: int) -> FileTable:
    table = FileTable.from_json(obj, n_segments)
    if table is None:
        raise IndexCorrupt("index manifest is malformed (file table); rebuilding")
    return table


def _records(obj: Any, n_segments: int) -> dict[str, FileRecord]:
    """A format-11 manifest's file records (one list per file)."""
    _need(isinstance(obj, dict), "'files' missing or not a dict")
    files: dict[str, FileRecord] = {}
    for path, rec in obj.items():
        _need(type(rec) is list and len(rec) == 8, "file record")
        size, mtime, sha1, seg, chunks, pieces, vectors, embedded = rec
        _need(
            type(size) is int and size >= 0 and type(mtime) is int and type(sha1) is str
            and type(chunks) is int and chunks >= 0 and type(pieces) is int and pieces >= 0
            and type(vectors) is int and vectors >= 0 and type(embedded) is int and embedded >= 0,
            "file record",
        )  # fmt: skip
        _need(type(seg) is int and 0 <= seg < n_segments, "file record segment")
        files[path] = FileRecord(size, mtime, sha1, seg, chunks, pieces, vectors, embedded)
    return files


def _parse_passed(obj: Any) -> PassedFiles:
    """The manifest's files left out for their content (absent in a manifest written before them)."""
    _need(isinstance(obj, dict) and isinstance(obj.get("rules"), str), "passed")
    files = obj.get("files")
    _need(isinstance(files, dict), "passed files")
    out: dict[str, PassedFile] = {}
    for path, rec in files.items():
        _need(isinstance(rec, list) and len(rec) == 3, "passed file")
        size, mtime, reason = rec
        _need(_int(size) and type(mtime) is int and isinstance(reason, str), "passed file")
        out[path] = PassedFile(size, mtime, reason)
    return PassedFiles(obj["rules"], out)


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
    with gc_paused():  # thousands of containers, no cycle: each collection would walk the heap
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
    return sum(f.size for s in manifest.segments for f in s.files.values())


def write_rank(index_dir: Path, rank: dict[str, float]) -> tuple[str, int, int]:
    """Write a version's file centrality as a new file; (its name, size, CRC-32) for the manifest."""
    name = f"rank-{time.time_ns():x}-{os.getpid()}.json"
    data = json.dumps({p: round(v, 6) for p, v in sorted(rank.items())}, ensure_ascii=True).encode()
    sums = write_new_file(index_dir / name, data)
    fsync_dir(index_dir)
    return name, sums.size, sums.crc


def read_rank(index_dir: Path, meta: IndexMeta) -> dict[str, float] | None:
    """The version's stored file centrality (None when it has none); IndexCorrupt when it is damaged."""
    if not meta.rank_file:
        return None
    try:
        raw = read_bounded(index_dir / meta.rank_file, meta.rank_size, expect_size=meta.rank_size)
    except FileNotFoundError:
        raise IndexCorrupt(f"index file {meta.rank_file} is missing; rebuilding") from None
    except (UnsafeFile, OSError) as exc:
        raise IndexCorrupt(f"index file {meta.rank_file} cannot be read ({exc}); rebuilding") from None
    if zlib.crc32(raw) != meta.rank_crc:
        raise IndexCorrupt(f"index file {meta.rank_file} is damaged (checksum mismatch); rebuilding")
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or not all(isinstance(v, float | int) for v in obj.values()):
        raise IndexCorrupt(f"index file {meta.rank_file} is malformed; rebuilding")
    return {str(k): float(v) for k, v in obj.items()}


def check_sizes(index_dir: Path, manifest: Manifest) -> str | None:
    """Why the version's files on disk do not match the manifest (None when every size matches).

    A stat per file: cheap enough for ``status``; contents are verified when a reader reads them. A
    segment lacking a file readers need (an older layout) counts as damaged, so writers rebuild it.
    """
    if manifest.meta.rank_file:
        try:
            if os.lstat(index_dir / manifest.meta.rank_file).st_size != manifest.meta.rank_size:
                return f"index file {manifest.meta.rank_file} has the wrong size; rebuilding"
        except OSError:
            return f"index file {manifest.meta.rank_file} is missing; rebuilding"
    for seg in manifest.segments:
        lacking = [n for n in SEGMENT_FILES if n not in seg.files]
        if lacking:
            return f"index segment {seg.name} lacks {lacking[0]}; rebuilding"
        for name, sums in seg.files.items():
            try:
                st = os.lstat(index_dir / seg.name / name)
            except OSError:
                return f"index file {seg.name}/{name} is missing; rebuilding"
            if st.st_size != sums.size:
                return f"index file {seg.name}/{name} has the wrong size; rebuilding"
    return None


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
    keep |= {m.meta.rank_file for m in (manifest, previous) if m is not None and m.meta.rank_file}
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
            elif p.name.startswith("rank-") and p.name.endswith(".json") and p.name not in keep:
                _remove(p)
            elif p.name.startswith(".staging-") and p.name != f".staging-{os.getpid()}":
                _remove(p)  # a parallel build's helpers write here for the indexer that made it
            elif p.name.startswith(("s", "g")) and p.name[1:2].isalnum() and p.name not in keep:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
            elif current is not None and p.name in {s.name for s in current.segments}:
                for f in p.iterdir():
                    added = f.name.startswith(("b", "st")) and f.name.endswith(".npy")
                    if added and f.name not in BASE_FILES and (p.name, f.name) not in named:
                        _remove(f)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            p.unlink()


# -- reading ---------------------------------------------------------------------------------------


def _alive(part: Part, seg_index: int, files: Mapping[str, FileRecord]) -> np.ndarray | None:
    """Rows of a part whose file the manifest says this segment holds (None: all of them)."""
    paths = part.paths
    owned = segments_of(files, paths) == seg_index
    if owned.all():
        return None
    return owned[part.c_path] if part.n_chunks else np.zeros(0, bool)


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
    """The current version as a query view. Segments ``previous`` already holds are reused (what they
    opened stays open), so picking up a delta costs what the delta holds."""
    return _retrying(index_dir, lambda m: _load_view(index_dir, m, previous))


def _load_view(index_dir: Path, manifest: Manifest, previous: IndexView | None) -> IndexView:
    reuse = {p.name: p for p in previous.parts} if previous is not None else {}
    parts: list[Part] = []
    for entry in manifest.segments:
        old = reuse.get(entry.name)
        if old is None:
            part = Part(index_dir, entry)
        elif old.entry == entry:
            part = old
        else:
            part = old.with_entry(entry)
        parts.append(part)
    alive = [_alive(p, i, manifest.files) for i, p in enumerate(parts)]
    stamp = VersionStamp(manifest.meta, manifest.counts, manifest.version, manifest.written)
    return IndexView(parts, alive, manifest.files, stamp)


def _doc_terms(part: Part, pieces: bool) -> DocTerms:
    """A field's rows doc-major again (term ids of the part's dictionary): what a merge re-encodes."""
    f = part.piece_field if pieces else part.chunk_field
    ptr = f.ptr.all()
    n_terms = len(ptr) - 1
    doc, tf = f.postings_all()
    term_of = np.repeat(np.arange(n_terms, dtype=np.int32), np.diff(ptr))
    order = np.argsort(doc, kind="stable")
    n = f.n_docs
    doc_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(doc, minlength=n)[:n], out=doc_ptr[1:])
    return DocTerms(doc_ptr, term_of[order], tf[order])


def read_segment(index_dir: Path, entry: SegmentEntry, pieces: bool = True) -> SegmentData:
    """A segment's whole contents (chunks, pieces, BM25 rows, its vectors)."""
    part = Part(index_dir, entry)
    chunks = [part.chunk(i) for i in range(part.n_chunks)]
    piece_list = [p for _, p in _pieces_of(part, chunks)] if pieces else []
    vectors, present = part.vectors()
    sb = part.static_block
    return SegmentData(
        chunks, piece_list, part.p_owner.copy(), part.terms.terms(0, part.terms.n), _doc_terms(part, False),
        _doc_terms(part, True), vectors, present, part.graph.to_table(lambda p: True),
        None if sb is None else np.array(sb.matrix), entry.static,
    )  # fmt: skip


def _pieces_of(part: Part, chunks: list[Chunk]) -> list[tuple[int, Chunk]]:
    return [(j, part.piece(j, chunks[int(part.p_owner[j])])) for j in range(part.n_pieces)]


def read_index(index_dir: Path, pieces: bool = True) -> IndexData:
    """Every live row of the current version, consolidated into one set of arrays."""
    return _retrying(index_dir, lambda m: consolidate(index_dir, m, pieces=pieces))


def _held_by(manifest: Manifest, seg_index: int) -> Callable[[str], bool]:
    """Whether the manifest says a file is held by segment ``seg_index`` (its rows there are live)."""

    def held(path: str) -> bool:
        rec = manifest.files.get(path)
        return rec is not None and rec.segment == seg_index

    return held


@overload
def consolidate(index_dir: Path, manifest: Manifest, pieces: bool = True, segments: list[int] | None = None,
                interrupt: None = None) -> IndexData: ...  # fmt: skip
@overload
def consolidate(index_dir: Path, manifest: Manifest, pieces: bool, segments: list[int] | None,
                interrupt: Callable[[], bool]) -> IndexData | None: ...  # fmt: skip
def consolidate(
    index_dir: Path,
    manifest: Manifest,
    pieces: bool = True,
    segments: list[int] | None = None,
    interrupt: Callable[[], bool] | None = None,
) -> IndexData | None:
    """Gather the live rows of the segments (``segments``: their indexes, default all), in order, over
    one merged term dictionary (what a merge writes as one segment). ``interrupt`` is asked between
    segments: when it says so, the gathering stops and None is returned (newer work first)."""
    picked = list(range(len(manifest.segments))) if segments is None else segments
    parts = [(i, Part(index_dir, manifest.segments[i])) for i in picked]
    keeps: list[list[int]] = []
    term_sets: list[list[str]] = []
    for i, part in parts:
        held = _held_by(manifest, i)
        keeps.append([r for r in range(part.n_chunks) if held(part.path_of(r))])
        term_sets.append(part.terms.terms(0, part.terms.n))
    from aide_tui.core.store.terms import sort_terms

    merged = sort_terms(t for ts in term_sets for t in ts)
    new_id = {t: j for j, t in enumerate(merged)}
    chunks: list[Chunk] = []
    piece_list: list[Chunk] = []
    docs: list[DocTerms] = []
    pdocs: list[DocTerms] = []
    owners: list[np.ndarray] = []
    vecs: list[np.ndarray] = []
    present: list[np.ndarray] = []
    statics: list[np.ndarray | None] = []
    graphs: list[GraphTable] = []
    dim = manifest.meta.dim
    static_ids = {p.entry.static for _, p in parts}
    for (i, part), keep, terms in zip(parts, keeps, term_sets, strict=True):
        if interrupt is not None and interrupt():
            return None
        graphs.append(part.graph.to_table(_held_by(manifest, i)))
        remap = np.asarray([new_id[t] for t in terms] or [0], np.int32)
        seg_chunks = [part.chunk(r) for r in keep]
        new_row = np.full(part.n_chunks, -1, np.int64)
        new_row[keep] = np.arange(len(keep)) + len(chunks)
        mapped = new_row[part.p_owner] if part.n_pieces else np.zeros(0, np.int64)
        prow = np.flatnonzero(mapped >= 0)
        by_row = dict(zip(keep, seg_chunks, strict=True))
        chunks.extend(seg_chunks)
        if pieces:
            piece_list.extend(part.piece(int(j), by_row[int(part.p_owner[j])]) for j in prow)
        d = _doc_terms(part, False).take(keep)
        pd = _doc_terms(part, True).take(prow.tolist())
        docs.append(DocTerms(d.doc_ptr, remap[d.term_ids] if len(d.term_ids) else d.term_ids, d.tfs))
        pdocs.append(DocTerms(pd.doc_ptr, remap[pd.term_ids] if len(pd.term_ids) else pd.term_ids, pd.tfs))
        owners.append(mapped[prow])
        v = np.zeros((len(prow), dim), np.float32)
        pr = np.zeros(len(prow), bool)
        if part.entry.dim == dim and dim:
            pv, pp = part.vectors()
            v[:] = pv[prow]
            pr[:] = pp[prow]
        vecs.append(v)
        present.append(pr)
        sb = part.static_block
        statics.append(None if sb is None else np.asarray(sb.matrix[prow]))
    static = None
    static_id = ""
    if len(static_ids) == 1 and all(s is not None for s in statics) and statics:
        static_id = next(iter(static_ids))
        static = np.concatenate([current(s) for s in statics if s is not None])  # earlier layouts re-packed
    return IndexData(
        chunks, dict(manifest.files), merged, concat(docs), piece_list,
        np.concatenate(owners or [np.zeros(0, np.int64)]).astype(np.int64), concat(pdocs),
        np.concatenate(vecs or [np.zeros((0, dim), np.float32)]),
        np.concatenate(present or [np.zeros(0, bool)]),
        manifest.meta, GraphTable.concat(graphs), static, static_id,
    )  # fmt: skip
