"""The symbol graph of one file, from the parse the chunker already made (no second pass over the tree).

Python reads the ``ast`` tree: definitions (functions, methods, classes, module and class variables),
references (calls, imports, attribute uses, and names that are not local variables of the function
using them) and imported modules. Every other chunked programming language (Go, JavaScript,
TypeScript, Java, Kotlin, C#, C, C++, Rust, PHP, Ruby, shell; Python that does not parse) takes its
definitions from the chunker's units and its references from a scan of the identifiers outside
comments and string literals (the chunker's tokenizer of that language finds those), with imports read
from the language's import lines. Markup and config files (Markdown, YAML, TOML, JSON) and plain text
have no graph.

A reference is recorded once per name and line (its first column), so a reference list never names a
line twice, and only where the name really is: the position comes from the parse or the scan itself.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator

from aide_tui.core.chunk.base import Src, Unit
from aide_tui.core.model import Definition, FileGraph, Reference

MARKUP = frozenset({"markdown", "yaml", "toml", "json", "text"})
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_PY_SKIP = frozenset({"self", "cls"})


def _char_col(line: str, byte_col: int) -> int:
    """0-based character column of a UTF-8 byte offset into ``line`` (``ast`` counts bytes)."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))


class _Refs:
    """References in file order, at most one per (name, line)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], int] = {}
        self.items: list[Reference] = []

    def add(self, name: str, kind: str, line: int, col: int) -> None:
        if not name or (name, line) in self.seen:
            return
        self.seen[(name, line)] = len(self.items)
        self.items.append(Reference(name, kind, line, col))

    def sorted(self) -> list[Reference]:
        return sorted(self.items, key=lambda r: (r.line, r.col))


# --------------------------------------------------------------------------------------------- python


def _bound_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names a function binds locally (parameters, assignment and loop targets, imports inside it),
    not looking into nested functions or classes; ``global``/``nonlocal`` names are not local."""
    a = fn.args
    out = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    out |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    free: set[str] = set()
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            free.update(node.names)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            continue  # its own scope
        stack.extend(ast.iter_child_nodes(node))
    return out - free


class _PyGraph:
    """Walks a module's tree once, keeping the enclosing names and the locals of enclosing functions."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.defs: list[Definition] = []
        self.refs = _Refs()
        self.imports: list[str] = []
        self.scope: list[str] = []
        self.kinds: list[str] = []  # "class" / "function" per scope entry
        self.local: list[set[str]] = []

    def line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def ref_at(self, name: str, kind: str, lineno: int, byte_col: int) -> None:
        col = _char_col(self.line(lineno), byte_col)
        if self.line(lineno)[col : col + len(name)] == name:
            self.refs.add(name, kind, lineno, col + 1)

    def word_ref(self, name: str, kind: str, lineno: int, after: int = 0) -> None:
        """A reference to ``name`` found as a whole word on line ``lineno`` (from character ``after``)."""
        m = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])").search(self.line(lineno), after)
        if m is not None:
            self.refs.add(name, kind, lineno, m.start() + 1)

    def define(self, name: str, kind: str, lineno: int, end: int, col: int) -> None:
        qual = ".".join([*self.scope, name])
        self.defs.append(Definition(name, kind, qual, lineno, col + 1, end))

    # -- nodes

    def visit(self, node: ast.AST) -> None:
        method = getattr(self, "visit_" + node.__class__.__name__, None)
        if method is not None:
            method(node)
        else:
            self.children(node)

    def children(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        kind = "method" if self.kinds and self.kinds[-1] == "class" else "function"
        m = re.search(rf"\bdef\s+({re.escape(node.name)})\b", self.line(node.lineno))
        self.define(node.name, kind, node.lineno, node.end_lineno or node.lineno, m.start(1) if m else 0)
        self.scope.append(node.name)
        self.kinds.append("function")
        self.local.append(_bound_names(node))
        for st in node.body:
            self.visit(st)
        self.local.pop()
        self.kinds.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        self.local.append(_bound_names(node))
        self.visit(node.body)
        self.local.pop()

    def visit_arguments(self, node: ast.arguments) -> None:
        for a in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
            if a is not None and a.annotation is not None:
                self.visit(a.annotation)
        for default in [*node.defaults, *node.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        for b in [*node.bases, *node.keywords]:
            self.visit(b)
        m = re.search(rf"\bclass\s+({re.escape(node.name)})\b", self.line(node.lineno))
        self.define(node.name, "class", node.lineno, node.end_lineno or node.lineno, m.start(1) if m else 0)
        self.scope.append(node.name)
        self.kinds.append("class")
        for st in node.body:
            self.visit(st)
        self.kinds.pop()
        self.scope.pop()

    def _targets(self, targets: Iterable[ast.expr], end: int) -> None:
        """Module and class level assignment targets are definitions (variables, class attributes)."""
        if self.kinds and self.kinds[-1] == "function":
            return
        kind = "attribute" if self.kinds else "variable"
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                if isinstance(e, ast.Name):
                    self.define(e.id, kind, e.lineno, end, _char_col(self.line(e.lineno), e.col_offset))

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(node.targets, node.end_lineno or node.lineno)
        self.children(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets([node.target], node.end_lineno or node.lineno)
        self.children(node)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load) or node.id in _PY_SKIP:
            return
        if any(node.id in scope for scope in self.local):
            return  # a local variable: not a reference to anything the graph knows
        self.ref_at(node.id, "name", node.lineno, node.col_offset)

    def visit_Attribute(self, node: ast.Attribute, kind: str = "attr") -> None:
        self.visit(node.value)
        end = node.end_lineno or node.lineno
        byte_end = node.end_col_offset or 0
        self.ref_at(node.attr, kind, end, byte_end - len(node.attr.encode("utf-8", "surrogatepass")))

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name):
            if f.id not in _PY_SKIP and not any(f.id in scope for scope in self.local):
                self.ref_at(f.id, "call", f.lineno, f.col_offset)
        elif isinstance(f, ast.Attribute):
            self.visit_Attribute(f, "call")
        else:
            self.visit(f)
        for a in [*node.args, *node.keywords]:
            self.visit(a)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports.append(alias.name)
            line = getattr(alias, "lineno", node.lineno)
            after = _char_col(self.line(line), getattr(alias, "col_offset", 0))
            for part in alias.name.split("."):
                self.word_ref(part, "import", line, after)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        for part in (node.module or "").split("."):
            self.word_ref(part, "import", node.lineno, 0)
        for alias in node.names:
            if alias.name == "*":
                self.imports.append(base)
                continue
            sep = "" if base.endswith(".") or not base else "."
            self.imports.append(f"{base}{sep}{alias.name}")
            line = getattr(alias, "lineno", node.lineno)
            self.word_ref(
                alias.name, "import", line, _char_col(self.line(line), getattr(alias, "col_offset", 0))
            )


def python_graph(tree: ast.Module, src: Src) -> FileGraph:
    """The graph of a parsed Python module."""
    g = _PyGraph(src.lines)
    for st in tree.body:
        g.visit(st)
    return FileGraph(
        sorted(g.defs, key=lambda d: (d.line, d.col)), g.refs.sorted(), list(dict.fromkeys(g.imports))
    )


# --------------------------------------------------------------------------------------------- anchors

_KEYWORDS = frozenset(
    """abstract and as assert async await auto begin bool boolean break byte case catch char chan class
    const constexpr continue crate debugger def default defer del delete do done double dyn elif else
    elsif end ensure enum esac except explicit export extends extern false fi final finally float fn for
    foreach friend from func function go goto if impl implements import in inline instanceof int
    interface internal is let long loop match mod module move mut namespace native new nil none not null
    object of operator or override package pass private protected pub public raise readonly ref register
    rescue restrict return sealed select self short signed sizeof static struct super switch
    synchronized template then this throw throws trait transient true try type typedef typename typeof
    uint union unless unsafe unsigned until use using val var virtual void volatile when where while
    with yield""".split()
)  # fmt: skip
_IMPORT_LINE = {
    "python": re.compile(r"\s*(?:from\s+\S+\s+)?import\b"),
    "go": re.compile(r"\s*import\b"),
    "js": re.compile(r"\s*(?:import\b|export\s.*\bfrom\b)|.*\brequire\s*\("),
    "java": re.compile(r"\s*import\b"),
    "csharp": re.compile(r"\s*using\s+[\w.]+\s*;"),
    "rust": re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?use\b"),
    "c": re.compile(r"\s*#\s*include\b"),
    "cpp": re.compile(r"\s*#\s*include\b"),
    "php": re.compile(r"\s*(?:use|require|require_once|include|include_once)\b"),
    "ruby": re.compile(r"\s*(?:require|require_relative|load)\b"),
    "shell": re.compile(r"\s*(?:source|\.)\s"),
}
_MODULE = {
    "go": re.compile(r'^\s*(?:import\s+)?(?:[\w.]+\s+)?"([^"]+)"'),
    "js": re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]"""),
    "java": re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+)"),
    "csharp": re.compile(r"^\s*using\s+([\w.]+)\s*;"),
    "rust": re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([\w:]+)"),
    "c": re.compile(r'^\s*#\s*include\s*"([^"]+)"'),
    "php": re.compile(r"^\s*use\s+([\w\\]+)"),
    "ruby": re.compile(r"""^\s*require(?:_relative)?\s*\(?\s*['"]([^'"]+)['"]"""),
    "python": re.compile(r"^\s*(?:from\s+([.\w]+)\s+import|import\s+([.\w]+))"),
}
_MODULE["cpp"] = _MODULE["c"]
_TOKEN_KIND = {"javascript": "js", "typescript": "js", "kotlin": "java"}


_RECEIVER = re.compile(r"^func \(\**([A-Za-z_]\w*)")  # a Go method's label: func (*Type) Name


def _unit_defs(units: list[Unit], src: Src, chain: list[str], out: list[Definition]) -> None:
    for u in units:
        if u.define and u.name:
            line = src.lines[u.head]
            m = re.search(rf"(?<![\w$]){re.escape(u.name)}(?![\w$])", line)
            recv = _RECEIVER.match(u.label)
            qual = [*chain, recv.group(1)] if recv else chain
            out.append(
                Definition(
                    u.name,
                    u.kind,
                    ".".join([*qual, u.name]),
                    u.head + 1,
                    (m.start() if m else 0) + 1,
                    u.end + 1,
                )  # fmt: skip
            )
        _unit_defs(u.children, src, [*chain, u.name] if u.name else chain, out)


def _identifiers(text: str, spans: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
    """Identifier matches of ``text`` outside ``spans`` (sorted, non-overlapping)."""
    starts = [s for s, _ in spans]
    for m in _IDENT.finditer(text):
        k = bisect.bisect_right(starts, m.start()) - 1
        if k >= 0 and m.start() < spans[k][1]:
            continue
        yield m


def _ref_kind(text: str, m: re.Match[str], import_line: bool) -> str:
    if import_line:
        return "import"
    after = text[m.end() : m.end() + 40].lstrip(" \t")
    if after.startswith("(") or (after.startswith("<") and re.match(r"<[\w\s,.<>\[\]]*>\s*\(", after)):
        return "call"
    before = text[max(0, m.start() - 3) : m.start()].rstrip(" \t")
    if before.endswith((".", "->", "::")):
        return "attr"
    return "name"


def anchor_graph(
    src: Src, language: str, units: list[Unit], extras: list[tuple[int, str]], literals: list[tuple[int, int]]
) -> FileGraph:
    """The graph of a file the chunker read with anchors (every language but Python that parses);
    ``literals`` are the character spans of its comments and string literals (the chunker's scan)."""
    defs: list[Definition] = []
    _unit_defs(units, src, [], defs)
    for line0, name in extras:
        m = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", src.lines[line0])
        defs.append(Definition(name, "variable", name, line0 + 1, (m.start() if m else 0) + 1, line0 + 1))
    def_sites = {(d.line, d.col) for d in defs}
    family = _TOKEN_KIND.get(language, language)
    import_rx = _IMPORT_LINE.get(family)
    text = src.text
    line_starts = [0]
    for ln in src.lines[:-1]:
        line_starts.append(line_starts[-1] + len(ln) + 1)
    refs = _Refs()
    imports_at: dict[int, bool] = {}
    for m in _identifiers(text, literals):
        name = m.group()
        if len(name) < 2 or name in _KEYWORDS:
            continue
        k = bisect.bisect_right(line_starts, m.start()) - 1
        line, col = k + 1, m.start() - line_starts[k] + 1
        if (line, col) in def_sites:
            continue
        if k not in imports_at:
            imports_at[k] = bool(import_rx and import_rx.match(src.lines[k]))
        refs.add(name, _ref_kind(text, m, imports_at[k]), line, col)
    return FileGraph(sorted(defs, key=lambda d: (d.line, d.col)), refs.sorted(), _imports(src, family))


def _imports(src: Src, family: str) -> list[str]:
    """Modules the file imports, as written (a Go import block's lines too)."""
    rx = _MODULE.get(family)
    if rx is None:
        return []
    out: list[str] = []
    in_block = False
    for ln in src.lines:
        if family == "go":
            s = ln.strip()
            if s.startswith("import ("):
                in_block = True
                continue
            if in_block and s.startswith(")"):
                in_block = False
                continue
            if not (in_block or s.startswith("import")):
                continue
        m = rx.search(ln) if family == "js" else rx.match(ln)
        if m is not None:
            out.append(next(g for g in m.groups() if g))
    return list(dict.fromkeys(out))
