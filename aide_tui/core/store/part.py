"""One segment of an index version as a reader holds it: its files mapped, each table opened on first use.

A reader of a big index pays for what a query touches: opening a segment reads nothing; the first BM25
query maps the term dictionary and the postings of its terms; the chunk table is read row by row for
the hits shown. Everything is validated where it is read (indexes in range, sizes that agree), so a
damaged or hostile file gives IndexCorrupt, never a wrong row or a crash.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, overload

import numpy as np

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import Chunk
from aide_tui.core.store.graphfiles import MappedGraph
from aide_tui.core.store.headers import unpacked_header
from aide_tui.core.store.mapped import MappedArray, MappedFile
from aide_tui.core.store.quantize import is_packed, unpack, unpacked_matmul, width
from aide_tui.core.store.segment_write import SegmentEntry, signs_file
from aide_tui.core.store.sketch import distances, sketch, words_for
from aide_tui.core.store.terms import TermDict


class VectorBlock:
    """Vectors of some pieces of one part: ``rows`` are the part's piece rows (None = all rows)."""

    def __init__(
        self,
        source: MappedArray | np.ndarray,
        rows: np.ndarray | None = None,
        packed: bool = False,
        signs: MappedArray | None = None,
    ) -> None:
        self._source = source
        self.rows = rows
        self.packed = packed  # the static tier's packed rows with their scales (quantize.py)
        self._signs = signs  # their sign sketch as stored (sketch.py), when the segment has one

    @property
    def matrix(self) -> np.ndarray:
        """(r, dim) float32 vectors, or packed rows for the static tier; verified on first use."""
        src = self._source
        return src.all() if isinstance(src, MappedArray) else src

    def __len__(self) -> int:
        return len(self._source)

    @property
    def width(self) -> int:
        src = self._source
        if self.packed:
            return width(src.raw if isinstance(src, MappedArray) else src)
        return int(src.shape[1]) if len(src.shape) == 2 else 0

    def _f32(self, rows: np.ndarray) -> np.ndarray:
        return unpack(rows) if self.packed else np.asarray(rows, np.float32)

    def _times(self, rows: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``rows @ right`` in float32 (packed rows scaled after the product)."""
        return unpacked_matmul(rows, right) if self.packed else np.asarray(rows, np.float32) @ right

    def scan(self, q: np.ndarray) -> np.ndarray:
        """``matrix @ q`` in float32, a window of rows at a time; a mapped matrix drops each window's
        pages after it (a one-shot search does not keep the vectors it scanned resident)."""
        src = self._source
        if not isinstance(src, MappedArray):
            return self._scan(src, q)
        with src.read_while_verified() as m:
            out = self._scan(m, q, src)
        return out

    def _scan(self, m: np.ndarray, q: np.ndarray, src: MappedArray | None = None) -> np.ndarray:
        if m.dtype == np.float32 and len(m) <= WINDOW_ROWS:
            return np.asarray(m @ q, np.float32)
        out = np.empty(len(m), np.float32)
        for lo in range(0, len(m), WINDOW_ROWS):
            out[lo : lo + WINDOW_ROWS] = self._times(m[lo : lo + WINDOW_ROWS], q)
            if src is not None:
                src.release_rows(lo, lo + WINDOW_ROWS)
        return out

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """``matrix[rows]`` as float32. A few rows of a mapped transformer matrix are not left resident;
        the static tier's are (260 bytes a piece, 119 MB on the 6M-line monorepo, read by every hybrid
        query of a long-lived reader: dropping and faulting them in again was a tenth of its CPU)."""
        got = self._f32(self.matrix[rows])
        src = self._source
        if isinstance(src, MappedArray) and len(rows) and not self.packed:
            src.release_rows(int(rows.min()), int(rows.max()) + 1)
        return got

    def gather_times(self, rows: np.ndarray, q: np.ndarray, keep: bool = True) -> np.ndarray:
        """``gather(rows) @ q`` without the float32 rows (packed rows converted a few at a time); unless
        ``keep``, a mapped matrix's pages they were read from are dropped from the resident set (a
        one-shot reader's candidates fall in every page)."""
        if not self.packed:
            return np.asarray(self.gather(rows) @ q, np.float32)
        out = self._times(self.matrix[rows], q)
        if not keep and isinstance(self._source, MappedArray) and len(rows):
            self._source.release_rows(int(rows.min()), int(rows.max()) + 1)
        return out

    def piece_rows(self) -> np.ndarray:
        """The part-local piece row of each matrix row."""
        return self.rows if self.rows is not None else np.arange(len(self._source))

    def sketched(self, make: bool) -> bool:
        """Whether :meth:`distances` can answer: the segment stores the sketch (with ``make``, verified
        now with the vectors its candidates are scored on), or ``make`` (a long-lived reader) and it is
        made now from the vectors and kept with the (immutable) block."""
        if self._signs is not None:
            if make:
                self._signs.all()
                _ = self.matrix
            return True
        if "_sketch" in self.__dict__:
            return True
        if make:
            self.__dict__["_sketch"] = sketch(self.matrix)
        return make

    def distances(self, query: np.ndarray, keep: bool = True) -> np.ndarray:
        """Hamming distances of every row's sketch to the query's (see :meth:`sketched`); a stored sketch
        not yet verified is verified alongside, and unless ``keep`` its pages are dropped from the
        resident set after."""
        made = self.__dict__.get("_sketch")
        if made is not None:
            return distances(made, query)
        if self._signs is None:
            raise ValueError("no sign sketch: check sketched() first")
        with self._signs.read_while_verified() as rows:
            out = distances(rows, query)
        if not keep:
            self._signs.file.release()
        return out

    def projected(self, projection: np.ndarray) -> np.ndarray:
        """``matrix @ projection``, computed once per projection and kept with the (immutable) block."""
        cached = self.__dict__.get("_projected")
        if cached is None or cached[0] is not projection:
            m = self.matrix
            src = self._source
            out = np.empty((len(m), projection.shape[1]), np.float32)
            for lo in range(0, len(m), WINDOW_ROWS):
                out[lo : lo + WINDOW_ROWS] = self._times(m[lo : lo + WINDOW_ROWS], projection)
                if isinstance(src, MappedArray):
                    src.release_rows(lo, lo + WINDOW_ROWS)
            cached = (projection, out)
            self.__dict__["_projected"] = cached
        return cached[1]


WINDOW_ROWS = 32768  # rows of a mapped matrix converted and multiplied at a time
_NO_ROWS = np.zeros(0, np.int64)
TERM_CACHE = 200_000  # term ids a part remembers


class Field:
    """BM25 postings of one field (chunks or pieces) of a part: per term, its documents and weighted tfs."""

    def __init__(self, files: SegmentFiles, prefix: str, n_docs: int, n_terms: int) -> None:
        self.files = files  # what it reads from and names in its errors (never the Part: no cycle)
        self.n_docs = n_docs
        self.ptr = files.array(f"{prefix}_ptr.npy")
        self._doc = files.array(f"{prefix}_doc.npy")
        self._tf = files.array(f"{prefix}_tf.npy")
        self._dl = files.array(f"{prefix}_len.npy")
        if len(self.ptr) != n_terms + 1 or len(self._doc) != len(self._tf) or len(self._dl) != n_docs:
            raise files.bad(f"{prefix} postings disagree on their sizes")

    def warm(self) -> None:
        """Check every posting list once (a long-lived reader, off the query path; the pages read are
        dropped from the resident set as the check goes), so the first queries verify nothing."""
        self.ptr.all()
        self._doc.file.check_all()
        self._tf.file.check_all()
        _ = self.lengths

    def postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """(documents, weighted tfs) of term ``tid``."""
        docs, tfs, _ = self.postings_of([tid])
        return docs, tfs

    def postings_of(self, tids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The postings of several terms end to end, in the order given: (documents, weighted tfs, each
        term's count). One conversion and one check of the documents for the lot, not one per term (a
        long query on a many-segment index made thousands of small reads)."""
        t = np.asarray(tids, np.int64)
        if t.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int64)
        spans = self.ptr.spans(t, len(self._doc))
        if spans is None:
            raise self.files.bad("postings pointers")
        lo, hi = spans
        counts = hi - lo
        if not counts.any():
            return np.zeros(0, np.int64), np.zeros(0, np.float32), counts
        lo_, hi_ = lo.tolist(), hi.tolist()
        docs = self._doc.ranges(lo_, hi_).astype(np.int64)
        if int(docs.min()) < 0 or int(docs.max()) >= self.n_docs:
            raise self.files.bad("postings point outside the segment")
        tfs = self._tf.ranges(lo_, hi_).astype(np.float32)
        return docs, tfs, counts

    def postings_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every posting's (document, weighted tf), term by term (what a merge reads)."""
        docs = self._doc.all().astype(np.int64)
        if docs.size and (int(docs.min()) < 0 or int(docs.max()) >= self.n_docs):
            raise self.files.bad("postings point outside the segment")
        ptr = self.ptr.all()
        if ptr.size and (int(ptr[0]) != 0 or int(ptr[-1]) != len(docs) or bool(np.any(ptr[1:] < ptr[:-1]))):
            raise self.files.bad("postings pointers")
        return docs, self._tf.all().astype(np.float32)

    def df(self, tids: np.ndarray) -> np.ndarray:
        """Stored document frequency of each term id (dead rows included)."""
        tids = np.asarray(tids, np.int64)
        if tids.size == 0:
            return np.zeros(0, np.int64)
        if len(tids) > 64:  # many terms (completions): the whole pointer file, checked once
            ptr = self.ptr.all()
            whole: np.ndarray = ptr[tids + 1].astype(np.int64) - ptr[tids]
            return whole
        df: np.ndarray = self.ptr.take(tids + 1).astype(np.int64) - self.ptr.take(tids)
        return df

    @cached_property
    def lengths(self) -> np.ndarray:
        dl = self._dl.all()
        if dl.size and not np.isfinite(dl).all():
            raise self.files.bad("document lengths")
        return dl


class SegmentFiles:
    """The mapped files of one segment, each opened once and checked against the manifest's sums. What
    a Part's tables keep to read from (the postings, the graph), so none of them points back at the
    Part: a Part a newer version no longer holds is freed by reference counting, its maps closed."""

    def __init__(self, folder: Path, entry: SegmentEntry) -> None:
        self.name = entry.name
        self.dir = folder
        self.entry = entry
        self._arrays: dict[str, MappedArray] = {}
        self._files: dict[str, MappedFile] = {}

    def bad(self, what: str) -> IndexCorrupt:
        return IndexCorrupt(f"index segment {self.name} is malformed ({what}); rebuilding")

    def file(self, name: str) -> MappedFile:
        f = self._files.get(name)
        if f is None:
            sums = self.entry.files.get(name)
            if sums is None:
                raise IndexCorrupt(f"index segment {self.name} lacks {name}; rebuilding")
            f = self._files[name] = MappedFile(self.dir / name, sums, f"{self.name}/{name}")
        return f

    def array(self, name: str) -> MappedArray:
        a = self._arrays.get(name)
        if a is None:
            a = self._arrays[name] = MappedArray(self.file(name))
        return a

    def carried_to(self, entry: SegmentEntry) -> SegmentFiles:
        """The files under a newer entry of the same segment: those whose sums did not change stay open."""
        out = SegmentFiles(self.dir, entry)
        same = {k for k, v in entry.files.items() if self.entry.files.get(k) == v}
        out._arrays = {k: v for k, v in self._arrays.items() if k in same}
        out._files = {k: v for k, v in self._files.items() if k in same}
        return out


class Part:
    """One immutable segment, opened lazily."""

    def __init__(self, index_dir: Path, entry: SegmentEntry, files: SegmentFiles | None = None) -> None:
        self.index_dir = index_dir
        self.entry = entry
        self.name = entry.name
        self.dir = index_dir / entry.name
        self.n_chunks = entry.n_chunks
        self.n_pieces = entry.n_pieces
        self.files = files or SegmentFiles(self.dir, entry)
        self._tids: dict[str, int] = {}  # term -> id (-1: absent), for the terms queries asked
        self._blocks: dict[str, VectorBlock] = {}  # transformer vector blocks opened, by name

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """The id of each term in this segment's dictionary (-1 when absent), remembered."""
        cache = self._tids
        missing = [t for t in dict.fromkeys(terms) if t not in cache]
        if missing:
            if len(cache) > TERM_CACHE:
                cache.clear()
            for t, tid in zip(missing, self.terms.ids(missing).tolist(), strict=True):
                cache[t] = int(tid)
        return [cache[t] for t in terms]

    def bad(self, what: str) -> IndexCorrupt:
        return self.files.bad(what)

    def with_entry(self, entry: SegmentEntry) -> Part:
        """The same segment under a newer entry (more vector blocks, a static file): what is open stays."""
        part = Part(self.index_dir, entry, self.files.carried_to(entry))
        part._tids = self._tids
        part._blocks = {k: v for k, v in self._blocks.items() if k in entry.blocks}  # their projections stay
        if entry.static_file == self.entry.static_file and "static_block" in self.__dict__:
            part.__dict__["static_block"] = self.__dict__["static_block"]
        for key in ("paths", "languages", "c_path", "c_lines", "p_owner", "p_lines", "terms", "chunk_field",
                    "piece_field", "graph", "trigrams", "symbols", "path_ids_of", "path_rows"):  # fmt: skip
            if key in self.__dict__:
                part.__dict__[key] = self.__dict__[key]
        return part

    # -- files -------------------------------------------------------------------------------------

    def file(self, name: str) -> MappedFile:
        return self.files.file(name)

    def array(self, name: str) -> MappedArray:
        return self.files.array(name)

    def _json(self, name: str) -> Any:
        try:
            return json.loads(bytes(self.file(name).view()))
        except (ValueError, RecursionError, UnicodeDecodeError):
            raise self.bad(f"{name} is not JSON") from None

    # -- tables ------------------------------------------------------------------------------------

    @cached_property
    def paths(self) -> list[str]:
        """The segment's files (``c_path`` indexes them)."""
        got = self._json("paths.json")
        if not isinstance(got, list) or not all(isinstance(p, str) for p in got):
            raise self.bad("paths")
        return got

    @cached_property
    def path_ids_of(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.paths)}

    @cached_property
    def languages(self) -> list[str]:
        meta = self._json("meta.json")
        langs = meta.get("languages") if isinstance(meta, dict) else None
        if not isinstance(langs, list) or not all(isinstance(x, str) for x in langs):
            raise self.bad("meta")
        return langs

    def _rows(self, name: str, n: int, width: int = 0) -> np.ndarray:
        a = self.array(name).all()
        if len(a) != n or (width and (a.ndim != 2 or a.shape[1] != width)):
            raise self.bad(f"{name} has the wrong shape")
        return a

    @cached_property
    def c_path(self) -> np.ndarray:
        a = self._rows("c_path.npy", self.n_chunks)
        if a.size and (int(a.min()) < 0 or int(a.max()) >= len(self.paths)):
            raise self.bad("chunk paths")
        return a

    @cached_property
    def c_lines(self) -> np.ndarray:
        a = self._rows("c_lines.npy", self.n_chunks, 2)
        if a.size and (int(a.min()) < 1 or bool(np.any(a[:, 1] < a[:, 0]))):
            raise self.bad("chunk lines")
        return a

    @cached_property
    def p_owner(self) -> np.ndarray:
        a = self._rows("p_owner.npy", self.n_pieces)
        if a.size and (int(a.min()) < 0 or int(a.max()) >= self.n_chunks):
            raise self.bad("piece owners")
        return a.astype(np.int64)

    @cached_property
    def p_lines(self) -> np.ndarray:
        a = self._rows("p_lines.npy", self.n_pieces, 2)
        if a.size:
            own = self.c_lines[self.p_owner]
            if bool(np.any(a[:, 0] < own[:, 0])) or bool(np.any(a[:, 1] > own[:, 1])):
                raise self.bad("piece lines")
        return a

    @cached_property
    def terms(self) -> TermDict:
        return TermDict(self.file("terms.bin"), self.array("term_off.npy"), self.array("term_hash.npy"),
                        self.array("term_hid.npy"))  # fmt: skip

    @cached_property
    def chunk_field(self) -> Field:
        return Field(self.files, "c", self.n_chunks, self.terms.n)

    @cached_property
    def piece_field(self) -> Field:
        return Field(self.files, "p", self.n_pieces, self.terms.n)

    @cached_property
    def graph(self) -> MappedGraph:
        return MappedGraph(self.name, self.paths, self.files.array, self.files.file)

    @cached_property
    def trigrams(self) -> frozenset[str]:
        got = self._json("trigrams.json")
        if not isinstance(got, list):
            raise self.bad("trigrams")
        return frozenset(str(g) for g in got)

    # -- rows --------------------------------------------------------------------------------------

    @cached_property
    def path_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows sorted by path and line, (paths + 1,) offsets): the chunk rows of each path."""
        order = np.lexsort((self.c_lines[:, 0], self.c_path)) if self.n_chunks else np.zeros(0, np.int64)
        ptr = np.zeros(len(self.paths) + 1, np.int64)
        np.cumsum(np.bincount(self.c_path, minlength=len(self.paths))[: len(self.paths)], out=ptr[1:])
        return order.astype(np.int64), ptr

    def rows_of(self, path: str) -> np.ndarray:
        """The chunk rows of one of the segment's files, in line order."""
        pid = self.path_ids_of.get(path)
        if pid is None:
            return np.zeros(0, np.int64)
        order, ptr = self.path_rows
        return order[ptr[pid] : ptr[pid + 1]]

    def path_of(self, i: int) -> str:
        return self.paths[int(self.c_path[i])]

    def warm_rows(self) -> None:
        """Open and check what the first query's rows read (a long-lived reader, off the query path): the
        defined names and their prefix sample, the pieces' lines, the files of a chunk's row (its
        metadata, text and language) and the rows of each path. Measured on the monorepo: the first
        typed query after a load paid 25-30 ms for these."""
        self.symbols[0].warm()
        _ = self.p_lines, self.languages, self.path_rows, self.path_ids_of
        for name in ("c_meta_off.npy", "text_off.npy", "c_lang.npy"):
            self.array(name).all()
        for name in ("c_meta.bin", "texts.bin"):
            self.file(name)

    def _blob_row(self, blob: str, off: str, i: int, n: int) -> bytes:
        offsets = self.array(off)
        if len(offsets) != n + 1:
            raise self.bad(f"{off} has the wrong size")
        lo, hi = (int(x) for x in offsets.rows(i, i + 2))
        f = self.file(blob)
        if not 0 <= lo <= hi <= len(f):
            raise self.bad(f"{off} points outside {blob}")
        return bytes(f.view(lo, hi))

    def chunk_meta(self, i: int) -> tuple[str | None, str, tuple[str, ...]]:
        """(symbol, header, defines) of chunk ``i``."""
        try:
            sym, hdr, defines = json.loads(self._blob_row("c_meta.bin", "c_meta_off.npy", i, self.n_chunks))
        except (ValueError, TypeError):
            raise self.bad("chunk metadata") from None
        if not (sym is None or isinstance(sym, str)) or not isinstance(defines, list):
            raise self.bad("chunk metadata")
        header = unpacked_header(hdr, self.path_of(i), sym)
        if header is None:
            raise self.bad("chunk metadata")
        return sym, header, tuple(str(d) for d in defines)

    def text(self, i: int) -> str:
        raw = self._blob_row("texts.bin", "text_off.npy", i, self.n_chunks)
        try:
            return zlib.decompress(raw).decode("utf-8", "surrogatepass")
        except (zlib.error, UnicodeDecodeError):
            raise self.bad("chunk text") from None

    def chunk(self, i: int) -> Chunk:
        if not 0 <= i < self.n_chunks:
            raise IndexError(i)
        sym, hdr, defines = self.chunk_meta(i)
        s, e = (int(x) for x in self.c_lines[i])
        lang = int(self.array("c_lang.npy").rows(i, i + 1)[0])
        if not 0 <= lang < len(self.languages):
            raise self.bad("chunk language")
        return Chunk(self.path_of(i), s, e, self.languages[lang], sym, hdr, self.text(i), defines)

    def piece(self, j: int, owner: Chunk | None = None) -> Chunk:
        """Piece ``j``: its lines of its owner chunk's text (``owner``: that chunk, when at hand)."""
        o = int(self.p_owner[j])
        c = owner if owner is not None else self.chunk(o)
        try:
            sym, hdr = json.loads(self._blob_row("p_meta.bin", "p_meta_off.npy", j, self.n_pieces))
        except (ValueError, TypeError):
            raise self.bad("piece metadata") from None
        if sym == 0:
            sym = c.symbol
        if not (sym is None or isinstance(sym, str)):
            raise self.bad("piece metadata")
        hdr = c.header if hdr == 0 else unpacked_header(hdr, c.path, sym)
        if hdr is None:
            raise self.bad("piece metadata")
        s, e = (int(x) for x in self.p_lines[j])
        lines = c.text.split("\n")[s - c.start_line : e - c.start_line + 1]
        return Chunk(c.path, s, e, c.language, sym, hdr, "\n".join(lines))

    def pieces(self, rows: Sequence[int] | None = None) -> Iterator[tuple[int, Chunk]]:
        """(row, piece) for ``rows`` (default: all), each owner chunk decoded once."""
        owners = self.p_owner
        cache: dict[int, Chunk] = {}
        for j in range(self.n_pieces) if rows is None else rows:
            o = int(owners[j])
            if o not in cache:
                cache.clear()
                cache[o] = self.chunk(o)
            yield j, self.piece(j, cache[o])

    # -- lookups -----------------------------------------------------------------------------------

    @cached_property
    def symbols(self) -> tuple[TermDict, MappedArray, MappedArray]:
        d = TermDict(self.file("sym.bin"), self.array("sym_off.npy"), self.array("sym_hash.npy"),
                     self.array("sym_hid.npy"))  # fmt: skip
        ptr, rows = self.array("sym_ptr.npy"), self.array("sym_rows.npy")
        if len(ptr) != d.n + 1:
            raise self.bad("symbol pointers")
        return d, ptr, rows

    def symbol_rows(self, lowers: Sequence[str]) -> list[np.ndarray]:
        """Chunk rows defining each (lower-cased) name, in one lookup for all of them (a pasted text
        names dozens, in every segment)."""
        d, ptr, rows = self.symbols
        tids = d.ids(list(lowers))
        out = [_NO_ROWS] * len(tids)
        found = np.flatnonzero(tids >= 0)
        if not found.size:
            return out
        spans = ptr.spans(tids[found], len(rows))
        if spans is None:
            raise self.bad("symbol pointers")
        lo, hi = spans
        got = rows.ranges(lo.tolist(), hi.tolist()).astype(np.int64)
        if got.size and (int(got.min()) < 0 or int(got.max()) >= self.n_chunks):
            raise self.bad("symbol rows")
        for k, part in zip(found.tolist(), np.split(got, np.cumsum(hi - lo)[:-1]), strict=True):
            out[k] = part
        return out

    def names_from(self, prefix: str) -> list[str]:
        """The (lower-cased) defined names that start with ``prefix``."""
        d = self.symbols[0]
        lo, hi = d.prefix_range(prefix)
        return d.terms(lo, hi)

    def names_holding(self, needle: str) -> list[str]:
        """The (lower-cased) defined names that hold ``needle`` (lower case), found in all the names one
        per line (read once, kept with the immutable segment)."""
        every: str | None = self.__dict__.get("_all_names")
        if every is None:
            every = self.__dict__["_all_names"] = "\n".join(self.names_from(""))
        out: list[str] = []
        at = every.find(needle) if needle else -1
        while at >= 0:
            start = every.rfind("\n", 0, at) + 1
            end = every.find("\n", at)
            end = len(every) if end < 0 else end
            out.append(every[start:end])
            at = every.find(needle, end)
        return out

    def defines(self, i: int) -> tuple[str, ...]:
        return self.chunk_meta(i)[2]

    # -- vectors -----------------------------------------------------------------------------------

    @cached_property
    def blocks(self) -> list[VectorBlock]:
        """The transformer's vector blocks, oldest first."""
        out = []
        for b in self.entry.blocks:
            block = self._blocks.get(b)
            if block is None:
                rows = self.array(f"{b}.rows.npy").all().astype(np.int64)
                vec = self.array(f"{b}.vec.npy")
                if len(vec.shape) != 2 or len(rows) != vec.shape[0] or vec.dtype != np.float32:
                    raise self.bad(f"vector block {b} shape")
                if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.n_pieces):
                    raise self.bad(f"vector block {b} rows")
                block = self._blocks[b] = VectorBlock(vec, rows)
            out.append(block)
        return out

    @cached_property
    def static_block(self) -> VectorBlock | None:
        """The static tier's vectors of every piece (None when the segment has none)."""
        if not self.entry.static_file:
            return None
        a = self.array(self.entry.static_file)
        if len(a.shape) != 2 or a.shape[0] != self.n_pieces or not is_packed(a.raw) or width(a.raw) == 0:
            raise self.bad("static vectors shape")
        name = signs_file(self.entry.static_file)
        signs = self.array(name) if name in self.entry.files else None
        expect = (words_for(width(a.raw)), len(a))
        if signs is not None and (signs.raw.dtype != np.uint64 or signs.shape != expect):
            raise self.bad("static sign sketch shape")
        return VectorBlock(a, packed=True, signs=signs)

    def has_vector(self) -> np.ndarray:
        """(p,) bool: pieces with a transformer vector in some block."""
        out = np.zeros(self.n_pieces, bool)
        for b in self.blocks:
            out[b.piece_rows()] = True
        return out

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """(p, dim) transformer vectors and which pieces have one (what a merge carries over)."""
        dim = self.entry.dim
        vectors = np.zeros((self.n_pieces, dim), np.float32)
        present = np.zeros(self.n_pieces, bool)
        for b in self.blocks:
            if b.width != dim:
                raise self.bad("vector block dimension")
            vectors[b.piece_rows()] = b.matrix
            present[b.piece_rows()] = True
        return vectors, present


class PartChunks(Sequence[Chunk]):
    """A part's chunks, decoded on access (and kept)."""

    def __init__(self, part: Part) -> None:
        self.part = part
        self._built: dict[int, Chunk] = {}
        self._defines: dict[int, tuple[str, ...]] = {}

    def defines(self, i: int) -> tuple[str, ...]:
        """The names chunk ``i`` defines: from its chunk when decoded, else from its metadata alone (no
        text is decompressed; kept, as chunks are)."""
        c = self._built.get(i)
        if c is not None:
            return c.defines
        got = self._defines.get(i)
        if got is None:
            got = self._defines[i] = self.part.chunk_meta(i)[2]
        return got

    def __len__(self) -> int:
        return self.part.n_chunks

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        c = self._built.get(i)
        if c is None:
            c = self._built[i] = self.part.chunk(i)
        return c
