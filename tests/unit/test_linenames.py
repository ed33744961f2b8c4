"""Which name on a line ``d``/``r`` look up (core/search/linenames.py), and what the app's lookup says
when there is no index yet (tui/lookup.py over a real Searcher)."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.search.linenames import line_names
from aide_tui.core.search.searcher import Searcher
from aide_tui.tui.codelines import code_only
from aide_tui.tui.lookup import Line, choices, look_up


def test_a_query_term_comes_first_then_called_names_then_the_rest() -> None:
    names = line_names("        response = self.send(response.next_request())", ["hops", "next_request"])
    assert names.candidates == ["next_request", "send", "response"]  # self is not a name to look up
    assert names.defines is None


def test_strings_and_comments_give_no_names() -> None:
    """Issue 33 #6: a docstring's or a comment's words are never the name meant (d on the docstring
    'Is this a with_stmt line?' jumped to ``with_stmt``)."""
    line = '    conn = socket.create_connection(host)  # see "Client" and parse_header'
    assert line_names(line).candidates == ["create_connection", "conn", "socket", "host"]
    assert line_names('        """Is this a with_stmt line?"""').candidates == []
    docstring = ["def is_with_stmt(leaf):", '    """Is this a with_stmt line?', "    Client", '    """']
    inside = code_only("black/nodes.py", docstring)
    assert [line_names(code).candidates for code in inside] == [["leaf"], [], [], []]
    readme = "Use `Session` to talk to Client"
    assert code_only("README.md", [readme]) == [" " * 5 + "Session" + " " * (len(readme) - 12)]


def test_a_defining_line_keeps_its_name_apart() -> None:
    names = line_names("    def send(self, request: Request) -> Response:", [])
    assert names.defines == "send" and names.candidates == ["request", "Request", "Response"]
    ts = line_names("export class PageCache {", [])
    assert ts.defines == "PageCache" and ts.candidates == []


def test_unicode_names_are_names() -> None:
    """Issue 32 #8: identifiers in any script Python takes."""
    assert line_names("    return ñandú(Ωmega) + 函数(x)").candidates == ["ñandú", "函数", "Ωmega", "x"]


def test_no_index_yet_is_said_not_raised(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return g()\n")
    searcher = Searcher(tmp_path, load_settings(tmp_path, {"embedding": {"backend": "none"}}))
    line = Line("a.py", 2, "    return g()")
    d, r = choices(line, searcher.line_symbols)
    assert d.problem == r.problem == "no index yet: indexing…"
    places = look_up(d, line, searcher.definitions, searcher.references)
    assert places.problem == "no index yet: indexing…" and not places.hits
