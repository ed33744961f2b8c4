"""The symbol graph of one index version: every segment's mapped graph, only the rows of live files.

A file's rows live in the segment the manifest says holds the file (the same rule as its chunks), so a
lookup goes straight to that segment for a file, and checks liveness per row for a name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from aide_tui.core.model import Definition, Reference
from aide_tui.core.store.filetable import segment_of, segments_of
from aide_tui.core.store.graphfiles import MappedGraph
from aide_tui.core.store.terms import HashedTerms

# names whose definition files a version keeps (then it forgets them all, and starts again)
DEFINED_MEMO = 200_000
_UNDEFINED: tuple[int, frozenset[str]] = (-1, frozenset())


class GraphView:
    """Definitions, references and imports of the live files of one version."""

    def __init__(self, tables: list[MappedGraph], files: Mapping[str, Any]) -> None:
        self.tables = tables
        self.files = files
        self._live: list[np.ndarray | None] = [None] * len(tables)
        self.memo: dict[str, Any] = {}  # what search derives from this version's graph
        self._defined: dict[str, tuple[int, frozenset[str]]] = {}  # definition_paths' answers

    def live_paths(self, k: int) -> np.ndarray:
        """(paths,) bool: which of segment ``k``'s files are live in this version."""
        got = self._live[k]
        if got is None:
            files = self.files
            paths = self.tables[k].paths
            got = segments_of(files, paths, k) == k
            self._live[k] = got
        return got

    def _table_of(self, path: str) -> tuple[MappedGraph, int] | None:
        k = segment_of(self.files, path)
        if not 0 <= k < len(self.tables):
            return None
        t = self.tables[k]
        try:
            i = t.paths.index(path) if len(t.paths) < 64 else _index_of(t, path)
        except ValueError:
            return None
        return t, i

    # -- by name ---------------------------------------------------------------------------------

    def definitions(self, name: str, exact: bool = True) -> list[tuple[str, Definition]]:
        """Live definitions of ``name`` (any case when not ``exact``), by path and line."""
        return self._live_definitions(
            lambda t: (pd for n in t.name_matches(name, exact) for pd in t.definitions_of(n))
        )

    def _live_definitions(
        self, of_table: Callable[[MappedGraph], Iterable[tuple[int, Definition]]]
    ) -> list[tuple[str, Definition]]:
        """The live ones of each segment's (path id, definition) pairs ``of_table`` gives, by path and
        line."""
        out: list[tuple[str, Definition]] = []
        for k, t in enumerate(self.tables):
            if not t.paths:
                continue
            live = self.live_paths(k)
            out.extend((t.paths[p], d) for p, d in of_table(t) if live[p])
        out.sort(key=lambda pd: (pd[0], pd[1].line, pd[1].col))
        return out

    def references(self, name: str, exact: bool = True) -> list[tuple[str, Reference]]:
        """Live references to ``name`` (any case when not ``exact``), by path and line."""
        out: list[tuple[str, Reference]] = []
        for t, n, rows in self._live_reference_rows(name, exact):
            term = t.names.term(n) if len(rows) else ""
            for row in rows:
                p, r = t.reference(row, term)
                out.append((t.paths[p], r))
        out.sort(key=lambda pr: (pr[0], pr[1].line, pr[1].col))
        return out

    def has_references(self, name: str, exact: bool = True) -> bool:
        """Whether ``name`` has a live reference (what :meth:`references` would list, without listing
        it: a name used 20,000 times answers as fast as one used once)."""
        return any(len(rows) for _, _, rows in self._live_reference_rows(name, exact))

    def _live_reference_rows(self, name: str, exact: bool) -> Iterator[tuple[MappedGraph, int, np.ndarray]]:
        """(table, name id, its live reference rows) of each segment's names matching ``name``, the rows
        checked."""
        for k, t in enumerate(self.tables):
            if not t.paths:
                continue
            live = self.live_paths(k)
            for n in t.name_matches(name, exact):
                rows = t.reference_rows(n)
                if len(rows):
                    if int(rows[:, 0].max()) >= len(live) or int(rows[:, 0].min()) < 0:
                        raise t._bad("reference paths")
                    if (rows[:, 1] != n).any():
                        raise t._bad("reference names")
                    rows = rows[live[rows[:, 0]]]
                yield t, n, rows

    def definition_paths(self, names: Sequence[str]) -> dict[str, set[str]]:
        """For each of ``names`` that has a live definition (exact case), the files that define it (in
        the order of the first segment defining each, then of ``names``). Each name's answer is kept
        for this version: a file's links ask for hundreds of names, and the files at the top of one
        typed query and the next call many of the same."""
        names = list(dict.fromkeys(names))
        known = self._defined
        answers = {n: had for n in names if (had := known.get(n)) is not None}  # (another thread may clear)
        todo = [n for n in names if n not in answers]
        if todo:
            found = self._scan_definition_paths(todo)
            if len(known) + len(todo) > DEFINED_MEMO:
                known.clear()
            for n in todo:
                answers[n] = known[n] = found.get(n, _UNDEFINED)
        order = sorted((answers[n][0], i, n) for i, n in enumerate(names) if answers[n][1])
        return {n: set(answers[n][1]) for _, _, n in order}

    def _scan_definition_paths(self, names: list[str]) -> dict[str, tuple[int, frozenset[str]]]:
        """(first segment defining it, its live files) of each of ``names`` with a live definition."""
        out: dict[str, tuple[int, set[str]]] = {}
        asked = HashedTerms.of(names)  # once for every segment
        for k, t in enumerate(self.tables):
            if not t.paths:
                continue
            live = self.live_paths(k)
            which, pids = t.definition_pairs(asked)
            if len(pids) and (int(pids.max()) >= len(live) or int(pids.min()) < 0):
                raise t._bad("definition paths")
            kept = live[pids]
            paths = t.paths
            for i, p in zip(which[kept].tolist(), pids[kept].tolist(), strict=True):
                got = out.get(names[i])
                if got is None:
                    got = out[names[i]] = (k, set())
                got[1].add(paths[p])
        return {n: (k, frozenset(where)) for n, (k, where) in out.items()}

    def call_edges(
        self, index: Mapping[str, int], max_calls: int, max_defs: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every live file's call links at once, as :func:`~aide_tui.core.store.centrality.links` draws
        them one file at a time: for each of a file's first ``max_calls`` called names (in order of
        their first call) defined in 1 to ``max_defs`` files not including it, a link to each of those
        files weighing 1 / their number. (caller, callee, weight) arrays, callers and callees as
        positions in ``index``, a link once per name that draws it (in the order of the file's calls)."""
        names: dict[str, int] = {}
        def_p: list[np.ndarray] = []
        def_n: list[np.ndarray] = []
        call_p: list[np.ndarray] = []
        call_n: list[np.ndarray] = []
        for k, t in enumerate(self.tables):
            if not t.paths:
                continue
            terms = t.names.terms(0, t.names.n) if t.names.n else []
            to_name = np.asarray([names.setdefault(x, len(names)) for x in terms] or [0], np.int64)
            live = self.live_paths(k)
            to_index = np.asarray(
                [index.get(p, -1) if live[i] else -1 for i, p in enumerate(t.paths)], np.int64
            )
            for rows, ps, ns in ((t.all_definitions(), def_p, def_n), (t.calls_by_path(), call_p, call_n)):
                p = to_index[rows[:, 0]]
                ps.append(p[p >= 0])
                ns.append(to_name[rows[:, 1]][p >= 0])
        files, width = max(len(index), 1), max(len(names), 1)
        empty = np.zeros(0, np.int64)
        dp, dn = np.concatenate(def_p or [empty]), np.concatenate(def_n or [empty])
        cp, cn = np.concatenate(call_p or [empty]), np.concatenate(call_n or [empty])
        first = np.sort(np.unique(cp * width + cn, return_index=True)[1])  # each (file, name) once
        cp, cn = cp[first], cn[first]
        by_file = np.argsort(cp, kind="stable")  # a file's names in order of their first call
        sp = cp[by_file]
        starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]]) if len(sp) else empty
        nth = np.arange(len(sp)) - np.repeat(starts, np.diff(np.r_[starts, len(sp)]))
        keep = np.zeros(len(cp), bool)
        keep[by_file[nth < max_calls]] = True
        cp, cn = cp[keep], cn[keep]
        defined = np.sort(dn * files + dp)  # (name, file) pairs, by name, each once (np.unique: numpy.ma)
        defined = defined[np.r_[True, defined[1:] != defined[:-1]]] if len(defined) else defined
        dn, dp = defined // files, defined % files
        count = np.bincount(dn, minlength=width)
        begin = np.r_[0, np.cumsum(count)[:-1]]
        c = count[cn]
        key = cn * files + cp  # the caller defines the name itself (np.isin would import numpy.ma)
        at = np.minimum(np.searchsorted(defined, key), max(len(defined) - 1, 0))
        own = defined[at] == key if len(defined) else np.zeros(len(key), bool)
        take = (c > 0) & (c <= max_defs) & ~own
        cp, cn, c = cp[take], cn[take], c[take]
        links = np.repeat(np.arange(len(cp)), c)
        nth = np.arange(len(links)) - np.repeat(np.cumsum(c) - c, c)
        dst = dp[begin[cn[links]] + nth]
        return cp[links], dst, 1.0 / c[links]

    def definitions_under(self, owner: str) -> list[tuple[str, Definition]]:
        """Live definitions whose qualified name has ``owner`` (any case) as a part before a dot, by
        path and line: the members of the types so named, wherever they are defined."""
        return self._live_definitions(lambda t: t.definitions_under(owner))

    def definition_count(self, name: str) -> int:
        """How many live definitions ``name`` has (exact case)."""
        return len(self.definitions(name))

    # -- by file ---------------------------------------------------------------------------------

    def definitions_in(self, path: str) -> list[Definition]:
        """The live file's definitions, in line order."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return t.definitions_in(i)

    def references_in(self, path: str) -> list[Reference]:
        """The live file's references, in line order."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return [t.reference(row)[1] for row in t.references_in(i)]

    def called_names(self, path: str) -> list[str]:
        """The names the live file calls, each once, in order of their first call."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return t.called_name_ids(i)

    def imports_of(self, path: str) -> list[str]:
        """Modules the live file imports, as written."""
        found = self._table_of(path)
        if found is None:
            return []
        t, i = found
        return t.imports_of(i)

    def paths(self) -> list[str]:
        """Live files that have a graph."""
        out: list[str] = []
        for k, t in enumerate(self.tables):
            if not t.paths:
                continue
            live = self.live_paths(k)
            out.extend(t.paths[p] for p in t.files() if live[p])
        return out

    @property
    def empty(self) -> bool:
        return not any(t.paths and t.files() for t in self.tables)


def _index_of(t: MappedGraph, path: str) -> int:
    ids: dict[str, int] | None = t.__dict__.get("_path_ids")
    if ids is None:
        ids = t.__dict__["_path_ids"] = {p: i for i, p in enumerate(t.paths)}
    got = ids.get(path)
    if got is None:
        raise ValueError(path)
    return got
