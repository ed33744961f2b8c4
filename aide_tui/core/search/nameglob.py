"""A name pattern asked for: ``*Transport``, ``test_*redirect*``, ``g?t_*``, ``Async*Client``.

A query of one word with ``*`` (any run of characters of a name) or ``?`` (one) lists the definitions whose
names match it, as ``fd`` and ``rg -g`` users write a name they half remember. Without it the wildcard
was dropped and ``*Transport`` searched for the word ``transport``. Smart case, as ripgrep's: a
pattern with an upper-case letter matches in that case first (``*Transport`` ranks ``HTTPTransport``
before ``_init_transport``), one in lower case matches any case alike. A word being typed matches as if
it ended with ``*``. A Python star argument (``*args``, ``**kwargs``) is not a pattern, nor is a word
with a question mark at its end (``timeout?``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from aide_tui.core.filekinds import is_test_path
from aide_tui.core.model import Definition
from aide_tui.core.search.retriever import Candidate, Retrieval, SymbolGraph, TermStats

_GLOB = re.compile(r"[\w$*?]{2,200}")  # one word of name characters and wildcards
# f(*args, **kwargs): any ``**name``, and ``*name`` for the names star arguments usually have
_STAR_ARGUMENT = re.compile(
    r"\*\*[a-z_][a-z0-9_]*|\*(?:args|argv|arguments|params|parameters|rest|others|extra|extras|items|values"
    r"|vals|a|xs|kw|kwargs|kwds|options|opts)"
)
# a C or C++ pointer type (``char*``, ``const_iterator*`` are written with the star after the type)
_POINTER = re.compile(
    r"(?:char|int|void|long|short|float|double|unsigned|signed|bool|auto|size_t|ssize_t|wchar_t|u?int\d+_t"
    r"|FILE|PyObject)\*+"
)
MIN_LITERAL = 2  # name characters a pattern needs (``*`` alone, or ``a*``, asks for nothing)
MIN_INNER_LITERAL = 3  # ... one that starts with a wildcard (every name is searched for them)
MAX_GLOB_NAMES = 1000  # matching names whose definitions may be looked up, the shortest first
NAMES_AT_ONCE = 100  # names whose definitions are looked up together
MAX_MEMBERS = 1000  # members a members pattern (``Client.*``) looks for the chunks of
# kinds of definition that have members (not a function, whose nested definitions are its locals)
TYPE_KINDS = frozenset("class struct interface type trait enum impl module namespace object record".split())
# ``Owner.pattern``: a name (dotted or not), a dot, a pattern of name characters and wildcards
_MEMBERS = re.compile(r"([A-Za-z_$][\w$]{0,200}(?:\.[A-Za-z_$][\w$]{0,200}){0,8})\.([\w$*?]{1,200})")
# kinds of definition that label a row as they do a chunk (``class A > def b``); others by their name
UNIT_KINDS = frozenset(
    "function method class def func fn fun struct interface type trait enum impl module namespace".split()
)

K = TypeVar("K")


@dataclass(frozen=True)
class NameGlob:
    """A name pattern: what was written, its literal start (lower case: where the names' dictionary is
    read from) and the pattern in any case and in the case written (any case for one in lower case)."""

    text: str  # as written (a word being typed: without the ``*`` it matches as if it ended with)
    prefix: str
    needle: str  # its longest run of name characters, lower case: what every name it matches holds
    any_case: re.Pattern[str]
    as_written: re.Pattern[str]


def name_glob(text: str, typing: bool = False) -> NameGlob | None:
    """The name pattern ``text`` is (None for any other query); ``typing``: its last word is still being
    typed, so it matches as if it ended with ``*``."""
    word = text.strip()
    wild = "*" in word or "?" in word.rstrip("?")  # a word's last ``?`` asks a question (``timeout?``)
    if not _GLOB.fullmatch(word) or not wild or _STAR_ARGUMENT.fullmatch(word) or _POINTER.fullmatch(word):
        return None
    if _literal(word) < (MIN_LITERAL if word[0] not in "*?" else MIN_INNER_LITERAL):
        return None
    return _compiled(word + ("*" if typing and not word.endswith("*") else ""), word)


def _literal(pattern: str) -> int:
    """The name characters of a pattern (its wildcards aside)."""
    return sum(c not in "*?" for c in pattern)


def _compiled(pattern: str, written_as: str) -> NameGlob:
    """``pattern`` as a :class:`NameGlob` (``written_as``: what the query wrote of it)."""
    low = pattern.lower()  # the names are stored lower-cased (``İ`` is two characters then)
    literal = re.split(r"[*?]", low)
    # fnmatch's patterns use atomic groups: no backtracking blow-up on ``*a*a*a*a*b``
    any_case = re.compile(fnmatch.translate(low), re.IGNORECASE)
    written = re.compile(fnmatch.translate(pattern)) if pattern != low else any_case
    return NameGlob(written_as, literal[0], max(literal, key=len), any_case, written)


@dataclass(frozen=True)
class MemberGlob:
    """A pattern of the members of a named type (``Client.*``, ``Client.get_*``): what was written, the
    owner's last name as written, and the pattern of the member's own name (a name pattern when it
    holds enough name characters to look the names up by: then members in any file are found)."""

    text: str
    owner: str
    member: NameGlob


def member_glob(text: str, typing: bool = False) -> MemberGlob | None:
    """The members pattern ``text`` is: a name (``Client``, ``pkg.Client``) and a dot, then a pattern
    with a wildcard (None for any other query; ``*.py`` or ``test_*.py`` name no owner); ``typing``: its
    last word is still being typed, and a pattern matches as if it ended with ``*``."""
    m = _MEMBERS.fullmatch(text.strip())
    if m is None:
        return None
    pattern = m.group(2)
    if not ("*" in pattern or "?" in pattern.rstrip("?")):
        return None  # (a dotted name being typed is completed as any word)
    member = _compiled(pattern + ("*" if typing and not pattern.endswith("*") else ""), pattern)
    return MemberGlob(text.strip(), m.group(1).rsplit(".", 1)[-1], member)


def _owner_of(qualname: str) -> str:
    """The type a qualified name's last part belongs to: ``Client`` of ``Client.send``, of
    ``Outer.Client.send``, of ``Client.prototype.get`` (JavaScript) and ``Display for Client.fmt`` (a
    Rust impl); '' for a module-level name."""
    parent = qualname.rpartition(".")[0].removesuffix(".prototype")
    words = parent.rpartition(".")[2].split()
    return words[-1] if words else ""


@dataclass(frozen=True)
class AskedPattern:
    """A name pattern a query is, and the names it matches (lower case, the shortest first); or the
    members of a definition a members pattern matches (their files and definitions)."""

    glob: NameGlob | MemberGlob
    names: list[str]
    members: list[tuple[str, Definition]]


def asked_pattern(
    text: str, typing: bool, stats: TermStats | None, graph: Callable[[], SymbolGraph | None]
) -> AskedPattern | None:
    """The name pattern ``text`` is and the names it matches, or the members pattern and the members it
    matches (``graph`` is read only then); None when it is no pattern or matches nothing (the query is
    then read as any other: a word being typed is completed)."""
    if stats is None:
        return None
    glob = name_glob(text, typing)
    if glob is not None:
        names = stats.names_matching(glob.prefix, glob.needle, glob.any_case, MAX_GLOB_NAMES)
        return AskedPattern(glob, names, []) if names else None
    members = member_glob(text, typing)
    g = graph() if members is not None else None
    if members is None or g is None:
        return None
    found = _members(g, stats, members)
    return AskedPattern(members, [], found) if found else None


def _members(graph: SymbolGraph, stats: TermStats, glob: MemberGlob) -> list[tuple[str, Definition]]:
    """(file, definition) of the members ``glob`` matches, at most ``MAX_MEMBERS``, wherever they are
    defined (a Go method, a Rust impl, a JavaScript prototype's function apart from its type): the
    definitions of the member names it matches when its pattern holds at least ``MIN_LITERAL`` name
    characters; else, when a type (a class, a struct...) is named like the owner, every definition
    whose qualified name is under the owner's name (``utils.*`` of an object or a file names none).
    Not the definitions inside a function's body (its locals)."""
    owner, member = glob.owner.lower(), glob.member
    owners = graph.definitions(glob.owner, False)
    bodies = {(p, d.qualname): (d.line, d.end_line) for p, d in owners if d.kind not in TYPE_KINDS}
    if _literal(member.text) >= MIN_LITERAL:
        names = stats.names_matching(member.prefix, member.needle, member.any_case, MAX_GLOB_NAMES)
        pairs: Iterable[tuple[str, Definition]] = (
            pd for name in names for pd in graph.definitions(name, False)
        )
    elif any(d.kind in TYPE_KINDS for _, d in owners):
        pairs = graph.definitions_under(glob.owner)
    else:
        return []
    out: list[tuple[str, Definition]] = []
    for path, d in pairs:
        body = bodies.get((path, d.qualname.rpartition(".")[0]))
        if body is not None and body[0] <= d.line <= body[1]:
            continue  # a function's local (a prototype's function assigned after it is a member)
        if _owner_of(d.qualname).lower() == owner and member.any_case.fullmatch(d.name):
            out.append((path, d))
            if len(out) >= MAX_MEMBERS:
                break
    return out


@dataclass
class PatternList(Generic[K]):
    """The chunks defining the names a pattern matches, in its order; the lines of the definition each
    was found by; and the label of those that are no function or class (``USER_AGENT``, a JSON key)."""

    keys: list[K]
    lines: dict[K, tuple[int, int]]
    labels: dict[K, str]


def glob_list(r: Retrieval[K], graph: SymbolGraph | None, asked: AskedPattern, limit: int) -> PatternList[K]:
    """Chunks defining a name ``glob`` matches: a name in the case written first, source before tests,
    then the shorter names (the closest to what is asked), then by BM25; with the lines of the
    definition each was found by (a chunk is labelled by its first definition, and may hold several),
    from ``graph``."""
    glob, names = asked.glob, asked.names
    if isinstance(glob, MemberGlob):
        return _member_list(r, asked.members, glob, limit)
    ranked: dict[K, tuple[int, int, int, str]] = {}
    best = 0
    for i in range(0, len(names), NAMES_AT_ONCE):  # the shortest first
        batch = names[i : i + NAMES_AT_ONCE]
        defs = r.defining(batch)
        for name in batch:
            for k in defs.get(name, ()):
                written = 0 if _as_written(r.defines(k), name, glob) else 1
                key = (written, 1 if is_test_path(r.path(k)) else 0, len(name), name)
                if k not in ranked or key < ranked[k]:
                    best += key[:2] == (0, 0) and ranked.get(k, (1,))[:2] != (0, 0)
                    ranked[k] = key
        if best >= limit:  # ``limit`` source chunks define a name as written: a longer name cannot pass
            break
    keys = sorted(ranked, key=lambda k: (ranked[k], -r.score(k), r.order(k)))[:limit]
    found = {k: _defined_at(r.chunk(k), graph, glob, ranked[k][3]) for k in keys} if graph is not None else {}
    return _listed(keys, found)


def _listed(keys: list[K], found: dict[K, Definition | None]) -> PatternList[K]:
    """The pattern list of ``keys``, each with the lines of the definition it was found by (``found``),
    labelled by it when it is no function or class."""
    out = PatternList(keys, {}, {})
    for k in keys:
        d = found.get(k)
        if d is not None:
            out.lines[k] = d.line, d.end_line
            if d.kind not in UNIT_KINDS:
                out.labels[k] = d.qualname
    return out


def _cut_to(d: Definition, c: Candidate) -> Definition:
    """``d`` with its last line no further than chunk ``c``'s (and not before its own line)."""
    return replace(d, end_line=min(max(d.end_line, d.line), c.end_line))


def _as_written(defined: tuple[str, ...], name: str, glob: NameGlob) -> bool:
    """Whether a chunk defines ``name`` (lower case) in the case ``glob`` is written in."""
    lasts = (d.rsplit(".", 1)[-1] for d in defined)
    return any(last.lower() == name and glob.as_written.fullmatch(last) for last in lasts)


def _defined_at(c: Candidate, graph: SymbolGraph, glob: NameGlob, name: str) -> Definition | None:
    """The definition of ``name`` (lower case) in chunk ``c``, the one in the case ``glob`` is written
    in first, its last line cut to the chunk's (None when the graph has none there)."""
    inside = [
        d for path, d in graph.definitions(name, False)
        if path == c.path and c.start_line <= d.line <= c.end_line
    ]  # fmt: skip
    if not inside:
        return None
    return _cut_to(min(inside, key=lambda d: (not glob.as_written.fullmatch(d.name), d.line)), c)


def _member_list(
    r: Retrieval[K], members: list[tuple[str, Definition]], glob: MemberGlob, limit: int
) -> PatternList[K]:
    """The chunks holding the members a members pattern matched: those in the case written first,
    source before tests, then in each file's order; each with its member's lines and, for one that is
    no function or class, its label."""
    by_file: dict[str, list[Definition]] = {}
    for path, d in members:
        by_file.setdefault(path, []).append(d)
    ranked: dict[K, tuple[int, int, str, int]] = {}
    found: dict[K, Definition | None] = {}
    for path, defs in by_file.items():
        keys = r.all_in_files([path])
        r.fetch(keys)
        chunks = [(r.chunk(k), k) for k in keys]
        test = 1 if is_test_path(path) else 0
        for d in defs:
            holding = [(c, k) for c, k in chunks if c.start_line <= d.line <= c.end_line]
            if not holding:
                continue
            c, k = min(holding, key=lambda ck: ck[0].end_line - ck[0].start_line)
            written = _owner_of(d.qualname) == glob.owner and glob.member.as_written.fullmatch(d.name)
            key = (0 if written else 1, test, path, d.line)
            if k not in ranked or key < ranked[k]:
                ranked[k] = key
                found[k] = _cut_to(d, c)
    return _listed(sorted(ranked, key=lambda k: ranked[k])[:limit], found)
