"""Text from files, indexes and other people's records made safe to put on a terminal.

Two forms: :func:`printable` for names and messages (escaped as in Python source: ``\\x1b``) and
:func:`visible` for file contents shown as they are laid out (each control character becomes one visible
cell, so columns stay aligned). Either way no byte that a terminal acts on (ESC, BEL, CSI...) gets out.
"""

from __future__ import annotations

import re

# Characters a terminal acts on: C0 controls (tab excepted: it is expanded before display), DEL and the
# C1 controls (0x80-0x9f: 0x9b is a one-byte CSI, 0x9d a one-byte OSC on terminals that honour them).
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_PICTURES = {c: chr(0x2400 + c) for c in range(0x20) if c != 0x09}  # ␀ ... ␛ ... ␟
_PICTURES[0x7F] = "\u2421"  # ␡
_PICTURES.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})  # no pictures exist for C1


def printable(text: str) -> str:
    """``text`` with control characters escaped (a file name must never drive the terminal)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def printable_lines(text: str) -> str:
    """:func:`printable`, but line breaks and tabs stay (a model's answer, streamed to a terminal)."""
    return "\n".join("\t".join(map(printable, line.split("\t"))) for line in text.split("\n"))


def visible(text: str) -> str:
    """``text`` (a line of a file) with every character a terminal acts on shown instead: ␛ for ESC, ␇ for
    BEL, ␀ for NUL, ␡ for DEL (one cell each), ``\\x9b`` for a C1 control. Tabs are kept."""
    if _CONTROL.search(text) is None:
        return text
    return text.translate(_PICTURES)
