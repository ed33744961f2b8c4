"""``d`` and ``r`` without Textual: from the line the preview shows, the name each key takes and then the
definitions or the references of that name, as rows for the results list (the screen runs
:func:`choose` and :func:`look_up` in workers).

The line comes as code only (its strings, docstrings and comments blanked: :mod:`aide_tui.tui.codelines`)
and its names are tried in :func:`~aide_tui.core.search.linenames.line_names`'s order. The symbol graph
says what the line itself defines (``def send(``, but also ``Session = sessionmaker(...)``):

- ``d`` takes the first other name defined as spelled, else the first defined in another case (prose:
  "the client" → ``Client``); on a line that defines only its own name it says so;
- ``r`` takes the name the line defines (a definition's references are what ``r`` there means), else
  the name ``d`` would take, else the first name with any references.

:func:`choose` gives the name before the key is pressed (the footer shows it), and :func:`look_up` with
that name lists exactly its places, so what the footer says is what the key does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from aide_tui.core.errors import IndexMissing, IndexProblem
from aide_tui.core.search.linenames import MAX_CANDIDATES, line_names, matches_terms
from aide_tui.core.search.response import Hit
from aide_tui.core.search.symbols import NO_GRAPH, LineSymbols, Location, SymbolAnswer

Find = Callable[[str, int], SymbolAnswer]  # (name, limit) -> answer: Workspace.definitions / references
OnLine = Callable[[str, int, list[str]], LineSymbols]  # (path, line, names): Workspace.line_symbols
LIMIT = 500  # places listed at most (the status line says when more were left out)
NO_GRAPH_SHORT = "definitions and references need the local store (store.backend = local)"


@dataclass(frozen=True)
class Line:
    """The line ``d``/``r`` read: its file, number, code (strings and comments blanked) and the query's
    terms (a name that matches one is tried first)."""

    path: str
    number: int
    code: str
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """The name a key takes on a line, or ``problem``: why it takes none. ``defined_here``: the name is
    defined on that very line (``r`` then says so when nothing refers to it)."""

    what: str  # definitions | references
    name: str | None = None
    problem: str | None = None
    defined_here: bool = False


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


def _places(ans: SymbolAnswer, name: str, here: str) -> Places:
    """Rows for ``ans``; the definitions in the file the lookup was made from first (a local helper is the
    one meant there), then in the answer's order."""
    what = ans.what
    locations = ans.locations
    if what == "definitions":
        locations = sorted(locations, key=lambda loc: loc.path != here)
    hits = [place_hit(loc, name, what) for loc in locations]
    if what == "definitions":
        labels: list[str | None] = [f"{loc.kind} {loc.qualname or name}" for loc in locations]
        n = len(hits)
        summary = f"definition of {name}" if n == 1 else f"{n} definitions of {name} (ambiguous)"
    else:
        labels = [loc.text.strip() for loc in locations]
        summary = f"{ans.total} reference{'' if ans.total == 1 else 's'} of {name}"
        if ans.ambiguous:
            summary += f" · ambiguous: {len(ans.definitions)} definitions"
    if ans.left_out:
        summary += f" · first {len(hits)} listed"
    return Places(what, name, hits, labels, summary)


def _problem(what: str, reason: str) -> Places:
    return Places(what, problem=NO_GRAPH_SHORT if reason == NO_GRAPH else reason)


def _tried(names: list[str]) -> str:
    return ", ".join(names[:4]) + (", …" if len(names) > 4 else "")


def _guarded(what: str, run: Callable[[], Places]) -> Places:
    """``run()``; a missing or unreadable index, or any failure, becomes a ``problem`` (never raises)."""
    try:
        return run()
    except IndexMissing:
        return _problem(what, "no index yet: indexing…")
    except IndexProblem as exc:
        return _problem(what, str(exc))
    except Exception as exc:  # noqa: BLE001 - said on the status line; the app goes on
        return _problem(what, f"lookup failed: {exc.__class__.__name__}: {exc}")


def choices(line: Line, on_line: OnLine) -> tuple[Choice, Choice]:
    """The names ``d`` and ``r`` take on ``line`` (one question to the symbol graph); a missing or
    unreadable index is each one's ``problem``."""
    try:
        names = line_names(line.code, list(line.terms))
        asked = [*names.candidates[:MAX_CANDIDATES], *([names.defines] if names.defines else [])]
        symbols = on_line(line.path, line.number, asked)
    except IndexMissing:
        return _refused("no index yet: indexing…")
    except IndexProblem as exc:
        return _refused(str(exc))
    except Exception as exc:  # noqa: BLE001 - said on the status line; the app goes on
        return _refused(f"lookup failed: {exc.__class__.__name__}: {exc}")
    if symbols.error:
        return _refused(NO_GRAPH_SHORT if symbols.error == NO_GRAPH else symbols.error)
    defines = symbols.defines or ([names.defines] if names.defines else [])
    others = [n for n in names.candidates if n not in defines][:MAX_CANDIDATES]
    return _for_definition(others, defines, symbols), _for_references(others, defines, line, symbols)


def _refused(reason: str) -> tuple[Choice, Choice]:
    return Choice("definitions", problem=reason), Choice("references", problem=reason)


def _for_definition(names: list[str], defines: list[str], symbols: LineSymbols) -> Choice:
    here = f"{defines[0]} is defined on this line (r: its references)" if defines else ""
    if not names:
        return Choice("definitions", problem=here or "no name to look up on this line")
    facts = [(n, symbols.facts.get(n)) for n in names]
    exact = next((n for n, f in facts if f is not None and f.spelled == n), None)
    other = next((f.spelled for _, f in facts if f is not None and f.spelled), None)
    if exact or other:
        return Choice("definitions", exact or other)
    why = f"no definition of {_tried(names)} in the index" + (f"; {here}" if here else "")
    return Choice("definitions", problem=why)


def _for_references(names: list[str], defines: list[str], line: Line, symbols: LineSymbols) -> Choice:
    if defines:
        matching = [n for n in defines if matches_terms(n, list(line.terms))]
        return Choice("references", (matching or defines)[0], defined_here=True)
    if not names:
        return Choice("references", problem="no name to look up on this line")
    facts = [(n, symbols.facts.get(n)) for n in names]
    exact = next((n for n, f in facts if f is not None and f.spelled == n), None)
    used = next((f.spelled or n for n, f in facts if f is not None and f.referenced), None)
    if exact or used:
        return Choice("references", exact or used)
    return Choice("references", problem=f"no references of {_tried(names)} in the index")


def look_up(choice: Choice, line: Line, definitions: Find, references: Find) -> Places:
    """The places of ``choice``'s name (from :func:`choices`), as rows; never raises."""
    what = choice.what
    name = choice.name
    if name is None:
        return _problem(what, choice.problem or "no name to look up on this line")

    def run() -> Places:
        ans = (definitions if what == "definitions" else references)(name, LIMIT)
        if ans.error:
            return _problem(what, ans.error)
        if what == "definitions" and not ans.total:
            return _problem(what, f"no definition of {name} in the index")
        if what == "references" and not ans.total:
            here = (line.path, line.number)
            at = next((d for d in ans.definitions if choice.defined_here and (d.path, d.line) == here), None)
            d = at or (ans.definitions[0] if ans.definitions else None)
            where = f" (defined at {d.path}:{d.line})" if d is not None else ""
            return _problem(what, f"no references of {name} in the index{where}")
        return _places(ans, name, line.path)

    return _guarded(what, run)
