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
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aide_tui.core.chunk.base import Src, Unit
from aide_tui.core.chunk.code import main_guard, script_lines
from aide_tui.core.model import Definition, FileGraph, Reference

MARKUP = frozenset({"markdown", "yaml", "toml", "json", "text"})
_IDENT = re.compile(r"(?:[^\W\d]|\$)[\w$]*")  # any script's letters (ñandú, 函数)
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


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or ch == "$"


def word_at(line: str, name: str, start: int = 0) -> int:
    """Index of the first occurrence of ``name`` in ``line`` at or after ``start`` that stands as a
    whole word (no identifier character, ``$`` included, on either side); -1 when there is none.
    A plain string scan: a regex per name would be compiled for every definition of a file."""
    n = len(name)
    if not n:
        return -1
    i = line.find(name, start)
    while i >= 0:
        if (i == 0 or not _is_word_char(line[i - 1])) and (
            i + n >= len(line) or not _is_word_char(line[i + n])
        ):
            return i
        i = line.find(name, i + 1)
    return -1


def _name_after_keyword(line: str, keyword: str, name: str) -> int:
    """Column of ``name`` where it follows ``keyword`` and whitespace (``def name``, ``class name``), or
    -1."""
    k = word_at(line, keyword)
    while k >= 0:
        j = k + len(keyword)
        rest = line[j:]
        stripped = rest.lstrip()
        if len(stripped) < len(rest):
            at = j + len(rest) - len(stripped)
            if stripped.startswith(name) and (
                at + len(name) >= len(line)
                or not (line[at + len(name)].isalnum() or line[at + len(name)] == "_")
            ):
                return at
        k = word_at(line, keyword, k + 1)
    return -1


class _Frame:
    """A function's (or lambda's) scope while its body is walked: the names it binds, the names it
    declares ``global``/``nonlocal``, and the name loads seen in it, decided when the scope ends."""

    __slots__ = ("bound", "free", "pending", "is_lambda")

    def __init__(self, is_lambda: bool) -> None:
        self.bound: set[str] = set()
        self.free: set[str] = set()
        self.pending: list[tuple[int, str, str, int, int]] = []
        self.is_lambda = is_lambda


_LINE_COL = operator.itemgetter(3, 4)  # a found reference's (line, column)
_CLASS_BODY = None  # on the binding stack: a class body, whose names are nobody's locals
_SKIP = frozenset({"self", "cls"})
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Constant)
# work items of the walk besides nodes: (tag, payload)
_ENTER_DEF, _EXIT_DEF, _ENTER_CLASS, _EXIT_CLASS, _ENTER_LAMBDA, _EXIT_LAMBDA, _ATTR = range(7)


def _arg_names(a: ast.arguments) -> list[str]:
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    return names + [x.arg for x in (a.vararg, a.kwarg) if x is not None]


class _PyGraph:
    """Walks a module's tree once, iteratively (a deeply nested literal cannot overflow the stack),
    keeping the enclosing names and the scopes of enclosing functions.

    A name a function loads is a reference unless the function (or one around it) binds it anywhere
    in its body, before or after the load; so loads inside functions wait in their scope until it
    ends. Every reference takes a sequence number in walk order, and the first one per (name, line)
    is kept."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.defs: list[Definition] = []
        self.found: list[tuple[int, str, str, int, int]] = []  # (seq, name, kind, line, col1)
        self.seq = 0
        self.imports: list[str] = []
        self.scope: list[str] = []
        self.kinds: list[str] = []  # "class" / "function" per scope entry
        self.frames: list[_Frame] = []  # enclosing function and lambda scopes, innermost last
        self.binders: list[_Frame | None] = []  # frames and class bodies, innermost last
        self.script: tuple[int, int] = (0, -1)  # the lines of an ``if __name__ == "__main__":`` block

    def line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    # -- references

    def _at(self, name: str, lineno: int, byte_col: int) -> int:
        """1-based character column of ``name`` at a byte offset, or 0 when it is not there."""
        lines = self.lines
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        col = byte_col if line.isascii() else _char_col(line, byte_col)
        return col + 1 if line.startswith(name, col) else 0

    def ref_at(self, name: str, kind: str, lineno: int, byte_col: int) -> None:
        col = self._at(name, lineno, byte_col)
        if col:
            self.seq += 1
            self.found.append((self.seq, name, kind, lineno, col))

    def load(self, name: str, kind: str, lineno: int, byte_col: int) -> None:
        """A name loaded (or called): a reference, unless an enclosing function binds it."""
        if name in _SKIP:
            return
        col = self._at(name, lineno, byte_col)
        if not col:
            return
        self.seq += 1
        item = (self.seq, name, kind, lineno, col)
        (self.frames[-1].pending if self.frames else self.found).append(item)

    def word_ref(self, name: str, kind: str, lineno: int, after: int = 0) -> None:
        """A reference to ``name`` found as a whole word on line ``lineno`` (from character ``after``)."""
        i = word_at(self.line(lineno), name, after)
        if i >= 0:
            self.seq += 1
            self.found.append((self.seq, name, kind, lineno, i + 1))

    def bind(self, name: str) -> None:
        """``name`` is bound here: a local of the innermost function (and of the function around the
        lambdas it sits in); a class body's names are nobody's locals."""
        for frame in reversed(self.binders):
            if frame is None:
                return
            frame.bound.add(name)
            if not frame.is_lambda:
                return

    def define(self, name: str, kind: str, lineno: int, end: int, col: int) -> None:
        qual = ".".join([*self.scope, name])
        self.defs.append(Definition(name, kind, qual, lineno, col + 1, end))

    def _close(self) -> None:
        """End the innermost scope: its loads that it does not bind go to the scope around it."""
        frame = self.frames.pop()
        self.binders.pop()
        local = frame.bound - frame.free
        kept = [p for p in frame.pending if p[1] not in local]
        (self.frames[-1].pending if self.frames else self.found).extend(kept)

    # -- the walk

    def walk(self, body: list[ast.stmt]) -> None:
        stack: list[Any] = list(reversed(body))
        handlers = _HANDLERS
        while stack:
            item = stack.pop()
            if type(item) is tuple:
                self._action(item[0], item[1])
                continue
            kind = type(item)
            handler = handlers.get(kind)
            if handler is not None:
                handler(self, item, stack)
            elif kind is not ast.Constant and not isinstance(item, _LEAVES):
                _push_children(item, stack)

    def _action(self, tag: int, payload: Any) -> None:
        if tag == _ATTR:
            self.ref_at(*payload)
        elif tag == _ENTER_DEF:
            node, kind = payload
            line = self.line(node.lineno)
            col = _name_after_keyword(line, "def", node.name)
            self.define(node.name, kind, node.lineno, node.end_lineno or node.lineno, max(col, 0))
            self.bind(node.name)
            self.scope.append(node.name)
            self.kinds.append("function")
            frame = _Frame(False)
            frame.bound.update(_arg_names(node.args))
            self.frames.append(frame)
            self.binders.append(frame)
        elif tag == _EXIT_DEF:
            self._close()
            self.kinds.pop()
            self.scope.pop()
        elif tag == _ENTER_CLASS:
            node = payload
            col = _name_after_keyword(self.line(node.lineno), "class", node.name)
            self.define(node.name, "class", node.lineno, node.end_lineno or node.lineno, max(col, 0))
            self.bind(node.name)
            self.scope.append(node.name)
            self.kinds.append("class")
            self.binders.append(_CLASS_BODY)
        elif tag == _EXIT_CLASS:
            self.binders.pop()
            self.kinds.pop()
            self.scope.pop()
        elif tag == _ENTER_LAMBDA:
            frame = _Frame(True)
            self.frames.append(frame)
            self.binders.append(frame)
            for name in _arg_names(payload.args):
                self.bind(name)
        elif tag == _EXIT_LAMBDA:
            self._close()

    def references(self) -> list[Reference]:
        """The references kept, one per (name, line): the first in walk order; in file order."""
        first: dict[tuple[str, int], tuple[int, str, str, int, int]] = {}
        for item in sorted(self.found):
            first.setdefault((item[1], item[3]), item)
        kept = sorted(first.values(), key=_LINE_COL)
        return [Reference(name, kind, line, col) for _, name, kind, line, col in kept]


_NO_NODES = frozenset({"ctx", "op", "ops", "type_comment", "id", "attr", "arg", "kind", "conversion"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}  # a node type's fields that may hold walked nodes, last first


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in reversed(kind._fields) if f not in _NO_NODES)  # type: ignore[attr-defined]
    return fields


def _push_children(node: ast.AST, stack: list[Any]) -> None:
    """Push a node's child nodes so that they are walked in field order (contexts and operators, which
    hold nothing to walk, are left out)."""
    for field in _child_fields(type(node)):
        value = getattr(node, field, None)
        if type(value) is list:
            if value:
                stack.extend(v for v in reversed(value) if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            stack.append(value)


def _push(stack: list[Any], *items: Any) -> None:
    """Push work items (nodes, lists of nodes, actions, None) to be taken in the order given."""
    flat: list[Any] = []
    for it in items:
        if it is None:
            continue
        if isinstance(it, list):
            flat.extend(it)
        else:
            flat.append(it)
    stack.extend(reversed(flat))


def _arguments(a: ast.arguments) -> list[ast.AST]:
    """What a signature evaluates where it is written: annotations, then defaults."""
    out: list[ast.AST] = []
    for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
        if x is not None and x.annotation is not None:
            out.append(x.annotation)
    out.extend(d for d in [*a.defaults, *a.kw_defaults] if d is not None)
    return out


def _h_function(g: _PyGraph, node: ast.FunctionDef | ast.AsyncFunctionDef, stack: list[Any]) -> None:
    kind = "method" if g.kinds and g.kinds[-1] == "class" else "function"
    _push(stack, list(node.decorator_list), _arguments(node.args), node.returns,
          (_ENTER_DEF, (node, kind)), list(node.body), (_EXIT_DEF, None))  # fmt: skip


def _h_class(g: _PyGraph, node: ast.ClassDef, stack: list[Any]) -> None:
    _push(stack, list(node.decorator_list), list(node.bases), list(node.keywords), (_ENTER_CLASS, node),
          list(node.body), (_EXIT_CLASS, None))  # fmt: skip


def _h_lambda(g: _PyGraph, node: ast.Lambda, stack: list[Any]) -> None:
    _push(stack, _arguments(node.args), (_ENTER_LAMBDA, node), node.body, (_EXIT_LAMBDA, None))


def _targets(g: _PyGraph, targets: list[ast.expr], end: int) -> None:
    """Module and class level assignment targets are definitions (variables, class attributes)."""
    if g.kinds and g.kinds[-1] == "function":
        return
    if g.script[0] <= end <= g.script[1]:
        return  # a script's names (``console = Console()`` under the main guard) are no module's API
    kind = "attribute" if g.kinds else "variable"
    for t in targets:
        for e in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
            if isinstance(e, ast.Name):
                g.define(e.id, kind, e.lineno, end, _char_col(g.line(e.lineno), e.col_offset))


def _h_assign(g: _PyGraph, node: ast.Assign, stack: list[Any]) -> None:
    _targets(g, node.targets, node.end_lineno or node.lineno)
    stack.append(node.value)
    stack.extend(reversed(node.targets))


# The commonest nodes' children pushed directly (field order, last first), not through _push_children's
# loop over every field: a tenth of the walk.
def _p_value(g: _PyGraph, node: Any, stack: list[Any]) -> None:
    if node.value is not None:
        stack.append(node.value)


def _p_elts(g: _PyGraph, node: ast.Tuple | ast.List | ast.Set, stack: list[Any]) -> None:
    stack.extend(reversed(node.elts))


def _p_compare(g: _PyGraph, node: ast.Compare, stack: list[Any]) -> None:
    stack.extend(reversed(node.comparators))
    stack.append(node.left)


def _p_subscript(g: _PyGraph, node: ast.Subscript, stack: list[Any]) -> None:
    stack.append(node.slice)
    stack.append(node.value)


def _p_binop(g: _PyGraph, node: ast.BinOp, stack: list[Any]) -> None:
    stack.append(node.right)
    stack.append(node.left)


def _p_assert(g: _PyGraph, node: ast.Assert, stack: list[Any]) -> None:
    if node.msg is not None:
        stack.append(node.msg)
    stack.append(node.test)


def _p_if(g: _PyGraph, node: ast.If, stack: list[Any]) -> None:
    if not g.kinds and main_guard(node.test) and not g.script[0] <= node.lineno <= g.script[1]:
        g.script = script_lines(node)
    stack.extend(reversed(node.orelse))
    stack.extend(reversed(node.body))
    stack.append(node.test)


def _h_annassign(g: _PyGraph, node: ast.AnnAssign, stack: list[Any]) -> None:
    _targets(g, [node.target], node.end_lineno or node.lineno)
    _push_children(node, stack)


def _h_name(g: _PyGraph, node: ast.Name, stack: list[Any]) -> None:
    if type(node.ctx) is ast.Load:
        g.load(node.id, "name", node.lineno, node.col_offset)
    else:
        g.bind(node.id)


def _attr_action(node: ast.Attribute, kind: str) -> tuple[int, tuple[str, str, int, int]]:
    byte_end = node.end_col_offset or 0
    col = byte_end - len(node.attr.encode("utf-8", "surrogatepass"))
    return (_ATTR, (node.attr, kind, node.end_lineno or node.lineno, col))


def _h_attribute(g: _PyGraph, node: ast.Attribute, stack: list[Any]) -> None:
    stack.append(_attr_action(node, "attr"))  # taken after the value (pushed last: popped first)
    stack.append(node.value)


def _h_call(g: _PyGraph, node: ast.Call, stack: list[Any]) -> None:
    """The callee, then the arguments and keywords (pushed in reverse: the stack pops the last first)."""
    f = node.func
    stack.extend(reversed(node.keywords))
    stack.extend(reversed(node.args))
    if type(f) is ast.Name:
        g.load(f.id, "call", f.lineno, f.col_offset)
    elif type(f) is ast.Attribute:
        stack.append(_attr_action(f, "call"))
        stack.append(f.value)
    else:
        stack.append(f)


def _h_scope_names(g: _PyGraph, node: ast.Global | ast.Nonlocal, stack: list[Any]) -> None:
    frame = g.binders[-1] if g.binders else _CLASS_BODY
    if frame is not None:
        frame.free.update(node.names)


def _h_except(g: _PyGraph, node: ast.ExceptHandler, stack: list[Any]) -> None:
    if node.name:
        g.bind(node.name)
    _push_children(node, stack)


def _h_import(g: _PyGraph, node: ast.Import, stack: list[Any]) -> None:
    for alias in node.names:
        g.imports.append(alias.name)
        g.bind((alias.asname or alias.name).split(".")[0])
        line = getattr(alias, "lineno", node.lineno)
        after = _char_col(g.line(line), getattr(alias, "col_offset", 0))
        for part in alias.name.split("."):
            g.word_ref(part, "import", line, after)


def _h_import_from(g: _PyGraph, node: ast.ImportFrom, stack: list[Any]) -> None:
    base = "." * node.level + (node.module or "")
    for part in (node.module or "").split("."):
        g.word_ref(part, "import", node.lineno, 0)
    for alias in node.names:
        if alias.name == "*":
            g.imports.append(base)
            continue
        g.bind((alias.asname or alias.name).split(".")[0])
        sep = "" if base.endswith(".") or not base else "."
        g.imports.append(f"{base}{sep}{alias.name}")
        line = getattr(alias, "lineno", node.lineno)
        g.word_ref(alias.name, "import", line, _char_col(g.line(line), getattr(alias, "col_offset", 0)))


_HANDLERS: dict[type, Callable[[_PyGraph, Any, list[Any]], None]] = {
    ast.FunctionDef: _h_function,
    ast.AsyncFunctionDef: _h_function,
    ast.ClassDef: _h_class,
    ast.Lambda: _h_lambda,
    ast.Assign: _h_assign,
    ast.AnnAssign: _h_annassign,
    ast.Name: _h_name,
    ast.Attribute: _h_attribute,
    ast.Call: _h_call,
    ast.Global: _h_scope_names,
    ast.Nonlocal: _h_scope_names,
    ast.ExceptHandler: _h_except,
    ast.Import: _h_import,
    ast.ImportFrom: _h_import_from,
    ast.Expr: _p_value,
    ast.keyword: _p_value,
    ast.Return: _p_value,
    ast.Yield: _p_value,
    ast.Await: _p_value,
    ast.Tuple: _p_elts,
    ast.List: _p_elts,
    ast.Set: _p_elts,
    ast.Compare: _p_compare,
    ast.Subscript: _p_subscript,
    ast.BinOp: _p_binop,
    ast.Assert: _p_assert,
    ast.If: _p_if,
}


def python_graph(tree: ast.Module, src: Src) -> FileGraph:
    """The graph of a parsed Python module."""
    g = _PyGraph(src.lines)
    g.walk(tree.body)
    return FileGraph(
        sorted(g.defs, key=lambda d: (d.line, d.col)), g.references(), list(dict.fromkeys(g.imports))
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
# words that are keywords in one language only (a JS ``url.protocol`` is a name)
_FAMILY_KEYWORDS = {
    "lua": frozenset("local elseif repeat".split()),
    "swift": frozenset("guard extension protocol fileprivate inout some lazy deinit".split()),
    "scala": frozenset("implicit given lazy".split()),
    "dart": frozenset("late required covariant factory".split()),
}
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
    "swift": re.compile(r"\s*(?:@\w+\s+)?import\b"),
    "scala": re.compile(r"\s*import\b"),
    "dart": re.compile(r"\s*(?:import|export|part)\b"),
    "lua": re.compile(r".*?\brequire\s*(?:\(\s*)?['\"]"),
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
    "swift": re.compile(r"^\s*(?:@\w+\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var)\s+)?([\w.]+)"),
    "scala": re.compile(r"^\s*import\s+([\w.]+)"),
    "dart": re.compile(r"""^\s*(?:import|export|part)\s+['"]([^'"]+)['"]"""),
    "lua": re.compile(r"""\brequire\s*(?:\(\s*)?['"]([^'"]+)['"]"""),
}
_MODULE["cpp"] = _MODULE["c"]
_TOKEN_KIND = {"javascript": "js", "typescript": "js", "kotlin": "java"}


_RECEIVER = re.compile(r"^func \(\**([A-Za-z_]\w*)")  # a Go method's label: func (*Type) Name


def _unit_defs(units: list[Unit], src: Src, chain: list[str], out: list[Definition]) -> None:
    for u in units:
        # app.listen = function: app.listen; Foo.prototype.bar = function: Foo.bar
        owned = [*chain, *(p for p in u.owner.split(".") if p != "prototype")] if u.owner else chain
        if u.define and u.name:
            at = word_at(src.lines[u.head], u.name)
            recv = _RECEIVER.match(u.label)
            qual = [*owned, recv.group(1)] if recv else owned
            out.append(
                Definition(
                    u.name,
                    u.kind,
                    ".".join([*qual, u.name]),
                    u.head + 1,
                    max(at, 0) + 1,
                    u.end + 1,
                )  # fmt: skip
            )
        _unit_defs(u.children, src, [*owned, u.name] if u.name else owned, out)
        # a closure's helpers are inside the unit; the other names of its line (case a, b) beside it
        _unit_defs([n for n in u.nested if n.head != u.head], src, [*owned, u.name] if u.name else owned, out)
        _unit_defs([n for n in u.nested if n.head == u.head], src, owned, out)


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
        at = word_at(src.lines[line0], name)
        defs.append(Definition(name, "variable", name, line0 + 1, max(at, 0) + 1, line0 + 1))
    def_sites = {(d.line, d.col) for d in defs}
    family = _TOKEN_KIND.get(language, language)
    import_rx = _IMPORT_LINE.get(family)
    text = src.text
    line_starts = [0]
    for ln in src.lines[:-1]:
        line_starts.append(line_starts[-1] + len(ln) + 1)
    refs = _Refs()
    imports_at: dict[int, bool] = {}
    own_keywords = _FAMILY_KEYWORDS.get(family, frozenset())
    for m in _identifiers(text, literals):
        name = m.group()
        if len(name) < 2 or name in _KEYWORDS or name in own_keywords:
            continue
        k = bisect.bisect_right(line_starts, m.start()) - 1
        line, col = k + 1, m.start() - line_starts[k] + 1
        if (line, col) in def_sites:
            continue
        if k not in imports_at:
            imports_at[k] = bool(import_rx and import_rx.match(src.lines[k]))
        refs.add(name, _ref_kind(text, m, imports_at[k]), line, col)
    imports = _imports(src, family, literals, line_starts)
    return FileGraph(sorted(defs, key=lambda d: (d.line, d.col)), refs.sorted(), imports)


def _imports(
    src: Src, family: str, literals: Sequence[tuple[int, int]] = (), line_starts: Sequence[int] = ()
) -> list[str]:
    """Modules the file imports, as written (a Go import block's lines too). A Lua ``require`` may sit
    anywhere on a line: one inside a comment or a string (``literals``, character spans, with the
    lines' ``line_starts``) imports nothing."""
    rx = _MODULE.get(family)
    if rx is None:
        return []
    starts = [a for a, _ in literals] if family == "lua" else []

    def in_literal(at: int) -> bool:
        i = bisect.bisect_right(starts, at) - 1
        return i >= 0 and literals[i][0] <= at < literals[i][1]

    out: list[str] = []
    in_block = False
    for k, ln in enumerate(src.lines):
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
        if family == "lua" and line_starts:  # the first require outside a comment or a string
            m = next((m for m in rx.finditer(ln) if not in_literal(line_starts[k] + m.start())), None)
        else:
            m = rx.search(ln) if family in ("js", "lua") else rx.match(ln)
        if m is not None:
            out.append(next(g for g in m.groups() if g))
    return list(dict.fromkeys(out))
