"""Tests for the structure-aware chunker (aide_tui.core.chunk.chunker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aide_tui.core.chunk import chunker as chunk_mod
from aide_tui.core.chunk.chunker import CHUNKER_VERSION, chunk_file, chunk_file_multi, detect_language
from aide_tui.core.model import Chunk, FileGraph

FIXTURES = Path(__file__).parent / "fixtures" / "chunk"

# Per fixture: language, expected units as (bare name, first line incl. leading comments/decorators,
# last line)
# written by hand from the fixture (1-based, inclusive), and names that must appear in some chunk's defines.
CASES: dict[str, tuple[str, list[tuple[str, int, int]], list[str]]] = {
    "sample.py": (
        "python",
        [("TransportError", 16, 17), ("Request", 20, 25), ("BaseClient", 28, 42), ("__init__", 34, 36),
         ("build", 38, 42), ("Client", 45, 72), ("send", 50, 64), ("_transport", 66, 68), ("close", 70, 72),
         ("parse_link_header", 75, 86), ("_redact", 89, 91)],
        ["TransportError", "Request", "BaseClient", "build", "Client", "send", "_transport", "close",
         "parse_link_header", "_redact", "DEFAULT_TIMEOUT", "RETRY_STATUSES", "logger"],
    ),
    "sample.ts": (
        "typescript",
        [("RouteOptions", 8, 12), ("Handler", 14, 14), ("LogLevel", 16, 20), ("Router", 22, 55),
         ("constructor", 30, 32), ("add", 34, 38), ("dispatch", 40, 50), ("log", 52, 54),
         ("parseQuery", 57, 65), ("collect", 67, 73), ("defaultOptions", 75, 77)],
        ["RouteOptions", "Handler", "LogLevel", "Router", "add", "dispatch", "log", "parseQuery", "collect",
         "defaultOptions", "DEFAULT_PORT"],
    ),
    "sample.go": (
        "go",
        [("ErrNotFound", 11, 12), ("const", 14, 18), ("entry", 20, 24), ("Cache", 26, 32), ("Getter", 34, 37),
         ("New", 39, 42), ("Get", 44, 59), ("Set", 61, 78), ("removeElement", 80, 83), ("Len", 85, 90),
         ("formatKey", 92, 101)],
        ["ErrNotFound", "DefaultTTL", "maxEntries", "entry", "Cache", "Getter", "New", "Get", "Set",
         "removeElement", "Len", "formatKey"],
    ),
    "sample.rs": (
        "rust",
        [("MAX_DEPTH", 6, 7), ("Token", 11, 18), ("Lexer", 20, 24), ("impl", 26, 43), ("new", 27, 30),
         ("next_token", 32, 42), ("impl2", 45, 54), ("fmt", 46, 53), ("Visitor", 56, 61),
         ("histogram", 63, 71),
         ("token_vec", 73, 75), ("tests", 77, 93), ("lexes_braces", 81, 86),
         ("raw_strings_do_not_confuse_braces", 88, 92)],
        ["MAX_DEPTH", "KEYWORDS", "Token", "Lexer", "new", "next_token", "fmt", "Visitor", "visit", "finish",
         "histogram", "token_vec", "tests", "lexes_braces"],
    ),
    "Sample.java": (
        "java",
        [("Sample", 7, 57), ("Sample", 17, 19), ("add", 21, 33), ("toString", 35, 42), ("total", 44, 46),
         ("Item", 48, 56), ("Repository", 59, 63), ("Status", 65, 78), ("code", 75, 77)],
        ["Sample", "add", "toString", "total", "Item", "Repository", "find", "findAll", "Status", "code"],
    ),
    "sample.kt": (
        "kotlin",
        [("Note", 9, 10), ("Result", 12, 15), ("NoteStore", 17, 20), ("NoteService", 22, 41),
         ("create", 25, 31),
         ("titles", 33, 35), ("companion", 37, 40), ("wordCount", 43, 46), ("Defaults", 48, 50),
         ("main", 52, 54), ("render", 56, 65)],
        ["MAX_TITLE", "SLUG_RE", "Note", "Result", "NoteStore", "save", "observe", "NoteService", "create",
         "titles", "slug", "wordCount", "Defaults", "main", "render"],
    ),
    "Sample.cs": (
        "csharp",
        [("Line", 7, 8), ("IPricing", 10, 13), ("Invoice", 15, 50), ("Invoice", 28, 31), ("Add", 33, 40),
         ("Total", 42, 47), ("ToString", 49, 49), ("InvoiceExtensions", 52, 58), ("IsEmpty", 54, 57),
         ("Summary", 63, 66)],
        ["Acme.Billing", "Line", "IPricing", "Discount", "Invoice", "Customer", "Lines", "Add", "Total",
         "ToString", "InvoiceExtensions", "IsEmpty", "Summary", "Render"],
    ),
    "sample.c": (
        "c",
        [("ring_t", 12, 16), ("stats", 18, 21), ("ring_init", 26, 30), ("ring_full", 32, 35),
         ("ring_push", 37, 48), ("ring_pop", 50, 57), ("ring_len", 59, 62), ("print_stats", 64, 68),
         ("main", 70, 80)],
        ["RING_CAPACITY", "RING_MASK", "ring_t", "stats", "ring_init", "ring_full", "ring_push", "ring_pop",
         "ring_len", "print_stats", "main"],
    ),
    "sample.cpp": (
        "cpp",
        [("geo", 6, 44), ("Point", 10, 13), ("Box", 15, 31), ("area", 20, 22), ("contains", 24, 26),
         ("clamp", 33, 36), ("distance", 38, 42), ("describe", 46, 49), ("geo_perimeter", 51, 57),
         ("Polygon", 59, 62), ("main", 64, 67)],
        ["geo", "Point", "Box", "area", "contains", "clamp", "distance", "describe", "geo_perimeter",
         "Polygon",
         "perimeter", "main"],
    ),
    "sample.rb": (
        "ruby",
        [("Feeds", 6, 58), ("Error", 11, 11), ("Entry", 13, 30), ("initialize", 17, 21), ("to_h", 23, 25),
         ("recent?", 27, 29), ("Parser", 32, 53), ("parse", 34, 36), ("parse", 38, 46), ("normalize", 50, 52),
         ("latest", 55, 57), ("main", 60, 63)],
        ["Feeds", "Error", "Entry", "initialize", "to_h", "recent?", "Parser", "parse", "normalize", "latest",
         "main"],
    ),
    "sample.php": (
        "php",
        [("User", 12, 22), ("UserRepositoryInterface", 24, 27), ("UserRepository", 29, 63),
         ("__construct", 34, 36), ("find", 38, 47), ("paginate", 49, 57), ("table", 59, 62),
         ("normalize_email", 65, 68), ("Timestamps", 70, 76), ("touch", 72, 75)],
        ["User", "UserRepositoryInterface", "UserRepository", "__construct", "find", "paginate", "table",
         "normalize_email", "Timestamps", "touch"],
    ),
    "sample.sh": (
        "shell",
        [("log", 9, 12), ("die", 14, 17), ("usage", 19, 24), ("build", 26, 36), ("upload", 38, 44),
         ("clean", 59, 62)],
        ["log", "die", "usage", "build", "upload", "clean"],
    ),
    "sample.swift": (
        "swift",
        [("FeedItem", 6, 16), ("init", 12, 15), ("FeedSource", 18, 20), ("FeedError", 22, 25),
         ("FeedStore", 27, 48), ("refresh", 36, 42), ("markRead", 44, 47), ("unreadCount", 51, 53),
         ("formatCount", 56, 61)],
        ["FeedItem", "init", "FeedSource", "fetch", "FeedError", "offline", "FeedStore", "refresh",
         "markRead", "unreadCount", "formatCount"],
    ),
    "sample.scala": (
        "scala",
        [("Money", 5, 9), ("Entry", 11, 13), ("Entry", 15, 24), ("parse", 19, 23), ("Ledger", 26, 40),
         ("post", 30, 32), ("balance", 34, 37), ("Report", 42, 48), ("render", 44, 47), ("Main", 50, 56),
         ("main", 51, 55)],
        ["Money", "isZero", "Entry", "Credit", "Debit", "parse", "Ledger", "createdAt", "post", "balance",
         "toString", "Report", "render", "Main", "main"],
    ),
    "sample.dart": (
        "dart",
        [("Page", 6, 14), ("Repository", 16, 18), ("Logging", 20, 24), ("log", 21, 23),
         ("UserRepository", 26, 42), ("list", 32, 39), ("SortOrder", 44, 44), ("PageJoin", 46, 48),
         ("collectAll", 50, 59), ("main", 61, 64)],
        ["Page", "isLast", "Repository", "list", "Logging", "log", "UserRepository", "calls", "SortOrder",
         "PageJoin", "joined", "collectAll", "main"],
    ),
    "sample.lua": (
        "lua",
        [("new", 12, 19), ("remove", 21, 29), ("get", 31, 38), ("set", 40, 48), ("clear", 50, 52)],
        ["new", "remove", "get", "set", "clear"],
    ),
    "sample.md": (
        "markdown",
        [("aide-tui", 5, 52), ("Install", 9, 27), ("From PyPI", 13, 18), ("From source", 20, 27),
         ("Usage", 29, 35), ("Configuration", 37, 40), ("FAQ", 42, 52), ("Does it need a network?", 44, 46),
         ("Which languages are supported?", 48, 52), ("License", 54, 56)],
        ["aide-tui", "Install", "From PyPI", "From source", "Usage", "Configuration", "FAQ",
         "Does it need a network?", "Which languages are supported?", "License"],
    ),
    "sample.yaml": (
        "yaml",
        [("name", 2, 2), ("on", 4, 7), ("env", 9, 11), ("jobs", 13, 41), ("lint", 15, 23), ("test", 25, 41),
         ("permissions", 43, 44), ("concurrency", 46, 48), ("defaults", 50, 52), ("services_list", 54, 56),
         ("timeout", 58, 58), ("release", 60, 65)],
        ["name", "on", "env", "jobs", "permissions", "concurrency", "defaults", "services_list", "timeout",
         "release"],
    ),
    "sample.toml": (
        "toml",
        [("name", 2, 2), ("version", 3, 3), ("authors", 4, 7), ("build-system", 9, 11), ("project", 13, 20),
         ("project.optional-dependencies", 22, 23), ("project.scripts", 25, 26), ("tool.ruff", 28, 31),
         ("tool.ruff.lint", 33, 35), ("tool.pytest.ini_options", 37, 42), ("tool.mypy.overrides", 44, 46),
         ("tool.mypy.overrides", 48, 50), ("tool.coverage.run", 52, 55)],
        ["name", "version", "authors", "build-system", "project", "project.optional-dependencies",
         "project.scripts", "tool.ruff", "tool.ruff.lint", "tool.pytest.ini_options", "tool.mypy.overrides",
         "tool.coverage.run"],
    ),
    "sample.json": (
        "json",
        [("name", 2, 2), ("version", 3, 3), ("scripts", 6, 11), ("dependencies", 12, 16),
         ("devDependencies", 17, 23), ("browserslist", 24, 28), ("eslintConfig", 29, 41), ("engines", 42, 44),
         ("workspaces", 45, 47), ("prettier", 48, 52), ("volta", 53, 56), ("license", 57, 57),
         ("repository", 58, 61), ("keywords", 62, 62)],
        ["name", "version", "private", "description", "scripts", "dependencies", "devDependencies",
         "browserslist", "eslintConfig", "engines", "workspaces", "prettier", "volta", "license",
         "repository",
         "keywords"],
    ),
}  # fmt: skip

# Names that must NOT be reported (they only look like definitions: inside strings, fences, function bodies).
NOT_DEFINED = {
    "sample.md": ["this is not a heading"],
    "sample.toml": ["inside string", "not-a-table"],
    "sample.ts": ["source", "url", "out"],
    "sample.go": ["el", "e"],
    "sample.java": ["sb"],
    "sample.swift": ["fresh", "known", "s"],  # locals of a function, not members
    "sample.scala": ["raw", "ledger"],
    "sample.dart": ["out", "cursor", "page", "print"],
    "sample.lua": ["and", "self", "value", "oldest"],
}

# (fixture, budget, a line inside a method piece, expected symbol, a signature expected in the header)
METHOD_SYMBOLS = [
    ("sample.py", 300, 60, "class Client > def send", "class Client(BaseClient):"),
    ("sample.ts", 250, 45, "class Router > method dispatch", "export class Router extends EventEmitter {"),
    ("sample.go", 200, 56, "func (*Cache) Get", "func (c *Cache) Get(key string) (any, error) {"),
    ("sample.rs", 250, 38, "impl Lexer<'a> > fn next_token", "impl<'a> Lexer<'a> {"),
    ("Sample.java", 250, 27, "class Sample > method add", "public class Sample {"),
    ("sample.kt", 200, 28, "class NoteService > fun create",
     "class NoteService(private val store: NoteStore) {"),
    ("Sample.cs", 200, 45, "namespace Acme.Billing > class Invoice > method Total", "public class Invoice"),
    ("sample.cpp", 200, 25, "namespace geo > class Box > function contains", "class Box {"),
    ("sample.rb", 200, 44, "module Feeds > class Parser > def parse", "class Parser"),
    ("sample.php", 250, 53, "class UserRepository > function paginate",
     "class UserRepository implements UserRepositoryInterface"),
    ("sample.md", 60, 25, "# aide-tui > ## Install > ### From source", None),
    ("sample.yaml", 150, 35, "jobs > test", "jobs:"),
    ("sample.json", 60, 37, "eslintConfig > overrides", '"eslintConfig": {'),
    ("sample.swift", 200, 39, "class FeedStore > func refresh",
     "public final class FeedStore: ObservableObject {"),
    ("sample.scala", 200, 35, "class Ledger > def balance", "class Ledger(val name: String) {"),
    ("sample.dart", 200, 36, "class UserRepository > method list",
     "class UserRepository extends Repository<String> with Logging {"),
]  # fmt: skip


def _nonws(s: str) -> int:
    return len("".join(s.split()))


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _check_invariants(path: str, text: str, chunks: list[Chunk]) -> None:
    """Properties every chunking must have: ordered, disjoint, faithful text, every non-blank line covered."""
    lines = text.split("\n")
    covered: set[int] = set()
    prev_end = 0
    for c in chunks:
        assert c.path == path
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.start_line > prev_end, "chunks overlap or are out of order"
        prev_end = c.end_line
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.text.strip(), "empty chunk"
        assert c.header.startswith(f"file: {path}")
        assert len(c.header) <= 320
        if c.symbol:
            assert c.header.split("\n")[1] == f"symbol: {c.symbol}"
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i + 1 for i, ln in enumerate(lines) if ln.strip() and i + 1 not in covered]
    assert not missing, f"non-blank lines not covered: {missing[:10]}"


def _containing(chunks: list[Chunk], a: int, b: int) -> Chunk | None:
    for c in chunks:
        if c.start_line <= a and b <= c.end_line:
            return c
    return None


# ----------------------------------------------------------------------------------------------- fixtures


def test_single_file_components_are_chunked_by_their_script() -> None:
    """A Vue or Svelte component's script defines its methods; its markup stays searchable text."""
    vue = (
        "<template>\n  <button :class=\"cx('root')\" @click=\"toggle\">{{ label || 'Don\\'t' }}</button>\n"
        "</template>\n\n<script>\nexport default {\n  name: 'Toggle',\n  methods: {\n"
        "    toggle(event) {\n      this.$emit('change', !this.on);\n    },\n"
        "    reset() {\n      this.on = false;\n    }\n  }\n};\n</script>\n\n"
        "<style>\n.root { color: red; }\n</style>\n"
    )
    svelte = (
        '<script lang="ts">\n  export let count: number = 0;\n  function increment(step: number) {\n'
        "    count += step;\n  }\n</script>\n\n{#if count > 0}\n  <button on:click={() => increment(1)}>"
        "{count}</button>\n{/if}\n"
    )
    for path, text, names in (
        ("ui/Toggle.vue", vue, {"toggle", "reset"}),
        ("ui/Counter.svelte", svelte, {"count", "increment"}),
    ):
        chunks = chunk_file(path, text)
        _check_invariants(path, text, chunks)
        assert names <= {d for c in chunks for d in c.defines}, path
        assert {c.language for c in chunks} == {"javascript"}


def test_every_family_has_a_fixture() -> None:
    assert {lang for lang, _, _ in CASES.values()} >= {
        "python", "typescript", "go", "rust", "java", "kotlin", "csharp", "c", "cpp", "ruby", "php", "shell",
        "markdown", "yaml", "toml", "json", "swift", "scala", "dart", "lua",
    }  # fmt: skip
    for name in CASES:
        n = len(_read(name).split("\n"))
        assert 50 <= n <= 260, name


@pytest.mark.parametrize("budget", [1500, 400, 150])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_units_fitting_the_budget_are_never_cut(name: str, budget: int) -> None:
    language, spans, _ = CASES[name]
    text = _read(name)
    lines = text.split("\n")
    path = f"src/pkg/{name}"
    chunks = chunk_file(path, text, budget)
    assert chunks
    assert all(c.language == language for c in chunks)
    _check_invariants(path, text, chunks)
    checked = 0
    for unit, a, b in spans:
        if _nonws("\n".join(lines[a - 1 : b])) > budget:
            continue
        checked += 1
        assert _containing(chunks, a, b) is not None, (
            f"{name}: unit {unit} ({a}-{b}) was cut at budget {budget}"
        )
    if budget == 1500:
        assert checked == len(spans)  # the fixtures are small: at the default budget every unit fits


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_defines(name: str) -> None:
    _, spans, expected = CASES[name]
    chunks = chunk_file(name, _read(name))
    defined = {d for c in chunks for d in c.defines}
    assert set(expected) <= defined, sorted(set(expected) - defined)
    for bad in NOT_DEFINED.get(name, []):
        assert bad not in defined
    # A unit that sits in one chunk is defined by that chunk (not by a neighbour).
    for unit, a, b in spans:
        if unit in expected:
            c = _containing(chunks, a, b)
            assert c is not None and unit in c.defines, (unit, a, b)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_packs_small_units(name: str) -> None:
    """At the default budget the fixtures need far fewer chunks than they have units."""
    _, spans, _ = CASES[name]
    chunks = chunk_file(name, _read(name))
    assert len(chunks) <= max(2, len(spans) // 2)
    assert all(_nonws(c.text) <= 1500 for c in chunks)


@pytest.mark.parametrize(("name", "budget", "line", "symbol", "sig"), METHOD_SYMBOLS)
def test_method_piece_symbol_and_header(
    name: str, budget: int, line: int, symbol: str, sig: str | None
) -> None:
    chunks = chunk_file(name, _read(name), budget)
    c = _containing(chunks, line, line)
    assert c is not None
    assert c.symbol == symbol
    header = c.header.split("\n")
    assert header[0] == f"file: {name}"
    assert header[1] == f"symbol: {symbol}"
    if sig is not None:
        assert sig in header[2:]


def test_python_fixture_chunks_in_detail() -> None:
    text = _read("sample.py")
    chunks = chunk_file("pkg/sample.py", text, 300)
    # ``send`` is bigger than 300: split on its statements, every piece knows its enclosing symbols; the class
    # header (class line + docstring + fields) goes with the first piece.
    head = _containing(chunks, 45, 52)
    assert head is not None and head.symbol == "class Client > def send"
    assert head.defines == ("Client", "max_retries", "send")
    assert head.header == "file: pkg/sample.py\nsymbol: class Client > def send"
    body = _containing(chunks, 53, 64)
    assert body is not None and body.symbol == "class Client > def send" and body.defines == ()
    assert body.header.split("\n")[2:] == [
        "class Client(BaseClient):",
        "def send(self, request: Request, *, stream: bool = False) -> dict[str, Any]:",
    ]
    # Module-level imports/constants are chunked, never dropped.
    assert chunks[0].start_line == 1 and chunks[0].symbol is None
    assert set(chunks[0].defines) == {"logger", "DEFAULT_TIMEOUT", "RETRY_STATUSES"}
    # The decorator belongs to the unit.
    transport = _containing(chunks, 66, 68)
    assert transport is not None and "_transport" in transport.defines
    # At a budget where ``send`` fits it is one chunk.
    assert _containing(chunk_file("pkg/sample.py", text, 600), 50, 64) is not None


def test_markdown_heading_chain_and_fences() -> None:
    chunks = chunk_file("README.md", _read("sample.md"), 40)
    symbols = {c.symbol for c in chunks}
    assert "# aide-tui > ## FAQ > ### Does it need a network?" in symbols
    assert "# aide-tui > ## Configuration" in symbols  # setext heading
    assert "# License" in symbols
    fence = _containing(chunks, 17, 17)
    assert fence is not None and fence.symbol == "# aide-tui > ## Install > ### From PyPI"


# ----------------------------------------------------------------------------------------- sizes, packing


def _big_python_function(n: int = 120) -> str:
    body = "\n".join(
        f"    value_{i} = compute_something(value_{i - 1 if i else 0}, {i})  # step {i}" for i in range(n)
    )
    return f'import os\n\n\ndef big(value_0):\n    """A huge function."""\n{body}\n    return value_0\n'


def test_oversized_function_is_split_with_its_symbol() -> None:
    text = _big_python_function()
    chunks = chunk_file("big.py", text)
    _check_invariants("big.py", text, chunks)
    pieces = [c for c in chunks if c.symbol == "def big"]
    assert len(pieces) >= 3
    assert all(_nonws(c.text) <= 1500 * 1.2 for c in chunks)
    assert pieces[0].text.lstrip().startswith(("import os", "def big"))
    for p in pieces[1:]:
        assert "def big(value_0):" in p.header.split("\n")
        assert "big" not in p.defines
    assert "big" in pieces[0].defines


def test_oversized_class_is_split_on_methods() -> None:
    methods = "\n\n".join(
        f'    def method_{i}(self, x):\n        """Method {i}."""\n'
        + "\n".join(f"        x = transform_{j}(x, {i * j})" for j in range(6))
        + "\n        return x"
        for i in range(25)
    )
    text = f'class Big(Base):\n    """Doc of Big."""\n\n    limit = 10\n\n{methods}\n'
    chunks = chunk_file("big.py", text, 600)
    _check_invariants("big.py", text, chunks)
    assert len(chunks) >= 5
    assert all(c.symbol is not None and c.symbol.startswith("class Big") for c in chunks)
    assert chunks[0].start_line == 1 and "Big" in chunks[0].defines and "limit" in chunks[0].defines
    assert "def method_0(self, x):" in chunks[0].text  # class header goes with the first piece
    lines = text.split("\n")
    for i in range(25):
        a = lines.index(f"    def method_{i}(self, x):") + 1
        c = _containing(chunks, a, a + 8)
        assert c is not None and f"method_{i}" in c.defines
    for c in chunks[1:]:
        assert c.symbol.startswith("class Big > def method_")
        assert "class Big(Base):" in c.header.split("\n")
        assert _nonws(c.text) <= 600


def test_oversized_brace_method_is_split() -> None:
    body = "\n".join(f'        total += compute(items[{i}], "{{x}}"); // step {i}' for i in range(150))
    text = (
        "package x;\n\npublic class Big {\n    private int total;\n\n"
        f"    public int sum(int[] items) {{\n{body}\n        return total;\n    }}\n\n"
        "    public void reset() {\n        total = 0;\n    }\n}\n"
    )
    chunks = chunk_file("Big.java", text)
    _check_invariants("Big.java", text, chunks)
    pieces = [c for c in chunks if c.symbol == "class Big > method sum"]
    assert len(pieces) >= 3
    assert all(_nonws(c.text) <= 1500 * 1.2 for c in chunks)
    assert all("public int sum(int[] items) {" in p.header for p in pieces[1:])
    reset_line = text.split("\n").index("    public void reset() {") + 1
    reset = _containing(chunks, reset_line, reset_line + 2)
    assert reset is not None and "reset" in reset.defines


def test_small_adjacent_functions_are_packed() -> None:
    text = "\n\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(12)) + "\n"
    chunks = chunk_file("small.py", text)
    assert len(chunks) == 1
    assert chunks[0].defines == tuple(f"f{i}" for i in range(12))
    assert chunks[0].symbol == "def f0"
    # With a tiny budget they are packed into several chunks, none cut.
    chunks = chunk_file("small.py", text, 40)
    assert 1 < len(chunks) < 12
    assert all(c.text.count("def ") == c.text.count("return") for c in chunks)


def test_go_small_functions_are_packed_and_text_is_windowed_when_unknown() -> None:
    text = "package p\n\n" + "\n\n".join(f"func F{i}() int {{\n\treturn {i}\n}}" for i in range(10)) + "\n"
    chunks = chunk_file("p.go", text)
    assert len(chunks) == 1 and set(chunks[0].defines) == {f"F{i}" for i in range(10)}


def test_a_go_method_of_a_generic_type_is_labelled_by_its_type() -> None:
    body = "\n".join(f"\tstep{i}()" for i in range(40))
    text = (
        "package p\n\n"
        f"func (f *FlagBase[T, C, V]) RunAction(ctx context.Context) error {{\n{body}\n\treturn nil\n}}\n\n"
        f"func (s Set[K]) Len() int {{\n{body}\n\treturn 0\n}}\n\n"
        f"func (Pair[A, B]) Swap() {{\n{body}\n}}\n"
    )
    symbols = [c.symbol for c in chunk_file("p.go", text, 300) if c.defines]
    assert symbols == ["func (*FlagBase) RunAction", "func (Set) Len", "func (Pair) Swap"]


# ------------------------------------------------------------------------------------------ robustness


def test_ids_are_stable_across_runs() -> None:
    for name in CASES:
        text = _read(name)
        a = [c.id for c in chunk_file(name, text, 300)]
        b = [c.id for c in chunk_file(name, text, 300)]
        assert a == b and len(set(a)) == len(a)
    assert CHUNKER_VERSION == "8"


@pytest.mark.parametrize("name", ["sample.py", "sample.go", "Sample.cs", "sample.md", "sample.rb"])
def test_crlf_files(name: str) -> None:
    lf = _read(name)
    crlf = lf.replace("\n", "\r\n")
    a = chunk_file(name, lf, 300)
    b = chunk_file(name, crlf, 300)
    assert [(c.start_line, c.end_line, c.symbol, c.defines) for c in a] == [
        (c.start_line, c.end_line, c.symbol, c.defines) for c in b
    ]
    _check_invariants(name, crlf, b)
    assert all(c.text.endswith("\r") or c.end_line == len(crlf.split("\n")) for c in b)


def test_python_syntax_error_falls_back_to_regex() -> None:
    text = (
        "import os\n\n\nclass Broken:\n    def ok(self):\n        return 1\n\n"
        "    def bad(self:\n        return (\n\n\ndef after(x):\n    # comment\n    return x\n"
    )
    chunks = chunk_file("broken.py", text, 20)
    _check_invariants("broken.py", text, chunks)
    defined = {d for c in chunks for d in c.defines}
    assert {"Broken", "ok", "after"} <= defined


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "\r\n\r\n"])
def test_empty_files(text: str) -> None:
    assert chunk_file("empty.py", text) == []
    assert chunk_file("empty.txt", text) == []


def test_comment_only_files() -> None:
    for path, text in [
        ("c.py", "# one\n# two\n"),
        ("c.go", "// one\n/* two\n three */\n"),
        ("c.md", "text\n"),
    ]:
        chunks = chunk_file(path, text)
        assert len(chunks) == 1 and chunks[0].symbol is None
        _check_invariants(path, text, chunks)


def test_unknown_extension_uses_line_windows() -> None:
    text = "\n".join(f"line {i} of some log output" for i in range(200)) + "\n"
    chunks = chunk_file("server.log", text)
    assert detect_language("server.log") == "text"
    _check_invariants("server.log", text, chunks)
    assert len(chunks) >= 4
    assert all(c.end_line - c.start_line + 1 <= 60 and c.symbol is None and c.defines == () for c in chunks)
    assert all(c.language == "text" for c in chunks)


@pytest.mark.parametrize("path", ["min.js", "blob.py", "data.json", "x.txt", "a.c", "doc.md", "s.yaml"])
def test_20k_char_single_line(path: str) -> None:
    text = "x = [" + ", ".join(f'"{{{i}}}"' for i in range(2500)) + "]"
    assert len(text) > 20_000
    chunks = chunk_file(path, text)  # its speed is benchmarked (bench_chunk.py), never asserted here
    assert len(chunks) == 1 and chunks[0].text == text


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("u.js", "function a() {\n  if (x) {\n    y();\n\nfunction b() {\n  return 1;\n}\n"),
        ("u.go", "package p\n\nfunc a() {\n}\n}\n}\nfunc b() {\n\treturn\n}\n"),
        ("u.rs", 'fn a() {\n    let s = "{";\n\nfn b() -> u8 { 1 }\n'),
        ("u.c", "int a(void) {\n  return '}';\n}\n\nint b(void) {\n  /* { */\n  return 0;\n"),
        ("u.json", '{\n  "a": {\n    "b": [1, 2\n  },\n  "c": 3\n'),
        ("u.rb", "class A\n  def x\n    1\n\ndef y\n  2\nend\n"),
        ("u.py", "def f(:\n\tif x:\n\t\treturn 1\n\tdef g(\n"),
        ("u.toml", '[a\nb = """\nunterminated\n[c]\nd = 1\n'),
    ],
)
def test_unbalanced_and_broken_input_never_crashes(path: str, text: str) -> None:
    for budget in (1500, 10, 1):
        chunks = chunk_file(path, text, budget)
        _check_invariants(path, text, chunks)


def test_tabs_are_handled() -> None:
    text = "class A:\n\tdef x(self):\n\t\treturn 1\n\n\tdef y(self):\n\t\treturn 2\n"
    chunks = chunk_file("t.py", text, 10)
    _check_invariants("t.py", text, chunks)
    assert {d for c in chunks for d in c.defines} == {"A", "x", "y"}


def test_chunker_exception_falls_back_to_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(chunk_mod, "anchor_units", boom)
    text = _read("sample.go")
    chunks = chunk_file("sample.go", text)
    _check_invariants("sample.go", text, chunks)
    assert chunks and all(c.symbol is None for c in chunks)


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"), ("x.pyi", "python"), ("app.js", "javascript"), ("c.jsx", "javascript"),
        ("m.mjs", "javascript"), ("t.ts", "typescript"), ("v.tsx", "typescript"), ("main.go", "go"),
        ("lib.rs", "rust"), ("A.java", "java"), ("b.kt", "kotlin"), ("s.kts", "kotlin"), ("P.cs", "csharp"),
        ("x.c", "c"), ("x.h", "c"), ("y.cpp", "cpp"), ("y.hpp", "cpp"), ("y.cc", "cpp"), ("r.rb", "ruby"),
        ("Rakefile", "ruby"), ("Gemfile", "ruby"), ("i.php", "php"), ("s.sh", "shell"), ("s.bash", "shell"),
        (".bashrc", "shell"), ("README.md", "markdown"), ("c.yml", "yaml"), ("c.yaml", "yaml"),
        ("pyproject.toml", "toml"), ("Cargo.lock", "toml"), ("package.json", "json"), ("LICENSE", "text"),
        ("notes.txt", "text"), ("Makefile", "text"), ("weird.PY", "python"), (".gitignore", "text"),
    ],
)  # fmt: skip
def test_detect_language(path: str, language: str) -> None:
    assert detect_language(path) == language


def test_header_is_short_with_long_signatures() -> None:
    params = ", ".join(f"parameter_number_{i}: int = {i}" for i in range(40))
    text = f"class Outer:\n    class Inner:\n        def method(self, {params}):\n"
    text += "\n".join(f"            total += parameter_number_{i % 40} * {i}" for i in range(150)) + "\n"
    chunks = chunk_file("h.py", text)
    _check_invariants("h.py", text, chunks)
    assert len(chunks) > 2
    assert all(c.symbol == "class Outer > class Inner > def method" for c in chunks)
    assert all(len(c.header) <= 300 for c in chunks)


# ------------------------------------------------------------------------------------------------ speed


def test_5000_line_files_keep_their_invariants() -> None:
    """Long files of many small units (their speed is benchmarked in tests/benchmarks/bench_chunk.py)."""
    py = "\n\n".join(
        f"class C{i}:\n    def m(self, x):\n        if x > {i}:\n"
        f"            return {{'k': x}}\n        return None"
        for i in range(1000)
    )
    js = "\n\n".join(
        f"export class C{i} {{\n  m(x) {{\n    if (x > {i}) {{\n      return '{{'\n    }}\n  }}\n}}"
        for i in range(700)
    )
    c = "\n\n".join(f"static int f{i}(int x)\n{{\n    return x > {i} ? '}}' : 0;\n}}" for i in range(1000))
    for path, text in [("s.py", py), ("s.ts", js), ("s.c", c)]:
        assert text.count("\n") >= 4500
        _check_invariants(path, text, chunk_file(path, text))


def test_js_regex_literals_do_not_break_brace_matching() -> None:
    text = (
        "export function isUrl(href) {\n"
        "  const re = /}$/;\n"
        "  if (!/^(?:[a-z+]+:)?\\/\\//.test(href)) {\n"
        "    return re.test(href);\n"
        "  }\n"
        "  return false;\n"
        "}\n\n"
        "export function after() {\n  return 1;\n}\n"
    )
    lines = text.split("\n")
    budget = _nonws("\n".join(lines[:7])) + 5  # isUrl fits, isUrl + after does not
    chunks = chunk_file("u.js", text, budget)
    _check_invariants("u.js", text, chunks)
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == [
        (1, 7, "function isUrl"),
        (9, 11, "function after"),
    ]
    assert {d for c in chunks for d in c.defines} == {"isUrl", "after"}


def test_php_braced_namespace() -> None:
    body = "\n".join(
        f"        public function m{i}() {{\n            return {i};\n        }}\n" for i in range(40)
    )
    text = f"<?php\nnamespace App\\Models {{\n    class Big {{\n{body}    }}\n}}\n"
    chunks = chunk_file("m.php", text, 200)
    _check_invariants("m.php", text, chunks)
    assert all(c.symbol and c.symbol.startswith("namespace App\\Models > class Big") for c in chunks[1:])
    assert {f"m{i}" for i in range(40)} <= {d for c in chunks for d in c.defines}


@pytest.mark.parametrize(
    ("name", "imports"),
    [
        ("sample.swift", ["Foundation"]),
        ("sample.scala", ["scala.collection.mutable"]),
        ("sample.dart", ["dart:async"]),
    ],
)
def test_new_languages_have_a_symbol_graph(name: str, imports: list[str]) -> None:
    graph: list[FileGraph] = []
    chunk_file_multi(name, _read(name), (1500,), graph=graph)
    assert graph[0].imports == imports
    used = {r.name for r in graph[0].refs}
    assert {"FeedItem", "Ledger", "Page"} & used and not {"local", "guard", "let", "val", "final"} & used


def test_lua_requires_are_imports_and_its_keywords_no_references() -> None:
    text = (
        '-- callers require "lib.m"\nlocal json = require("cjson.safe")\nlocal M = {}\n\n'
        "function M.encode(v)\n  local s = json.encode(v)\n"
        '  if s then return s elseif v then return "" end\n  repeat until true\nend\n\nreturn M\n'
    )
    graph: list[FileGraph] = []
    chunks = chunk_file_multi("lib/m.lua", text, (1500,), graph=graph)[0]
    assert graph[0].imports == ["cjson.safe"] and [d.qualname for d in graph[0].defs] == ["M.encode"]
    assert "encode" in {d for c in chunks for d in c.defines}
    assert not {"local", "elseif", "repeat", "then", "end"} & {r.name for r in graph[0].refs}


def test_scala_3_bodies_by_indentation_are_units() -> None:
    text = (
        "object Billing:\n  val rate = 3\n\n  def invoice(n: Int): Int =\n    val base = n * rate\n"
        "    base + 1\n\ntrait Shape:\n  def area: Double\n\nclass Circle(r: Double) extends Shape:\n"
        "  def area: Double = math.Pi * r * r\n  def grow(k: Double): Circle =\n    Circle(r * k)\n"
        "end Circle\n"
    )
    chunks = chunk_file("b.scala", text, 60)
    _check_invariants("b.scala", text, chunks)
    spans = {c.symbol: (c.start_line, c.end_line) for c in chunks}
    assert spans["object Billing > def invoice"] == (4, 6)
    assert spans["class Circle > def grow"][1] >= 14  # its body, not the def line alone
    allman = (  # a body's brace on a line of its own
        "class Foo {\n  def m1(x: Int): Int =\n  {\n    x + 1\n  }\n\n  def m2(x: Int): Int =\n  {\n"
        "    x * 2\n  }\n}\n"
    )
    units = [(c.start_line, c.end_line, c.symbol) for c in chunk_file("a.scala", allman, 30)]
    assert units == [(1, 1, "class Foo"), (2, 5, "class Foo > def m1"), (7, 11, "class Foo > def m2")]


@pytest.mark.parametrize(
    ("path", "text", "names"),
    [
        ("m.lua", "function M.util.helper(x)\n  return x\nend\nfunction a.b.c:d()\nend\n", ["helper", "d"]),
        ("t.dart", "typedef Callback = void Function(int);\ntypedef void Old(int x);\n", ["Callback", "Old"]),
        (
            "p.dart",
            "class P {\n  P.origin();\n  factory P.fromJson(Map j) {\n    return P.origin();\n  }\n}",
            ["P", "origin", "fromJson"],
        ),
        (
            "t.swift",
            "let top = 1\ntypealias Handler = (Int) -> Void\nfunc `default`() {}\n",
            ["top", "Handler", "default"],
        ),
    ],
)
def test_the_name_defined_is_the_last_part_as_written(path: str, text: str, names: list[str]) -> None:
    assert [d for c in chunk_file(path, text) for d in c.defines] == names


def test_a_lua_require_in_a_comment_or_a_string_imports_nothing() -> None:
    text = (
        '--[[ require("commented_out") ]] local y = require("after_comment")\n'
        'local s = [[ require("in_string") ]]\nlocal real = require("real") -- require("trailing")\n'
        "local q = \"require('in_dq_string')\"\n"
    )
    graph: list[FileGraph] = []
    chunk_file_multi("m.lua", text, (1500,), graph=graph)
    assert graph[0].imports == ["after_comment", "real"]


def test_every_languages_patterns_compile() -> None:
    """The anchor and tokenizing patterns are compiled when a language is first met: each must still be
    a valid regex (a broken one would only show on a file of its language)."""
    from aide_tui.core.chunk.code import LANGS, TOKENS, tokens_rx

    for name, lang in LANGS.items():
        for pat in lang.pats:
            pat.rx.match("x")
            assert isinstance(getattr(pat.rx.match, "__self__", None), re.Pattern), name  # compiled now
    for family in TOKENS:
        assert tokens_rx(family).pattern, family
