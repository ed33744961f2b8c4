"""Code-aware tokenizer for the keyword index.

Keeps whole identifiers (``parse_header``, ``HTTPTransport``, ``os.path.join``) and also their parts
(``parse``, ``header``, ``http``, ``transport``, ``os``, ``path``, ``join``), lower-cased, minus a
small stopword list, with a light plural/verb-suffix folding so prose queries meet code names.
"""

from __future__ import annotations

import re
from functools import lru_cache

TOKENIZER_VERSION = "2"

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9]+[A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """
    a an and are as at be been but by can do does for from has have how i if in into is it its
    of on or so than that the their them then there these this to was were what when where which
    while who why will with would you your we our not no
    """.split()
)


def _fold(part: str) -> str:
    """Light suffix folding: plurals and common verb endings (``headers``→``header``)."""
    if len(part) <= 3:
        return part
    if part.endswith("ies") and len(part) > 4:
        return part[:-3] + "y"
    if part.endswith(("sses", "xes", "ches", "shes")):
        return part[:-2]
    if part.endswith("s") and not part.endswith(("ss", "us", "is")):
        return part[:-1]
    return part


@lru_cache(maxsize=200_000)
def _expand(word: str) -> tuple[str, ...]:
    """All index terms for one raw word: a compound keeps its whole form, then its folded parts."""
    parts: list[str] = []
    for piece in word.split("."):
        for sub in piece.split("_"):
            if sub:
                parts.extend(_CAMEL.findall(sub) or [sub])
    low = word.lower()
    terms = [_fold(p.lower()) for p in parts]
    terms = [t for t in terms if len(t) > 1 and t not in STOPWORDS]
    if len(parts) > 1 and low.strip("._"):
        return (low, *terms)
    return tuple(terms)


def tokenize(text: str) -> list[str]:
    """Index terms of ``text`` in order (with repeats, for term frequencies)."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_expand(word))
    return out


def identifiers(text: str) -> list[str]:
    """Raw identifier-like words of ``text`` (no splitting), for symbol and path lookups."""
    return _WORD.findall(text)
