"""Structure-aware chunking of source files into retrieval units (:class:`~aide_tui.core.model.Chunk`).

Each language family finds its units (functions, classes, methods, headings, config keys; see
``chunk_code`` / ``chunk_text``); this module packs adjacent small units and module-level code greedily up to
a budget of non-whitespace characters, splits oversized units on their members and then on blank lines /
statement boundaries, and enriches every chunk with a short header. Any failure inside a language chunker
falls back to plain line windows.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from aide_tui.core.chunk.base import CHUNKER_VERSION, Src, Unit
from aide_tui.core.chunk.code import Scan, anchor_units, python_units
from aide_tui.core.chunk.graph import MARKUP, anchor_graph, python_graph
from aide_tui.core.chunk.text import json_units, markdown_units, toml_units, yaml_units
from aide_tui.core.languages import detect_language
from aide_tui.core.model import Chunk, FileGraph, header_head
from aide_tui.core.notebook import cells_view, is_notebook

__all__ = ["CHUNKER_VERSION", "chunk_file", "detect_language"]

WINDOW_LINES = 60
# Unit kinds that are functions or methods: at a piece budget each one is a piece of its own.
FUNCTION_KINDS = frozenset({"def", "func", "fn", "function", "function*", "method", "constructor", "fun"})
_MAX_SIG = 120
_MAX_HEADER = 300

Found = tuple[list[Unit], list[tuple[int, str]], Callable[[int], bool]]


def _find_units(language: str, src: Src, keep: dict[str, object] | None = None) -> Found | None:
    if language == "python":
        try:
            return python_units(src, keep)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return anchor_units(src, "python", keep)
    if language == "markdown":
        return markdown_units(src)
    if language == "yaml":
        return yaml_units(src)
    if language == "toml":
        return toml_units(src)
    if language == "json":
        return json_units(src)
    if language == "text":
        return None
    return anchor_units(src, language, keep)


@dataclass(slots=True)
class _Piece:
    lo: int  # 0-based inclusive
    hi: int
    chain: tuple[Unit, ...]  # enclosing units (outermost first)
    first: Unit | None  # first unit of the region packed into this piece


_CONT_WORDS = frozenset(
    ["else", "elif", "except", "finally", "catch", "end", "rescue", "ensure", "elsif", "fi", "done", "esac",
     "then", "do"]
)  # fmt: skip
_WORD = re.compile(r"[A-Za-z_]+")


def _segments(lo: int, hi: int, units: list[Unit]) -> list[tuple[int, int, Unit | None]]:
    """The region ``lo..hi`` cut into its units and the code between them (``None``)."""
    segs: list[tuple[int, int, Unit | None]] = []
    cur = lo
    for u in units:
        if u.start > cur:
            segs.append((cur, u.start - 1, None))
        segs.append((u.start, u.end, u))
        cur = u.end + 1
    if cur <= hi:
        segs.append((cur, hi, None))
    return segs


class _Chunker:
    def __init__(
        self, src: Src, budget: int, is_lead: Callable[[int], bool], pack_functions: bool = True
    ) -> None:
        self.src = src
        self.budget = max(1, budget)
        self.is_lead = is_lead
        self.pack_functions = pack_functions

    # ---- generic line splitting (oversized code without member units, gaps, big sections)

    def _is_cont(self, j: int) -> bool:
        s = self.src.lines[j].lstrip()
        if s[:1] in (")", "]", "}", "."):
            return True
        m = _WORD.match(s)
        return m is not None and m.group() in _CONT_WORDS

    def split(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Cut ``lo..hi`` into ranges within the budget, preferring blank lines, then statement starts."""
        src = self.src
        lo, hi = src.trim(lo, hi)
        if lo > hi:
            return []
        if lo == hi or src.size(lo, hi) <= self.budget:
            return [(lo, hi)]
        blank, indent = src.blank, src.indent
        nb = [j for j in range(lo, hi + 1) if not blank[j]]
        base = min(indent[j] for j in nb)
        starts = [j for j in nb[1:] if indent[j] <= base and blank[j - 1] and not self._is_cont(j)]
        if not starts:
            starts = []
            prev = nb[0]
            for j in nb[1:]:
                if (
                    indent[j] <= base
                    and not self._is_cont(j)
                    and not (indent[prev] <= base and self.is_lead(prev))
                ):
                    starts.append(j)
                prev = j
        if not starts:
            rest = nb[1:]
            if rest and min(indent[j] for j in rest) > base:
                # Peel the head line (e.g. ``for ...:``): the deeper body is split on its own level and the
                # head line rides along with the body's first piece.
                body = self.split(rest[0], hi)
                if body and src.size(lo, lo) <= self.budget // 4:
                    body[0] = (lo, body[0][1])
                    return body
                return self.merge([(lo, lo), *body])
            else:
                starts = rest  # nothing better: every line is a boundary
        bounds = [lo, *starts, hi + 1]
        out: list[tuple[int, int]] = []
        for a, b in zip(bounds, bounds[1:], strict=False):
            out.extend(self.split(a, b - 1))
        return self.merge(out)

    def merge(self, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Greedily join adjacent ranges while the result stays within the budget."""
        out: list[tuple[int, int]] = []
        for a, b in ranges:
            if out and self.src.size(out[-1][0], b) <= self.budget:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
        return out

    # ---- unit packing

    def pack(self, lo: int, hi: int, units: list[Unit], chain: tuple[Unit, ...]) -> list[_Piece]:
        """Pack the region ``lo..hi`` holding ``units`` (plus the code between them) into pieces."""
        src = self.src
        pieces: list[_Piece] = []
        acc: _Piece | None = None
        tail: _Piece | None = None  # last piece of a split unit: trailing code (a closing brace) joins it
        for a, b, u in _segments(lo, hi, units):
            if u is None:
                a, b = src.trim(a, b)
                if a > b:
                    continue
                if tail is not None and src.size(tail.lo, b) <= self.budget:
                    tail.hi = b
                    continue
            tail = None
            if u is not None and not self.pack_functions and u.kind in FUNCTION_KINDS:
                if acc is not None:  # a function is never packed with its neighbours
                    pieces.append(acc)
                    acc = None
                split = self.split_unit(u, chain) if src.size(a, b) > self.budget and b > a else None
                pieces.extend(split or [_Piece(a, b, chain, u)])
                continue
            if src.size(a, b) > self.budget and b > a:
                split = self.split_unit(u, chain) if u is not None else self._windows(a, b, chain)
                if acc is not None:
                    self._close_before(acc, split, pieces)
                    acc = None
                pieces.extend(split)
                tail = split[-1] if split else None
                continue
            if acc is not None and src.size(acc.lo, b) <= self.budget:
                acc.hi = b
                if acc.first is None:
                    acc.first = u
            else:
                if acc is not None:
                    pieces.append(acc)
                acc = _Piece(a, b, chain, u)
        if acc is not None:
            pieces.append(acc)
        return pieces

    def _windows(self, a: int, b: int, chain: tuple[Unit, ...]) -> list[_Piece]:
        return [_Piece(x, y, chain, None) for x, y in self.split(a, b)]

    def _close_before(self, acc: _Piece, split: list[_Piece], pieces: list[_Piece]) -> None:
        """Before a split unit: module/class-level code just before it (imports, a class line) joins its
        first piece when it fits, else the pending piece is closed as it is."""
        if split and acc.first is None and self.src.size(acc.lo, split[0].hi) <= self.budget:
            split[0].lo = acc.lo
        else:
            pieces.append(acc)

    def split_unit(self, u: Unit, chain: tuple[Unit, ...]) -> list[_Piece]:
        """Split an oversized unit on its members, else on blank lines / statement boundaries."""
        inner = (*chain, u)
        if u.children:
            return self.pack(u.start, u.end, u.children, inner)
        return [_Piece(a, b, inner, None) for a, b in self.split(u.start, u.end)]


def _attach_leading(units: list[Unit], lower: int, src: Src, is_lead: Callable[[int], bool]) -> None:
    """Extend each unit upwards over the comments/decorators directly above it (no blank line between)."""
    prev_end = lower - 1
    blank = src.blank
    for u in units:
        s = max(u.start, prev_end + 1)
        while s - 1 > prev_end and not blank[s - 1] and is_lead(s - 1):
            s -= 1
        u.start = min(s, u.head)
        _attach_leading(u.children, u.head + 1, src, is_lead)
        prev_end = u.end


def _flatten(units: list[Unit], out: list[tuple[int, str]]) -> None:
    for u in units:
        if u.define and u.name:
            out.append((u.head, u.name))
        _flatten(u.children, out)
        _flatten(u.nested, out)


def _signature(src: Src, u: Unit, language: str) -> str:
    if language in ("markdown", "yaml", "toml", "json"):
        return src.lines[u.head].strip()[:_MAX_SIG]
    parts: list[str] = []
    opened = 0
    for j in range(u.head, min(u.head + 4, u.end + 1, src.n)):
        s = src.lines[j].strip()
        if not s:
            break
        parts.append(s)
        opened += s.count("(") - s.count(")")
        if s.endswith((":", "{", ";", "=>", "=")) or opened <= 0:
            break
    sig = " ".join(parts).replace("( ", "(").replace(" )", ")")
    return sig if len(sig) <= _MAX_SIG else sig[: _MAX_SIG - 3] + "..."


def _header(path: str, symbol: str | None, sigs: list[str]) -> str:
    head = header_head(path, symbol)
    kept: list[str] = []
    room = _MAX_HEADER - len(head)
    for sig in reversed(sigs):  # innermost first: it is the most informative
        if len(sig) + 1 > room:
            break
        kept.insert(0, sig)
        room -= len(sig) + 1
    return "\n".join([head, *kept])


def _windows(src: Src, budget: int) -> list[tuple[int, int]]:
    """Plain line windows of at most WINDOW_LINES lines and (unless one line is bigger) the budget."""
    out: list[tuple[int, int]] = []
    i = 0
    n = src.n
    while i < n:
        lo, _ = src.trim(i, n - 1)
        if lo >= n or lo > n - 1:
            break
        hi = lo
        while hi + 1 < n and hi + 1 - lo < WINDOW_LINES and src.size(lo, hi + 1) <= budget:
            hi += 1
        a, b = src.trim(lo, hi)
        if a <= b:
            out.append((a, b))
        i = hi + 1
    return out


def _valid(src: Src, pieces: list[_Piece]) -> bool:
    """Sorted, non-overlapping, in range, and covering every non-blank line."""
    blank = src.blank
    prev = -1
    inside = 0
    for p in pieces:
        if p.lo <= prev or p.hi < p.lo or p.hi >= src.n:
            return False
        inside += blank[p.lo : p.hi + 1].count(False)
        prev = p.hi
    return inside == blank.count(False)


def chunk_file(path: str, text: str, budget: int = 1500, pack_functions: bool = True) -> list[Chunk]:
    """Split one file into structure-aware chunks covering every non-blank line, in file order.

    ``path`` is the posix path relative to the workspace root; ``budget`` is the target size of a chunk in
    non-whitespace characters (a single unit is never cut when it fits). Adjacent small units are packed
    up to the budget; with ``pack_functions`` false a function or method is never packed with its
    neighbours (the cut of dense pieces).
    """
    return chunk_file_multi(path, text, (budget,), pack_from=1 if pack_functions else 0)[0]


# what only C++ writes at the start of a line: a class or a namespace opening, a template, an access label
_CPP_HEADER = re.compile(
    r"^[ \t]*(?:class[ \t]+\w+[ \t]*(?:[:{]|final\b|$)|namespace[ \t]+[\w:]+[ \t]*\{?[ \t]*$|template[ \t]*<"
    r"|(?:public|private|protected)[ \t]*:[ \t]*$)",
    re.M,
)
_CPP_WORDS = ("std::", "nullptr", "_cast<")  # anywhere (a substring test: the regex's cost was a fifth)
_CPP_SNIFF = 200_000  # characters of a header read for them


def _language(path: str, text: str) -> str:
    """The file's language by its name; a ``.h`` that writes C++ is C++ (its classes hold members)."""
    language = detect_language(path)
    if language == "c" and path.lower().endswith(".h"):
        head = text[:_CPP_SNIFF]
        if _CPP_HEADER.search(head) or any(word in head for word in _CPP_WORDS):
            return "cpp"
    return language


def chunk_file_multi(
    path: str,
    text: str,
    budgets: tuple[int, ...],
    fallbacks: list[str] | None = None,
    pack_from: int = 1,
    graph: list[FileGraph] | None = None,
) -> list[list[Chunk]]:
    """``chunk_file`` at several budgets from one parse (the index uses 1,500 for chunks, less for pieces).

    The first ``pack_from`` budgets pack small functions together (chunks); the others are piece cuts,
    where every function or method is a piece of its own, so its vector and its BM25 row speak for it
    alone (public eval, round 3: hybrid nl2code cMRR@10 +.02 held-out, +.06 tune).

    When the structure-aware chunker fails and line windows are used instead, a note is appended to
    ``fallbacks`` (the index report counts them, so a chunker regression shows up as a number).
    With ``graph``, the file's part of the symbol graph is appended to it, read from the same parse
    (see graph.py; an empty one for markup, plain text and files the chunker could not parse).
    """
    language = _language(path, text)
    if is_notebook(path):
        view = cells_view(text)
        if view is not None:  # its cells' code, line for line (else the JSON as it is)
            language, text = view
    src = Src(text)
    if all(src.blank):
        if graph is not None:
            graph.append(FileGraph())
        return [[] for _ in budgets]
    found = None
    defs: list[tuple[int, str]] = []
    keep: dict[str, object] = {}
    try:
        found = _find_units(language, src, keep)
        if found is not None:
            roots, extras, is_lead = found
            _attach_leading(roots, 0, src, is_lead)
            _flatten(roots, defs)
            defs.extend(extras)
            defs.sort()
    except Exception as exc:  # a chunker bug must never lose a file: fall back to windows
        found = None
        if fallbacks is not None:
            fallbacks.append(f"{path}: {language} parse failed ({exc.__class__.__name__})")
    out: list[list[Chunk]] = []
    for k, budget in enumerate(budgets):
        pieces: list[_Piece] | None = None
        if found is not None:
            try:
                chunker = _Chunker(src, budget, found[2], pack_functions=k < pack_from)
                pieces = chunker.pack(0, src.n - 1, found[0], ())
                if not _valid(src, pieces):
                    pieces = None
            except Exception as exc:
                pieces = None
                if fallbacks is not None:
                    fallbacks.append(f"{path}: packing at {budget} failed ({exc.__class__.__name__})")
        if pieces is None:
            pieces = [_Piece(a, b, (), None) for a, b in _windows(src, budget)]
        out.append(_build_chunks(path, language, src, pieces, defs if found is not None else []))
    if graph is not None:
        graph.append(_file_graph(path, language, src, found, keep, fallbacks))
    return out


def _file_graph(
    path: str, language: str, src: Src, found: Found | None, keep: dict[str, object], notes: list[str] | None
) -> FileGraph:
    """The file's symbol graph from the chunker's parse; empty when there is none (a failure is noted)."""
    if found is None or language in MARKUP:
        return FileGraph()
    try:
        tree = keep.get("tree")
        if isinstance(tree, ast.Module):
            return python_graph(tree, src)
        scan = keep.get("scan")
        if isinstance(scan, Scan):
            return anchor_graph(src, language, found[0], found[1], scan.literals)
    except (RecursionError, MemoryError, ValueError, IndexError) as exc:
        if notes is not None:
            notes.append(f"{path}: symbol graph failed ({exc.__class__.__name__})")
    return FileGraph()


def _build_chunks(
    path: str, language: str, src: Src, pieces: list[_Piece], defs: list[tuple[int, str]]
) -> list[Chunk]:
    """Chunks (with symbol, header and defined names) for packed spans."""
    def_lines = [d[0] for d in defs]
    chunks: list[Chunk] = []
    sig_cache: dict[int, str] = {}
    for p in pieces:
        lo, hi = p.lo, p.hi
        chain = p.chain
        labels = [u.label for u in chain]
        if p.first is not None and not (chain and lo <= chain[-1].head <= hi):
            labels.append(p.first.label)
        symbol = " > ".join(labels) if labels else None
        sigs: list[str] = []
        if language != "markdown":
            for u in chain:
                if u.head < lo:
                    key = id(u)
                    if key not in sig_cache:
                        sig_cache[key] = _signature(src, u, language)
                    sigs.append(sig_cache[key])
        names: list[str] = []
        for k in range(bisect_left(def_lines, lo), bisect_right(def_lines, hi)):
            name = defs[k][1]
            if name not in names:
                names.append(name)
        chunks.append(
            Chunk(
                path=path,
                start_line=lo + 1,
                end_line=hi + 1,
                language=language,
                symbol=symbol,
                header=_header(path, symbol, sigs),
                text="\n".join(src.raw[lo : hi + 1]),
                defines=tuple(names),
            )
        )
    return chunks
