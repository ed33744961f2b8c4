"""The vocabulary in sorted order, for prefix lookups (search as you type completes the last word).

A version's vocabulary is a dict of term → id that only grows while segments are added (a delta's new
terms get the next ids), so the sorted list of a version is the previous version's list with the new
terms merged in: a reader that picks up a delta does not sort the whole vocabulary again. Name-field
terms (``n:word``) are left out: a prefix is completed over the words of the text.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice

import numpy as np

from aide_tui.core.wordshape import vocabulary_trigrams

PREFIX_END = "\U0010ffff"  # sorts after every character a term can hold after the prefix


class Lexicon:
    """Terms sorted, with their ids and whether each is a compound (holds ``.`` or ``_``: a whole
    identifier, whose parts are terms of their own); ``size`` and ``key`` name the vocabulary it was
    built from (its first ``size`` ids; ``key`` is the segments' vocabulary key)."""

    def __init__(
        self,
        terms: list[str],
        ids: np.ndarray,
        compound: np.ndarray,
        size: int,
        key: str,
        grams: frozenset[str] | None = None,
    ) -> None:
        self.terms = terms
        self.ids = ids
        self.compound = compound
        self.size = size
        self.key = key
        self._grams = grams  # the terms' letter trigrams, computed on first use (see core/wordshape.py)

    def trigrams(self) -> frozenset[str]:
        """The letter trigrams of the terms (built once; a grown lexicon adds its new terms' only)."""
        if self._grams is None:
            self._grams = frozenset(vocabulary_trigrams(self.terms))
        return self._grams

    @classmethod
    def build(cls, vocab: dict[str, int], key: str) -> Lexicon:
        """The sorted terms of ``vocab`` (one sort)."""
        terms = sorted(t for t in vocab if ":" not in t)
        ids = np.fromiter(map(vocab.__getitem__, terms), np.int64, len(terms))
        return cls(terms, ids, _compounds(terms), len(vocab), key)

    def extends_to(self, key: str, size: int) -> bool:
        """Whether a vocabulary with this key and size only adds terms to this lexicon's (the same
        segments first, with the same vocabulary ends)."""
        mine = self.key.split("|") if self.key else []
        return size >= self.size and key.split("|")[: len(mine)] == mine

    def grown(self, vocab: dict[str, int], key: str) -> Lexicon:
        """This lexicon with the terms ``vocab`` added after its first ``size`` ids merged in."""
        if len(vocab) == self.size:
            return Lexicon(self.terms, self.ids, self.compound, self.size, key, self._grams)
        new = sorted(t for t in islice(vocab, self.size, None) if ":" not in t)
        grams = None if self._grams is None else self._grams | vocabulary_trigrams(new)
        at = [bisect_left(self.terms, t) for t in new]
        terms: list[str] = []
        prev = 0
        for pos, term in zip(at, new, strict=True):
            terms.extend(self.terms[prev:pos])
            terms.append(term)
            prev = pos
        terms.extend(self.terms[prev:])
        if not new:
            return Lexicon(terms, self.ids, self.compound, len(vocab), key, grams)
        ids = np.insert(self.ids, at, [vocab[t] for t in new])
        return Lexicon(terms, ids, np.insert(self.compound, at, _compounds(new)), len(vocab), key, grams)

    def span(self, prefix: str) -> tuple[int, int]:
        """Positions [lo, hi) of the terms that start with ``prefix``."""
        lo = bisect_left(self.terms, prefix)
        return lo, bisect_left(self.terms, prefix + PREFIX_END, lo)


def _compounds(terms: list[str]) -> np.ndarray:
    return np.fromiter(("." in t or "_" in t for t in terms), bool, len(terms))
