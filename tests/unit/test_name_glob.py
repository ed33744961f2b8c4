"""A name pattern (``*Transport``, ``test_*redirect*``, ``g?t_*``) lists the definitions whose names match
it, those in the case written first, each hit's best line in the definition it was found by. Real
files, indexed; the searches are the CLI's."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.hitlines import hit_best_line
from aide_tui.core.search.nameglob import name_glob
from aide_tui.core.search.searcher import Searcher

FILES = {
    "pkg/base.py": """
        class BaseTransport:
            def handle_request(self, request):
                raise NotImplementedError


        DEFAULT_TRANSPORT_RETRIES = 3
    """,
    "pkg/http.py": """
        class HTTPTransport(BaseTransport):
            def handle_request(self, request):
                return request.send()
    """,
    "pkg/async_http.py": """
        class AsyncHTTPTransport(BaseTransport):
            async def handle_async_request(self, request):
                return await request.send()
    """,
    "pkg/streams.py": """
        class SyncStream:
            def read(self):
                return b""


        class MockTransport:
            def read(self):
                return b"mock"
    """,
    "pkg/client.py": """
        class Client:
            def _init_transport(self, transport=None):
                # the transport a client sends through; a transport per proxy
                self.transport = transport or HTTPTransport()
                return self.transport

            def get_headers(self):
                return {}

            def get_url(self):
                return "/"
    """,
    "pkg/outer.py": """
        class Outer:
            class Session:
                def open_session(self):
                    return 1


        def session():
            def open_local():
                return 2

            return open_local
    """,
    "tests/test_client.py": """
        def test_mount():
            class Transport:
                pass

            assert Transport
    """,
    "tests/test_redirects.py": """
        def test_redirect_301():
            assert True


        def test_multiple_redirects():
            assert True


        def test_cookies():
            assert True
    """,
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    root = indexed_bm25(tmp_path_factory.mktemp("glob") / "ws", FILES)
    return Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))


def _names(searcher: Searcher, query: str, prefix: bool = False) -> list[str]:
    """The definition each hit's best line is on (``class X`` / ``def x`` reduced to the name)."""
    resp = searcher.search(query, limit=10, mode="bm25", prefix=prefix)
    out = []
    for h in resp.results:
        line = h.text.split("\n")[hit_best_line(h).line - h.start_line].strip()
        out.append(line.split()[1].split("(")[0].rstrip(":") if line.startswith(("class ", "def ")) else line)
    return out


def test_the_names_a_pattern_matches_come_first_those_in_the_case_written_before_the_others(
    searcher: Searcher,
) -> None:
    resp = searcher.search("*Transport", limit=10, mode="bm25")
    assert resp.read_as == "the definitions named like *Transport" and resp.confidence == "high"
    names = _names(searcher, "*Transport")
    # the shortest names first; MockTransport's chunk starts with SyncStream: its row is labelled by the match
    assert names[:4] == ["BaseTransport", "HTTPTransport", "MockTransport", "AsyncHTTPTransport"], names
    assert resp.results[2].symbol == "class MockTransport"  # not its chunk's first, SyncStream
    assert all(h.ranks.get("symbol") for h in resp.results[:4])
    assert names[4] == "Transport"  # as written, but a test's: after the source
    assert "_init_transport" in names[5:]  # any case, after those written so
    assert _names(searcher, "*transport*")[:5] == ["BaseTransport", "HTTPTransport", "MockTransport",
                                                   "_init_transport", "AsyncHTTPTransport"]  # fmt: skip
    assert _names(searcher, "test_*redirect*")[:1] == ["test_redirect_301"]  # one chunk holds both tests
    assert _names(searcher, "get_*")[:1] in (["get_url"], ["get_headers"])
    assert _names(searcher, "Async*Transport")[:1] == ["AsyncHTTPTransport"]


def test_a_constant_a_pattern_matches_is_labelled_by_its_name(searcher: Searcher) -> None:
    """Not by the class above it (a row's label walks up to the nearest definition)."""
    resp = searcher.search("DEFAULT_*", limit=10, mode="bm25")
    assert resp.results[0].symbol == "DEFAULT_TRANSPORT_RETRIES", resp.results[0]
    assert hit_best_line(resp.results[0]).line == resp.results[0].text.split("\n").index(
        "DEFAULT_TRANSPORT_RETRIES = 3") + resp.results[0].start_line  # fmt: skip


def test_a_pattern_being_typed_matches_as_if_it_ended_with_a_star(searcher: Searcher) -> None:
    assert _names(searcher, "*HTTPTrans", prefix=True)[:2] == ["HTTPTransport", "AsyncHTTPTransport"]
    typed = searcher.search("*HTTPTrans", limit=10, mode="bm25", prefix=True)
    assert typed.read_as == "the definitions named like *HTTPTrans"  # as typed


def test_what_is_not_a_name_pattern(searcher: Searcher) -> None:
    for text in ("Transport", "*args", "**kwargs", "**opts", "a*", "*", "?", "two *words", "x * y", "*.py",
                 "timeout?", "*Tr", "char*", "int*", "void**"):  # fmt: skip
        assert name_glob(text) is None, text
    assert name_glob("g?t_u*") is not None and name_glob("g?t_u*").any_case.fullmatch("get_url")  # type: ignore[union-attr]
    # a word the code does not match keeps the usual lists (and says nothing of a pattern)
    assert name_glob("*transport") is not None  # a lower-case word is a pattern, not a star argument
    for text in ("*Nowhere", "Client*Transport"):
        resp = searcher.search(text, limit=10, mode="bm25")
        assert resp.read_as is None, text  # (the usual symbol list: Client's definition)
    assert searcher.search("Transport", limit=10, mode="bm25").read_as is None


def test_a_pattern_of_many_stars_matches_in_linear_time() -> None:
    """``*a*a*...*b`` against a long name that almost matches: a regex of ``\\w*`` runs backtracks
    exponentially (24 letters: 0.5 s, each one more doubling it); fnmatch's atomic groups do not."""
    glob = name_glob("*a" * 12 + "*b")
    assert glob is not None
    assert glob.any_case.fullmatch("a" * 40 + "c") is None and glob.any_case.fullmatch("xa" * 12 + "b")


def test_a_members_pattern_lists_what_its_owner_defines(searcher: Searcher) -> None:
    """``Client.*`` and ``Client.get_*`` list the members of the class named so, in the file's order;
    a name nothing defines, or a file glob, is no owner."""
    resp = searcher.search("Client.get_*", limit=10, mode="bm25")
    assert resp.read_as == "the definitions named like Client.get_*" and resp.confidence == "high"
    assert resp.results[0].path == "pkg/client.py" and resp.results[0].ranks.get("symbol") == 1
    assert hit_best_line(resp.results[0]).line == resp.results[0].text.split("\n").index(
        "    def get_headers(self):") + resp.results[0].start_line  # fmt: skip
    assert searcher.search("Client.*", limit=10, mode="bm25").read_as == "the definitions named like Client.*"
    for text in ("Nowhere.*", "*.py", "test_*.py", "Client.nothing_*"):
        assert searcher.search(text, limit=10, mode="bm25").read_as is None, text
    nested = searcher.search("Session.open_*", limit=10, mode="bm25")  # Outer.Session.open_session
    assert nested.read_as is not None and nested.results[0].path == "pkg/outer.py"
    assert searcher.search("Session.*", limit=10, mode="bm25").results[0].symbol.endswith("def open_session")
    assert searcher.search("session.open_l*", limit=10, mode="bm25").read_as is None  # a function's local
    typed = searcher.search("Client.get_h", limit=10, mode="bm25", prefix=True)  # being typed: get_h*
    assert typed.read_as is None  # no wildcard yet: the word is completed
    typed = searcher.search("Client.*head", limit=10, mode="bm25", prefix=True)
    assert typed.read_as == "the definitions named like Client.*head"
    assert typed.results[0].path == "pkg/client.py"


def test_a_members_pattern_finds_members_defined_apart_from_their_type(tmp_path: Path) -> None:
    """``Store.*`` lists a Go type's methods wherever they are defined (one file declares the type,
    others hold its methods), labelled as the chunker labels them; a plain function is no member."""
    files = {
        "store/store.go": "package store\n\ntype Store struct {\n\titems map[string]string\n}\n",
        "store/get.go": (
            "package store\n\nfunc (s *Store) Get(key string) string {\n\treturn s.items[key]\n}\n\n"
            "func Open() *Store {\n\treturn &Store{}\n}\n"
        ),
        "store/put.go": "package store\n\nfunc (s *Store) Put(key, v string) {\n\ts.items[key] = v\n}\n",
    }
    root = indexed_bm25(tmp_path / "ws", files)
    s = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    resp = s.search("Store.*", limit=10, mode="bm25")
    assert resp.read_as == "the definitions named like Store.*"
    listed = [(h.path, h.symbol) for h in resp.results if h.ranks.get("symbol")]
    assert listed == [("store/get.go", "func (*Store) Get"), ("store/put.go", "func (*Store) Put")]


def test_members_by_their_owner_in_any_case_and_only_its_own(tmp_path: Path) -> None:
    """A prototype's functions beside their constructor are members, the constructor's locals are not;
    an object (``utils = {}``) names no type for ``utils.*``; an owner in non-ASCII capitals is found
    in any case; a match never runs across two qualified names stored end to end (``Foo.Cli`` then
    ``ent.Clj`` hold ``Client.`` across them)."""
    files = {
        "js/client.js": (
            "function Client(base) {\n  function helper() {\n    return 1;\n  }\n  this.base = base;\n}\n\n"
            "Client.prototype.post = function (path) {\n  return path;\n};\n"
        ),
        "js/utils.js": "export const utils = {};\nutils.formatDate = function (d) {\n  return d;\n};\n",
        "py/colour.py": "class GRÜN:\n    def färben(self):\n        return 1\n",
        "py/straddle.py": (
            "class Foo:\n    def Cli(self):\n        return 1\n\n\n"
            "class ent:\n    def Clj(self):\n        return 2\n"
        ),
    }
    root = indexed_bm25(tmp_path / "ws", files)
    s = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))

    def listed(query: str) -> list[str | None]:
        resp = s.search(query, limit=10, mode="bm25")
        return [h.symbol for h in resp.results if h.ranks.get("symbol")] if resp.read_as else []

    assert listed("Client.po*") and listed("Client.he*") == []  # a member; a local is none
    assert listed("utils.*") == []
    assert s.search("grün.*", limit=10, mode="bm25").read_as == "the definitions named like grün.*"
    assert listed("Client.*") == []  # (a constructor function is no type: no member list)
    graph = s.retriever.graph
    assert graph is not None
    under = [(p, d.qualname) for p, d in graph.definitions_under("Client")]
    assert ("js/client.js", "Client.post") in under and all(p == "js/client.js" for p, _ in under)
