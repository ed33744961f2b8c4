"""Typos in a name: an identifier's part no chunk holds, read as the index word one edit away.

``Headres``, ``raise_for_stauts``, ``AsyncCleint.send``, ``timout``: the misspelt word matches nothing,
so BM25 and the symbol lookup lose the one word that mattered. A part of at least :data:`MIN_LETTERS`
letters whose index term no live chunk holds is replaced by the index word one edit away (two
neighbours swapped, a letter dropped or added, a letter changed: Damerau's single edits, which cover
most typing slips, likeliest first; then the longest stem, then the most frequent), its case kept; a
shorter part has too many neighbours to guess from (``plot`` is one letter from ``slot`` and ``port``).
Plain words among others are left as typed (see :func:`corrected`). Only the lexical side reads the
correction; the dense lists read the query as typed.
"""

from __future__ import annotations

import re
from string import ascii_lowercase

from aide_tui.core.search.query import CODE_LIKE
from aide_tui.core.search.retriever import TermStats
from aide_tui.core.tokens import CAMEL_PARTS, STOPWORDS, fold

MIN_LETTERS = 5
MAX_LETTERS = 32  # a longer run of letters is no word anyone misspelt (and its edits would be millions)
MAX_FIXES = 4  # parts looked up per query (each is one batched lookup of some 500 candidates)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _edits(word: str) -> dict[str, int]:
    """Every string one edit from ``word``, with the edit's rank among typing slips: two neighbours
    swapped (0), a letter dropped or doubled (1), a letter changed (2)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    found: dict[str, int] = {}
    for rank, edits in (
        (2, [a + c + b[1:] for a, b in splits if b for c in ascii_lowercase]),
        (1, [a + b[1:] for a, b in splits if b] + [a + c + b for a, b in splits for c in ascii_lowercase]),
        (0, [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]),
    ):
        found.update(dict.fromkeys(edits, rank))
    found.pop(word, None)
    return found


def _with_case(like: str, word: str) -> str:
    """``word`` cased as ``like`` is: Capitalised, UPPER or lower."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[0].upper() + word[1:] if like[0].isupper() else word


def unknown(part: str, stats: TermStats) -> bool:
    """Whether ``part`` may be a typo: a word of :data:`MIN_LETTERS` to :data:`MAX_LETTERS` letters
    whose term no live chunk holds (a stopword's is never indexed: ``theme`` folds to ``them``)."""
    low = part.lower()
    if not MIN_LETTERS <= len(low) <= MAX_LETTERS or not low.isalpha() or low in STOPWORDS:
        return False
    term = fold(low)
    return term not in STOPWORDS and term not in stats.vocab


def correction(part: str, stats: TermStats) -> str | None:
    """The index word one edit from ``part`` (a camelCase or snake_case piece as typed, see
    :func:`unknown`); the likeliest such word, None when there is none."""
    low = part.lower()
    edits = _edits(low)
    # a word whose stem keeps most of what was typed (``progres`` is not ``proges``, stem ``prog``)
    candidates = [(e, t) for e in edits if e not in STOPWORDS and len(t := fold(e)) >= len(low) - 2]
    idfs = stats.idfs([t for _, t in candidates])  # one batched lookup (None: no chunk holds it)
    known = [
        (edits[e], -len(t), idf, e) for (e, t), idf in zip(candidates, idfs, strict=True) if idf is not None
    ]
    if not known:
        return None
    best = min(known)[3]  # the likeliest slip, the longest stem, then the most frequent word
    return _with_case(part, best)


def corrected(text: str, stats: TermStats | None, typing: bool = False) -> str | None:
    """``text`` with each misspelt part of an identifier replaced by its :func:`correction` (``Headres``
    → ``Headers``, ``raise_for_stauts`` → ``raise_for_status``, ``AsyncCleint.send``), or None when
    nothing was changed. A plain word is read as a typo only when it is the whole query: among other
    words it is as likely a word the code does not use (``tweaks``, ``colons``, ``picked``: a changeloc
    subject and two questions were "fixed" into ``weaks``, ``clons``, ``pickled``). ``typing``: the
    last word is still being typed (search as you type completes it instead)."""
    if stats is None:
        return None
    changed = False
    end = len(text)
    single = len(text.split()) == 1
    budget = MAX_FIXES

    def fix_word(m: re.Match[str]) -> str:
        nonlocal changed, budget
        word = m.group(0)
        if typing and m.end() == end:
            return word
        if not (single or CODE_LIKE.search(word)):
            return word  # a plain word among others: the code may just not use it (``tweaks``)
        out = []
        for piece in re.split(r"(_)", word):
            parts = CAMEL_PARTS.findall(piece) if piece != "_" else []
            if "".join(parts) != piece:  # digits and other marks: leave the piece as typed
                out.append(piece)
                continue
            for part in parts:
                fixed = None
                if budget > 0 and unknown(part, stats):
                    budget -= 1
                    fixed = correction(part, stats)
                changed = changed or fixed is not None
                out.append(fixed or part)
        return "".join(out)

    fixed_text = _WORD.sub(fix_word, text)
    return fixed_text if changed else None
