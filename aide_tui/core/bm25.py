"""Okapi BM25 (Lucene idf): which terms a chunk holds and how heavily (path and symbol fields weighted
above the body, a separately scored name field for the functions a chunk defines), and the scoring
formula every scorer uses.

A batch of documents is encoded doc-major (CSR: which terms, how often); a segment stores the
term-major postings derived from it (store/segment_write.py), read in place at query time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

import numpy as np

from aide_tui.core.model import Chunk
from aide_tui.core.tokens import term_counts, tokenize

K1 = 1.2
B = 0.75
PATH_WEIGHT = 2.0
SYMBOL_WEIGHT = 2.0
# The name field: the words of the functions (and variables) a chunk defines, stored as separate
# "n:word" terms (the tokenizer never makes a ":"), so a query word that *names* a function scores
# with the field's own idf and saturation instead of adding one more count to a word the body
# already repeats (BM25F-like). Type names (class, struct, interface...), CONSTANTS and __dunder__
# names stay out: a prose query that mentions a class asks about its members or its users.
NAME_FIELD = "n:"
NAME_TF = 1.0  # weight of a name-field term in a document (0 = no name field)
_TYPE_KEYWORDS = (
    "class", "struct", "interface", "enum", "type", "trait", "record", "object", "union", "namespace",
    "module", "impl",
)  # fmt: skip
_TYPE_DEF = re.compile(rf"\b(?:{'|'.join(_TYPE_KEYWORDS)})\s+([A-Za-z_$][\w$]*)")
_IDENT_NAME = re.compile(r"[A-Za-z_$][\w$]*")  # what _TYPE_DEF captures as a type's name


def chunk_terms(chunk: Chunk, body: Counter[str] | None = None) -> dict[str, float]:
    """Weighted term frequencies of a chunk: body + header fields (path, symbol, defined names) + the
    name field.

    ``body`` is the already-counted ``tokenize(chunk.text)``, when the caller has it.
    """
    counts: dict[str, float] = dict(term_counts(chunk.text) if body is None else body)
    for terms, weight in header_fields(chunk.path, chunk.symbol, chunk.defines, function_names(chunk)):
        for term in terms:
            counts[term] = counts.get(term, 0) + weight
    return counts


def header_fields(
    path: str, symbol: str | None, defines: tuple[str, ...], names: tuple[str, ...]
) -> list[tuple[tuple[str, ...], float]]:
    """The terms a chunk's header adds to its body, each field with its weight: its path, its symbol
    chain and defined names, and the name field of its ``function_names`` (a term may repeat within a
    field: each adds)."""
    fields = [(_path_terms(path), PATH_WEIGHT), (_symbol_terms(symbol or "", defines), SYMBOL_WEIGHT)]
    if NAME_TF > 0:
        fields.append((_name_terms(names), NAME_TF))
    return fields


def function_names(chunk: Chunk) -> tuple[str, ...]:
    """The names that go into the name field: what the chunk defines (a piece, which records no
    definitions: its symbol's innermost name) minus types, CONSTANTS and __dunder__ names."""
    if chunk.defines:
        names = chunk.defines
    elif chunk.symbol:
        label = chunk.symbol.rsplit(" > ", 1)[-1]
        names = tuple(label.split()[-1:]) if not _TYPE_DEF.fullmatch(label) else ()
    else:
        names = ()
    names = tuple(n for n in names if not n.isupper() and not (n.startswith("__") and n.endswith("__")))
    if not names:
        return ()
    text = chunk.text
    return tuple(n for n in names if not _names_a_type(n, text))


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _names_a_type(name: str, text: str) -> bool:
    """Whether ``name`` stands somewhere in ``text`` as a whole word after a type keyword and whitespace
    (``class Foo``): what ``_TYPE_DEF`` would capture, found by string scans (the regex over a chunk
    was a tenth of a cold build's term counting)."""
    end = len(name)
    i = text.find(name)
    while i >= 0:
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        after = i + end
        whole = after >= len(text) or not (_is_word_char(text[after]) or text[after] == "$")
        if j < i and whole and text.endswith(_TYPE_KEYWORDS, 0, j):
            for kw in _TYPE_KEYWORDS:
                k = j - len(kw)
                if text.endswith(kw, 0, j) and (k == 0 or not _is_word_char(text[k - 1])):
                    return _IDENT_NAME.fullmatch(name) is not None
        i = text.find(name, i + 1)
    return False


@lru_cache(maxsize=65536)
def _name_terms(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(NAME_FIELD + t for t in dict.fromkeys(tokenize(" ".join(names))))


def field_query(
    terms: list[str], weights: dict[str, float] | None, name_weight: float
) -> tuple[list[str], dict[str, float] | None]:
    """The query's terms plus their name-field twins, each at ``name_weight`` times the term's own
    weight (``name_weight`` 0: the terms unchanged)."""
    if name_weight <= 0 or not terms:
        return terms, weights
    out = dict(weights) if weights else {}
    for t in terms:
        out[NAME_FIELD + t] = name_weight * (weights.get(t, 1.0) if weights else 1.0)
    return [*terms, *(NAME_FIELD + t for t in terms)], out


@lru_cache(maxsize=4096)
def _path_terms(path: str) -> tuple[str, ...]:
    """Terms of a path (every chunk and piece of a file shares them)."""
    return tuple(tokenize(path.replace("/", " ")))


@lru_cache(maxsize=65536)
def _symbol_terms(symbol: str, defines: tuple[str, ...]) -> tuple[str, ...]:
    """Distinct terms of a symbol chain and the names a chunk defines (pieces repeat their chunk's)."""
    text = " ".join(filter(None, [symbol, " ".join(defines)]))
    return tuple(dict.fromkeys(tokenize(text)))


@dataclass
class DocTerms:
    """Doc-major sparse matrix: row i holds (term id, weighted tf) pairs of document i."""

    doc_ptr: np.ndarray  # int64, n_docs + 1
    term_ids: np.ndarray  # int32
    tfs: np.ndarray  # float32

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @classmethod
    def empty(cls) -> DocTerms:
        return cls(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))

    def take(self, rows: Sequence[int]) -> DocTerms:
        """The sub-matrix of the given rows, in that order."""
        rows_arr = np.asarray(rows, dtype=np.int64)
        if rows_arr.size == 0:
            return DocTerms.empty()
        starts, ends = self.doc_ptr[rows_arr], self.doc_ptr[rows_arr + 1]
        lengths = ends - starts
        ptr = np.zeros(len(rows_arr) + 1, np.int64)
        np.cumsum(lengths, out=ptr[1:])
        idx = np.repeat(starts - ptr[:-1], lengths) + np.arange(ptr[-1])
        return DocTerms(ptr, self.term_ids[idx], self.tfs[idx])


def concat(parts: Iterable[DocTerms]) -> DocTerms:
    """Stack several row blocks into one matrix."""
    parts = list(parts)
    if not parts:
        return DocTerms.empty()
    offsets = np.cumsum([0] + [int(p.doc_ptr[-1]) for p in parts[:-1]])
    ptr = np.concatenate(
        [np.zeros(1, np.int64)] + [p.doc_ptr[1:] + off for p, off in zip(parts, offsets, strict=True)]
    )
    return DocTerms(
        ptr.astype(np.int64),
        np.concatenate([p.term_ids for p in parts]).astype(np.int32),
        np.concatenate([p.tfs for p in parts]).astype(np.float32),
    )


def encode_docs(term_counts: Iterable[Mapping[str, float]], vocab: dict[str, int]) -> DocTerms:
    """Turn per-document term counts into rows, growing ``vocab`` with unseen terms (new terms get ids
    in order of first appearance)."""
    docs = list(term_counts)
    lengths = np.fromiter((len(c) for c in docs), np.int64, len(docs))
    ptr = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    terms = list(chain.from_iterable(docs))  # each Counter's keys, in order
    for term in dict.fromkeys(terms):
        if term not in vocab:
            vocab[term] = len(vocab)
    ids = np.fromiter(map(vocab.__getitem__, terms), np.int32, len(terms))
    tfs = np.fromiter(chain.from_iterable(c.values() for c in docs), np.float32, len(terms))
    return DocTerms(ptr, ids, tfs)


def idf_of(n_docs: int, df: np.ndarray) -> np.ndarray:
    """Lucene's BM25 idf of terms held by ``df`` of ``n_docs`` documents (float32)."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


def okapi(
    tf: np.ndarray, dl: np.ndarray, weight: float | np.floating | np.ndarray, avgdl: float
) -> np.ndarray:
    """Each posting's score: a term of query ``weight`` (its idf times its query weight; or one weight
    per posting) with weighted frequency ``tf`` in a document of weighted length ``dl`` (float32, as
    every scorer here computes)."""
    norm = (K1 * (1.0 - B + B * dl / max(avgdl, 1e-9))).astype(np.float32)
    return np.asarray(weight * tf * (K1 + 1.0) / (tf + norm), np.float32)


class BM25:
    """Okapi BM25 over one block of documents held in memory, all alive: the reference the index's
    reader (store/view.py, which scores mapped postings with :func:`idf_of` and :func:`okapi`) follows."""

    def __init__(self, docs: DocTerms, vocab: dict[str, int]) -> None:
        self.docs = docs
        self.vocab = vocab
        n = docs.n_docs
        self.doc_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(docs.doc_ptr))
        self.dl = np.bincount(self.doc_of, weights=docs.tfs, minlength=n).astype(np.float32)
        df = np.bincount(docs.term_ids, minlength=len(vocab)).astype(np.int64)
        self.idf = idf_of(n, df)
        self.avgdl = float(self.dl.sum()) / n if n else 1.0

    def scores(self, terms: Iterable[str], weights: dict[str, float] | None = None) -> np.ndarray:
        """BM25 score of every document (each distinct query term counted once, times its weight)."""
        out = np.zeros(self.docs.n_docs, np.float32)
        for term in dict.fromkeys(terms):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            hit = np.flatnonzero(self.docs.term_ids == tid)
            docs = self.doc_of[hit]
            w = self.idf[tid] * (weights.get(term, 1.0) if weights else 1.0)
            out[docs] += okapi(self.docs.tfs[hit], self.dl[docs], w, self.avgdl)
        return out

    def top(
        self, terms: Iterable[str], n: int, weights: dict[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the best ``n`` rows with a score > 0, best first."""
        return top_positive(self.scores(terms, weights), n)


def top_positive(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``n`` entries of ``scores`` that are > 0, in descending order (ties by index)."""
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0 or n <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    vals = scores[positive]
    if positive.size > n:
        part = np.argpartition(-vals, n - 1)[:n]
        positive, vals = positive[part], vals[part]
    order = np.lexsort((positive, -vals))
    return positive[order], vals[order]
