"""Lines as code only: string literals, docstrings and comments blanked (columns kept), as Pygments reads
the file's language. ``d``/``r`` read names from what is left, so the words of a docstring (``Is this a
with_stmt line?``) or of a comment are never taken for the name meant.

A Markdown file keeps only its inline code spans and fenced blocks. A language Pygments does not
know is left as it is (the line-level rules of :mod:`aide_tui.core.search.linenames` still blank its
quoted strings and trailing comments).
"""

from __future__ import annotations

import re

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, String
from pygments.util import ClassNotFound

_FENCE = re.compile(r"\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]+`")


def _lexer(path: str, text: str, language: str | None = None) -> Lexer | None:
    options = {"stripnl": False, "stripall": False, "ensurenl": False, "tabsize": 0}
    try:
        if language:
            return get_lexer_by_name(language, **options)
        return get_lexer_for_filename(path, text, **options)
    except ClassNotFound:
        return None


def _blank(text: str) -> str:
    return "".join(c if c == "\n" else " " for c in text)


def code_only(path: str, lines: list[str], language: str | None = None) -> list[str]:
    """``lines`` (consecutive lines of ``path``, starting where its language's state is plain code: a
    chunk's first line) with what is not code blanked; as many lines as given, each as long.
    ``language``: lex as that language, not as the file name says (a notebook's cells)."""
    if not language and path.lower().endswith((".md", ".markdown", ".rst", ".txt")):
        return _markdown_code(lines)
    text = "\n".join(lines)
    lexer = _lexer(path, text, language)
    if lexer is None:
        return list(lines)
    out = "".join(_blank(v) if t in String or t in Comment else v for t, v in lexer.get_tokens(text))
    got = out.split("\n")
    if len(got) != len(lines) or any(len(a) != len(b) for a, b in zip(got, lines, strict=True)):
        return list(lines)  # a lexer that rewrote the text (tabs, line ends): trust the line-level rules
    return got


def _markdown_code(lines: list[str]) -> list[str]:
    """Prose blanked: only inline code spans and the lines of fenced blocks stay."""
    out: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            out.append(_blank(line))
        elif fenced:
            out.append(line)
        else:
            kept = [" "] * len(line)
            for m in _INLINE_CODE.finditer(line):
                kept[m.start() + 1 : m.end() - 1] = line[m.start() + 1 : m.end() - 1]
            out.append("".join(kept))
    return out
