"""The seam below ranking: a retriever gives one query's candidate lists from a store.

Two stores implement it: the local segments (:mod:`aide_tui.core.search.local`, rows of an
:class:`~aide_tui.core.store.view.IndexView`) and a Milvus collection
(:mod:`aide_tui.core.search.milvus`, rows fetched from the engine). Ranking
(:mod:`aide_tui.core.search.rank`) owns everything above: which lists to ask for, their weights,
fusion, priors, file aggregation, diversity and the result rows. A retriever applies the query's
filters (``path:``, ``lang:``, the workspace) in one place, when it begins a query: every list it
returns holds only candidates that pass them.

A candidate is named by a key (a row number, a row id) that is only meaningful to its retriever.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.model import Definition, Reference
from aide_tui.core.search.filters import ParsedQuery
from aide_tui.core.status import IndexStatus

K = TypeVar("K", bound=Hashable)  # a candidate's key: a row number (local), a row id (Milvus)
Key = Hashable


@dataclass(frozen=True)
class Candidate:
    """What ranking reads of one chunk."""

    path: str
    start_line: int
    end_line: int
    language: str
    symbol: str | None
    text: str
    defines: tuple[str, ...]
    workspace: str = ""  # set when the search spans several workspaces
    root: str = ""  # that workspace's root where it was indexed
    file_hash: str = ""


@dataclass
class DenseLists(Generic[K]):
    """Candidates ranked by similarity, one list per query vector; ``spans`` are the lines of each
    candidate's best piece for the first vector. ``degraded`` says why the dense side is unusable.
    ``best``: the highest similarity of any piece to the first vector (None: not known)."""

    lists: list[list[K]] = field(default_factory=list)
    spans: dict[K, tuple[int, int]] = field(default_factory=dict)
    degraded: str | None = None
    best: float | None = None


@dataclass(frozen=True)
class IndexedFile:
    """A file the store holds (for the file finder): its path, and its workspace in a search over several."""

    path: str
    workspace: str = ""
    root: str = ""


class Retrieval(Protocol[K]):
    """One query's access to a store: its BM25 terms are fixed and its filters applied."""

    def bm25(self, n: int) -> list[K]:
        """The ``n`` best chunks by BM25 (positive scores only)."""
        ...

    def score(self, key: K) -> float:
        """A candidate's BM25 score (0 when it has none or it is not known)."""
        ...

    def positive(self) -> Iterable[K]:
        """Candidates known to have a positive BM25 score."""
        ...

    def holding(self, all_of: Sequence[str], any_of: Sequence[str], prefix: str) -> Iterable[K] | None:
        """Candidates with a positive BM25 score whose chunk holds every term of ``all_of`` and a term of
        ``any_of`` or one starting with ``prefix`` (see ``IndexView.rows_holding``); None when the store
        cannot tell (then :meth:`positive` is all there is)."""
        ...

    def piece_bm25(self, n: int) -> tuple[list[K], dict[K, tuple[int, int]]]:
        """Chunks ranked by their best function-sized piece's BM25 score, at most ``n``, and the lines of
        that piece (what a hit's best line follows)."""
        ...

    def defining(self, names: Sequence[str]) -> dict[str, list[K]]:
        """Lower-cased name → the chunks that define it (case-insensitive lookup)."""
        ...

    def in_files(self, files: Collection[str], n: int) -> list[K]:
        """Chunks with a positive BM25 score in these files (at least the ``n`` best of them)."""
        ...

    def all_in_files(self, files: Collection[str]) -> list[K]:
        """Every chunk of these files."""
        ...

    def dense(self, vectors: Sequence[np.ndarray], embedder_id: str, n: int) -> DenseLists[K]:
        """Chunks ranked by their best piece's similarity to each vector, at most ``n`` per list."""
        ...

    def static(self, vector: np.ndarray, static_id: str, n: int) -> DenseLists[K]:
        """Chunks ranked by their best piece's similarity in the static tier (an empty result when the
        store keeps no static vectors of that model)."""
        ...

    def fetch(self, keys: Iterable[K]) -> None:
        """Make :meth:`chunk` cheap for these candidates (a remote store loads them in one call)."""
        ...

    def chunk(self, key: K) -> Candidate:
        """The candidate's chunk."""
        ...

    def path(self, key: K) -> str:
        """The candidate's file path (cheaper than :meth:`chunk`)."""
        ...

    def defines(self, key: K) -> tuple[str, ...]:
        """The names the candidate's chunk defines (cheaper than :meth:`chunk`: no text is read)."""
        ...

    def file_of(self, key: K) -> str:
        """The candidate's file as a grouping key (workspace and path)."""
        ...

    def order(self, key: K) -> object:
        """Sort key for ties: by workspace, path and first line, so any store answers alike."""
        ...


class SymbolGraph(Protocol):
    """A store's symbol graph (definitions, references, imports of the live files), when it keeps one.
    ``memo`` keeps what is derived from one loaded version (a centrality prior) while it is loaded."""

    memo: dict[str, Any]

    def definitions(self, name: str, exact: bool = True) -> list[tuple[str, Definition]]:
        """(path, definition) of every definition of ``name`` (any case when not ``exact``)."""
        ...

    def references(self, name: str, exact: bool = True) -> list[tuple[str, Reference]]:
        """(path, reference) of every reference to ``name`` (any case when not ``exact``)."""
        ...

    def has_references(self, name: str, exact: bool = True) -> bool:
        """Whether :meth:`references` would list anything (without listing it)."""
        ...

    def definitions_in(self, path: str) -> list[Definition]:
        """A file's definitions, in line order."""
        ...

    def definitions_under(self, owner: str) -> list[tuple[str, Definition]]:
        """(path, definition) of the definitions whose qualified name has ``owner`` (any case) as a
        part before a dot (the members of the types so named, in any file), by path and line."""
        ...

    def references_in(self, path: str) -> list[Reference]:
        """A file's references, in line order."""
        ...

    def called_names(self, path: str) -> list[str]:
        """The names a file calls, each once, in order of their first call."""
        ...

    def definition_paths(self, names: Sequence[str]) -> dict[str, set[str]]:
        """For each name that has a definition (exact case), the files defining it."""
        ...

    def imports_of(self, path: str) -> list[str]:
        """The modules a file imports, as written."""
        ...

    def paths(self) -> list[str]:
        """The files that have a graph."""
        ...

    def line_text(self, path: str, line: int) -> str | None:
        """A file's line as indexed (None when the store does not hold it)."""
        ...


class TermStats(Protocol):
    """A store's vocabulary, for choosing the terms of a long query and completing a partly typed word."""

    @property
    def vocab(self) -> Container[str]: ...

    def idfs(self, terms: Sequence[str]) -> list[float | None]:
        """Each term's idf (None: no live chunk holds it)."""
        ...

    def prefix_terms(self, prefix: str, cap: int, compounds: bool = True) -> list[tuple[str, int]]:
        """Up to ``cap`` live terms starting with ``prefix``, most frequent first, with their document
        frequencies (``compounds`` False: no whole identifiers holding ``.`` or ``_``)."""
        ...

    def defined_names(self, prefix: str, cap: int) -> list[str]:
        """Up to ``cap`` lower-cased names live chunks define that start with ``prefix``, shortest first."""
        ...

    def names_matching(self, prefix: str, needle: str, pattern: re.Pattern[str], cap: int) -> list[str]:
        """Up to ``cap`` lower-cased names live chunks define that start with ``prefix``, hold ``needle``
        and that ``pattern`` matches whole, shortest first."""
        ...

    def letter_trigrams(self) -> frozenset[str]:
        """The letter trigrams of the vocabulary's words (does a query word read like one of them?)."""
        ...


class Retriever(Protocol):
    """A store as search sees it: refreshed when a new version lands, begun once per query."""

    settings: Settings

    @property
    def version(self) -> str:
        """The loaded version ("" before the first refresh)."""
        ...

    @property
    def vectors_missing(self) -> int:
        """Dense pieces of the loaded version still without a vector."""
        ...

    @property
    def static_missing(self) -> int:
        """Chunks of the loaded version without a static-tier vector."""
        ...

    @property
    def path_parts(self) -> Mapping[str, set[str]]:
        """Folder name, file name or stem (lower case) → indexed files."""
        ...

    @property
    def term_stats(self) -> TermStats | None:
        """The vocabulary and idf of the loaded version (None: the store does not expose them)."""
        ...

    @property
    def graph(self) -> SymbolGraph | None:
        """The loaded version's symbol graph (None: the store keeps none)."""
        ...

    @property
    def loaded(self) -> bool:
        """Whether a version is loaded."""
        ...

    def version_key(self) -> object | None:
        """Changes whenever a new version is committed (None when unknown: reload)."""
        ...

    def refresh(self) -> bool:
        """Load the current version if it changed; True when (re)loaded. Raises IndexProblem."""
        ...

    def files(self) -> list[IndexedFile]:
        """Every indexed file (the file finder lists them)."""
        ...

    def end_lines(self, files: Sequence[IndexedFile]) -> list[int]:
        """The last indexed line of each file (1 when the store does not know it)."""
        ...

    def begin(
        self, parsed: ParsedQuery, terms: list[str], weights: dict[str, float] | None
    ) -> Retrieval[Any]:
        """One query's retrieval with these BM25 terms and the query's filters."""
        ...

    def status(self) -> IndexStatus:
        """What the store holds, for ``status`` and the app."""
        ...

    def child_settings(self) -> Settings:
        """The settings an indexing process must be given to write this store while it is read here."""
        ...

    def close(self) -> None:
        """Release connections (and an engine hosted by this process)."""
        ...
