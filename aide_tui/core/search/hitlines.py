"""The best line of a hit: where the preview lands, what ``e``/``y`` open and what ``--format vimgrep``
prints.

For a lexical hit it is the chunk line that matches the most (and the rarest) query terms; for a hit
without term matches (dense only) it is the line that defines the chunk's symbol, else its first line
with code. Matching uses the index's own tokenizer, so ``parse`` meets ``parse_header``/``parsing``.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from aide_tui.core.labels import go_receiver_type
from aide_tui.core.textsafe import printable
from aide_tui.core.tokens import CAMEL_PARTS, IDENTIFIER, fold

_SPLIT = re.compile(r"[._]")
_DEFINING = "def|class|fn|func|function|struct|enum|interface|trait|type|impl|const|let|var"
_DEFINES = re.compile(rf"\s*(?:(?:pub|export|async|static|public|private)\s+)*(?:{_DEFINING})\b")


@dataclass(frozen=True)
class BestLine:
    """A line of a hit (1-based file line), its first matching column (1-based) and its matches."""

    line: int
    column: int
    matched: tuple[str, ...] = ()


def _part_spans(word: str, start: int) -> Iterable[tuple[int, int, str]]:
    """Sub-words of an identifier with their positions: ``parse_header`` → parse, header."""
    pos = 0
    for piece in _SPLIT.split(word):
        at = word.index(piece, pos) if piece else pos
        pos = at + len(piece)
        for m in CAMEL_PARTS.finditer(piece):
            yield start + at + m.start(), start + at + m.end(), m.group()


def term_spans(line: str, terms: Iterable[str]) -> list[tuple[int, int, str]]:
    """``(start, end, term)`` of every query term in ``line`` (0-based character offsets).

    A whole identifier that is a query term (``parse_header``) is one span; otherwise its parts that
    fold to a query term are (``header`` in ``parse_header``, ``render`` in ``renderPage``).
    """
    wanted = {t.lower() for t in terms if t}
    low_line = line.lower()
    # a term is its word's folded form, and folding only drops a suffix (or turns -ies into -y): a
    # line holds each term it matches, less its last letter, as a substring (a cheap first test)
    if not any((t[:-1] if len(t) > 4 else t) in low_line for t in wanted):
        return []
    return _spans(line, wanted)


def _spans(line: str, wanted: set[str]) -> list[tuple[int, int, str]]:
    """:func:`term_spans` without its first test."""
    out: list[tuple[int, int, str]] = []
    for m in IDENTIFIER.finditer(line):
        word = m.group()
        low = word.lower()
        if low in wanted:
            out.append((m.start(), m.end(), low))
            continue
        for s, e, part in _part_spans(word, m.start()):
            term = fold(part.lower())
            if term in wanted:
                out.append((s, e, term))
    return out


def match_lines(lines: list[str], first_line: int, terms: Iterable[str]) -> list[int]:
    """File line numbers (``first_line`` = number of ``lines[0]``) that contain a query term."""
    wanted = list(terms)
    return [first_line + i for i, text in enumerate(lines) if term_spans(text, wanted)]


def _symbol_line(lines: list[str], symbol: str | None) -> int | None:
    """Index of the line that defines the innermost name of ``symbol`` (``Class.method`` → method)."""
    if not symbol:
        return None
    name = re.split(r"[.:#/ ]", symbol.strip())[-1].strip("()")
    if not name:
        return None
    pattern = re.compile(rf"\b({_DEFINING})\b.*\b{re.escape(name)}\b")
    for i, text in enumerate(lines):
        if pattern.search(text):
            return i
    for i, text in enumerate(lines):
        if re.search(rf"\b{re.escape(name)}\b", text):
            return i
    return None


def best_line(text: str, start_line: int, terms: Iterable[str], symbol: str | None = None) -> BestLine:
    """The best line of a chunk whose ``text`` starts at file line ``start_line``.

    Each line scores the sum over its distinct matched terms of 1 / (lines of the chunk holding that
    term), so a line with the rare term beats a line that repeats a common one; ties go to the earlier
    line. Without any match: the symbol's defining line, else the first non-blank line.
    """
    lines = text.split("\n")
    wanted = list(dict.fromkeys(t.lower() for t in terms if t))
    per_line = [term_spans(line, wanted) for line in lines]
    holding: dict[str, int] = {}
    for spans in per_line:
        for term in {t for _, _, t in spans}:
            holding[term] = holding.get(term, 0) + 1
    best_i, best_score = -1, 0.0
    for i, spans in enumerate(per_line):
        distinct = {t for _, _, t in spans}
        score = sum(1.0 / holding[t] for t in distinct) + 0.01 * len(distinct)
        if distinct and _DEFINES.match(lines[i]):
            score += 0.005  # on a tie, the definition beats the prose that mentions it
        if score > best_score + 1e-9:
            best_i, best_score = i, score
    if best_i >= 0:
        spans = per_line[best_i]
        return BestLine(start_line + best_i, spans[0][0] + 1, tuple(sorted({t for _, _, t in spans})))
    sym = _symbol_line(lines, symbol)
    if sym is None:
        sym = next((i for i, line in enumerate(lines) if line.strip()), 0)
    indent = len(lines[sym]) - len(lines[sym].lstrip()) if lines else 0
    return BestLine(start_line + sym, indent + 1)


def hit_best_line(hit: object) -> BestLine:
    """:func:`best_line` of a :class:`~aide_tui.core.search.searcher.Hit` (its chunk text and query terms).

    When the search knows the piece (about one function) that ranked the hit, the best line is looked
    for among its lines of code first (not its docstring's: a docstring's words are often the whole
    file's): a chunk packs several functions and the query's words often recur in a neighbour. When the
    piece's code holds none of the query's words (it was found by meaning, or by its docstring), a
    matching line elsewhere in the chunk wins, else the piece's defining line. A line the query named
    (``pkg/mod.py:75``, a traceback frame: the hit's ``line`` rank) or the use of a name asked about
    (``who calls send``: its ``uses`` rank) is the best line, whatever it holds.
    """
    text, start = str(getattr(hit, "text", "")), int(getattr(hit, "start_line", 1))
    terms, symbol = list(getattr(hit, "query_terms", []) or []), getattr(hit, "symbol", None)
    piece = getattr(hit, "best_piece", None)
    ranks = getattr(hit, "ranks", None) or {}
    if piece and piece[0] == piece[1] and (ranks.get("line") or ranks.get("uses")):
        chunk, i = text.split("\n"), piece[0] - start
        return BestLine(piece[0], _indent(chunk[i] if 0 <= i < len(chunk) else "") + 1)
    lines: list[str] = []
    lo = start
    if piece:
        lo, hi = max(piece[0], start), piece[1]
        chunk = text.split("\n")
        lines = chunk[lo - start : hi - start + 1]
        prose = prose_lines(chunk, str(getattr(hit, "language", "") or ""))
        # in the piece, the code's words pick the line (its docstring's words are also the module's, the
        # class's...): a piece whose code holds none of the query's words leaves it to the whole chunk
        code = ["" if lo - start + i in prose else line for i, line in enumerate(lines)]
        if lines:
            inside = best_line("\n".join(code), lo, terms, None)
            if inside.matched:
                return inside
    best = best_line(text, start, terms, symbol)
    if best.matched or not lines:
        return best
    return best_line("\n".join(lines), lo, [], symbol)


NAMED_DEFINITION = re.compile(rf"({_DEFINES.pattern})\s+(?:\([^)]*\)\s*)?\*?\s*((?:[^\W\d]|\$)[\w$]*)")


_BINDS = frozenset({"const", "let", "var"})
_OPENS = str.maketrans("", "", "{([")
_CLOSES = str.maketrans("", "", "})]")


def _holding(m: re.Match[str] | None, line: str) -> re.Match[str] | None:
    """A definition line that may hold the lines below it: a ``const``/``let``/``var`` only when it
    leaves a bracket open (an arrow function, an object) or ends in ``=>`` (its body below), not a
    statement ending on its line."""
    if m is None or m.group(1).split()[-1] not in _BINDS:
        return m
    opened = len(line) - len(line.translate(_OPENS))
    closed = len(line) - len(line.translate(_CLOSES))
    return m if opened > closed or line.rstrip().endswith("=>") else None


_ENDS_NO_BODY = ")]}#"  # a line that starts so ends no Python body (a signature's close, a comment)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


_TRIPLE = re.compile(r'"""|\'\'\'')
_OPENS_STRING = re.compile(r'\s*[rbfuRBFU]{0,2}("""|\'\'\')')
PROSE_LANGUAGES = frozenset({"markdown", "text"})


def prose_lines(lines: list[str], language: str) -> set[int]:
    """Indexes of a chunk's lines that are prose, where a word like ``type`` or ``class`` defines
    nothing: the lines of Python's triple-quoted strings (docstrings: a line that starts inside one, or
    starts one), and every line of a Markdown or plain-text file."""
    if language in PROSE_LANGUAGES:
        return set(range(len(lines)))
    if language != "python":
        return set()
    out: set[int] = set()
    quote: str | None = None
    for i, line in enumerate(lines):
        if quote is not None or _OPENS_STRING.match(line):
            out.add(i)
        pos = 0
        while True:
            if quote is None:
                m = _TRIPLE.search(line, pos)
                if m is None:
                    break
                quote, pos = m.group(), m.end()
            else:
                j = line.find(quote, pos)
                if j < 0:
                    break
                quote, pos = None, j + 3
    return out


def symbol_at_best_line(hit: object) -> str | None:
    """The symbol a hit's row is labelled with: :func:`symbol_at_line` at its best line (where the
    preview lands). A chunk with one definition or none is labelled by its symbol without looking for
    that line (most rows: the app labels each answer's rows)."""
    found = _definitions_of(hit)
    if len(found.defined) < 2:
        return getattr(hit, "symbol", None)
    return _symbol_in(hit, found, hit_best_line(hit).line)


def symbol_at_line(hit: object, line: int) -> str | None:
    """The definition holding file line ``line`` of a hit, in the chunk's ``class A > def b`` form. A
    chunk is recorded under its first definition; when it packs several (``class BaseClient > def
    _get_proxy_map`` holding ``def timeout`` too) or a class with its methods, the line may sit in
    another one. The chain's outer links that the chunk does not define itself are kept (the class
    around a method). Words in prose (a docstring's "type will be ...") define nothing."""
    return _symbol_in(hit, _definitions_of(hit), line)


class _Definitions(NamedTuple):
    """A chunk's lines, its prose lines, the names it defines and each line's definition match."""

    lines: list[str]
    prose: set[int]
    defined: set[str]
    named: list[re.Match[str] | None]


def _definitions_of(hit: object) -> _Definitions:
    lines = str(getattr(hit, "text", "")).split("\n")
    prose = prose_lines(lines, str(getattr(hit, "language", "") or ""))
    named = [None if i in prose else _holding(NAMED_DEFINITION.match(t), t) for i, t in enumerate(lines)]
    return _Definitions(lines, prose, {m.group(2) for m in named if m}, named)


def _symbol_in(hit: object, found: _Definitions, line: int) -> str | None:
    """:func:`symbol_at_line` from the chunk's definitions (:func:`_definitions_of`)."""
    symbol = getattr(hit, "symbol", None)
    lines, prose, defined, named = found
    if sum(m is not None for m in named) < 2 and (not defined or (symbol and symbol.split()[-1] in defined)):
        return symbol  # the chunk's one definition is its symbol's
    b = line - int(getattr(hit, "start_line", 1))
    while 0 <= b < len(lines) - 1 and lines[b].lstrip().startswith("@"):
        b += 1  # a decorator belongs to the definition below it
    chain: list[str] = []
    limit = _indent(lines[b]) + 1 if 0 <= b < len(lines) and lines[b].strip() and b not in prose else 1 << 30
    # Python's bodies are their indent: the least indent of a line of code between a definition and the
    # line, when it is the definition's or less, ended its body (other languages' braces, raw strings
    # and labels at column 0 say nothing of where a body ends)
    indented = getattr(hit, "language", "") == "python"
    floor = 1 << 30
    for i in range(min(b, len(lines) - 1), -1, -1):
        m = named[i]
        indent = _indent(lines[i])
        if m and indent < limit and indent < floor:
            chain.insert(0, _label(m, lines[i]))
            limit = indent
            if limit == 0:
                break
        code = lines[i].strip()
        if indented and code and i not in prose and code[0] not in _ENDS_NO_BODY:
            floor = min(floor, indent)
    if not chain:
        return symbol
    # a Go definition is inside nothing (a chunk's ``type`` is a group of declarations before it)
    parts = symbol.split(" > ") if symbol and getattr(hit, "language", "") != "go" else []
    outer = []
    for part in parts:
        if part.split()[-1] in defined:
            break
        outer.append(part)
    return " > ".join([*outer, *chain])


_GO_METHOD = re.compile(r"\s*func\s*\(([^)]*)\)")


def _label(m: re.Match[str], line: str) -> str:
    """A definition line's link of a label: ``def send``, ``class Client``; a Go method with its
    receiver's type, as the chunker writes it (``func (*Client) Get``)."""
    kind, name = m.group(1).split()[-1], m.group(2)
    method = _GO_METHOD.match(line) if kind == "func" else None
    return f"func ({go_receiver_type(method.group(1))}) {name}" if method else f"{kind} {name}"


def line_text(hit: object, line: int) -> str:
    """The chunk's text of file line ``line`` ('' when outside the chunk)."""
    lines = str(getattr(hit, "text", "")).split("\n")
    i = line - int(getattr(hit, "start_line", 1))
    return lines[i] if 0 <= i < len(lines) else ""


def vimgrep_line(path: str, hit: object) -> str:
    """``path:line:col:text`` for the hit's best line (vim's errorformat ``%f:%l:%c:%m``)."""
    best = hit_best_line(hit)
    text = line_text(hit, best.line).strip().replace("\r", "")
    return f"{path}:{best.line}:{best.column}:{text}"


MAX_PREVIEW_BYTES = 16 << 20  # a bigger file is previewed from its indexed text


def shown_path(hit: object) -> str:
    """The hit's path as shown: ``[workspace] path`` for a hit of a search over several workspaces (as
    ``search`` prints it), control characters escaped."""
    path = printable(str(getattr(hit, "path", "")))
    ws = printable(str(getattr(hit, "workspace", "") or ""))
    return f"[{ws}] {path}" if ws else path


def workspace_label(hit: object) -> str:
    """A short name for the workspace of a hit of a search over several workspaces ("" otherwise): its id
    without the root-hash suffix of a derived id (``alpha-1a2b3c4d`` -> ``alpha``)."""
    ws = printable(str(getattr(hit, "workspace", "") or ""))
    return re.sub(r"-[0-9a-f]{8}$", "", ws)


def clean_relpath(path: str) -> bool:
    """Whether ``path`` is a plain relative path: not absolute, no ``..``, no NUL."""
    return (
        bool(path) and not path.startswith("/") and "\0" not in path and ".." not in PurePosixPath(path).parts
    )


def hit_root(hit: object, root: Path) -> Path | None:
    """The folder ``hit``'s path is relative to: ``root``, or for a hit of another workspace of a shared
    collection the absolute root it was indexed from. None when the path is not a plain relative path
    or the root is unknown (a shared collection is written by other people: show the indexed text)."""
    if not clean_relpath(str(getattr(hit, "path", ""))):
        return None
    other = str(getattr(hit, "root", "") or "")
    if not getattr(hit, "workspace", "") or other == str(root):
        return root
    return Path(other) if other.startswith("/") and "\0" not in other else None


def hit_file(hit: object, root: Path) -> Path | None:
    """The file to read for ``hit``: under :func:`hit_root`, resolving (links included) inside that
    root to a regular file of at most MAX_PREVIEW_BYTES; for another workspace's hit, only while its
    bytes are the ones that workspace indexed (its root and path come from a shared collection that
    other people write: they must not be able to make the app show any file of this machine)."""
    base = hit_root(hit, root)
    if base is None:
        return None
    try:
        real_base = os.path.realpath(base)
        real = os.path.realpath(base / str(getattr(hit, "path", "")))
        if not real.startswith(real_base.rstrip("/") + "/"):
            return None
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_PREVIEW_BYTES:
            return None
        if base != root and not _same_bytes(real, str(getattr(hit, "file_hash", "") or "")):
            return None
    except (OSError, ValueError):
        return None
    return Path(real)


def _same_bytes(path: str, sha1: str) -> bool:
    if len(sha1) != 40:
        return False
    with open(path, "rb", buffering=0) as fh:  # noqa: PTH123 - a regular file, checked above
        return hashlib.sha1(fh.read(MAX_PREVIEW_BYTES + 1)).hexdigest() == sha1
