"""A segment's part of the symbol graph, column-wise: the form it is written, read, merged and looked up in.

On disk (two files of the segment, listed and checksummed in the manifest like every other)::

    graph.json   {"paths": [...], "names": [...],
                  "defs": [[path, name, kind, qualname, line, col, end_line], ...],   (path/name: indexes)
                  "imports": [[path, module], ...]}
    refs.npy     (r, 5) int32: path, name, kind (index into REF_KINDS), line, col

A row belongs to a file; like a chunk it is live while the manifest says that file is held by this
segment (see :class:`~aide_tui.core.store.view.IndexView`), so an edited or deleted file's old
definitions and references disappear with the commit that replaces them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import REF_KINDS, Definition, FileGraph, Reference

REF_COLS = 5
_KIND_ID = {k: i for i, k in enumerate(REF_KINDS)}


def _empty_refs() -> np.ndarray:
    return np.zeros((0, REF_COLS), np.int32)


@dataclass
class GraphTable:
    """Definitions, references and imports of some files (see the module docstring for the columns)."""

    paths: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    defs: list[list[Any]] = field(default_factory=list)
    refs: np.ndarray = field(default_factory=_empty_refs)
    imports: list[list[Any]] = field(default_factory=list)

    # -- building --------------------------------------------------------------------------------

    @classmethod
    def from_files(cls, files: Mapping[str, FileGraph]) -> GraphTable:
        """The table of these files' graphs (files in the mapping's order)."""
        names: dict[str, int] = {}
        paths = list(files)
        defs: list[list[Any]] = []
        rows: list[tuple[int, int, int, int, int]] = []
        imports: list[list[Any]] = []
        for p, (path, g) in enumerate(files.items()):
            del path
            for d in g.defs:
                n = names.setdefault(d.name, len(names))
                defs.append([p, n, d.kind, d.qualname, d.line, d.col, d.end_line])
            for r in g.refs:
                n = names.setdefault(r.name, len(names))
                rows.append((p, n, _KIND_ID.get(r.kind, len(REF_KINDS) - 1), r.line, r.col))
            imports.extend([p, m] for m in g.imports)
        refs = np.asarray(rows, np.int32).reshape(-1, REF_COLS) if rows else _empty_refs()
        return cls(paths, list(names), defs, refs, imports)

    def take(self, keep: Callable[[str], bool]) -> GraphTable:
        """The rows of the files ``keep`` accepts (names and paths renumbered, unused names dropped)."""
        kept = [i for i, p in enumerate(self.paths) if keep(p)]
        if len(kept) == len(self.paths):
            return self
        path_map = np.full(max(len(self.paths), 1), -1, np.int64)
        path_map[kept] = np.arange(len(kept))
        refs = self.refs[path_map[self.refs[:, 0]] >= 0] if len(self.refs) else self.refs
        defs = [d for d in self.defs if path_map[d[0]] >= 0]
        used = sorted({d[1] for d in defs} | set(np.unique(refs[:, 1]).tolist()))
        name_map = np.full(max(len(self.names), 1), -1, np.int64)
        name_map[used] = np.arange(len(used))
        new_refs = refs.copy()
        if len(new_refs):
            new_refs[:, 0] = path_map[refs[:, 0]]
            new_refs[:, 1] = name_map[refs[:, 1]]
        return GraphTable(
            [self.paths[i] for i in kept],
            [self.names[i] for i in used],
            [[int(path_map[d[0]]), int(name_map[d[1]]), *d[2:]] for d in defs],
            new_refs.astype(np.int32),
            [[int(path_map[p]), m] for p, m in self.imports if path_map[p] >= 0],
        )

    @staticmethod
    def concat(tables: Sequence[GraphTable]) -> GraphTable:
        """One table of several (their files are distinct)."""
        out = GraphTable()
        names: dict[str, int] = {}
        parts: list[np.ndarray] = []
        for t in tables:
            base = len(out.paths)
            out.paths.extend(t.paths)
            remap = np.asarray([names.setdefault(n, len(names)) for n in t.names] or [0], np.int64)
            out.defs.extend([d[0] + base, int(remap[d[1]]), *d[2:]] for d in t.defs)
            out.imports.extend([p + base, m] for p, m in t.imports)
            if len(t.refs):
                r = t.refs.astype(np.int64)
                r[:, 0] += base
                r[:, 1] = remap[r[:, 1]]
                parts.append(r)
        out.names = list(names)
        out.refs = np.concatenate(parts).astype(np.int32) if parts else _empty_refs()
        return out

    # -- the format ------------------------------------------------------------------------------

    def encode(self) -> tuple[bytes, np.ndarray]:
        """(graph.json bytes, the refs array)."""
        obj = {"paths": self.paths, "names": self.names, "defs": self.defs, "imports": self.imports}
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode(), self.refs.astype(np.int32)

    @classmethod
    def decode(cls, raw: bytes, refs: np.ndarray, where: str) -> GraphTable:
        """Read back what :meth:`encode` wrote; IndexCorrupt (naming ``where``) when it is malformed."""

        def bad(what: str) -> IndexCorrupt:
            return IndexCorrupt(f"index segment {where} symbol graph is malformed ({what}); rebuilding")

        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            raise bad("not JSON") from None
        if not isinstance(obj, dict):
            raise bad("not an object")
        paths, names, defs, imports = (obj.get(k) for k in ("paths", "names", "defs", "imports"))
        if not (isinstance(paths, list) and isinstance(names, list) and _strs(paths) and _strs(names)):
            raise bad("tables")
        if not (isinstance(defs, list) and isinstance(imports, list)):
            raise bad("tables")
        np_, nn = len(paths), len(names)
        for d in defs:
            if not _def_row(d, np_, nn):
                raise bad("definition row")
        for row in imports:
            if not (
                isinstance(row, list) and len(row) == 2 and _idx(row[0], np_) and isinstance(row[1], str)
            ):
                raise bad("import row")
        if refs.ndim != 2 or refs.shape[1] != REF_COLS or not np.issubdtype(refs.dtype, np.integer):
            raise bad("references shape")
        if len(refs):
            lo, hi = refs.min(axis=0), refs.max(axis=0)
            if (
                lo.min() < 0
                or hi[0] >= np_
                or hi[1] >= nn
                or hi[2] >= len(REF_KINDS)
                or lo[3] < 1
                or lo[4] < 1
            ):
                raise bad("reference values")
        return cls(paths, names, defs, refs.astype(np.int32), imports)

    # -- lookups (built on first use, kept with the immutable table) -----------------------------

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        got = self.__dict__.get("_c_" + key)
        if got is None:
            got = self.__dict__["_c_" + key] = build()
        return got

    def name_ids(self) -> dict[str, int]:
        return self._cached("name_ids", lambda: {n: i for i, n in enumerate(self.names)})  # type: ignore[no-any-return]

    def lower_names(self) -> dict[str, list[int]]:
        def build() -> dict[str, list[int]]:
            out: dict[str, list[int]] = {}
            for i, n in enumerate(self.names):
                out.setdefault(n.lower(), []).append(i)
            return out

        return self._cached("lower_names", build)  # type: ignore[no-any-return]

    def defs_by_name(self) -> dict[int, list[int]]:
        def build() -> dict[int, list[int]]:
            out: dict[int, list[int]] = {}
            for i, d in enumerate(self.defs):
                out.setdefault(d[1], []).append(i)
            return out

        return self._cached("defs_by_name", build)  # type: ignore[no-any-return]

    def defs_by_path(self) -> dict[int, list[int]]:
        def build() -> dict[int, list[int]]:
            out: dict[int, list[int]] = {}
            for i, d in enumerate(self.defs):
                out.setdefault(d[0], []).append(i)
            return out

        return self._cached("defs_by_path", build)  # type: ignore[no-any-return]

    def _ref_order(self) -> tuple[np.ndarray, np.ndarray]:
        def build() -> tuple[np.ndarray, np.ndarray]:
            order = np.argsort(self.refs[:, 1], kind="stable") if len(self.refs) else np.zeros(0, np.int64)
            return order, self.refs[order, 1] if len(self.refs) else np.zeros(0, np.int32)

        return self._cached("ref_order", build)  # type: ignore[no-any-return]

    def ref_rows(self, name_id: int) -> np.ndarray:
        """Rows of the references to one name (in file order within the table)."""
        order, sorted_names = self._ref_order()
        lo, hi = np.searchsorted(sorted_names, [name_id, name_id + 1])
        return np.sort(order[lo:hi])

    def path_ids(self) -> dict[str, int]:
        return self._cached("path_ids", lambda: {p: i for i, p in enumerate(self.paths)})  # type: ignore[no-any-return]

    def refs_of_path(self, path_id: int) -> np.ndarray:
        """Rows of one file's references."""

        def build() -> tuple[np.ndarray, np.ndarray]:
            order = np.argsort(self.refs[:, 0], kind="stable") if len(self.refs) else np.zeros(0, np.int64)
            return order, self.refs[order, 0] if len(self.refs) else np.zeros(0, np.int32)

        order, sorted_paths = self._cached("path_order", build)
        lo, hi = np.searchsorted(sorted_paths, [path_id, path_id + 1])
        return order[lo:hi]  # type: ignore[no-any-return]

    def imports_by_path(self) -> dict[int, list[str]]:
        def build() -> dict[int, list[str]]:
            out: dict[int, list[str]] = {}
            for p, m in self.imports:
                out.setdefault(p, []).append(m)
            return out

        return self._cached("imports_by_path", build)  # type: ignore[no-any-return]

    def definition(self, row: int) -> tuple[str, Definition]:
        p, n, kind, qual, line, col, end = self.defs[row]
        return self.paths[p], Definition(self.names[n], kind, qual, line, col, end)

    def reference(self, row: int) -> tuple[str, Reference]:
        p, n, k, line, col = (int(v) for v in self.refs[row])
        return self.paths[p], Reference(self.names[n], REF_KINDS[k], line, col)

    def name_matches(self, name: str, exact: bool = True) -> list[int]:
        """Name ids equal to ``name`` (any case when not ``exact``)."""
        if exact:
            i = self.name_ids().get(name)
            return [] if i is None else [i]
        return list(self.lower_names().get(name.lower(), []))


def _def_row(d: object, n_paths: int, n_names: int) -> bool:
    """Whether ``d`` is a well-formed definition row."""
    return (
        isinstance(d, list)
        and len(d) == 7
        and _idx(d[0], n_paths)
        and _idx(d[1], n_names)
        and isinstance(d[2], str)
        and isinstance(d[3], str)
        and all(_pos(v) for v in d[4:])
    )


def _strs(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _idx(v: object, n: int) -> bool:
    return type(v) is int and 0 <= v < n


def _pos(v: object) -> bool:
    return type(v) is int and v >= 1
