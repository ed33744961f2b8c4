"""Our code-aware terms in a form Milvus's analyzers keep whole, and filter literals and row ids.

A term (or a defined name) becomes one ``[a-z0-9]`` word; weights become repeats (Milvus's BM25 counts
words), and every value that enters a filter expression is a JSON string literal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

MAX_VARCHAR = 65_535


def escape_term(term: str) -> str:
    """A term (or a defined name, lower-cased) as one ``[a-z0-9]`` word any Milvus analyzer keeps whole.

    ``z`` is the escape: ``zz``, ``zu`` (_), ``zd`` (.), ``zx`` + 6 hex digits (anything else): injective.
    """
    out = []
    for ch in term:
        if "a" <= ch <= "y" or "0" <= ch <= "9":
            out.append(ch)
        elif ch == "z":
            out.append("zz")
        elif ch == "_":
            out.append("zu")
        elif ch == ".":
            out.append("zd")
        else:
            out.append(f"zx{ord(ch):06x}")
    return "".join(out)


def names_text(names: Iterable[str]) -> str:
    """Defined names for the exact-name lookup (a second BM25 field: an inverted index of names)."""
    return clip(" ".join(dict.fromkeys(escape_term(n.lower()) for n in names)), MAX_VARCHAR - 1024)


def terms_text(counts: dict[str, float], limit: int = MAX_VARCHAR - 1024) -> str:
    """Weighted term frequencies as the whitespace-joined text Milvus's BM25 counts (weight = repeats)."""
    out: list[str] = []
    size = 0
    for term, weight in counts.items():
        word = escape_term(term)
        reps = max(1, int(round(weight)))
        if size + (len(word) + 1) * reps > limit:
            break
        out.extend([word] * reps)
        size += (len(word) + 1) * reps
    return " ".join(out)


def query_text(terms: Iterable[str], weights: dict[str, float] | None = None) -> str:
    """A query's BM25 terms for Milvus (a weight of 2 repeats the term: Milvus counts query terms)."""
    words: list[str] = []
    for t in terms:
        reps = max(1, int(round(weights.get(t, 1.0)))) if weights else 1
        words.extend([escape_term(t)] * reps)
    return " ".join(words)


def clip(text: str, max_bytes: int) -> str:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", "ignore")


def literal(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    return json.dumps(value, ensure_ascii=False)


def row_id(*parts: object) -> str:
    return hashlib.sha1("\0".join(map(str, parts)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
