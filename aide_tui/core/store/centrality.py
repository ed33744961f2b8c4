"""What the symbol graph says about the files of a version as a whole: where an import leads, which files
a file links to (its imports, and the files defining what it calls), and how central each file is.

Centrality is PageRank (damping 0.85) over the files and their links. It reads the whole graph, so the
indexer computes it once for a version and stores it with the version (``rank-*.json``, named in the
manifest); it is carried over to the next versions (an edit barely moves it) until a tenth of the files
are new to it; an index of more than ``MAX_RANK_FILES`` files has no prior. Ranking reads the stored
one; only an index without one makes a reader compute it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from aide_tui.core.languages import detect_language
from aide_tui.core.store.pathindex import PathIndex

MAX_CALL_DEFS = 2  # a called name defined in more files than this says little about where it leads
MAX_CALLS = 400  # distinct called names followed per file
MAX_RANK_FILES = 20_000  # files with a graph above which there is no centrality prior (0.5 ms a file)
STALE_SHARE = 0.9  # a carried-over prior is used while it knows this share of the files
GO_PACKAGE_FILES = 30  # a Go import leads to at most this many files of its package
_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")

FileIndex = Mapping[str, Iterable[str]]  # lower-cased file name (or folder) -> indexed files


class Graph(Protocol):
    """What links and centrality read of a symbol graph."""

    memo: dict[str, Any]

    def imports_of(self, path: str) -> list[str]: ...

    def called_names(self, path: str) -> list[str]: ...

    def definition_paths(self, names: Sequence[str]) -> dict[str, set[str]]: ...

    def paths(self) -> list[str]: ...


# -- resolving imports ------------------------------------------------------------------------------


def _exists(files: FileIndex, path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return path in _as_set(files.get(name, ()))


def _as_set(paths: Iterable[str]) -> set[str] | frozenset[str]:
    return paths if isinstance(paths, (set, frozenset)) else set(paths)


def _with_suffix(files: FileIndex, tail: str) -> list[str]:
    """Indexed files whose path ends with ``tail`` (whole components). A tail with a folder looks only
    at the files both named like its file and under a folder named like its last folder (``__init__.py``
    alone is thousands of files in a big tree); a :class:`PathIndex` looks among the folders only."""
    if isinstance(files, PathIndex):
        return files.with_suffix(tail)
    comps = tail.lower().rsplit("/", 2)
    cands: Iterable[str] = files.get(comps[-1], ())
    if len(comps) > 1:
        named, under = _as_set(cands), _as_set(files.get(comps[-2], ()))
        cands = named & under if len(named) <= len(under) else under & named
    return sorted(p for p in cands if p == tail or p.endswith("/" + tail))


def _python(module: str, importer: str, files: FileIndex) -> list[str]:
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if not dots and parts and isinstance(files, PathIndex) and parts[0].lower() not in files:
        return []  # every tail starts with a folder or a file named like the first part: none is indexed
    for n in range(len(parts), 0, -1):
        rel = "/".join(parts[:n])
        for tail in (f"{rel}.py", f"{rel}/__init__.py"):
            if dots:
                base = posixpath.dirname(importer)
                for _ in range(dots - 1):
                    base = posixpath.dirname(base)
                full = posixpath.join(base, tail) if base else tail
                if _exists(files, full):
                    return [full]
            else:
                found = _with_suffix(files, tail)
                if found:
                    return found[:3]
    return []


def _js(module: str, importer: str, files: FileIndex) -> list[str]:
    if not module.startswith("."):
        return []  # a package
    full = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
    stem = re.sub(r"\.(?:js|jsx|mjs|cjs)$", "", full)
    for cand in (full, *(stem + e for e in _JS_EXTS), *(f"{full}/index{e}" for e in _JS_EXTS)):
        if _exists(files, cand):
            return [cand]
    return []


def _go(module: str, files: FileIndex) -> list[str]:
    parts = module.split("/")
    for n in range(len(parts), 0, -1):
        tail = "/".join(parts[-n:])
        if isinstance(files, PathIndex):  # the package's folders, not every file under a folder so named
            cands: Iterable[str] = [p for f in files.folders_ending(tail) for p in files.files_in(f)]
        else:
            cands = files.get(parts[-1].lower(), ())
        found = sorted(
            p for p in cands
            if p.endswith(".go") and not p.endswith("_test.go")
            and (posixpath.dirname(p) == tail or posixpath.dirname(p).endswith("/" + tail))
        )  # fmt: skip
        if found:
            return found[:GO_PACKAGE_FILES]
        if n <= 2:
            break
    return []


def resolve_import(module: str, importer: str, files: FileIndex) -> list[str]:
    """The indexed files an import of ``module`` written in ``importer`` leads to (none for a package
    outside the workspace, or a language whose imports are not followed). Only the importer's folder
    and language matter."""
    lang = detect_language(importer)
    if lang == "python":
        return _python(module, importer, files)
    if lang in ("javascript", "typescript"):
        return _js(module, importer, files)
    if lang == "go":
        return _go(module, files)
    if lang in ("java", "kotlin"):
        rel = module.replace(".", "/")
        return [*_with_suffix(files, rel + ".java"), *_with_suffix(files, rel + ".kt")][:3]
    if lang in ("c", "cpp"):
        local = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
        return [local] if _exists(files, local) else _with_suffix(files, module)[:3]
    if lang == "rust":
        parts = [p for p in module.split("::") if p not in ("crate", "self", "super")]
        for n in range(len(parts), 0, -1):
            rel = "/".join(parts[:n])
            found = _with_suffix(files, rel + ".rs") or _with_suffix(files, rel + "/mod.rs")
            if found:
                return found[:3]
    return []


# -- links ------------------------------------------------------------------------------------------


def links(g: Graph, files: FileIndex, src: str) -> dict[str, float]:
    """Files one hop from ``src`` and how strongly: 1 per import of the file, and for each name ``src``
    calls that is defined in at most MAX_CALL_DEFS other files, 1 split over them. Kept in the graph's
    memo for the loaded version."""
    memo: dict[str, dict[str, float]] = g.memo.setdefault("links", {})
    got = memo.get(src)
    if got is None:
        got = memo[src] = _links(g, files, src)
    return got


def _links(g: Graph, files: FileIndex, src: str) -> dict[str, float]:
    out: dict[str, float] = {}
    resolved: dict[tuple[str, str, str], list[str]] = g.memo.setdefault("resolved", {})
    place = posixpath.dirname(src), detect_language(src)
    for module in g.imports_of(src):
        for p in _resolved(resolved, module, src, place, files):
            out[p] = out.get(p, 0.0) + 1.0
    defined = g.definition_paths(g.called_names(src)[:MAX_CALLS])
    for where in defined.values():
        if src in where or not 0 < len(where) <= MAX_CALL_DEFS:
            continue
        for p in where:
            out[p] = out.get(p, 0.0) + 1.0 / len(where)
    out.pop(src, None)
    return out


def _resolved(
    memo: dict[tuple[str, str, str], list[str]],
    module: str,
    importer: str,
    where: tuple[str, str],
    files: FileIndex,
) -> list[str]:
    """:func:`resolve_import`, kept in ``memo`` by module and the importer's folder and language
    (``where``): all an import's target depends on (the folder only for a relative import, or C's)."""
    folder, lang = where
    key = (module, folder if module.startswith(".") or lang in ("c", "cpp") else "", lang)
    found = memo.get(key)
    if found is None:
        found = memo[key] = resolve_import(module, importer, files)
    return found


# -- centrality -------------------------------------------------------------------------------------


def file_rank(g: Graph, files: FileIndex, memo: dict[str, Any]) -> dict[str, float]:
    """PageRank (damping 0.85) over the graph of files and their import and call links, scaled so the
    most central file is 1. ``memo`` keeps it for the loaded version; one carried over from an earlier
    version is used while it knows nine in ten of the files."""
    got: dict[str, float] | None = memo.get("file_rank")
    if got is not None and memo.get("file_rank_checked"):
        return got
    paths = sorted(g.paths())
    memo["file_rank_checked"] = True
    if got is not None and sum(p in got for p in paths) >= STALE_SHARE * len(paths):
        return got
    if len(paths) > MAX_RANK_FILES:
        memo["file_rank"] = {}
        return {}
    index = {p: i for i, p in enumerate(paths)}
    call_edges = getattr(g, "call_edges", None)
    if call_edges is not None:  # every file's call links at once (the local store's graph)
        src, dst, wts = call_edges(index, MAX_CALLS, MAX_CALL_DEFS)
        resolved: dict[tuple[str, str, str], list[str]] = {}
        imported: list[tuple[int, int]] = []
        for p in paths:
            i = index[p]
            where = posixpath.dirname(p), detect_language(p)
            for module in g.imports_of(p):
                for q in _resolved(resolved, module, p, where, files):
                    j = index.get(q)
                    if j is not None and j != i:
                        imported.append((i, j))
        if imported:
            pairs = np.asarray(imported, np.int64)
            src, dst = np.concatenate([src, pairs[:, 0]]), np.concatenate([dst, pairs[:, 1]])
            wts = np.concatenate([wts, np.ones(len(pairs))])
        n = max(len(paths), 1)  # each link once, its weights summed in the order they were drawn
        keys, at = np.unique(src * n + dst, return_inverse=True)
        src, dst, wts = keys // n, keys % n, np.bincount(at.ravel(), weights=wts, minlength=len(keys))
    else:
        edges: dict[tuple[int, int], float] = {}
        for p in paths:
            for q, w in links(g, files, p).items():
                if q in index:
                    edges[(index[p], index[q])] = w
        ordered = sorted(edges)
        src = np.asarray([a for a, _ in ordered], np.int64)
        dst = np.asarray([b for _, b in ordered], np.int64)
        wts = np.asarray([edges[k] for k in ordered], np.float64)
    rank = _pagerank(len(paths), src, dst, wts)
    top = float(rank.max()) if rank.size else 0.0
    got = {p: float(rank[i]) / top for i, p in enumerate(paths)} if top > 0 else {}
    memo["file_rank"] = got
    return got


def _pagerank(n: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray, iters: int = 40) -> np.ndarray:
    if n == 0:
        return np.zeros(0)
    out_w = np.bincount(src, weights=w, minlength=n) if len(src) else np.zeros(n)
    rank = np.full(n, 1.0 / n)
    for _ in range(iters):
        share = np.where(out_w > 0, rank / np.maximum(out_w, 1e-12), 0.0)
        flow = np.bincount(dst, weights=share[src] * w, minlength=n) if len(src) else np.zeros(n)
        dangling = rank[out_w == 0].sum()
        rank = 0.15 / n + 0.85 * (flow + dangling / n)
    return rank
