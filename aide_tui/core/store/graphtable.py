"""The symbol graph of some files in memory, column-wise: what the indexer hands a segment to write
(:mod:`aide_tui.core.store.graphfiles` turns it into mapped lookups) and what a merge gathers.

Columns: ``defs`` rows are ``[path, name, kind, qualname, line, col, end_line]`` (path and name are
indexes into ``paths`` and ``names``); ``refs`` is an (r, 5) int32 array of path, name, kind (index
into REF_KINDS), line, col; ``imports`` rows are ``[path, module]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aide_tui.core.model import REF_KINDS, FileGraph

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
        """The table of these files' graphs (files in the mapping's order); the references' columns are
        filled a column at a time (a tuple per reference was a cold build's 2 %)."""
        names: dict[str, int] = {}
        intern = names.setdefault
        paths = list(files)
        defs: list[list[Any]] = []
        counts: list[int] = []
        imports: list[list[Any]] = []
        for p, g in enumerate(files.values()):
            for d in g.defs:
                defs.append([p, intern(d.name, len(names)), d.kind, d.qualname, d.line, d.col, d.end_line])
            counts.append(len(g.refs))
            imports.extend([p, m] for m in g.imports)
        every = [r for g in files.values() for r in g.refs]
        if not every:
            return cls(paths, list(names), defs, _empty_refs(), imports)
        other = len(REF_KINDS) - 1
        refs = np.empty((len(every), REF_COLS), np.int32)
        refs[:, 0] = np.repeat(np.arange(len(paths), dtype=np.int32), counts)
        refs[:, 1] = [intern(r.name, len(names)) for r in every]
        refs[:, 2] = [_KIND_ID.get(r.kind, other) for r in every]
        refs[:, 3] = [r.line for r in every]
        refs[:, 4] = [r.col for r in every]
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

    def rows_of(self, path_map: Sequence[int]) -> GraphTable:
        """The same rows with their path indexes replaced by ``path_map[i]`` (a segment's path order);
        ``paths`` stays this table's."""
        pm = np.asarray(list(path_map) or [0], np.int64)
        refs = self.refs.astype(np.int64)
        if len(refs):
            refs[:, 0] = pm[refs[:, 0]]
        return GraphTable(
            self.paths, self.names, [[int(pm[d[0]]), *d[1:]] for d in self.defs], refs.astype(np.int32),
            [[int(pm[p]), m] for p, m in self.imports],
        )  # fmt: skip
