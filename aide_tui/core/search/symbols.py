"""``defs`` and ``refs``: where a name is defined and where it is used, from the store's symbol graph.

Precision first: every location is checked against the indexed text of its line (the name must stand
there as a whole word at that column), so a list never names a line that does not hold the name. A
name with several definitions is said to be ambiguous (references are found by name: a reference to
``send`` may be to any of them), and its definitions are listed in the order a reader most likely
means them: library code before examples, docs and scripts, and those before tests; within each,
classes and functions before variables and attributes (``class Session`` before ten ``Session =
sessionmaker(...)`` in ``examples/``). A qualified name (``Client.send``, ``cli.Command``) narrows the
definitions to those whose qualified name ends with it. Identifiers may be in any script Python
takes (``ñandú``, ``函数``, ``Ωmega``), compared as Python compares them (NFKC).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from aide_tui.core.filekinds import is_test_path
from aide_tui.core.model import Definition

if TYPE_CHECKING:  # the retriever (numpy) loads with a search, not with a served lookup
    from aide_tui.core.search.retriever import SymbolGraph

MAX_LOCATIONS = 500  # locations listed by default (the answer says how many were left out)
IDENT = r"(?:[^\W\d]|\$)[\w$]*"  # an identifier: a letter (any script), _ or $, then letters and digits
_QUALIFIED = re.compile(rf"\s*({IDENT}(?:(?:\.|::|#|->){IDENT})*)\s*")
# code that is not the library itself: examples, docs and scripts (tests come after them)
_SIDE_PATH = re.compile(
    r"(^|/)(examples?|samples?|demos?|docs?|documentation|benchmarks?|bench|scripts|tools|contrib)/"
)
VALUE_KINDS = frozenset({"variable", "attribute", "field", "property", "const", "let", "var"})
NO_GRAPH = "the symbol graph is kept by the local store only: defs and refs need store.backend = local"


@dataclass(frozen=True)
class Location:
    """A definition or a reference: file, 1-based line and column, the line's text, and what it is."""

    path: str
    line: int
    col: int
    text: str
    kind: str
    qualname: str = ""  # definitions: the dotted enclosing names
    end_line: int = 0  # definitions: the unit's last line

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "line": self.line, "col": self.col, "kind": self.kind,
                                  "text": self.text}  # fmt: skip
        if self.qualname:
            out.update(qualname=self.qualname, end_line=self.end_line)
        return out


@dataclass
class SymbolAnswer:
    """The answer of ``defs NAME`` (``what`` = "definitions") or ``refs NAME`` ("references"):
    ``locations`` are what was asked for (at most the limit of ``total``), ``definitions`` every
    definition of the name (a references answer names them too: more than one makes it ambiguous)."""

    name: str
    what: str
    locations: list[Location] = field(default_factory=list)
    definitions: list[Location] = field(default_factory=list)
    total: int = 0
    error: str | None = None

    @property
    def ambiguous(self) -> bool:
        """Whether the name has more than one definition."""
        return len(self.definitions) > 1

    @property
    def left_out(self) -> int:
        return self.total - len(self.locations)

    @property
    def note(self) -> str | None:
        """What a reader should know: the name is ambiguous, or nothing was found."""
        if self.error:
            return self.error
        if self.ambiguous:
            quals = distinct_definitions(self.definitions)
            shown = ", ".join(quals[:5]) + (", ..." if len(quals) > 5 else "")
            tail = (
                "; references are matched by name and may be to any of them"
                if self.what == "references"
                else ""
            )
            return f"{self.name} is ambiguous: {len(self.definitions)} definitions ({shown}){tail}"
        if not self.total:
            return f"no {self.what} of {self.name} in the index"
        return None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "ambiguous": self.ambiguous, "total": self.total,
                                  "left_out": self.left_out}  # fmt: skip
        if self.what == "references":
            out["definitions"] = [d.to_json() for d in self.definitions]
        out[self.what] = [loc.to_json() for loc in self.locations]
        if self.note:
            out["note"] = self.note
        if self.error:
            out["error"] = self.error
        return out


def distinct_definitions(defs: list[Location]) -> list[str]:
    """Definitions as a note names them: each qualified name once, ``×N`` when it is defined N times,
    with its kind when one name has several (``class Session, variable Session ×10``)."""
    counts: dict[tuple[str, str], int] = {}
    for d in defs:
        key = (d.qualname or d.text.strip(), d.kind)
        counts[key] = counts.get(key, 0) + 1
    names = [q for q, _ in counts]
    kinds = len(set(names)) < len(names)
    return [f"{f'{kind} ' if kinds else ''}{q}{f' ×{n}' if n > 1 else ''}" for (q, kind), n in counts.items()]


def definition_order(path: str, kind: str) -> tuple[int, int]:
    """How early a definition is listed: library code (0), then examples, docs and scripts (1), then
    tests (2); within each, classes and functions (0) before variables and attributes (1)."""
    where = 2 if is_test_path(path) else 1 if _SIDE_PATH.search(path) else 0
    return where, 1 if kind in VALUE_KINDS else 0


def split_name(text: str) -> tuple[str, list[str]] | None:
    """``Client.send`` → ("send", ["Client"]); None when ``text`` is not a (qualified) identifier.
    The name is NFKC-normalised, as Python reads identifiers."""
    m = _QUALIFIED.fullmatch(unicodedata.normalize("NFKC", text))
    if m is None:
        return None
    parts = [p for p in re.split(r"\.|::|#|->", m.group(1)) if p]
    return parts[-1], parts[:-1]


def _qualifies(qualname: str, path: str, qualifier: list[str]) -> bool:
    """Whether a definition's qualified name (or its file's module path) ends with ``qualifier``."""
    if not qualifier:
        return True
    chain = qualname.split(".")[:-1]
    if chain[-len(qualifier) :] == qualifier:
        return True
    module = path.rsplit(".", 1)[0].replace("\\", "/").split("/")
    return [*module, *chain][-len(qualifier) :] == qualifier


def _word_at(text: str | None, name: str, col: int) -> TypeGuard[str]:
    """Whether ``text`` holds ``name`` as a whole word at 1-based column ``col``."""
    if text is None or text[col - 1 : col - 1 + len(name)] != name:
        return False
    before = text[col - 2] if col >= 2 else " "
    after = text[col - 1 + len(name) : col + len(name)]
    return not (before.isalnum() or before in "_$") and not (after[:1].isalnum() or after[:1] in ("_", "$"))


def _matching_definitions(g: SymbolGraph, name: str, qualifier: list[str]) -> list[tuple[str, Definition]]:
    """Definitions of ``name`` (exact case, else any case) that the qualifier admits."""
    for exact in (True, False):
        found = [(p, d) for p, d in g.definitions(name, exact) if _qualifies(d.qualname, p, qualifier)]
        if found:
            return found
    return []


def _definition_locations(g: SymbolGraph, name: str, qualifier: list[str]) -> list[Location]:
    """The definitions of ``name`` that the qualifier admits, each checked against its line, in
    :func:`definition_order` (stable: the graph's order within each rank)."""
    found = [
        Location(p, d.line, d.col, t, d.kind, d.qualname, d.end_line)
        for p, d in _matching_definitions(g, name, qualifier)
        if _word_at(t := g.line_text(p, d.line), d.name, d.col)
    ]
    return sorted(found, key=lambda loc: definition_order(loc.path, loc.kind))


def _answer(g: SymbolGraph | None, text: str, kind: str) -> tuple[SymbolAnswer, str | None]:
    """The answer for ``text`` with its definitions found, and the name looked up (None: the answer
    says why there is nothing to look up)."""
    ans = SymbolAnswer(text.strip(), kind)
    split = split_name(text)
    if g is None or split is None:
        ans.error = NO_GRAPH if g is None else f"not an identifier: {text.strip()!r}"
        return ans, None
    name, qualifier = split
    ans.definitions = _definition_locations(g, name, qualifier)
    return ans, name


def find_definitions(g: SymbolGraph | None, text: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
    """Where ``text`` (a name, or a qualified name) is defined."""
    ans, _ = _answer(g, text, "definitions")
    ans.total = len(ans.definitions)
    ans.locations = ans.definitions[: max(limit, 0)]
    return ans


def find_references(g: SymbolGraph | None, text: str, limit: int = MAX_LOCATIONS) -> SymbolAnswer:
    """Where ``text``'s name is used (calls, imports, attribute uses, names), its definitions named."""
    ans, name = _answer(g, text, "references")
    if g is None or name is None:
        return ans
    if ans.definitions and not any(d.text[d.col - 1 :].startswith(name) for d in ans.definitions):
        name = ans.definitions[0].text[ans.definitions[0].col - 1 :][: len(name)]  # found in another case
    locs = [
        Location(p, r.line, r.col, t, r.kind)
        for p, r in g.references(name, True)
        if _word_at(t := g.line_text(p, r.line), r.name, r.col)
    ]
    ans.total = len(locs)
    ans.locations = locs[: max(limit, 0)]
    return ans


@dataclass(frozen=True)
class NameFacts:
    """What the graph knows of one name: how a definition spells it (as asked when one does, else the
    first other-case spelling; None: no definition) and whether anything refers to it as spelled."""

    spelled: str | None
    referenced: bool


@dataclass
class LineSymbols:
    """The names defined on one line of a file (the graph's own definitions there, in column order) and
    the facts of the names asked about; ``error``: why there is no graph to ask."""

    defines: list[str] = field(default_factory=list)
    facts: dict[str, NameFacts] = field(default_factory=dict)
    error: str | None = None


def find_line_symbols(g: SymbolGraph | None, path: str, line: int, names: Iterable[str]) -> LineSymbols:
    """What ``d``/``r`` need to choose a name on ``path``'s line ``line``: the names defined there and,
    for each of ``names``, its :class:`NameFacts` (cheap: no line of text is read)."""
    if g is None:
        return LineSymbols(error=NO_GRAPH)
    here = sorted((d for d in g.definitions_in(path) if d.line == line), key=lambda d: d.col)
    out = LineSymbols(defines=list(dict.fromkeys(d.name for d in here)))
    for name in dict.fromkeys(names):
        norm = unicodedata.normalize("NFKC", name)
        exact = g.definitions(norm, True)
        other = [] if exact else g.definitions(norm, False)
        spelled = name if exact else (other[0][1].name if other else None)
        used = norm if exact or not other else other[0][1].name  # find_references goes by their spelling
        out.facts[name] = NameFacts(spelled, g.has_references(used, True))
    return out
