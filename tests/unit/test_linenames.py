"""Which name on a line ``d``/``r`` look up (core/search/linenames.py), and what the app's lookup says
when there is no index yet (tui/lookup.py over a real Searcher)."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.search.linenames import line_names
from aide_tui.core.search.searcher import Searcher
from aide_tui.tui.lookup import look_up


def test_a_query_term_comes_first_then_called_names_then_the_rest() -> None:
    names = line_names("        response = self.send(response.next_request())", ["hops", "next_request"])
    assert names.candidates == ["next_request", "send", "response"]  # self is not a name to look up
    assert names.defines is None


def test_strings_and_comments_come_after_the_code() -> None:
    line = '    conn = socket.create_connection(host)  # see "Client" and parse_header'
    assert line_names(line).candidates == ["create_connection", "conn", "socket", "host", "see", "Client",
                                           "parse_header"]  # fmt: skip
    assert line_names('    """Send one request over a socket."""').candidates[:2] == ["Send", "one"]


def test_a_defining_line_keeps_its_name_apart() -> None:
    names = line_names("    def send(self, request: Request) -> Response:", [])
    assert names.defines == "send"
    assert names.for_definition() == ["request", "Request", "Response"]  # d: the other names
    assert names.for_references([]) == ["send"]  # r on a definition: its own name
    assert names.for_references(["request"]) == ["request", "Request", "send"]  # a query term first
    ts = line_names("export class PageCache {", [])
    assert ts.defines == "PageCache" and ts.candidates == []


def test_no_index_yet_is_said_not_raised(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return g()\n")
    searcher = Searcher(tmp_path, load_settings(tmp_path, {"embedding": {"backend": "none"}}))
    places = look_up("definitions", "    return g()", [], searcher.definitions, searcher.references)
    assert places.problem == "no index yet: indexing…" and not places.hits
