"""Code-aware tokenizer for the keyword index.

Keeps whole identifiers (``parse_header``, ``HTTPTransport``, ``os.path.join``) and also their parts
(``parse``, ``header``, ``http``, ``transport``, ``os``, ``path``, ``join``), lower-cased, minus a
small stopword list, with a light plural/verb-suffix folding so prose queries meet code names.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

# 4: letters of every script are word characters (größe, модуль, 数据); 5: a word whose stem would be a
# stopword keeps a stem of its own (theme, notes: they had no term at all)
TOKENIZER_VERSION = "5"

# A word starts with a letter of any script or an underscore and goes on with word characters; dots
# join a qualified name. camelCase splits at ASCII capitals; any other letter (ä, Ä, д,
# 数) goes with the lower-case run it is in, so a word of another script stays whole (a run of CJK
# characters is one term: a search names it whole).
IDENTIFIER = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*|[0-9]+\w*")  # [^\W\d]: a letter or _
_LOWER = r"[^\W\dA-Z_]"  # ASCII lower case, or a letter of another script
CAMEL_PARTS = re.compile(rf"[A-Z]+(?=[A-Z]{_LOWER})|[A-Z]?{_LOWER}+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """
    a an and are as at be been but by can do does for from has have how i if in into is it its
    of on or so than that the their them then there these this to was were what when where which
    while who why will with would you your we our not no
    """.split()
)


def fold(part: str) -> str:
    """Suffix folding v2: plurals, -ed, -ing and a final -e share one stem (parse/parsed/parsing); never
    a stopword (``theme`` and ``themes`` fold to ``theme``, not ``them``)."""
    if len(part) <= 4 or part.endswith(("ss", "us", "is")):
        return part
    if part.endswith("ies"):
        return part[:-3] + "y"
    if part.endswith("sses"):
        return part[:-2]
    for suf in ("ing", "ed", "es", "s", "e"):
        if part.endswith(suf) and len(part) - len(suf) >= 3:
            stem = part[: -len(suf)]
            if suf in ("ing", "ed") and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]
            if stem not in STOPWORDS:  # theme is no "them", notes no "not": the next suffix, or itself
                return stem
    return part


def _parts(word: str) -> list[str]:
    """A raw word's parts: split at dots, underscores and camelCase."""
    parts: list[str] = []
    for piece in word.split("."):
        for sub in piece.split("_"):
            if sub.isascii() and sub.isalpha() and sub.islower():  # what the regex gives it: itself
                parts.append(sub)
            elif sub:
                parts.extend(CAMEL_PARTS.findall(sub) or [sub])
    return parts


@lru_cache(maxsize=200_000)
def word_terms(word: str) -> tuple[str, ...]:
    """All index terms for one raw word: a compound keeps its whole form, then its folded parts."""
    parts = _parts(word)
    low = word.lower()
    terms = [fold(p.lower()) for p in parts]
    terms = [t for t in terms if len(t) > 1 and t not in STOPWORDS]
    if len(parts) > 1 and low.strip("._"):
        return (low, *terms)
    return tuple(terms)


def tokenize(text: str) -> list[str]:
    """Index terms of ``text`` in order (with repeats, for term frequencies)."""
    out: list[str] = []
    for word in IDENTIFIER.findall(text):
        out.extend(word_terms(word))
    return out


def term_counts(text: str) -> Counter[str]:
    """``Counter(tokenize(text))``, computed per distinct word (a file repeats its words a lot)."""
    out: dict[str, int] = {}
    get = out.get
    for word, n in Counter(IDENTIFIER.findall(text)).items():
        for term in word_terms(word):
            out[term] = get(term, 0) + n
    return Counter(out)


def span_terms(span: str) -> tuple[list[str], list[str], str]:
    """What a chunk holding ``span`` (lower case) with whole words has among its index terms: the
    folded term of every part but the last (``all_of``); for the last, which a longer word may go on
    from (``pool`` in ``poolers``), a term that starts with it (``prefix``) or one it folds to
    (``any_of``: ``types`` is indexed ``typ``, ``proxies`` ``proxy``). Parts, not the compounds they
    make: a span's word may be part of a longer name there (``request.user`` in ``self.request.user``)."""
    *head, last = [p for w in IDENTIFIER.findall(span) for p in _parts(w)] or [""]
    all_of = [t for t in dict.fromkeys(fold(p) for p in head) if len(t) > 1 and t not in STOPWORDS]
    if len(last) < 2 or last in STOPWORDS:
        return all_of, [], ""
    shorter = [last[:n] for n in range(max(3, len(last) - 4), len(last))]
    cut = last.rfind("ie", len(last) - 3)
    if cut > 0:  # on its way to -ies, which folds to -y
        shorter.append(last[:cut] + "y")
    return all_of, [*shorter, fold(last)], last


def identifiers(text: str) -> list[str]:
    """Raw identifier-like words of ``text`` (no splitting), for symbol and path lookups."""
    return IDENTIFIER.findall(text)


def prefix_forms(word: str) -> list[str]:
    """What the index terms of ``word``, if it is the start of a longer word, may start with.

    The whole compound as typed (``parse_hea`` → ``parse_hea``: compounds are kept whole) and its last
    part, as typed and folded, with the spellings folding gives a longer word: ``cooki`` may be
    ``cookies`` (indexed ``cooky``), ``parsin`` may be ``parsing`` (indexed ``pars``). Forms shorter than
    two characters are left out (single characters are never terms).
    """
    subs = [sub for piece in word.split(".") for sub in piece.split("_") if sub]
    parts = [p for sub in subs for p in CAMEL_PARTS.findall(sub) or [sub]]
    if not parts:
        return []
    forms = [word.lower()] if len(parts) > 1 and word.strip("._") else []
    last = parts[-1].lower()
    for form in dict.fromkeys((last, fold(last))):
        forms.append(form)
        if form.endswith("ie") and len(form) > 4:  # proxie → proxies → proxy
            forms.append(form[:-2] + "y")
        elif form.endswith("i") and len(form) > 3:  # cooki → cookies → cooky
            forms.append(form[:-1] + "y")
    stem = last[:-2]
    if last.endswith("in") and len(stem) >= 3:  # on its way to -ing: parsin → parsing → pars
        forms.append(stem[:-1] if stem[-1] == stem[-2] and stem[-1] not in "lsz" else stem)
    return [f for f in dict.fromkeys(forms) if len(f) >= 2]


CHARS_PER_TOKEN = 3  # token estimates for budgets (the reader's tokenizer is unknown): over-counts code


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is for a language model (one per CHARS_PER_TOKEN characters)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
