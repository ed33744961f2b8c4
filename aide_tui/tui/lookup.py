"""``d`` and ``r`` without Textual: from the line the preview shows, the definition or the references of
the name meant there, as rows for the results list (the screen runs :func:`look_up` in a worker).

The name is the first of :func:`~aide_tui.core.search.linenames.line_names`'s candidates that the
symbol graph knows: ``d`` takes the first with a definition; ``r`` the same name (on a line that
defines a name: a query-term name, else that one), else the first name with any references.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from aide_tui.core.errors import IndexMissing, IndexProblem
from aide_tui.core.search.linenames import line_names
from aide_tui.core.search.response import Hit
from aide_tui.core.search.symbols import NO_GRAPH, Location, SymbolAnswer

Find = Callable[[str, int], SymbolAnswer]  # (name, limit) -> answer: Workspace.definitions / references
LIMIT = 500  # places listed at most (the status line says when more were left out)
NO_GRAPH_SHORT = "definitions and references need the local store (store.backend = local)"


@dataclass
class Places:
    """What ``d``/``r`` found: rows (one-line hits at each place) with their labels and the status line's
    summary; or ``problem``: why nothing changes."""

    what: str  # definitions | references
    name: str = ""
    hits: list[Hit] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    summary: str = ""
    problem: str | None = None


def place_hit(loc: Location, name: str, what: str) -> Hit:
    """A one-line row at ``loc``; the preview lands there, titled "definition of NAME", the name marked."""
    title = f"definition of {name}" if what == "definitions" else f"reference to {name}"
    return Hit(path=loc.path, start_line=loc.line, end_line=loc.line, score=0.0, symbol=title, language="",
               ranks={}, query_terms=[name.lower()], text=loc.text)  # fmt: skip


def _places(ans: SymbolAnswer, name: str) -> Places:
    what = ans.what
    hits = [place_hit(loc, name, what) for loc in ans.locations]
    if what == "definitions":
        labels: list[str | None] = [f"{loc.kind} {loc.qualname or name}" for loc in ans.locations]
        n = len(hits)
        summary = f"definition of {name}" if n == 1 else f"{n} definitions of {name} (ambiguous)"
    else:
        labels = [loc.text.strip() for loc in ans.locations]
        summary = f"{ans.total} reference{'' if ans.total == 1 else 's'} of {name}"
        if ans.ambiguous:
            summary += f" · ambiguous: {len(ans.definitions)} definitions"
    if ans.left_out:
        summary += f" · first {len(hits)} listed"
    return Places(what, name, hits, labels, summary)


def _problem(what: str, reason: str) -> Places:
    return Places(what, problem=NO_GRAPH_SHORT if reason == NO_GRAPH else reason)


def look_up(what: str, line: str, terms: list[str], definitions: Find, references: Find) -> Places:
    """The definitions (``what`` = "definitions") or references of the name meant on ``line``; never
    raises (a missing or unreadable index is a ``problem``)."""
    try:
        return _look_up(what, line, terms, definitions, references)
    except IndexMissing:
        return _problem(what, "no index yet: indexing…")
    except IndexProblem as exc:
        return _problem(what, str(exc))
    except Exception as exc:  # noqa: BLE001 - said on the status line; the app goes on
        return _problem(what, f"lookup failed: {exc.__class__.__name__}: {exc}")


def _spelled(ans: SymbolAnswer, name: str) -> str | None:
    """The name as its definitions spell it: ``name`` itself when one does, else (the graph matched in
    another case: ``client`` → ``Client``) the first one's spelling; None without definitions."""
    spellings = [d.text[d.col - 1 : d.col - 1 + len(name)] for d in ans.definitions]
    return name if name in spellings else (spellings[0] if spellings else None)


def _tried(names: list[str]) -> str:
    return ", ".join(names[:4]) + (", …" if len(names) > 4 else "")


def _look_up(what: str, line: str, terms: list[str], definitions: Find, references: Find) -> Places:
    names = line_names(line, terms)
    here = f"{names.defines} is defined on this line (r: its references)" if names.defines else ""
    if what == "definitions":
        candidates = names.for_definition()
        if not candidates:
            return _problem(what, here or "no name to look up on this line")
        return _first_definition(candidates, definitions) or _problem(
            what, f"no definition of {_tried(candidates)} in the index" + (f"; {here}" if here else "")
        )
    candidates = names.for_references(terms)
    if not candidates:
        return _problem(what, "no name to look up on this line")
    return _first_references(candidates, references) or _problem(
        what, f"no references of {_tried(candidates)} in the index"
    )


def _first_definition(candidates: list[str], definitions: Find) -> Places | None:
    """The definitions of the first candidate defined as spelled, else of the first defined in another
    case (prose: "the client" → ``Client``)."""
    other_case: Places | None = None
    for name in candidates:
        ans = definitions(name, LIMIT)
        if ans.error:
            return _problem("definitions", ans.error)
        spelled = _spelled(ans, name)
        if spelled == name:
            return _places(ans, name)
        if spelled is not None and other_case is None:
            other_case = _places(ans, spelled)
    return other_case


def _first_references(candidates: list[str], references: Find) -> Places | None:
    """The references of the name ``d`` would take (the first defined as spelled), else of the first
    name with any references (an imported module, a name defined in another case)."""
    fallback: Places | None = None
    for name in candidates:
        ans = references(name, LIMIT)
        if ans.error:
            return _problem("references", ans.error)
        spelled = _spelled(ans, name)
        if spelled == name:
            if not ans.total:
                d = ans.definitions[0]
                return _problem("references", f"no references of {name} in the index (defined at "
                                f"{d.path}:{d.line})")  # fmt: skip
            return _places(ans, name)
        if ans.total and fallback is None:
            fallback = _places(ans, spelled or name)
    return fallback
