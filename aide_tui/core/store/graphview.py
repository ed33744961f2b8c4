"""The symbol graph of one index version: every segment's graph table, only the rows of live files.

A file's rows live in the segment the manifest says holds the file (the same rule as its chunks), so a
lookup goes straight to that segment for a file, and checks liveness per row for a name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aide_tui.core.model import REF_KINDS, Definition, Reference
from aide_tui.core.store.graphtable import GraphTable


class GraphView:
    """Definitions, references and imports of the live files of one version."""

    def __init__(self, tables: list[GraphTable], files: Mapping[str, Any]) -> None:
        self.tables = tables
        self.files = files
        self._live: list[np.ndarray | None] = [None] * len(tables)
        self.memo: dict[str, Any] = {}  # what search derives from this version's graph

    def _held(self, k: int, path: str) -> bool:
        rec = self.files.get(path)
        return rec is not None and int(getattr(rec, "segment", k)) == k

    def live_paths(self, k: int) -> np.ndarray:
        """(paths,) bool: which of table ``k``'s files are live in this version."""
        got = self._live[k]
        if got is None:
            t = self.tables[k]
            got = np.fromiter((self._held(k, p) for p in t.paths), bool, len(t.paths))
            self._live[k] = got
        return got

    def _table_of(self, path: str) -> tuple[GraphTable, int] | None:
        rec = self.files.get(path)
        if rec is None:
            return None
        k = int(getattr(rec, "segment", 0))
        if not 0 <= k < len(self.tables):
            return None
        t = self.tables[k]
        i = t.path_ids().get(path)
        return None if i is None else (t, i)

    # -- by name ---------------------------------------------------------------------------------

    def definitions(self, name: str, exact: bool = True) -> list[tuple[str, Definition]]:
        """Live definitions of ``name`` (any case when not ``exact``), by path and line."""
        out: list[tuple[str, Definition]] = []
        for k, t in enumerate(self.tables):
            live = self.live_paths(k)
            by_name = t.defs_by_name()
            for n in t.name_matches(name, exact):
                out.extend(t.definition(r) for r in by_name.get(n, ()) if live[t.defs[r][0]])
        out.sort(key=lambda pd: (pd[0], pd[1].line, pd[1].col))
        return out

    def references(self, name: str, exact: bool = True) -> list[tuple[str, Reference]]:
        """Live references to ``name`` (any case when not ``exact``), by path and line."""
        out: list[tuple[str, Reference]] = []
        for k, t in enumerate(self.tables):
            live = self.live_paths(k)
            for n in t.name_matches(name, exact):
                rows = t.ref_rows(n)
                rows = rows[live[t.refs[rows, 0]]] if len(rows) else rows
                out.extend(t.reference(int(r)) for r in rows)
        out.sort(key=lambda pr: (pr[0], pr[1].line, pr[1].col))
        return out

    def definition_count(self, name: str) -> int:
        """How many live definitions ``name`` has (exact case)."""
        total = 0
        for k, t in enumerate(self.tables):
            live = self.live_paths(k)
            by_name = t.defs_by_name()
            for n in t.name_matches(name):
                total += sum(1 for r in by_name.get(n, ()) if live[t.defs[r][0]])
        return total

    # -- by file ---------------------------------------------------------------------------------

    def definitions_in(self, path: str) -> list[Definition]:
        """The live file's definitions, in line order."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return [t.definition(r)[1] for r in t.defs_by_path().get(i, ())]

    def references_in(self, path: str) -> list[Reference]:
        """The live file's references, in line order."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        rows = t.refs_of_path(i)
        return sorted((t.reference(int(r))[1] for r in rows), key=lambda r: (r.line, r.col))

    def called_names(self, path: str) -> list[str]:
        """The names the live file calls, each once, in order of their first call."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        rows = t.refs_of_path(i)
        rows = rows[t.refs[rows, 2] == REF_KINDS.index("call")] if len(rows) else rows
        rows = rows[np.lexsort((t.refs[rows, 4], t.refs[rows, 3]))] if len(rows) else rows
        return list(dict.fromkeys(t.names[int(n)] for n in t.refs[rows, 1]))

    def imports_of(self, path: str) -> list[str]:
        """Modules the live file imports, as written."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return list(t.imports_by_path().get(i, ()))

    def paths(self) -> list[str]:
        """Live files that have a graph."""
        return [
            p
            for k, t in enumerate(self.tables)
            for p, ok in zip(t.paths, self.live_paths(k), strict=True)
            if ok
        ]

    @property
    def empty(self) -> bool:
        return not any(len(t.paths) for t in self.tables)
