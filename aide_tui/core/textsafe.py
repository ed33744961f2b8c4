"""Text from files, indexes and other people's records made safe to put on a terminal."""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with control characters escaped (a file name must never drive the terminal)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def printable_lines(text: str) -> str:
    """:func:`printable`, but line breaks and tabs stay (a model's answer, streamed to a terminal)."""
    return "\n".join("\t".join(map(printable, line.split("\t"))) for line in text.split("\n"))
