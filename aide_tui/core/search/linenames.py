"""Which names on a line the app looks up when asked for a definition (``d``) or references (``r``).

A line's identifiers outside strings and comments, less keywords (and ``self``/``this``), ordered by
what a reader most likely means: a name that matches a query term first, then a called name, then
the rest in reading order. The words of strings, docstrings and comments are never candidates (the
app blanks them with its lexer first; here a line's own quoted strings and trailing comment are). A
line that defines a name (``def send(``, ``class Client``) keeps that name apart: the definition is
the line itself, so ``d`` looks at the other names and ``r`` takes it (the app also asks the symbol
graph what the line defines: ``Session = sessionmaker(...)`` defines ``Session``). The caller keeps
the first candidate the symbol graph knows.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from aide_tui.core.search.hitlines import NAMED_DEFINITION, term_spans

MAX_CANDIDATES = 8  # names asked of the graph, at most, for one line

_IDENT = re.compile(r"(?:[^\W\d]|\$)[\w$]*")  # any script's letters (ñandú, 函数)
_STRING = re.compile(r"""[rbfuRBFU]{0,2}("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?)""")
_COMMENT = re.compile(r"(?:^|\s)(?:#|//|--\s).*$")
_OTHER_KEYWORDS = """
    self cls this super function func fn let var const new typeof instanceof void delete extends
    implements interface enum struct impl trait pub mut use mod package public private protected static
    final abstract export default switch case do then end elif fi done esac match type go chan defer
    select string int float bool byte true false null nil undefined
"""
KEYWORDS = frozenset([*keyword.kwlist, *keyword.softkwlist, *_OTHER_KEYWORDS.split()])


@dataclass(frozen=True)
class LineNames:
    """The names of one line worth looking up, best first, and the name the line defines (if any)."""

    candidates: list[str]
    defines: str | None = None


def _code_only(line: str) -> str:
    """``line`` with string literals and a trailing comment blanked (columns kept)."""
    blanked = _STRING.sub(lambda m: " " * len(m.group()), line)
    return _COMMENT.sub(lambda m: " " * len(m.group()), blanked)


def matches_terms(name: str, terms: list[str]) -> bool:
    """Whether identifier ``name`` is a query term or holds one (``parse`` in ``parse_header``)."""
    return bool(terms) and bool(term_spans(name, terms))


def line_names(line: str, terms: list[str] | None = None) -> LineNames:
    """The names on ``line`` in the order to try them (see the module docstring); ``terms``: the query's
    terms, as the index folds them."""
    wanted = [t.lower() for t in terms or [] if t]
    named = NAMED_DEFINITION.match(line)
    defines = named.group(2) if named else None
    code = _code_only(line)
    seen: dict[str, tuple[int, int, int]] = {}
    for m in _IDENT.finditer(code):
        name = m.group()
        if name in KEYWORDS or name == defines or name in seen or name.strip("$_").isdigit():
            continue
        called = code[m.end() :].lstrip().startswith("(")
        seen[name] = (0 if matches_terms(name, wanted) else 1, 0 if called else 1, m.start())
    ordered = sorted(seen, key=lambda n: seen[n])
    return LineNames(ordered, defines)
