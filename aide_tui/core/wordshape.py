"""Whether a query's words read as words of the code base at all, from its own vocabulary's letters.

A hybrid search that no lexical list supports used to answer with whatever the dense list held, even
for keyboard mashing: MiniLM finds random strings up to .54 similar to some code (base64, hex, test
data), above the calibrated floor. A word of a real query that the index lacks still reads like the
code's words (``authentication`` where the code says ``auth``): nearly all of its letter trigrams
(with the word's start and end marked) occur in the vocabulary. Random strings' mostly do not.
Measured on the public eval's nine corpora
(``tests/benchmarks/calibrate_no_results.py``: each eval query word a corpus lacks, scored against
that corpus's vocabulary, vs random words): at ``UNSEEN_SHARE`` .5, 0.9% of 7,656 real words and
83.5% of 7,092 random words read as nonsense. A query reads as nonsense only when *every* word of it
does: end to end, 85.9% of 4,500 random strings and none of the 680 real queries are held back
(see docs/quality.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

UNSEEN_SHARE = 0.5  # a word whose trigrams are at least this share unseen does not read as a word here
NONSENSE_CEILING = 0.6  # over this dense similarity the closest code is trusted even for such a query
MIN_TRIGRAMS = 2000  # a smaller vocabulary (a few files) is no sample of what its language's words look like
_WORD = re.compile(r"[a-z]{2,}")
_PARTS = re.compile(r"[._]")


def trigrams(word: str) -> list[str]:
    """The letter trigrams of ``word`` with its start (``^``) and end (``$``) marked."""
    marked = f"^{word}$"
    return [marked[i : i + 3] for i in range(len(marked) - 2)]


def vocabulary_trigrams(terms: Iterable[str]) -> set[str]:
    """The trigrams of every part of every term (compounds split at ``.`` and ``_``)."""
    parts: set[str] = set()
    for term in terms:
        parts.update(_PARTS.split(term))  # the parts of compounds are mostly terms of their own
    parts.discard("")
    out: set[str] = set()
    for part in parts:
        out.update(trigrams(part))
    return out


def unseen_share(word: str, seen: set[str] | frozenset[str]) -> float:
    """The share of ``word``'s trigrams that no term of the vocabulary holds."""
    grams = trigrams(word)
    return sum(g not in seen for g in grams) / len(grams)


def reads_as_nonsense(text: str, seen: set[str] | frozenset[str]) -> bool:
    """Whether every word of ``text`` (runs of two or more letters) has at least ``UNSEEN_SHARE`` of
    its trigrams unseen in the vocabulary (False for a text without such words, and for a vocabulary
    of fewer than ``MIN_TRIGRAMS`` trigrams: the public eval's smallest corpus has 3,067, a five-file
    workspace 441, where ``failure`` and ``every`` would read as nonsense)."""
    words = _WORD.findall(text.lower())
    if not words or len(seen) < MIN_TRIGRAMS:
        return False
    return all(unseen_share(w, seen) >= UNSEEN_SHARE for w in words)
