"""Unit detection for programming languages.

Python uses the stdlib ``ast``; every other family (and Python with syntax errors) uses anchor regexes on
lines plus a small tokenizer that skips string/char literals and comments, so that bracket depth and the
matching ``}`` of a body are reliable. Block ends come from brace matching ("brace" mode) or indentation
("indent" mode: Ruby, Python fallback).
"""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aide_tui.core.chunk.base import Src, Unit
from aide_tui.core.labels import go_receiver_type

# --------------------------------------------------------------------------------------------- tokenizer

_C_COMMENTS = r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"
_DQ = r'"(?:[^"\\\n]|\\.)*"'
_SQ = r"'(?:[^'\\\n]|\\.)*'"
_DQ_ML = r'"(?:[^"\\]|\\[\s\S])*"'
_SQ_ML = r"'(?:[^'\\]|\\[\s\S])*'"
_CHAR = r"'(?:[^'\\\n]|\\[^\n]{1,9}?)'"
_BRK = r"[{}()\[\];]|\n"
# A JS regex literal: a "/" where an expression starts (after an operator/bracket or ``return``).
_JS_REGEX = (
    r"(?:(?<=[(,=:\[!&|?{};])|(?<=\breturn))[ \t]*/(?![/*])(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*"
)
_BRK_NOSEMI = r"[{}()\[\]]|\n"


def _tok(*alts: str, flags: int = 0) -> tuple[str, int]:
    return "|".join(alts), flags


@functools.cache
def tokens_rx(family: str) -> re.Pattern[str]:
    """The tokenizing regex of a language family (``TOKENS``), compiled when the family is first met."""
    pattern, flags = TOKENS[family]
    return re.compile(pattern, flags)


TOKENS: dict[str, tuple[str, int]] = {
    "c": _tok(_C_COMMENTS, _DQ, _CHAR, _BRK),
    "cpp": _tok(_C_COMMENTS, r'R"([^(\s"\\]{0,16})\([\s\S]*?\)\1"', _DQ, _CHAR, _BRK),
    "java": _tok(_C_COMMENTS, r'"""[\s\S]*?"""', _DQ, _CHAR, _BRK),
    "csharp": _tok(
        _C_COMMENTS, r'"""[\s\S]*?"""', r'\$?@\$?"(?:[^"]|"")*"', r'\$?"(?:[^"\\\n]|\\.)*"', _CHAR, _BRK
    ),
    "go": _tok(_C_COMMENTS, r"`[^`]*`", _DQ, _CHAR, _BRK),
    "rust": _tok(_C_COMMENTS, r'b?r(#*)"[\s\S]*?"\1', r'b?"(?:[^"\\]|\\[\s\S])*"', r"b?" + _CHAR, _BRK),
    "js": _tok(_C_COMMENTS, _JS_REGEX, r"`(?:[^`\\]|\\[\s\S])*`", _DQ, _SQ, _BRK),
    "php": _tok(_C_COMMENTS, r"#(?!\[)[^\n]*", _DQ_ML, _SQ_ML, _BRK),
    "shell": _tok(
        r"(?:(?<=[\s;|&(])|^)#[^\n]*",
        r"<<-?[ \t]*['\"]?(\w+)['\"]?[^\n]*\n[\s\S]*?\n[ \t]*\1(?=\n|\Z)",
        r"'[^']*'",
        _DQ_ML,
        r"\\[\s\S]",
        r"[{}]|\n",
        flags=re.M,
    ),
    "python": _tok(
        r"#[^\n]*",
        r"[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z))",
        _DQ,
        _SQ,
        _BRK_NOSEMI,
    ),
    "ruby": _tok(r"#[^\n]*", r"^=begin[\s\S]*?(?:^=end[^\n]*|\Z)", _DQ, _SQ, _BRK_NOSEMI, flags=re.M),
    "toml": _tok(r"#[^\n]*", r'"""[\s\S]*?(?:"""|\Z)', r"'''[\s\S]*?(?:'''|\Z)", _DQ, _SQ, _BRK_NOSEMI),
    "json": _tok(_C_COMMENTS, _DQ, _BRK_NOSEMI),
    "swift": _tok(_C_COMMENTS, r'(?<!#)#*"""[\s\S]*?"""#*', r'(?<!#)#*"(?:[^"\\\n]|\\.)*"#*', _BRK),
    "scala": _tok(_C_COMMENTS, r'"""[\s\S]*?"""', _DQ, _CHAR, _BRK),
    "dart": _tok(_C_COMMENTS, r'r?"""[\s\S]*?"""', r"r?'''[\s\S]*?'''", _DQ, _SQ, _BRK),
    "lua": _tok(  # a long comment or string left open runs to the end (one match, not one per opener)
        r"--\[(=*)\[[\s\S]*?(?:\]\1\]|\Z)",
        r"--[^\n]*",
        r"\[(=*)\[[\s\S]*?(?:\]\2\]|\Z)",
        _DQ,
        _SQ,
        _BRK_NOSEMI,
    ),
}

_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}": "{", ")": "(", "]": "["}


class Scan:
    """Bracket structure of a file: depth at each line start and the brace/semicolon events."""

    __slots__ = ("depth_at", "lit_at", "ev_line", "ev_char", "ev_depth", "match", "literals")

    def __init__(self, text: str, n_lines: int, tokens: re.Pattern[str]) -> None:
        depth_at = [0] * (n_lines + 1)
        lit_at = [False] * (n_lines + 1)
        ev_line: list[int] = []
        ev_char: list[str] = []
        ev_depth: list[int] = []  # depth before an opener / ";", depth after a closer
        match: dict[int, int] = {}  # event index of an opener -> line of its closer
        stack: list[tuple[str, int]] = []
        literals: list[tuple[int, int]] = []  # character spans of comments and string literals
        line = 0
        for m in tokens.finditer(text):
            s = m.group()
            c = s[0]
            if c == "\n":
                line += 1
                depth_at[line] = len(stack)
            elif len(s) == 1 and c in _OPEN:
                ev_line.append(line)
                ev_char.append(c)
                ev_depth.append(len(stack))
                stack.append((c, len(ev_line) - 1))
            elif len(s) == 1 and c in _CLOSE:
                want = _CLOSE[c]
                for back in range(1, min(3, len(stack)) + 1):  # tolerate a stray bracket of another kind
                    if stack[-back][0] == want:
                        del stack[len(stack) - back + 1 :]
                        match[stack.pop()[1]] = line
                        break
                ev_line.append(line)
                ev_char.append(c)
                ev_depth.append(len(stack))
            elif c == ";" and len(s) == 1:
                ev_line.append(line)
                ev_char.append(c)
                ev_depth.append(len(stack))
            else:
                literals.append(m.span())
                for _ in range(s.count("\n")):
                    line += 1
                    depth_at[line] = len(stack)
                    lit_at[line] = True
        self.literals = literals
        self.depth_at = depth_at
        self.lit_at = lit_at
        self.ev_line = ev_line
        self.ev_char = ev_char
        self.ev_depth = ev_depth
        self.match = match


# --------------------------------------------------------------------------------------------- languages


class LazyRegex:
    """A regex compiled on its first match: a run meets few of the languages whose patterns this module
    holds (compiling them all took 15-23 ms of every build helper's start)."""

    __slots__ = ("pattern", "match")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.match: Callable[[str], re.Match[str] | None] = self._compile_and_match

    def _compile_and_match(self, text: str) -> re.Match[str] | None:
        self.match = re.compile(self.pattern).match
        return self.match(text)


@dataclass(frozen=True, slots=True)
class Pat:
    """One anchor regex; groups ``kind`` (optional), ``name`` and ``name2``/``recv``/``type`` (optional)."""

    rx: LazyRegex
    kind: str = ""
    member: bool = False  # only accepted directly inside a container
    group: bool = False  # the body is a ``( ... )`` group (Go const/var/type blocks)
    define: bool = True
    kw: bool = False  # reject names that are keywords (patterns that could match a call statement)


@dataclass(frozen=True, slots=True)
class Lang:
    """How to find units in one language family."""

    tokens: str
    pats: tuple[Pat, ...]
    containers: frozenset[str]
    comments: tuple[str, ...]
    decorator: Callable[[str], bool] | None = None
    mode: str = "brace"  # "brace" | "indent"
    closer: str = ""  # indent mode: regex of the line closing a block at the same indentation
    nested: frozenset[str] = frozenset()  # kinds declared in a function's body that are definitions


def _p(rx: str, kind: str = "", **kw: bool) -> Pat:
    return Pat(LazyRegex(rx), kind, **kw)


_KEYWORDS = frozenset(
    ["if", "else", "elif", "for", "foreach", "while", "do", "switch", "case", "catch", "try", "finally",
     "return", "new", "throw", "await", "yield", "using", "lock", "synchronized", "when", "typeof", "sizeof",
     "delete", "in", "of", "with", "super", "this", "function", "fn", "goto", "defined", "alignof",
     "decltype", "static_assert", "unless", "until", "begin", "rescue", "ensure"]
)  # fmt: skip
_JMODS = (
    "public|private|protected|internal|static|final|abstract|sealed|partial|open|inner|data|value|annotation|"
    "strictfp|non-sealed|readonly|unsafe|new|file|ref|override|virtual|extern|async|synchronized|native|default|"
    "transient|volatile|const|lateinit|suspend|inline|tailrec|operator|infix|external|expect|actual|required"
)
_MODSET = frozenset(_JMODS.split("|"))
_MODS = rf"(?:(?:{_JMODS})\s+)*"
_ANNOT = r"(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:\[[^\]]*\]\s*)*"
_TYPE = r"[\w.?\[\]]+(?:<[^()]*?>)?[\w.?\[\]]*"
_TYPEDECL = _p(
    rf"^\s*{_ANNOT}{_MODS}(?P<kind>class|interface|enum\s+class|enum|record|struct|object|@interface|namespace)"
    r"\s+(?P<name>[\w.]+)"
)
_JMETHOD = _p(
    rf"^\s*{_ANNOT}{_MODS}(?:<[^>]*>\s*)?(?P<type>{_TYPE})\s+(?P<name>\w+)\s*(?:<[^>]*>\s*)?\(",
    "method",
    member=True,
    kw=True,
)
_CS_PROP = _p(
    rf"^\s*{_ANNOT}{_MODS}(?P<type>{_TYPE})\s+(?P<name>\w+)\s*(?:\{{|=>)", "property", member=True, kw=True
)


_SWIFT_MODS = (
    r"(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|open|package|final|static|class|"
    r"override|mutating|nonmutating|convenience|required|indirect|lazy|weak|unowned|dynamic|nonisolated|"
    r"isolated|distributed|async|prefix|postfix|infix)(?:\([^)]*\))?\s+)*"
)
_SCALA_MODS = (
    r"(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:private|protected)(?:\[\w+\])?\s+|(?:final|sealed|abstract|implicit|"
    r"lazy|override|case|inline|opaque|open|transparent|infix|extension)\s+)*"
)

# what makes a JS/TS assignment a definition: a function, an arrow function or a class is assigned
_JS_ASSIGNED = (
    r"(?:async\s+)?(?:function\b|class\b|\([^)]*\)\s*(?::[^=]+?)?=>|[\w$]+\s*=>|\(\s*$|<[^>]*>\s*\()"
)
_JS_CHAIN = r"(?:(?:[\w$]+\.)*[\w$]+\s*=\s*)*"  # var proto = module.exports = function (...)


def _at(s: str) -> bool:
    return s.startswith("@")


LANGS: dict[str, Lang] = {
    "java": Lang(
        "java",
        (_TYPEDECL, _JMETHOD),
        frozenset({"class", "interface", "enum", "record", "@interface"}),
        ("//", "/*", "*"),
        _at,
    ),
    "csharp": Lang(
        "csharp",
        (_TYPEDECL, _JMETHOD, _CS_PROP),
        frozenset({"class", "interface", "enum", "record", "struct", "namespace"}),
        ("//", "/*", "*"),
        lambda s: s.startswith("[") and s.endswith("]"),
    ),
    "kotlin": Lang(
        "java",
        (
            _p(rf"^\s*{_ANNOT}{_MODS}(?P<kind>companion\s+object)\b\s*(?P<name>\w*)"),
            _TYPEDECL,
            _p(rf"^\s*{_ANNOT}{_MODS}fun\s+(?:<[^>]*>\s*)?(?:[\w.<>?, ]+\.)?(?P<name>\w+)\s*\(", "fun"),
            _p(rf"^\s*{_ANNOT}{_MODS}(?P<kind>val|var)\s+(?:[\w.<>?]+\.)?(?P<name>\w+)"),
            _p(rf"^\s*{_ANNOT}{_MODS}(?P<name>constructor)\s*\(", "constructor", member=True),
        ),
        frozenset({"class", "interface", "enum class", "object", "companion object"}),
        ("//", "/*", "*"),
        _at,
    ),
    "go": Lang(
        "go",
        (
            _p(r"^func\s+(?:\((?P<recv>[^)]*)\)\s*)?(?P<name>\w+)", "func"),
            _p(r"^(?P<kind>var|const|type)\s*\(\s*(?://.*)?$", group=True, define=False),
            _p(r"^(?P<kind>type|var|const)\s+(?P<name>\w+)"),
        ),
        frozenset(),
        ("//", "/*", "*"),
    ),
    "rust": Lang(
        "rust",
        (
            _p(
                r"^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:default|const|async|unsafe|extern(?:\s+\"[^\"]*\")?)\s+)*"
                r"(?P<kind>fn|struct|enum|trait|union|mod|type|const|static)\s+(?P<name>\w+)"
            ),
            _p(
                r"^\s*(?:unsafe\s+)?(?P<kind>impl)\b\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s*(?P<name>[^{]*?)\s*"
                r"(?:\bwhere\b[^{]*)?\{?\s*$",
                define=False,
            ),
            _p(r"^\s*(?:#\[macro_export\]\s*)?(?P<kind>macro_rules!)\s*(?P<name>\w+)"),
        ),
        frozenset({"impl", "trait", "mod"}),
        ("//", "/*", "*"),
        lambda s: s.startswith(("#[", "#![")),
    ),
    "js": Lang(
        "js",
        (
            _p(
                r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:const\s+)?"
                r"(?P<kind>function\*?|class|interface|enum|namespace|module|type)\s+(?!extends\b)(?P<name>[\w$.]+)"
            ),
            _p(r"^\s*(?:const|let|var)\s+(?P<name>[\w$]+)\s*=\s*require\s*\(", "import", define=False),
            _p(  # module.exports = function query(options): the exported function's own name
                r"^\s*(?:exports\s*=\s*)?(?P<owner>module\.exports)\s*=\s*(?:async\s+)?"
                r"(?P<kind>function\*?|class)(?:\s+(?P<name>[\w$]+))?"
            ),
            _p(  # Object.defineProperty(obj, 'name', ...), defineGetter(req, 'ip', function ip() ...)
                r"^\s*(?:[\w$]+\.)?define(?:Property|Getter|Setter|Accessor)\s*\(\s*(?P<owner>[\w$.]+)\s*,\s*"
                r"['\"](?P<name>(?!__)[\w$]+)['\"]\s*,",
                "property",
            ),
            _p(  # a function or class assigned to a member or an export: app.listen = function listen()
                rf"^\s*(?P<owner>(?:[\w$]+\.)+)(?P<name>[\w$]+)\s*=\s*{_JS_ASSIGNED}",
                "function",
            ),
            _p(  # an object literal exported or made a prototype: its members are definitions
                r"^\s*(?:(?P<name>(?:module\.)?exports|(?:[\w$]+\.)+prototype)\s*=|export\s+default)\s*\{\s*$",
                "object",
                define=False,
            ),
            _p(
                rf"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)\s*(?::[^=]+)?=\s*{_JS_CHAIN}"
                rf"{_JS_ASSIGNED}",
                "function",
            ),
            _p(r"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)", "const"),
            _p(  # an object literal's member: name: function (...), name: (...) =>, name: class
                r"^\s*(?P<name>[\w$]+|'[\w$]+'|\"[\w$]+\")" rf"\s*:\s*{_JS_ASSIGNED}",
                "method",
                member=True,
                kw=True,
            ),
            _p(  # Vue's and Vuex's option objects (methods: {, computed: {): their members are methods. Only
                # these names: any other candidate line ends the unit above it early (see _brace_end)
                r"^\s*(?P<name>methods|computed|watch|props|components|directives|filters|actions|getters"
                r"|mutations)\s*:\s*\{\s*$",
                "object",
                member=True,
                define=False,
                kw=True,
            ),
            _p(
                r"^\s*(?:(?:public|private|protected|static|readonly|override)\s+)*(?P<name>#?[\w$]+)\s*(?::[^=]+)?="
                r"\s*(?:async\s+)?(?:\([^)]*\)|[\w$]+)\s*(?::[^=]+?)?=>",
                "method",
                member=True,
                kw=True,
            ),
            _p(
                r"^\s*(?:(?:public|private|protected|static|async|readonly|abstract|override|declare|get|set|accessor)"
                r"\s+)*\*?(?P<name>#?[\w$]+)\s*\??\s*(?:<[^>]*>)?\s*\(",
                "method",
                member=True,
                kw=True,
            ),
        ),
        frozenset({"class", "interface", "namespace", "module", "object"}),
        ("//", "/*", "*"),
        _at,
        nested=frozenset({"function", "function*", "class", "interface", "enum", "type"}),
    ),
    "php": Lang(
        "php",
        (
            _p(
                r"^\s*(?:(?:abstract|final|readonly)\s+)*(?P<kind>class|interface|trait|enum)\s+(?P<name>\w+)"
            ),
            _p(r"^\s*(?P<kind>namespace)\s+(?P<name>[\w\\]+)\s*(?:\{\s*)?$"),
            _p(
                r"^\s*(?:(?:public|private|protected|static|abstract|final)\s+)*function\s+&?(?P<name>\w+)",
                "function",
            ),
        ),
        frozenset({"class", "interface", "trait", "enum", "namespace"}),
        ("//", "/*", "*", "#"),
        lambda s: s.startswith("#["),
    ),
    "c": Lang("c", (), frozenset({"extern"}), ("//", "/*", "*")),  # patterns filled below
    "cpp": Lang(
        "cpp",
        (),
        frozenset({"class", "struct", "union", "namespace", "extern"}),
        ("//", "/*", "*"),
        lambda s: s.startswith("template"),
    ),
    "shell": Lang(
        "shell",
        (
            _p(
                r"^\s*(?:function\s+(?P<name>[\w.:-]+)\s*(?:\(\s*\))?|(?P<name2>[\w.:-]+)\s*\(\s*\))",
                "function",
                kw=True,
            ),
        ),
        frozenset(),
        ("#",),
    ),
    "ruby": Lang(
        "ruby",
        (
            _p(r"^\s*(?P<kind>def)\s+(?P<name>(?:self\.)?[\w.]+[?!=]?|[^\s(;]+)"),
            _p(r"^\s*(?P<kind>class|module)\s+(?P<name>[\w:]+|<<\s*\w+)"),
        ),
        frozenset({"class", "module"}),
        ("#",),
        None,
        "indent",
        r"end\b",
    ),
    "swift": Lang(
        "swift",
        (
            _p(rf"^\s*{_SWIFT_MODS}(?P<kind>class|struct|enum|protocol|actor)\s+(?P<name>[\w.]+)"),
            _p(rf"^\s*{_SWIFT_MODS}(?P<kind>extension)\s+(?P<name>[\w.]+)", define=False),  # adds to a type
            _p(rf"^\s*{_SWIFT_MODS}func\s+(?:`(?P<name>\w+)`|(?P<name2>\w+|[^\s(<]+))", "func"),
            _p(rf"^\s*{_SWIFT_MODS}(?P<name>init|deinit)\b[?!]?", "constructor", member=True),
            _p(rf"^\s*{_SWIFT_MODS}(?P<kind>var|let|typealias)\s+`?(?P<name>\w+)"),
            _p(rf"^\s*{_SWIFT_MODS}(?P<kind>case)\s+`?(?P<name>\w+)", member=True),
        ),
        frozenset({"class", "struct", "enum", "protocol", "extension", "actor"}),
        ("//", "/*", "*"),
        _at,
    ),
    "scala": Lang(
        "scala",
        (
            _p(rf"^\s*{_SCALA_MODS}(?P<kind>class|object|trait|enum)\s+(?P<name>\w+)"),
            _p(rf"^\s*{_SCALA_MODS}def\s+(?P<name>\w+|[^\s(\[:]+)", "def"),
            _p(rf"^\s*{_SCALA_MODS}(?P<kind>val|var|type|given)\s+(?P<name>\w+)", member=True),
        ),
        frozenset({"class", "object", "trait", "enum"}),
        ("//", "/*", "*"),
        _at,
        "indent",  # Scala 3 bodies may go by indentation alone (object X:, def f =); braces indent too
        r"[}\])]|end\b",
    ),
    "dart": Lang(
        "dart",
        (
            _p(
                r"^\s*(?:(?:abstract|base|final|sealed|interface|mixin)\s+)*(?P<kind>class|mixin|enum|extension)"
                r"\s+(?P<name>\w+)"
            ),
            _p(r"^\s*typedef\s+(?:[\w<>?,\s]+?\s+)?(?P<name>\w+)\s*(?:<[^>]*>)?\s*[=(]", "type"),
            _p(  # a named constructor or a factory: Point.origin(), factory Point.fromJson(...)
                r"^\s*(?:const\s+|factory\s+)?(?P<owner>[A-Z]\w*)\.(?P<name>\w+)\s*\(",
                "constructor",
                member=True,
            ),
            _p(
                r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:static|final|const|external|late|abstract|covariant)\s+)*"
                rf"(?:(?P<type>{_TYPE})\s+)?(?P<kind>get|set)\s+(?P<name>\w+)",
                "property",
                kw=True,
            ),
            _p(
                r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:static|external|factory|abstract|covariant)\s+)*"
                rf"(?P<type>{_TYPE})\s+(?P<name>\w+)\s*(?:<[^>]*>\s*)?\(",
                "method",
                kw=True,
            ),
        ),
        frozenset({"class", "mixin", "enum", "extension"}),
        ("//", "/*", "*"),
        _at,
    ),
    "lua": Lang(
        "lua",
        (
            _p(r"^\s*(?:local\s+)?function\s+(?:(?P<owner>[\w.:]+)[.:])?(?P<name>\w+)\s*\(", "function"),
            _p(r"^\s*(?:local\s+)?(?:(?P<owner>[\w.:]+)[.:])?(?P<name>\w+)\s*=\s*function\b", "function"),
        ),
        frozenset(),
        ("--",),
        None,
        "indent",
        r"end\b",
        nested=frozenset({"function"}),
    ),
    "python": Lang(
        "python",
        (_p(r"^\s*(?:async\s+)?(?P<kind>def|class)\s+(?P<name>\w+)"),),
        frozenset({"class"}),
        ("#",),
        _at,
        "indent",
    ),
}
_C_PATS = (
    _p(r'^\s*extern\s+"C(?:\+\+)?"\s*\{?\s*$', "extern", define=False),
    _p(
        r"^\s*(?:template\s*<[^>]*>\s*)?(?:typedef\s+)?(?P<kind>class|struct|union|enum\s+class|enum\s+struct|enum"
        r"|namespace)\s+(?:[\w:]+\s+)*?(?P<name>[\w:]+)\s*(?=[:{;]|final\b|$)"
    ),
    _p(r"^\s*typedef\b", "typedef"),
    _p(r"^\s*(?:template\s*<[^>]*>\s*)?using\s+(?P<name>[A-Za-z_]\w*)\s*=", "type"),  # a C++ type alias
    _p(
        r"^\s*(?!(?:if|else|for|while|switch|return|do|case|goto|sizeof|typedef|using|throw|delete|new)\b)"
        r"(?:[\w:<>,~\[\]]+[\s*&]+)*?(?P<name>(?:~?[A-Za-z_]\w*(?:<[^<>()]*>)?::)*"
        r"(?:~?[A-Za-z_]\w*|operator\s*[^\s(]+))\s*\(",
        "function",
        kw=True,
    ),
)
LANGS["c"] = Lang("c", _C_PATS, LANGS["c"].containers, LANGS["c"].comments)
LANGS["cpp"] = Lang("cpp", _C_PATS, LANGS["cpp"].containers, LANGS["cpp"].comments, LANGS["cpp"].decorator)
FAMILY = {"javascript": "js", "typescript": "js"}

_DEFINE_RX = re.compile(r"^\s*#\s*define\s+(\w+)")
_TYPEDEF_NAME = re.compile(r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:\([^)]*\))?\s*;\s*$")
_TEMPLATE_ARGS = re.compile(r"<[^<>()]*>")
_GROUP_MEMBER = re.compile(r"^\s*([A-Za-z_]\w*)")
_MAX_ANCHOR_LINE = 400


def _lead_checker(src: Src, lang: Lang, lit_at: list[bool] | None) -> Callable[[int], bool]:
    comments = lang.comments
    deco = lang.decorator
    lines = src.lines

    def is_lead(j: int) -> bool:
        if lit_at is not None and lit_at[j]:
            return True
        s = lines[j].strip()
        return s.startswith(comments) or (deco is not None and deco(s))

    return is_lead


def _indent_end(src: Src, sc: Scan, i: int, closer: re.Pattern[str] | None, comments: tuple[str, ...]) -> int:
    ind = src.indent[i]
    base = sc.depth_at[i]
    last = i
    lines, blank, indent, depth_at, lit_at = src.lines, src.blank, src.indent, sc.depth_at, sc.lit_at
    for j in range(i + 1, src.n):
        if blank[j]:
            continue
        s = lines[j].lstrip()
        if lit_at[j] or (depth_at[j] > base and (indent[j] > ind or s[:1] in ")]}")):
            last = j
            continue
        if indent[j] <= ind:
            if closer is not None and indent[j] == ind and closer.match(s):
                return j
            if last == i and indent[j] == ind and s.rstrip() == "{":  # a brace on its own line opens the body
                last = j
                continue
            if s.startswith(comments):
                continue
            return last
        last = j
    return last


def _brace_end(src: Src, sc: Scan, i: int, nxt: int, group: bool) -> int:
    """Last line of the unit anchored at ``i``; -1 when its body brace is unbalanced."""
    base = sc.depth_at[i]
    if not group and src.lines[i].rstrip().endswith("=>"):  # the arrow's body is on the lines below
        return _expression_end(src, sc, i + 1, base)
    stop = min(nxt - 1, i + 60, src.n - 1)
    j = i + 1
    while j <= stop and not src.blank[j]:
        j += 1
    stop = min(stop, j - 1)
    opener = "(" if group else "{"
    evl, evc, evd = sc.ev_line, sc.ev_char, sc.ev_depth
    k = bisect_left(evl, i)
    while k < len(evl) and evl[k] <= stop:
        d = evd[k]
        if d < base:
            break
        if d == base:
            c = evc[k]
            if c == opener:
                close = sc.match.get(k)
                return -1 if close is None else close
            if c == ";":
                return evl[k]
        k += 1
    end = i
    while end + 1 <= stop and sc.depth_at[end + 1] > base:
        end += 1
    return end


# a line going on from the one above, or a line that leaves the expression open (a comma ends it: the
# arrow is an argument or an object's value, ``key: () =>`` then ``require("..."),``)
_GOES_ON = (".", "?", ":", "&&", "||", "+", "-", "*", "/", "=>", ")", "]", "}")
_LEFT_OPEN = ("=>", "(", "[", "{", "&&", "||", "?", ":", "+", "-", "*", "/", "=", ".")


def _expression_end(src: Src, sc: Scan, first: int, base: int) -> int:
    """Last line of an expression that starts on line ``first`` at bracket depth ``base`` (an arrow
    function's body below its ``=>``): every bracket it opens holds its lines (``Effect.gen(function*
    () {`` to ``})``, a curried arrow's ``=> {`` body), a ``;`` ends it, and a line that goes on from
    the one above (``.then(...)``, an operator) belongs to it; a line that starts another statement
    does not. -1 when a bracket is unbalanced."""
    if first >= src.n or src.blank[first]:
        return first - 1
    evl, evc, evd = sc.ev_line, sc.ev_char, sc.ev_depth
    k = bisect_left(evl, first)
    end = first
    while True:
        while k < len(evl) and evl[k] <= end:
            if evd[k] < base:
                return end
            if evd[k] == base:
                c = evc[k]
                if c in "([{":
                    close = sc.match.get(k)
                    if close is None:
                        return -1
                    end = max(end, close)
                elif c == ";":
                    return evl[k]
            k += 1
        nxt = end + 1
        if nxt >= src.n or src.blank[nxt]:
            return end
        if not (src.lines[nxt].lstrip().startswith(_GOES_ON) or src.lines[end].rstrip().endswith(_LEFT_OPEN)):
            return end
        end = nxt


_OWNERS_NESTED = ("this", "self", "exports", "module")
_PARAMS_OPEN = re.compile(r"\s*(?:<[^>]*>)?\s*\(")
_DECLARED_SHAPE = {  # what follows the name when a line declares one (JSX text: "class names are shown")
    "class": re.compile(r"\bclass\s+[\w$]+\s*(?:extends\b|implements\b|<|\{|$)"),
    "interface": re.compile(r"\binterface\s+[\w$]+\s*(?:extends\b|<|\{|$)"),
    "type": re.compile(r"\btype\s+[\w$]+\s*(?:<[^>]*>\s*)?="),
    "enum": re.compile(r"\benum\s+[\w$]+\s*(?:\{|$)"),
}


def _nestable(line: str, u: Unit) -> bool:
    """Whether an anchor inside a function body (or a wrapper) declares something: not a handler set on
    another object (``nodes.CallExpression = function``, Lua's ``__index``), a value that only may be a
    function (``const x = (`` going on), or JSX text that reads like a declaration (``class names``)."""
    if u.owner and u.owner.split(".")[0] not in _OWNERS_NESTED and "prototype" not in u.owner:
        return False
    if u.name.startswith("__") or line.rstrip().endswith("("):
        return False
    shape = _DECLARED_SHAPE.get(u.kind)
    if shape is not None:
        return shape.search(line) is not None
    after = _after_function_name(line, u.name)  # string scans: no regex compiled per name
    return after is None or _PARAMS_OPEN.match(after) is not None


def _after_function_name(line: str, name: str) -> str | None:
    """What follows ``function name`` (``function* name``) on ``line``; None when it is not there."""
    at = line.find("function")
    while at >= 0:
        rest = line[at + 8 :].lstrip("*").lstrip()
        end = len(name)
        word = at == 0 or not _is_ident_char(line[at - 1])
        if word and rest.startswith(name) and (len(rest) == end or not _is_ident_char(rest[end])):
            return rest[end:]
        at = line.find("function", at + 8)
    return None


def _is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


_PARENS = re.compile(r"\([^()]*\)")
_CASE_NAME = re.compile(r",\s*`?(\w+)")
_RAW_VALUE = re.compile(r"=[^,]*")


def _more_cases(line: str) -> list[str]:
    """The names after the first of a Swift ``case a, b(Int), c = 3`` line."""
    body = line.split("//", 1)[0]
    for _ in range(3):  # nested payload tuples
        body = _PARENS.sub("", body)
    return _CASE_NAME.findall(_RAW_VALUE.sub("", body))


_C_BODIED = frozenset({"function", "class", "struct", "union", "enum", "enum class", "enum struct"})
_C_TYPES = frozenset({"class", "struct", "union"})
_SPECIAL_MEMBER = re.compile(r"=\s*(?:0|default|delete)\s*;")


def _has_body(src: Src, sc: Scan, i: int) -> bool:
    """Whether the declaration anchored at line ``i`` opens a brace at its own depth before a ``;`` ends
    it (not bounded by the next anchor: a constructor's initializer lines look like anchors), or is a
    special member (``= 0``, ``= default``, ``= delete``)."""
    base = sc.depth_at[i]
    evl, evc, evd = sc.ev_line, sc.ev_char, sc.ev_depth
    for k in range(bisect_left(evl, i), len(evl)):
        if evd[k] < base or evl[k] > i + 60:
            return False
        if evd[k] == base and evc[k] in "{;":
            return evc[k] == "{" or bool(_SPECIAL_MEMBER.search(src.lines[evl[k]]))
    return False


def _declarations_define_nothing(units: list[Unit], declared: set[int], in_type: bool = False) -> None:
    """A prototype or a forward declaration outside a class (``static int f(int);`` above its body,
    ``struct x;``) defines nothing: the definition is the one with a body. A class's member declarations
    stay definitions (their bodies may be in another file, or a template's nowhere an anchor finds)."""
    for u in units:
        if id(u) in declared and not in_type:
            u.define = False
        _declarations_define_nothing(u.children, declared, u.kind in _C_TYPES)


def anchor_units(
    src: Src, language: str, keep: dict[str, object] | None = None
) -> tuple[list[Unit], list[tuple[int, str]], Callable[[int], bool]]:
    """Units of a non-Python file (or Python that does not parse) found with anchors + bracket structure.
    ``keep`` receives the bracket scan (``"scan"``: its literal spans feed the symbol graph)."""
    lang = LANGS[FAMILY.get(language, language)]
    sc = Scan(src.text, src.n, tokens_rx(lang.tokens))
    if keep is not None:
        keep["scan"] = sc
    cands, extras = _anchor_candidates(src, sc, lang, language)
    closer_rx = lang.closer or (r"[}\])]" if lang.mode == "brace" else "")
    closer = re.compile(closer_rx) if closer_rx else None
    items: list[tuple[Unit, bool]] = []
    declared: set[int] = set()  # C/C++ units without a body (id)
    for idx, (i, p, m) in enumerate(cands):
        nxt = cands[idx + 1][0] if idx + 1 < len(cands) else src.n
        if lang.mode == "indent":
            end = _indent_end(src, sc, i, closer, lang.comments)
        else:
            end = _brace_end(src, sc, i, nxt, p.group)
            if end < 0:
                end = _indent_end(src, sc, i, closer, lang.comments)
        u = _anchored_unit(src, lang, i, end, p, m)
        if language in ("c", "cpp") and u.kind in _C_BODIED and not m.group(0).lstrip().startswith("typedef"):
            if not _has_body(src, sc, i):
                declared.add(id(u))
        elif language == "swift" and u.kind == "case":  # case a, b(Int), c = 3: every name a member
            more = _more_cases(src.lines[i])
            u.nested.extend(Unit(head=i, end=i, kind="case", name=n, label=f"case {n}") for n in more)
        items.append((u, p.member))
        if p.group:
            extras.extend(_group_members(src, sc, u))
    roots = build_tree(
        items, sc.depth_at if lang.mode == "brace" else None, nested_kinds=lang.nested,
        nestable=lambda u: _nestable(src.lines[u.head], u),
    )  # fmt: skip
    if declared:
        _declarations_define_nothing(roots, declared)
    return roots, extras, _lead_checker(src, lang, sc.lit_at)


def _initializer_lines(src: Src) -> list[bool]:
    """Which lines are a C++ constructor's member initializers (``: x_(x),`` and the ``y_(x)`` after it),
    not declarations: a line that starts with ``:`` or ``,``, or whose line above (blanks skipped) ends
    with ``,`` in a run of such lines that one starting with ``:`` opened. One pass over the file."""
    out = [False] * src.n
    run = [False] * src.n  # line j ends with "," and it, or the run going on just above it, opens with ":"
    prev = -1  # the last non-blank line
    for i, line in enumerate(src.lines):
        head = line.lstrip()
        colon = head.startswith(":") and not head.startswith("::")
        run[i] = line.rstrip().endswith(",") and (colon or (i > 0 and run[i - 1]))
        if src.blank[i]:
            continue
        out[i] = colon or head.startswith(",") or (prev >= 0 and run[prev])
        prev = i
    return out


def _anchor_candidates(
    src: Src, sc: Scan, lang: Lang, language: str
) -> tuple[list[tuple[int, Pat, re.Match[str]]], list[tuple[int, str]]]:
    """Lines where a unit starts (first matching pattern wins) and ``#define`` names (C, C++)."""
    cands: list[tuple[int, Pat, re.Match[str]]] = []
    extras: list[tuple[int, str]] = []
    c_family = language in ("c", "cpp")
    initializers = _initializer_lines(src) if c_family else []
    for i, ln in enumerate(src.lines):
        if src.blank[i] or sc.lit_at[i] or len(ln) > _MAX_ANCHOR_LINE:
            continue
        if c_family:
            if "#" in ln:
                dm = _DEFINE_RX.match(ln)
                if dm:
                    extras.append((i, dm.group(1)))
                    continue
            if initializers[i] or (i and src.lines[i - 1].rstrip().endswith("\\")):  # a macro's body
                continue
        for p in lang.pats:
            m = p.rx.match(ln)
            if m is None:
                continue
            gd = m.groupdict()
            name = gd.get("name") or gd.get("name2") or ""
            typ = gd.get("type")
            if p.kw and (name in _KEYWORDS or (typ is not None and typ in _KEYWORDS)):
                continue
            if c_family and "<" in name and "::" in name and _goes_on_an_expression(ln, m):
                continue
            cands.append((i, p, m))
            break
    return cands, extras


_TYPENAME_BEFORE = re.compile(r"\btypename\s*$")


def _goes_on_an_expression(line: str, m: re.Match[str]) -> bool:
    """Whether a line that reads like a template's member defined outside it (``Tuple<T, A>::size(``)
    is the middle of an expression from the lines above: a default template argument
    (``T, Tuple<T, A>::size()>>``), a trailing return type (``typename traits<I...>::type()))``). A
    comma or ``typename`` before the name, or more parentheses closed than opened, says so."""
    head = line[: m.start("name")]
    return "," in head or bool(_TYPENAME_BEFORE.search(head)) or line.count(")") > line.count("(")


def _anchored_unit(src: Src, lang: Lang, i: int, end: int, p: Pat, m: re.Match[str]) -> Unit:
    """The unit an anchor match starts on line ``i`` (ending on ``end``), with its kind, name and label."""
    gd = m.groupdict()
    kind = " ".join((gd.get("kind") or p.kind).split())
    name = (gd.get("name") or gd.get("name2") or "").strip()
    typ = gd.get("type")
    if typ is not None and typ in _MODSET:
        kind = "constructor"
    if kind == "typedef":
        tm = _TYPEDEF_NAME.search(src.lines[end])
        name = tm.group(1) if tm else ""
    owner = (gd.get("owner") or "").rstrip(".")
    if p.kind in ("function", "method") and m.group(0).endswith("class"):
        kind = "class"  # Foo.Bar = class { ... }: its methods are members
    name = name.strip("'\"")
    if lang.tokens in ("c", "cpp") and "<" in name and "::" in name:  # Stack<T>::push: the class's name
        scope, _, last = name.rpartition("::")
        name = f"{_TEMPLATE_ARGS.sub('', scope)}::{last}"
    label = f"{kind} {'.'.join(n for n in (owner, name) if n)}".strip()
    if gd.get("recv"):
        label = f"func ({go_receiver_type(gd['recv'])}) {name}"
    define_name = name.rsplit("::", 1)[-1]
    if define_name.startswith("self."):
        define_name = define_name[5:]
    return Unit(
        head=i,
        end=max(end, i),
        kind=kind,
        name=define_name,
        label=label,
        container=kind in lang.containers,
        define=p.define and bool(define_name),
        owner=owner,
    )


def _group_members(src: Src, sc: Scan, u: Unit) -> list[tuple[int, str]]:
    """Names declared one level inside a group unit (enum members, const blocks)."""
    out: list[tuple[int, str]] = []
    d1 = sc.depth_at[u.head] + 1
    for j in range(u.head + 1, u.end):
        if sc.depth_at[j] == d1 and not sc.lit_at[j] and not src.blank[j]:
            gm = _GROUP_MEMBER.match(src.lines[j])
            if gm and not src.lines[j].lstrip().startswith("//"):
                out.append((j, gm.group(1)))
    return out


def build_tree(
    items: list[tuple[Unit, bool]],
    depth_at: list[int] | None,
    root_depth: int = 0,
    nested_kinds: frozenset[str] = frozenset(),
    nestable: Callable[[Unit], bool] | None = None,
) -> list[Unit]:
    """Nest units by span containment; drop anchors inside non-container units (e.g. in function
    bodies). A dropped anchor of one of ``nested_kinds`` that is ``nestable`` is kept as its enclosing
    unit's ``nested`` definition, and one at a deeper level than the roots outside any unit (a function in
    an IIFE or a callback) is a root."""

    def declared(u: Unit) -> bool:  # asked only of an anchor that is no root or child
        return u.define and bool(u.name) and u.kind in nested_kinds and (nestable is None or nestable(u))

    roots: list[Unit] = []
    stack: list[Unit] = []
    last_head = -1
    for u, member in items:
        if u.head <= last_head:
            continue
        while stack and stack[-1].end < u.head:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is None:
            if member or (depth_at is not None and depth_at[u.head] != root_depth and not declared(u)):
                continue
            roots.append(u)
        else:
            inside = parent.container and (depth_at is None or depth_at[u.head] == depth_at[parent.head] + 1)
            if not inside:
                if not member and declared(u):
                    parent.nested.append(u)
                continue
            u.end = min(u.end, parent.end)
            parent.children.append(u)
        last_head = u.head
        stack.append(u)
    return roots


# --------------------------------------------------------------------------------------------- python

_COMPOUND = (ast.If, ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _flat(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    for st in stmts:
        yield st
        if isinstance(st, _COMPOUND):
            for attr in ("body", "orelse", "finalbody"):
                yield from _flat(getattr(st, attr, []) or [])
            for h in getattr(st, "handlers", []) or []:
                yield from _flat(h.body)


def main_guard(test: ast.expr) -> bool:
    """Whether an ``if`` test is ``__name__ == "__main__"`` (either way round): the block is a script,
    and the names it binds are no module's API."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = (test.left, test.comparators[0])
    return any(type(e) is ast.Name and e.id == "__name__" for e in sides) and any(
        type(e) is ast.Constant and e.value == "__main__" for e in sides
    )


def script_lines(guard: ast.If) -> tuple[int, int]:
    """The lines of a main guard's body (its ``else:``, taken on import, is the module's)."""
    return guard.body[0].lineno, guard.body[-1].end_lineno or guard.body[-1].lineno


def python_units(
    src: Src, keep: dict[str, object] | None = None
) -> tuple[list[Unit], list[tuple[int, str]], Callable[[int], bool]]:
    """Units of a Python file via ``ast`` (raises SyntaxError/ValueError when it does not parse).
    ``keep`` receives the tree (``"tree"``: the symbol graph reads the same parse)."""
    tree = ast.parse(src.text)
    if keep is not None:
        keep["tree"] = tree
    extras: list[tuple[int, str]] = []

    def names(st: ast.stmt) -> None:
        targets: list[ast.expr] = []
        if isinstance(st, ast.Assign):
            targets = st.targets
        elif isinstance(st, ast.AnnAssign):
            targets = [st.target]
        elif type(st).__name__ == "TypeAlias":
            targets = [st.name]  # type: ignore[attr-defined]
        for t in targets:
            if isinstance(t, ast.Name):
                extras.append((t.lineno - 1, t.id))
            elif isinstance(t, ast.Tuple):
                extras.extend((e.lineno - 1, e.id) for e in t.elts if isinstance(e, ast.Name))

    def units(stmts: list[ast.stmt], collect: bool) -> list[Unit]:
        out: list[Unit] = []
        for st in _flat(stmts):
            if isinstance(st, _DEFS):
                out.append(mk(st))
            elif collect:
                names(st)
        out.sort(key=lambda u: u.head)  # try/except/else branches are not visited in line order
        return out

    def mk(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Unit:
        head = node.lineno - 1
        start = min([d.lineno - 1 for d in node.decorator_list] + [head])
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        u = Unit(
            head=head,
            end=(node.end_lineno or node.lineno) - 1,
            kind=kind,
            name=node.name,
            label=f"{kind} {node.name}",
            start=start,
            container=True,
        )
        u.children = units(node.body, kind == "class")
        return u

    roots = units(tree.body, True)
    guards = [st for st in _flat(tree.body) if type(st) is ast.If and main_guard(st.test)]
    scripts = [(lo - 1, hi - 1) for lo, hi in map(script_lines, guards)]
    if scripts:
        extras = [(i, n) for i, n in extras if not any(lo <= i <= hi for lo, hi in scripts)]
    return roots, extras, _lead_checker(src, LANGS["python"], None)
