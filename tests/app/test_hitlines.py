"""The best line of a hit (core/hitlines.py): where the preview lands and what vimgrep prints."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.search.hitlines import best_line, term_spans, vimgrep_line
from aide_tui.core.search.response import Hit
from aide_tui.core.tokens import tokenize

CHUNK = '''def render(self, options):
    """Render the object."""
    lines = self.lines
    for line in lines:
        yield render_markup(line, style=self.style)
    return None
'''


def test_the_line_with_the_most_and_rarest_terms_wins() -> None:
    best = best_line(CHUNK, 1396, tokenize("render markup"), "Console.render")
    assert best.line == 1400 and best.column == len("        yield ") + 1
    assert set(best.matched) == {"render", "markup"}


def test_terms_match_parts_of_identifiers_and_folded_forms() -> None:
    spans = term_spans("x = parse_header(renderPage, parsing)", tokenize("parse page"))
    assert [t for _, _, t in spans] == ["pars", "page", "pars"] or [t for _, _, t in spans] == [
        "parse",
        "page",
        "parse",
    ]
    assert term_spans("x", []) == []


def test_without_matches_the_symbol_line_then_the_first_code_line() -> None:
    text = "\n@decorator\nclass Pool:\n    pass\n"
    assert best_line(text, 10, [], "class Pool").line == 12
    assert best_line(text, 10, []).line == 11


def test_vimgrep_line_points_at_the_best_line() -> None:
    hit = Hit("src/c.py", 1396, 1401, 0.5, "render", "python", {}, tokenize("markup"), CHUNK)
    assert vimgrep_line("src/c.py", hit) == "src/c.py:1400:22:yield render_markup(line, style=self.style)"


def test_a_hit_found_by_meaning_lands_in_its_best_dense_piece(workspace: Path) -> None:
    """No query term in the chunk: the line comes from the piece whose vector ranked it."""
    from loopback_server import LoopbackServer

    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.http import OpenAIEmbedder
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.search.hitlines import hit_best_line
    from aide_tui.core.search.searcher import Searcher

    settings = load_settings(workspace, {"embedding": {"backend": "openai"}, "index": {"chunk_budget": 4000}})
    with LoopbackServer(dim=16) as srv:
        Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        s = Searcher(workspace, settings, OpenAIEmbedder(srv.url))
        hits = [h for h in s.search("zzqq", mode="dense").results if h.path == "src/httpclient/client.py"]
    assert hits and hits[0].best_piece is not None
    lo, hi = hits[0].best_piece
    assert hits[0].start_line <= lo <= hi <= hits[0].end_line
    assert lo <= hit_best_line(hits[0]).line <= hi
    assert (lo, hi) != (hits[0].start_line, hits[0].end_line)  # a piece, not the whole chunk


def test_the_best_line_stays_inside_the_piece_that_ranked_the_hit() -> None:
    """A chunk packs several functions; the query's words recur in a neighbour (here with the rarer
    word too), but the hit was ranked by the piece holding ``keys``: its line is the best line."""
    from aide_tui.core.search.hitlines import hit_best_line

    text = (
        "def items(self):\n"
        '    """Return all the (key, value) pairs: the keys first."""\n'
        "    return [(k, self._dict[k]) for k in self._dict]\n"
        "\n"
        "def keys(self):\n"
        "    return list(self._dict)\n"
    )
    terms = tokenize("return all the keys")
    hit = Hit("p.py", 10, 15, 0.5, "def items", "python", {}, terms, text, best_piece=(14, 15))
    assert hit_best_line(hit).line == 14
    # without a known piece the whole chunk's best line is kept (the docstring holding every word)
    assert hit_best_line(Hit("p.py", 10, 15, 0.5, "def items", "python", {}, terms, text)).line == 11
    # a piece without any query word: a matching line elsewhere in the chunk still wins
    assert hit_best_line(Hit("p.py", 10, 15, 0.5, "def items", "python", {}, tokenize("pairs"), text,
                             best_piece=(14, 15))).line == 11  # fmt: skip


def test_a_row_is_labelled_by_the_definition_at_its_best_line() -> None:
    from aide_tui.core.search.hitlines import symbol_at_best_line

    packed = "def alpha():\n    return 1\n\n\ndef beta_deadline():\n    return 2\n"
    hit = Hit("h.py", 10, 15, 0.5, "def alpha", "python", {}, tokenize("deadline"), packed)
    assert symbol_at_best_line(hit) == "def beta_deadline"
    methods = "    def _get_proxy_map(self):\n        pass\n\n    @property\n    def timeout(self):\n"
    symbol = "class BaseClient > def _get_proxy_map"
    hit = Hit(
        "c.py", 230, 235, 0.5, symbol, "python", {}, tokenize("timeout"), methods + "        return 1\n"
    )
    assert symbol_at_best_line(hit) == "class BaseClient > def timeout"  # the decorator belongs below it
    whole = "class Pool:\n    '''Pools.'''\n\n    def drain(self):\n        return self.sockets\n"
    hit = Hit("p.py", 1, 5, 0.5, "class Pool", "python", {}, tokenize("sockets"), whole)
    assert symbol_at_best_line(hit) == "class Pool > def drain"  # the method inside the class
    hit = Hit("p.py", 1, 5, 0.5, "class Pool", "python", {}, tokenize("pools"), whole)
    assert symbol_at_best_line(hit) == "class Pool"
    single = "def only():\n    return sockets\n"
    hit = Hit("o.py", 3, 4, 0.5, "class Outer > def only", "python", {}, tokenize("sockets"), single)
    assert symbol_at_best_line(hit) == "class Outer > def only"  # one definition: the chunk's symbol


def test_a_line_after_a_definitions_body_is_not_inside_it() -> None:
    """A module-level line after a class is not the class's (its label was ``class UseClientDefault``
    for httpx's ``USER_AGENT = ...``); a signature's closing line (``) -> int:``) ends no body."""
    from aide_tui.core.search.hitlines import symbol_at_line

    text = (
        'class UseClientDefault:\n    """A sentinel."""\n\n\nUSE_CLIENT_DEFAULT = UseClientDefault()\n'
        "USER_AGENT = 'python-httpx'\n\n\ndef build(\n    name: str,\n) -> int:\n    return len(name)\n"
    )
    hit = Hit("c.py", 70, 81, 0.5, "class UseClientDefault", "python", {}, [], text)
    assert symbol_at_line(hit, 71) == "class UseClientDefault"
    assert symbol_at_line(hit, 81) == "def build"
    hit = Hit("c.py", 70, 81, 0.5, "USER_AGENT", "python", {}, [], text)  # (a name pattern's label)
    assert symbol_at_line(hit, 75) == "USER_AGENT"  # no definition holds the line: the row's own label
    commented = (
        "class A:\n    def f(self):\n        pass\n\n    def g(self):\n"
        "# a note at column 0\n        return 1\n"
    )
    hit = Hit("a.py", 1, 7, 0.5, "class A > def f", "python", {}, [], commented)
    assert symbol_at_line(hit, 7) == "class A > def g"  # a comment ends no body
    # braces on their own line (C#, PHP, C's Allman style) say nothing of where a body ends
    php = (
        "class Foo\n{\n    public function first()\n    {\n        return 1;\n    }\n"
        "    public function second()\n"
    )
    hit = Hit("f.php", 1, 10, 0.5, "class Foo", "php", {}, [], php + "    {\n        return 2;\n")
    assert symbol_at_line(hit, 9) == "class Foo > function second"


def test_a_go_method_line_is_labelled_with_its_receivers_type() -> None:
    """Go methods packed in one chunk are labelled as the chunker labels one: ``func (*Set) Len``, the
    receiver's type without its name or type parameters; a plain function as ``func name``."""
    from aide_tui.core.search.hitlines import symbol_at_line

    go = (
        "func (s *Set[K]) Add(k K) {\n\ts.m[k] = struct{}{}\n}\n\n"
        "func (s *Set[K]) Len() int {\n\treturn len(s.m)\n}\n\nfunc New() *Set[int] {\n\treturn nil\n}\n"
    )
    hit = Hit("set.go", 10, 21, 0.5, "func (*Set) Add", "go", {}, [], go)
    assert symbol_at_line(hit, 11) == "func (*Set) Add"
    assert symbol_at_line(hit, 15) == "func (*Set) Len"
    assert symbol_at_line(hit, 19) == "func New"
    # a chunk labelled by the group of declarations it starts with holds one method
    grouped = (
        "type (\n\tIntSlice = SliceBase[int64]\n)\n\n"
        "func (cmd *Command) IntSlice(name string) []int64 {\n\treturn nil\n}\n"
    )
    hit = Hit("flag_int_slice.go", 1, 7, 0.5, "type", "go", {}, [], grouped)
    assert symbol_at_line(hit, 6) == "func (*Command) IntSlice"
    assert symbol_at_line(hit, 2) == "type"  # before the method: the chunk's own label
    # two methods of one name: each line is its own receiver's
    twins = (
        'func (a A) String() string {\n\treturn "a"\n}\n\nfunc (b *B) String() string {\n\treturn "b"\n}\n'
    )
    hit = Hit("s.go", 1, 7, 0.5, "func (A) String", "go", {}, [], twins)
    assert symbol_at_line(hit, 2) == "func (A) String" and symbol_at_line(hit, 6) == "func (*B) String"
    # the one definition of a continued class's chunk is inside the class
    hit = Hit("c.py", 40, 42, 0.5, "class Client", "python", {}, [], "    def close(self):\n        pass\n")
    assert symbol_at_line(hit, 41) == "class Client > def close"


def test_a_local_variable_holds_no_lines_below_it() -> None:
    """``var stacked = ...;`` inside a function is a statement, not a definition around the lines after
    it; a ``const`` that opens a block (an arrow function, an object) still holds its body."""
    from aide_tui.core.search.hitlines import symbol_at_best_line

    js = (
        "function baseClone(value) {\n  var stacked = stack.get(value);\n  if (stacked) {\n"
        "    return stacked;\n  }\n  const copyTo = (target) => {\n    return assign(target, value);\n"
        "  };\n}\n"
    )
    hit = Hit("l.js", 1, 9, 0.5, "function baseClone", "javascript", {}, tokenize("return stacked"), js)
    assert symbol_at_best_line(hit) == "function baseClone"
    hit = Hit("l.js", 1, 9, 0.5, "function baseClone", "javascript", {}, tokenize("assign target"), js)
    assert symbol_at_best_line(hit) == "function baseClone > const copyTo"
    arrow = "function save() {\n  return 1\n}\nconst load = async (id) =>\n  fetchJson(`/items/${id}`)\n"
    hit = Hit("l.js", 1, 5, 0.5, "function save", "javascript", {}, tokenize("fetchJson items"), arrow)
    assert symbol_at_best_line(hit) == "const load"  # an arrow whose body is on the next line holds it


def test_the_quick_first_test_of_term_spans_loses_no_match() -> None:
    """term_spans skips a line that cannot hold a term (a substring test first); over real lines and
    the query terms of their own words (folded: entries → entry, running → run) it answers exactly as
    the full matching does."""
    from conftest import FILES

    from aide_tui.core.search.hitlines import _spans

    tricky = "entries running parsed classes glasses stopping Headers renderPage HTTPClient quizzes boxed"
    lines = [line for text in FILES.values() for line in text.splitlines()] + [
        f"x = {w}(y)" for w in tricky.split()
    ]
    words = sorted({w for line in lines for w in tokenize(line)} | set(tokenize(tricky)))
    assert len(words) > 100
    for line in lines:
        for i in range(0, len(words), 7):
            terms = words[i : i + 7]
            assert term_spans(line, terms) == _spans(line, {t.lower() for t in terms}), (line, terms)
