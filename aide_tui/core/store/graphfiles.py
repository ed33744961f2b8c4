"""A segment's part of the symbol graph on disk, as sorted arrays a reader maps and looks up in place.

Files (every one listed and checksummed in the manifest; path indexes are the segment's ``paths.json``)::

    g_names.bin, g_name_off.npy,     the names (definitions' and references'), a term dictionary
    g_name_hash.npy, g_name_hid.npy  (see terms.py): exact lookups
    g_lower_hash.npy, g_lower_ids.npy  CRC-32 of each name lower-cased, sorted, and its name id
    g_defs.npy       (d, 6) uint16 (int32 when a value needs it): path, name, kind, line, col, end_line;
                     sorted by name, path, line
    g_def_ptr.npy    (names + 1,) uint32: the definitions of name n are rows [ptr[n], ptr[n + 1])
    g_qual.bin, g_qual_off.npy       each definition's qualified name
    g_def_bypath.npy, g_def_path_ptr.npy   definition rows by path and line, and each path's range
    g_refs.npy       (r, 4) uint16 (int32 when a value needs it): path, kind, line, col; sorted by name,
                     path, line, col. A row's name is the run of ``g_ref_ptr`` it falls in, so it is not
                     stored (segments written before: (r, 5) with the name second; readers take both)
    g_ref_ptr.npy    (names + 1,) uint32: the references of name n are rows [ptr[n], ptr[n + 1])
    g_ref_bypath.npy, g_ref_path_ptr.npy   reference rows by path, line and column, per path
    g_files.npy      the paths that have a graph
    g_meta.json      {"kinds": [...definition kinds...], "imports": [[module, ...] per path]}

A definition or reference row belongs to a file; like a chunk it is live while the manifest says the
file is held by this segment, so an edited or deleted file's old rows disappear with the commit that
replaces them.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import REF_KINDS, Definition, Reference
from aide_tui.core.store.graphtable import GraphTable
from aide_tui.core.store.mapped import MappedArray, MappedFile
from aide_tui.core.store.terms import HashedTerms, TermDict, encode_terms, sort_terms

TEXTS_AT_ONCE = 1 << 16  # strings read in one piece when they lie this close together

GRAPH_FILES = (
    "g_names.bin", "g_name_off.npy", "g_name_hash.npy", "g_name_hid.npy", "g_lower_hash.npy",
    "g_lower_ids.npy", "g_defs.npy", "g_def_ptr.npy", "g_qual.bin", "g_qual_off.npy", "g_def_bypath.npy",
    "g_def_path_ptr.npy", "g_refs.npy", "g_ref_ptr.npy", "g_ref_bypath.npy", "g_ref_path_ptr.npy",
    "g_files.npy", "g_meta.json",
)  # fmt: skip


def narrowest(rows: np.ndarray) -> np.ndarray:
    """``rows`` as uint16 when every value fits (a segment's paths, names, lines and columns nearly always
    do: half the bytes of the graph's biggest tables), else int32. Readers take either: they index with
    the values or convert them to ints, never compute in the stored type."""
    if rows.size == 0 or (int(rows.min()) >= 0 and int(rows.max()) <= np.iinfo(np.uint16).max):
        return rows.astype(np.uint16)
    return rows.astype(np.int32)


def _ptr(keys: np.ndarray, n: int) -> np.ndarray:
    """(n + 1,) offsets of each key's run in ``keys`` (sorted)."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n)[:n], out=ptr[1:])
    return ptr


def encode_graph(table: GraphTable, path_ids: Sequence[int], n_paths: int) -> dict[str, bytes | np.ndarray]:
    """The files of ``table`` (whose path ``i`` is the segment's path ``path_ids[i]``)."""
    t = table.rows_of(path_ids)
    names = sort_terms(t.names)
    new_id = {n: i for i, n in enumerate(names)}
    remap = np.asarray([new_id[n] for n in t.names] or [0], np.int64)
    out: dict[str, bytes | np.ndarray] = {}
    for key, value in encode_terms(names).items():
        out[{"terms.bin": "g_names.bin", "term_off.npy": "g_name_off.npy", "term_hash.npy": "g_name_hash.npy",
             "term_hid.npy": "g_name_hid.npy"}[key]] = value  # fmt: skip
    lower = np.fromiter((zlib.crc32(n.lower().encode("utf-8", "surrogatepass")) for n in names), np.uint32,
                        len(names))  # fmt: skip
    order = np.argsort(lower, kind="stable")
    out["g_lower_hash.npy"], out["g_lower_ids.npy"] = lower[order], order.astype(np.int32)
    kinds = sorted({d[2] for d in t.defs})
    kind_id = {k: i for i, k in enumerate(kinds)}
    defs = np.zeros((len(t.defs), 6), np.int64)
    if t.defs:  # a column at a time (a row of numpy scalars per definition was most of this function)
        path, name, kind, _, line, col, end = zip(*t.defs, strict=True)
        defs[:, 0], defs[:, 1], defs[:, 2] = (
            path,
            remap[np.asarray(name, np.int64)],
            [kind_id[k] for k in kind],
        )
        defs[:, 3], defs[:, 4], defs[:, 5] = line, col, end
    quals = [d[3] for d in t.defs]
    by_name = np.lexsort((defs[:, 4], defs[:, 3], defs[:, 0], defs[:, 1])) if len(defs) else np.zeros(0, int)
    defs, quals = defs[by_name], [quals[i] for i in by_name.tolist()]
    out["g_defs.npy"] = narrowest(defs)
    out["g_def_ptr.npy"] = _ptr(defs[:, 1], len(names))
    qb = [q.encode("utf-8", "surrogatepass") for q in quals]
    qoff = np.zeros(len(qb) + 1, np.int64)
    np.cumsum([len(b) for b in qb], out=qoff[1:])
    out["g_qual.bin"], out["g_qual_off.npy"] = b"".join(qb), qoff
    by_path = np.lexsort((defs[:, 4], defs[:, 3], defs[:, 0])) if len(defs) else np.zeros(0, int)
    out["g_def_bypath.npy"] = by_path.astype(np.int32)
    out["g_def_path_ptr.npy"] = _ptr(defs[by_path, 0], n_paths)
    refs = t.refs.astype(np.int64)
    if len(refs):
        refs[:, 1] = remap[refs[:, 1]]
        refs = refs[np.lexsort((refs[:, 4], refs[:, 3], refs[:, 0], refs[:, 1]))]
    out["g_refs.npy"] = narrowest(refs.reshape(-1, 5)[:, [0, 2, 3, 4]])
    out["g_ref_ptr.npy"] = _ptr(refs[:, 1] if len(refs) else np.zeros(0, np.int64), len(names))
    rby = np.lexsort((refs[:, 4], refs[:, 3], refs[:, 0])) if len(refs) else np.zeros(0, int)
    out["g_ref_bypath.npy"] = rby.astype(np.int32)
    out["g_ref_path_ptr.npy"] = _ptr(refs[rby, 0] if len(refs) else np.zeros(0, np.int64), n_paths)
    out["g_files.npy"] = np.asarray(sorted(set(path_ids)), np.int32)
    imports: list[list[str]] = [[] for _ in range(n_paths)]
    for p, m in t.imports:
        imports[p].append(m)
    out["g_meta.json"] = json.dumps({"kinds": kinds, "imports": imports}, ensure_ascii=True).encode()
    return out


class MappedGraph:
    """One segment's graph, read in place; ``paths`` are the segment's files (``path_id`` indexes them)."""

    def __init__(self, where: str, paths: Sequence[str], open_array: Callable[[str], MappedArray],
                 open_file: Callable[[str], MappedFile]) -> None:  # fmt: skip
        self.where = where
        self.paths = paths
        self._array = open_array
        self._file = open_file

    def _bad(self, what: str) -> IndexCorrupt:
        return IndexCorrupt(f"index segment {self.where} symbol graph is malformed ({what}); rebuilding")

    def warm(self) -> None:
        """Open and check what following a query's names reads first (a long-lived reader, off the query
        path): the name dictionary, the imports, the definition and reference tables, and open the
        tables that lead to a name's definitions and a file's references (checked as they are read)."""
        _ = self.names, self._meta, self._defs.all(), self._refs
        for name in ("g_def_ptr.npy", "g_ref_path_ptr.npy", "g_ref_bypath.npy"):
            self._array(name)
        if self._refs.raw.shape[1] == 4:  # rows without their name: found in g_ref_ptr
            _ = self._ref_ptr

    @cached_property
    def names(self) -> TermDict:
        f = self._file
        return TermDict(f("g_names.bin"), self._array("g_name_off.npy"), self._array("g_name_hash.npy"),
                        self._array("g_name_hid.npy"))  # fmt: skip

    @cached_property
    def _meta(self) -> dict[str, Any]:
        try:
            obj = json.loads(bytes(self._file("g_meta.json").view()))
        except (ValueError, RecursionError):
            raise self._bad("meta") from None
        ok = (
            isinstance(obj, dict)
            and isinstance(obj.get("kinds"), list)
            and isinstance(obj.get("imports"), list)
        )
        if not ok or len(obj["imports"]) != len(self.paths):
            raise self._bad("meta")
        meta: dict[str, Any] = obj
        return meta

    @cached_property
    def _defs(self) -> MappedArray:
        a = self._array("g_defs.npy")
        if a.raw.ndim != 2 or a.raw.shape[1] != 6:
            raise self._bad("definitions shape")
        return a

    @cached_property
    def _refs(self) -> MappedArray:
        a = self._array("g_refs.npy")
        if a.raw.ndim != 2 or a.raw.shape[1] not in (4, 5):
            raise self._bad("references shape")
        return a

    @cached_property
    def _ref_ptr(self) -> np.ndarray:
        """``g_ref_ptr``, checked whole once: it runs from 0 to the last reference row and never goes
        back (a row's name is found in it by bisection, which an unsorted table would misdirect)."""
        ptr = self._array("g_ref_ptr.npy").all()
        n = len(self._refs)
        if (
            len(ptr) != self.names.n + 1
            or int(ptr[0]) != 0
            or int(ptr[-1]) != n
            or bool(np.any(ptr[1:] < ptr[:-1]))
        ):
            raise self._bad("g_ref_ptr.npy")
        return ptr

    def _ref_rows(self, idx: np.ndarray) -> np.ndarray:
        """(k, 5) int32 reference rows (path, name, kind, line, col) at row indexes ``idx`` (checked by
        the caller): a row's name is the run of ``g_ref_ptr`` that holds it."""
        refs = self._refs
        got = refs.all()[idx] if len(idx) * 8 > len(refs) else refs.take(idx)  # most rows: one check
        if refs.raw.shape[1] == 5:
            return np.asarray(got, np.int32).reshape(-1, 5)
        ptr = self._ref_ptr
        out = np.empty((len(got), 5), np.int32)
        out[:, 0], out[:, 2:] = got[:, 0], got[:, 1:]
        out[:, 1] = np.searchsorted(ptr, np.asarray(idx, np.int64), "right") - 1
        return out

    def _range(self, ptr_name: str, i: int, n: int, within: int) -> tuple[int, int]:
        """Rows [lo, hi) of the table of ``within`` rows that pointer table ``ptr_name`` (``n`` + 1
        entries) gives entry ``i``; checked (a pointer out of place would read, or allocate, anything)."""
        ptr = self._array(ptr_name)
        if len(ptr) != n + 1 or not 0 <= i < n:
            raise self._bad(ptr_name)
        lo, hi = (int(x) for x in ptr.rows(i, i + 2))
        if not 0 <= lo <= hi <= within:
            raise self._bad(f"{ptr_name} pointers")
        return lo, hi

    # -- lookups ---------------------------------------------------------------------------------

    def name_matches(self, name: str, exact: bool = True) -> list[int]:
        """Name ids equal to ``name`` (any case when not ``exact``)."""
        d = self.names
        if exact:
            got = int(d.ids([name])[0])
            return [] if got < 0 else [got]
        key = name.lower()
        want = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        hashes, ids = self._array("g_lower_hash.npy").all(), self._array("g_lower_ids.npy").all()
        lo, hi = int(np.searchsorted(hashes, want, "left")), int(np.searchsorted(hashes, want, "right"))
        out = []
        for j in range(lo, hi):
            n = int(ids[j])
            if 0 <= n < d.n and d.term(n).lower() == key:
                out.append(n)
        return sorted(out)

    def _definitions(self, table: np.ndarray, quals: list[str]) -> list[tuple[int, Definition]]:
        """(path id, definition) of each definition row of ``table``, its ids checked all at once (a file
        of a thousand definitions decoded in a few milliseconds)."""
        if not len(table):
            return []
        kinds = self._meta["kinds"]
        p, n, k = table[:, 0], table[:, 1], table[:, 2]
        if not (
            int(p.min()) >= 0 and int(p.max()) < len(self.paths) and int(k.min()) >= 0
            and int(k.max()) < len(kinds) and int(n.min()) >= 0 and int(n.max()) < self.names.n
        ):  # fmt: skip
            raise self._bad("definition row")
        names = _texts(self.names.off, self.names.blob, n.tolist())
        return [
            (path, Definition(name, str(kinds[kind]), qual, line, col, end))
            for (path, _, kind, line, col, end), name, qual in zip(table.tolist(), names, quals, strict=True)
        ]

    def _quals(self, rows: Sequence[int]) -> list[str]:
        return _texts(self._array("g_qual_off.npy"), self._file("g_qual.bin"), rows)

    def definitions_of(self, name_id: int) -> list[tuple[int, Definition]]:
        """(path id, definition) of every definition of a name, by path and line."""
        lo, hi = self._range("g_def_ptr.npy", name_id, self.names.n, len(self._defs))
        rows = self._defs.rows(lo, hi)
        return self._definitions(rows, self._quals(range(lo, hi)))

    def definition_pairs(self, names: HashedTerms) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``names``, path id) of every definition this segment has of the names (exact
        case), by name then by path and line; pointers checked."""
        ids = self.names.ids(names)
        found = np.flatnonzero(ids >= 0)
        if not found.size:
            return found, found
        ptr = self._array("g_def_ptr.npy")
        if len(ptr.shape) != 1 or len(ptr) != self.names.n + 1:
            raise self._bad("g_def_ptr.npy")
        ptr_all = ptr.all()
        defs = self._defs.all()
        tid = ids[found]
        lo, hi = ptr_all[tid].astype(np.int64), ptr_all[tid + 1].astype(np.int64)
        if bool((lo < 0).any()) or bool((hi < lo).any()) or bool((hi > len(defs)).any()):
            raise self._bad("definition pointers")
        per = hi - lo
        rows = np.repeat(lo - per.cumsum() + per, per) + np.arange(int(per.sum()), dtype=np.int64)
        return np.repeat(found, per), defs[rows, 0].astype(np.int64)

    def all_definitions(self) -> np.ndarray:
        """(d, 6) definition rows (path, name, kind, line, col, end_line), checked."""
        defs = self._defs.all()
        if len(defs) and (int(defs[:, 0].max()) >= len(self.paths) or int(defs[:, 1].max()) >= self.names.n
                          or int(defs[:, :2].min()) < 0):  # fmt: skip
            raise self._bad("definition rows")
        return defs

    def calls_by_path(self) -> np.ndarray:
        """(c, 5) call references of every file, by path, line and column, checked."""
        order = self._array("g_ref_bypath.npy").all()
        if len(order) != len(self._refs) or (
            len(order) and (int(order.min()) < 0 or int(order.max()) >= len(self._refs))
        ):
            raise self._bad("references by path")
        if not len(order):
            return np.empty((0, 5), np.int32)
        refs = self._refs.all()
        kind = 1 if refs.shape[1] == 4 else 2  # (a row without its name column: its name is in g_ref_ptr)
        rows = self._ref_rows(order[refs[order, kind] == REF_KINDS.index("call")])
        if len(rows) and (int(rows[:, 0].max()) >= len(self.paths) or int(rows[:, 1].max()) >= self.names.n
                          or int(rows[:, :2].min()) < 0):  # fmt: skip
            raise self._bad("reference rows")
        return np.asarray(rows)

    def called_name_ids(self, path_id: int) -> list[str]:
        """The names a file calls, each once, in order of their first call (decoded once each)."""
        rows = self.references_in(path_id)
        if not len(rows):
            return []
        calls = rows[rows[:, 2] == REF_KINDS.index("call")]
        if not len(calls):
            return []
        uniq, first = np.unique(calls[:, 1], return_index=True)
        order = uniq[np.argsort(first, kind="stable")]
        if int(order.max()) >= self.names.n or int(order.min()) < 0:
            raise self._bad("reference names")
        return self.names.terms_of(order)

    def reference_rows(self, name_id: int) -> np.ndarray:
        """(k, 5) reference rows of a name, by path, line and column."""
        lo, hi = self._range("g_ref_ptr.npy", name_id, self.names.n, len(self._refs))
        return self._ref_rows(np.arange(lo, hi))

    def reference(self, row: np.ndarray, name: str | None = None) -> tuple[int, Reference]:
        """(path id, reference) of one row; ``name``: the row's name when the caller knows it already
        (every row of :meth:`reference_rows` holds the same: a name used 15,000 times is read once)."""
        p, n, k, line, col = (int(v) for v in row)
        if not (0 <= p < len(self.paths) and 0 <= k < len(REF_KINDS) and 0 <= n < self.names.n):
            raise self._bad("reference row")
        return p, Reference(self.names.term(n) if name is None else name, REF_KINDS[k], line, col)

    def definitions_in(self, path_id: int) -> list[Definition]:
        bypath = self._array("g_def_bypath.npy")
        lo, hi = self._range("g_def_path_ptr.npy", path_id, len(self.paths), len(bypath))
        rows = bypath.rows(lo, hi)
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(self._defs)):
            raise self._bad("definitions by path")
        defs = self._defs.take(rows)
        return [d for _, d in self._definitions(defs, self._quals(rows.tolist()))]

    def definitions_under(self, owner: str) -> list[tuple[int, Definition]]:
        """(path id, definition) of the definitions whose qualified name holds ``owner`` (any case of its
        ASCII letters) followed by a dot at a word's start (``Client`` in ``Client.send``,
        ``Outer.Client.get``, ``Display for Client.fmt``): one scan of the qualified names' bytes (kept
        end to end). The caller checks which part owns each."""
        if not owner:
            return []
        if not owner.isascii():  # (the blob is lowered as ASCII)
            low = owner.lower() + "."
            rows_all = range(len(self._defs))
            hits = [i for i, q in zip(rows_all, self._quals(rows_all), strict=True) if low in q.lower()]
            return self._definitions(self._defs.take(hits), self._quals(hits)) if hits else []
        lowered: bytes | None = self.__dict__.get("_quals_lowered")
        if lowered is None:  # kept with the immutable segment (ASCII letters lowered: the same length)
            blob = self._file("g_qual.bin")
            blob.check(0, len(blob))
            lowered = self.__dict__["_quals_lowered"] = bytes(blob.buffer).lower()
        needle = owner.encode("utf-8", "surrogatepass").lower() + b"."
        found = re.compile(re.escape(needle))
        at = np.fromiter((m.start() for m in found.finditer(lowered)), np.int64)
        if not at.size:
            return []
        off = self._array("g_qual_off.npy").all().astype(np.int64)
        rows = np.searchsorted(off, at, "right") - 1
        # the names lie end to end: a match starts its name, or follows a byte no word goes on with
        before = np.frombuffer(lowered, np.uint8)[np.maximum(at - 1, 0)]
        inside = (rows >= 0) & (rows < len(off) - 1)
        row = np.clip(rows, 0, len(off) - 2)
        starts = inside & (off[row] == at)
        whole = inside & (at + len(needle) <= off[row + 1])  # not across two names lying end to end
        rows = np.unique(rows[whole & (starts | ~_WORD_BYTE[before])])
        rows = rows[(rows >= 0) & (rows < len(self._defs))].tolist()
        return self._definitions(self._defs.take(rows), self._quals(rows))

    def references_in(self, path_id: int) -> np.ndarray:
        """(k, 5) reference rows of one file, by line and column."""
        bypath = self._array("g_ref_bypath.npy")
        lo, hi = self._range("g_ref_path_ptr.npy", path_id, len(self.paths), len(bypath))
        rows = bypath.rows(lo, hi)
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(self._refs)):
            raise self._bad("references by path")
        return self._ref_rows(rows)

    def imports_of(self, path_id: int) -> list[str]:
        got = self._meta["imports"][path_id]
        return [str(m) for m in got] if isinstance(got, list) else []

    def files(self) -> list[int]:
        """Path ids of the files that have a graph."""
        ids = self._array("g_files.npy").all()
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= len(self.paths)):
            raise self._bad("files")
        return [int(i) for i in ids]

    def to_table(self, keep: Callable[[str], bool]) -> GraphTable:
        """The rows of the files ``keep`` accepts, as an in-memory table (what a merge gathers): the
        reference rows are renumbered as arrays, each name decoded once."""
        files = [p for p in self.files() if keep(self.paths[p])]
        if not files:
            return GraphTable()
        names: dict[str, int] = {}
        defs: list[list[Any]] = []
        imports: list[list[Any]] = []
        blocks: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for local, p in enumerate(files):
            for d in self.definitions_in(p):
                n = names.setdefault(d.name, len(names))
                defs.append([local, n, d.kind, d.qualname, d.line, d.col, d.end_line])
            rows = self.references_in(p)
            if len(rows):
                blocks.append(rows)
                owners.append(np.full(len(rows), local, np.int32))
            imports.extend([local, m] for m in self.imports_of(p))
        if not blocks:
            return GraphTable([self.paths[p] for p in files], list(names), defs, imports=imports)
        rows = np.concatenate(blocks)
        if (int(rows[:, 1].min()) < 0 or int(rows[:, 1].max()) >= self.names.n
                or int(rows[:, 2].min()) < 0 or int(rows[:, 2].max()) >= len(REF_KINDS)):  # fmt: skip
            raise self._bad("reference row")
        uniq, inverse = np.unique(rows[:, 1], return_inverse=True)
        renamed = np.fromiter(
            (names.setdefault(self.names.term(int(n)), len(names)) for n in uniq), np.int64, len(uniq)
        )
        arr = np.column_stack(
            [np.concatenate(owners), renamed[inverse.reshape(-1)], rows[:, 2], rows[:, 3], rows[:, 4]]
        ).astype(np.int32)
        return GraphTable([self.paths[p] for p in files], list(names), defs, arr, imports)


def _text(raw: bytes | memoryview) -> str:
    return bytes(raw).decode("utf-8", "surrogatepass")


_WORD_BYTE = np.zeros(256, bool)  # bytes a name goes on with (letters, digits, _, $, UTF-8 sequences)
_WORD_BYTE[[*b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$", *range(0x80, 0x100)]] = True


def _texts(offsets: MappedArray, blob: MappedFile, ids: Sequence[int]) -> list[str]:
    """Strings ``ids`` of a blob and its offset table (names, qualified names); IndexCorrupt when one
    is not UTF-8 (a file whose checksum holds but whose bytes no writer made)."""
    try:
        return _texts_of(offsets, blob, ids)
    except UnicodeDecodeError:
        raise IndexCorrupt(f"index file {blob.where} holds a name that is not UTF-8; rebuilding") from None


def _texts_of(offsets: MappedArray, blob: MappedFile, ids: Sequence[int]) -> list[str]:
    """:func:`_texts`: a few read one by one, more with their offsets gathered at once (an id's + 1 in
    int64: a uint16 column's last would wrap to 0), and in one read when they lie close together (a
    name's definitions)."""
    if len(ids) < 8:
        return [_text(blob.view(*(int(x) for x in offsets.rows(i, i + 2)))) for i in ids]
    idx = np.asarray(ids, np.int64)
    off = offsets.take(np.concatenate([idx, idx + 1]))
    lo, hi = off[: len(idx)].tolist(), off[len(idx) :].tolist()
    first, last = min(lo), max(hi)
    if last - first <= TEXTS_AT_ONCE:
        chunk = bytes(blob.view(first, last))
        return [_text(chunk[a - first : b - first]) for a, b in zip(lo, hi, strict=True)]
    return [_text(blob.view(a, b)) for a, b in zip(lo, hi, strict=True)]
