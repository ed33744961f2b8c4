"""Okapi BM25 over numpy arrays (Lucene idf), with path/symbol fields weighted above the body.

Documents are stored doc-major (CSR: which terms, how often) so an incremental update keeps the
rows of unchanged chunks and tokenizes only new ones; the term-major postings used for scoring
are derived from them in one vectorised pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from aide_tui.core.model import Chunk
from aide_tui.core.tokens import tokenize

K1 = 1.2
B = 0.75
PATH_WEIGHT = 2.0
SYMBOL_WEIGHT = 2.0


def chunk_terms(chunk: Chunk, body: Counter[str] | None = None) -> Counter[str]:
    """Weighted term frequencies of a chunk: body + header fields (path, symbol, defined names).

    ``body`` is the already-counted ``tokenize(chunk.text)``, when the caller has it.
    """
    counts: Counter[str] = Counter(tokenize(chunk.text)) if body is None else Counter(body)
    for term in tokenize(chunk.path.replace("/", " ")):
        counts[term] += PATH_WEIGHT
    symbol_text = " ".join(filter(None, [chunk.symbol or "", " ".join(chunk.defines)]))
    for term in set(tokenize(symbol_text)):
        counts[term] += SYMBOL_WEIGHT
    return counts


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


def encode_docs(term_counts: Iterable[Counter[str]], vocab: dict[str, int]) -> DocTerms:
    """Turn per-document term counts into rows, growing ``vocab`` with unseen terms."""
    ptr = [0]
    ids: list[int] = []
    tfs: list[float] = []
    for counts in term_counts:
        for term, tf in counts.items():
            tid = vocab.get(term)
            if tid is None:
                tid = vocab[term] = len(vocab)
            ids.append(tid)
            tfs.append(tf)
        ptr.append(len(ids))
    return DocTerms(np.asarray(ptr, np.int64), np.asarray(ids, np.int32), np.asarray(tfs, np.float32))


class BM25:
    """Scores documents for a bag of query terms."""

    def __init__(self, docs: DocTerms, vocab: dict[str, int], k1: float = K1, b: float = B) -> None:
        self.docs = docs
        self.vocab = vocab
        self.k1 = k1
        self.b = b
        n = docs.n_docs
        self.n_docs = n
        doc_of_entry = np.repeat(np.arange(n, dtype=np.int32), np.diff(docs.doc_ptr))
        doc_len = np.bincount(doc_of_entry, weights=docs.tfs, minlength=n).astype(np.float32)
        avgdl = float(doc_len.mean()) if n else 1.0
        self.norm = (k1 * (1.0 - b + b * doc_len / max(avgdl, 1e-9))).astype(np.float32)
        order = np.argsort(docs.term_ids, kind="stable")
        self.post_docs = doc_of_entry[order]
        self.post_tfs = docs.tfs[order]
        counts = np.bincount(docs.term_ids, minlength=len(vocab))
        self.term_ptr = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.term_ptr[1:])
        df = counts.astype(np.float64)
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)

    def scores(self, terms: Iterable[str], weights: dict[str, float] | None = None) -> np.ndarray:
        """BM25 score of every document (each distinct query term counted once, times its weight)."""
        out = np.zeros(self.n_docs, np.float32)
        for term in dict.fromkeys(terms):
            tid = self.vocab.get(term)
            if tid is None or tid >= len(self.idf):
                continue
            s, e = self.term_ptr[tid], self.term_ptr[tid + 1]
            if s == e:
                continue
            docs = self.post_docs[s:e]
            tf = self.post_tfs[s:e]
            w = self.idf[tid] * (weights.get(term, 1.0) if weights else 1.0)
            out[docs] += w * tf * (self.k1 + 1.0) / (tf + self.norm[docs])
        return out

    def top(
        self, terms: Iterable[str], n: int, weights: dict[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the best ``n`` documents with a score > 0, best first."""
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
