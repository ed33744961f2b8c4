"""Writing one immutable segment of the local store: every table a reader maps, in one folder.

A segment is self-contained: its own term dictionary, its term-major postings for chunks and pieces,
its chunk and piece tables, the symbol lookup, its part of the symbol graph, and its vectors (the
static tier's in ``static.npy``, the transformer's in blocks added later). Two builders never share
state, so a cold build can write several segments at once, and a reader of one segment never reads
another's files. Files (see :mod:`aide_tui.core.store.part` for how they are read)::

    meta.json                 {"languages": [...]}
    paths.json                the segment's files, in the order of their first chunk
    c_path.npy c_lines.npy c_lang.npy          per chunk: file, (first, last) line, language
    c_meta.bin c_meta_off.npy                  per chunk: [symbol, header, defines] as JSON
                                               (headers without their file and symbol lines: headers.py)
    texts.bin text_off.npy                     chunk texts (UTF-8, each zlib-compressed on its own)
    p_owner.npy p_lines.npy p_meta.bin p_meta_off.npy   per piece: chunk, lines, [symbol, header]
                                                        (0 for the chunk's own)
    terms.bin term_off.npy term_hash.npy term_hid.npy   the term dictionary (terms.py)
    c_ptr.npy c_doc.npy c_tf.npy c_len.npy     BM25 over chunks: postings per term (uint32 pointers,
                                               uint16 rows, uint8 tfs where they fit), lengths
    p_ptr.npy p_doc.npy p_tf.npy p_len.npy     BM25 over pieces
    sym.bin sym_off.npy sym_hash.npy sym_hid.npy sym_ptr.npy sym_rows.npy   defined names → chunks
    trigrams.json             the letter trigrams of the vocabulary's words (wordshape.py)
    g_*                       the symbol graph (graphfiles.py)
    static.npy                (pieces, d / 2 + 4) uint8: static-tier vectors, four bits a value and one
                              scale a row (quantize.py; earlier segments: (pieces, d + 4) int8)
    static.signs.npy          (d / 64, pieces) uint64: their sign sketch (sketch.py; earlier segments
                              have none, and a search scans their vectors)
    b<k>.vec.npy b<k>.rows.npy   transformer vectors of some pieces (added as they are computed)
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np

from aide_tui.core.bm25 import DocTerms
from aide_tui.core.model import Chunk
from aide_tui.core.store.graphfiles import GRAPH_FILES, encode_graph
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.headers import packed_header
from aide_tui.core.store.mapped import FileSum
from aide_tui.core.store.quantize import is_packed, pack
from aide_tui.core.store.sketch import sketch
from aide_tui.core.store.terms import encode_terms, sort_terms
from aide_tui.core.wordshape import vocabulary_trigrams

BASE_FILES = (
    "meta.json", "paths.json", "c_path.npy", "c_lines.npy", "c_lang.npy", "c_meta.bin", "c_meta_off.npy",
    "texts.bin", "text_off.npy", "p_owner.npy", "p_lines.npy", "p_meta.bin", "p_meta_off.npy", "terms.bin",
    "term_off.npy", "term_hash.npy", "term_hid.npy", "c_ptr.npy", "c_doc.npy", "c_tf.npy", "c_len.npy",
    "p_ptr.npy", "p_doc.npy", "p_tf.npy", "p_len.npy", "sym.bin", "sym_off.npy", "sym_hash.npy",
    "sym_hid.npy", "sym_ptr.npy", "sym_rows.npy", "trigrams.json",
)  # fmt: skip
SEGMENT_FILES = BASE_FILES + GRAPH_FILES  # every segment has these; static.npy and vector blocks may follow
STATIC_FILE = "static.npy"


def signs_file(static_file: str) -> str:
    """The name of the sign sketch stored beside the static vectors ``static_file``."""
    return static_file.removesuffix(".npy") + ".signs.npy"


TEXT_LEVEL = 1  # zlib level of each chunk's text (a third of the bytes; decompressed per row read)


@dataclass
class SegmentData:
    """A segment's contents in memory: what a writer produces, and what a merge gathers.

    Row i of ``docs`` belongs to ``chunks[i]``; row j of ``pdocs``/``owners``/``vectors``/``present``/
    ``static`` to ``pieces[j]``, a finer span inside chunk ``owners[j]`` (see chunk/pieces.py). Term ids
    index ``terms`` (sorted as the dictionary is).
    """

    chunks: list[Chunk]
    pieces: list[Chunk]
    owners: np.ndarray  # (p,) int64
    terms: list[str]
    docs: DocTerms
    pdocs: DocTerms
    vectors: np.ndarray  # (p, dim) float32; rows with present=False are meaningless
    present: np.ndarray  # (p,) bool
    graph: GraphTable = field(default_factory=GraphTable)
    static: np.ndarray | None = None  # (p, d) float static-tier vectors, or packed rows (quantize.py)
    static_id: str = ""


@dataclass
class SegmentEntry:
    """A segment as the manifest names it."""

    name: str
    n_chunks: int
    n_pieces: int
    files: dict[str, FileSum]  # file name -> size and checksums
    blocks: list[str] = field(default_factory=list)  # transformer vector blocks, oldest first
    dim: int = 0
    static: str = ""  # the static tier's model id of the vectors in ``static_file``
    static_file: str = ""  # static.npy (written with the segment) or st<k>.npy (added later); "" = none

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "chunks": self.n_chunks, "pieces": self.n_pieces,
            "files": {k: v.to_json() for k, v in self.files.items()}, "blocks": self.blocks, "dim": self.dim,
            "static": self.static, "static_file": self.static_file,
        }  # fmt: skip


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as ``.npy`` bytes (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_new_file(path: Path, data: bytes) -> FileSum:
    """Create ``path`` (never an existing one, never through a link), fsync it; its sums."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return FileSum.of(data)


def stamp(prefix: str) -> str:
    return f"{prefix}{time.time_ns():x}-{os.getpid()}"


# -- building the tables ---------------------------------------------------------------------------


def sorted_docs(per_doc: Sequence[Mapping[str, float]], terms: Sequence[str] | None = None
                ) -> tuple[list[str], DocTerms]:  # fmt: skip
    """Documents' weighted term counts as rows over a sorted dictionary (``terms``: the dictionary to
    use, which must hold every term; default: the documents' own terms, sorted)."""
    if terms is None:
        seen: dict[str, None] = {}
        for c in per_doc:
            seen.update(dict.fromkeys(c))
        terms = sort_terms(seen)
    tid = {t: i for i, t in enumerate(terms)}
    lengths = np.fromiter((len(c) for c in per_doc), np.int64, len(per_doc))
    ptr = np.zeros(len(per_doc) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    total = int(ptr[-1])
    ids = np.fromiter(map(tid.__getitem__, chain.from_iterable(per_doc)), np.int32, total)
    tfs = np.fromiter(chain.from_iterable(c.values() for c in per_doc), np.float32, total)
    return list(terms), DocTerms(ptr, ids, tfs)


def postings(docs: DocTerms, n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Term-major postings of doc-major rows: (ptr (t + 1,), doc, tf, each document's weighted length)."""
    n = docs.n_docs
    doc_of = np.repeat(np.arange(n, dtype=np.int32), np.diff(docs.doc_ptr))
    order = np.argsort(docs.term_ids, kind="stable")
    ptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(np.bincount(docs.term_ids, minlength=n_terms)[:n_terms], out=ptr[1:])
    dl = np.bincount(doc_of, weights=docs.tfs, minlength=n).astype(np.float32)
    return ptr, doc_of[order], docs.tfs[order].astype(np.float32), dl


_SAME_AS_CHUNK = [0, 0]  # a piece whose symbol and header are its chunk's (most pieces)
_SAME_AS_CHUNK_JSON = b"[0,0]"


def _json_rows(rows: Sequence[object]) -> tuple[bytes, np.ndarray]:
    blobs = [
        _SAME_AS_CHUNK_JSON
        if r == _SAME_AS_CHUNK
        else json.dumps(r, ensure_ascii=True, separators=(",", ":")).encode()
        for r in rows
    ]
    off = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=off[1:])
    return b"".join(blobs), off


def _symbols(chunks: Sequence[Chunk]) -> dict[str, bytes | np.ndarray]:
    """Lower-cased defined names → the chunk rows defining them."""
    rows: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        for name in dict.fromkeys(n.lower() for n in c.defines):
            rows.setdefault(name, []).append(i)
    names = sort_terms(rows)
    out: dict[str, bytes | np.ndarray] = {}
    for key, value in encode_terms(names).items():
        out[key.replace("terms.bin", "sym.bin").replace("term_", "sym_")] = value
    counts = [len(rows[n]) for n in names]
    ptr = np.zeros(len(names) + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    out["sym_ptr.npy"] = ptr
    out["sym_rows.npy"] = np.asarray([r for n in names for r in rows[n]], np.int32)
    return out


def segment_payloads(seg: SegmentData) -> dict[str, bytes | np.ndarray]:
    """Every file of the segment, by name."""
    chunks, pieces = seg.chunks, seg.pieces
    paths = list(dict.fromkeys(c.path for c in chunks))
    path_id = {p: i for i, p in enumerate(paths)}
    languages = sorted({c.language for c in chunks})
    lang_id = {lang: i for i, lang in enumerate(languages)}
    texts = [zlib.compress(c.text.encode("utf-8", "surrogatepass"), TEXT_LEVEL) for c in chunks]
    text_off = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=text_off[1:])
    c_meta, c_meta_off = _json_rows(
        [[c.symbol, packed_header(c.header, c.path, c.symbol), list(c.defines)] for c in chunks]
    )
    owners = [int(o) for o in seg.owners]
    p_meta, p_meta_off = _json_rows([  # a piece's header and symbol are most often its chunk's: 0 says so
        [
            0 if p.symbol == chunks[o].symbol else p.symbol,
            0 if p.header == chunks[o].header else packed_header(p.header, p.path, p.symbol),
        ]
        for p, o in zip(pieces, owners, strict=True)
    ])  # fmt: skip
    out: dict[str, bytes | np.ndarray] = {
        "meta.json": json.dumps({"languages": languages}).encode(),
        "paths.json": json.dumps(paths, ensure_ascii=True).encode(),
        "c_path.npy": np.asarray([path_id[c.path] for c in chunks], np.int32),
        "c_lines.npy": np.asarray([[c.start_line, c.end_line] for c in chunks], np.int32).reshape(-1, 2),
        "c_lang.npy": np.asarray([lang_id[c.language] for c in chunks], np.uint8),
        "c_meta.bin": c_meta,
        "c_meta_off.npy": c_meta_off,
        "texts.bin": b"".join(texts),
        "text_off.npy": text_off,
        "p_owner.npy": np.asarray(seg.owners, np.int32),
        "p_lines.npy": np.asarray([[p.start_line, p.end_line] for p in pieces], np.int32).reshape(-1, 2),
        "p_meta.bin": p_meta,
        "p_meta_off.npy": p_meta_off,
        **encode_terms(seg.terms),
        **_symbols(chunks),
        "trigrams.json": json.dumps(
            sorted(vocabulary_trigrams(t for t in seg.terms if ":" not in t))
        ).encode(),
    }
    for prefix, docs in (("c", seg.docs), ("p", seg.pdocs)):
        ptr, doc, tf, dl = postings(docs, len(seg.terms))
        if docs.n_docs <= 65536:
            doc = doc.astype(np.uint16)  # a segment of at most 65,536 rows: two bytes a posting
        if tf.size and float(tf.max()) <= 65535 and bool(np.all(tf == np.rint(tf))):
            # weighted counts are whole numbers: one byte each where they fit (nearly always), the same
            # scores. Not capped at 255: a merge takes a row's length from its counts again
            tf = tf.astype(np.uint8 if float(tf.max()) <= 255 else np.uint16)
        out.update({f"{prefix}_ptr.npy": ptr, f"{prefix}_doc.npy": doc, f"{prefix}_tf.npy": tf,
                    f"{prefix}_len.npy": dl})  # fmt: skip
    graph_paths = [path_id[p] for p in seg.graph.paths if p in path_id]
    graph = seg.graph if len(graph_paths) == len(seg.graph.paths) else seg.graph.take(path_id.__contains__)
    out.update(encode_graph(graph, [path_id[p] for p in graph.paths], len(paths)))
    if seg.static is not None:
        packed = packed_static(seg.static)
        out[STATIC_FILE] = packed
        out[signs_file(STATIC_FILE)] = sketch(packed)
    rows = np.flatnonzero(seg.present)
    if rows.size:
        out["b0.vec.npy"] = np.asarray(seg.vectors[rows], np.float32)
        out["b0.rows.npy"] = rows.astype(np.int32)
    return narrowed_offsets(out)


def narrowed_offsets(payloads: dict[str, bytes | np.ndarray]) -> dict[str, bytes | np.ndarray]:
    """Every offset and pointer table (``*_off.npy``, ``*_ptr.npy``) as uint32 where it fits (always,
    short of a 4 GiB file): half the bytes. Readers convert offsets to ints before they compute."""
    limit = np.iinfo(np.uint32).max
    for name, arr in payloads.items():
        if (name.endswith(("_off.npy", "_ptr.npy")) and isinstance(arr, np.ndarray) and arr.dtype == np.int64
                and (arr.size == 0 or (int(arr.min()) >= 0 and int(arr.max()) <= limit))):  # fmt: skip
            payloads[name] = arr.astype(np.uint32)
    return payloads


def packed_static(vectors: np.ndarray) -> np.ndarray:
    """Static vectors as stored: packed rows (kept as they are when already packed)."""
    v = np.asarray(vectors)
    return v if is_packed(v) else pack(v)


def write_segment(index_dir: Path, seg: SegmentData) -> SegmentEntry:
    """Write a new immutable segment folder (not yet referenced by any manifest)."""
    name = stamp("s")
    tmp = index_dir / f".tmp-{name}"
    tmp.mkdir(mode=0o700)
    try:
        payloads = segment_payloads(seg)
        files = {
            n: write_new_file(tmp / n, data if isinstance(data, bytes) else npy_bytes(data))
            for n, data in payloads.items()
        }
        fsync_dir(tmp)
        os.rename(tmp, index_dir / name)
        fsync_dir(index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    has_vectors = "b0.vec.npy" in payloads
    dim = int(seg.vectors.shape[1]) if has_vectors else 0
    has_static = seg.static is not None
    return SegmentEntry(name, len(seg.chunks), len(seg.pieces), files, ["b0"] if has_vectors else [], dim,
                        seg.static_id if has_static else "", STATIC_FILE if has_static else "")  # fmt: skip


def _add_files(index_dir: Path, entry: SegmentEntry, payloads: dict[str, bytes]) -> dict[str, FileSum]:
    """Write new files into an existing segment folder (all or none)."""
    seg_dir = index_dir / entry.name
    files = dict(entry.files)
    written: list[str] = []
    try:
        for n, data in payloads.items():
            files[n] = write_new_file(seg_dir / n, data)
            written.append(n)
    except BaseException:
        for n in written:
            try:
                os.unlink(seg_dir / n)
            except OSError:
                pass
        raise
    fsync_dir(seg_dir)
    return files


def write_block(index_dir: Path, entry: SegmentEntry, rows: np.ndarray, vectors: np.ndarray) -> SegmentEntry:
    """Add a transformer vector block (vectors of some of the segment's pieces); returns the new entry."""
    k = 0
    while f"b{k}" in entry.blocks or os.path.lexists(index_dir / entry.name / f"b{k}.vec.npy"):
        k += 1
    block = f"b{k}"
    files = _add_files(index_dir, entry, {
        f"{block}.vec.npy": npy_bytes(np.asarray(vectors, np.float32)),
        f"{block}.rows.npy": npy_bytes(np.asarray(rows, np.int32)),
    })  # fmt: skip
    return SegmentEntry(entry.name, entry.n_chunks, entry.n_pieces, files, [*entry.blocks, block],
                        int(vectors.shape[1]), entry.static, entry.static_file)  # fmt: skip


def write_static(index_dir: Path, entry: SegmentEntry, vectors: np.ndarray, static_id: str) -> SegmentEntry:
    """Add the static tier's vectors to a segment written before the tier was ready (or with an older
    table): a new file ``st<k>.npy``, never one a committed version names."""
    k = 0
    while os.path.lexists(index_dir / entry.name / f"st{k}.npy"):
        k += 1
    name = f"st{k}.npy"
    packed = packed_static(vectors)
    payloads = {name: npy_bytes(packed), signs_file(name): npy_bytes(sketch(packed))}
    files = _add_files(index_dir, entry, payloads)
    if entry.static_file and entry.static_file != name:
        files.pop(entry.static_file, None)
        files.pop(signs_file(entry.static_file), None)
    return SegmentEntry(entry.name, entry.n_chunks, entry.n_pieces, files, entry.blocks, entry.dim, static_id,
                        name)  # fmt: skip
