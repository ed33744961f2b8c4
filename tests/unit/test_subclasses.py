"""A short question about the subtypes of a type (``subclasses of Transport``, ``classes that inherit
from Auth``, ``what implements Allocator``) lists the declarations that name it as a base: the symbol
graph's references on a class header (Python, TS/JS), or a Rust ``impl Trait for Type``; a bound in
generics or a mere use is not one. Real files, indexed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.query import asked_subclasses
from aide_tui.core.search.searcher import Searcher

FILES = {
    "pkg/base.py": """
        class Transport:
            \"\"\"Sends a request; the transports below subclass it.\"\"\"

            def handle(self, request):
                raise NotImplementedError
    """,
    "pkg/http.py": """
        from pkg.base import Transport


        class HTTPTransport(Transport):
            def handle(self, request):
                return request.send()
    """,
    "pkg/mock.py": """
        from pkg import base


        class MockTransport(
            base.Transport,
        ):
            def handle(self, request):
                return None
    """,
    # uses of the name that declare no subtype, saying "transport" over and over
    **{
        f"pkg/user{i}.py": f"""
            from pkg.base import Transport


            def make_transport{i}(transport: Transport) -> Transport:
                # the transport's transport: a Transport, a subclass of Transport
                return transport or Transport()
        """
        for i in range(6)
    },
    # an exception: defined, raised in one place, caught and named in others
    "pkg/errors.py": """
        class TooManyHops(Exception):
            \"\"\"Raised when a request hops too often; TooManyHops carries the count.\"\"\"
    """,
    "pkg/hops.py": """
        from pkg.errors import TooManyHops


        def follow(request, hops):
            if hops > 10:
                raise TooManyHops(hops)
            return request
    """,
    "pkg/retry.py": """
        from pkg.errors import TooManyHops


        def retry(request):
            # TooManyHops: give up; TooManyHops is not retried, TooManyHops ends it
            try:
                return request.send()
            except TooManyHops as exc:
                return None if isinstance(exc, TooManyHops) or issubclass(type(exc), TooManyHops) else exc
    """,
    "web/stream.ts": """
        export class Stream {
          push(x: number) { return x; }
        }

        export class FileStream extends Stream {
          push(x: number) { return x + 1; }
        }

        function wrap(s: Stream): Stream {
          return s;
        }
    """,
    "alloc/lib.rs": """
        pub trait Allocator {
            fn allocate(&self) -> usize;
        }

        pub struct Global;

        impl Allocator for Global {
            fn allocate(&self) -> usize { 1 }
        }

        pub struct Boxed<A: Allocator> {
            alloc: A,
        }
    """,
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_bm25(tmp_path_factory.mktemp("subclasses") / "ws", FILES)


def _ask(root: Path, query: str, n: int) -> tuple[str | None, list[tuple[str, str | None]]]:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    resp = Searcher(root, settings).search(query, limit=10, mode="bm25")
    return resp.read_as, [(h.path, h.symbol) for h in resp.results[:n]]


def test_the_subclasses_of_a_python_class_come_first(root: Path) -> None:
    read_as, top = _ask(root, "subclasses of Transport", 2)
    assert read_as == "subclasses of Transport"
    assert set(top) == {("pkg/http.py", "class HTTPTransport"), ("pkg/mock.py", "class MockTransport")}


def test_a_typescript_class_that_extends_it(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    resp = Searcher(root, settings).search("classes that inherit from Stream", limit=10, mode="bm25")
    assert resp.read_as == "subclasses of Stream"
    first = resp.results[0]
    assert first.path == "web/stream.ts" and "class FileStream extends Stream" in first.text


def test_a_rust_trait_is_implemented_where_an_impl_names_it_not_where_a_bound_does(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    resp = Searcher(root, settings).search("what implements Allocator", limit=10, mode="bm25")
    assert resp.read_as == "subclasses of Allocator"
    first = resp.results[0]
    assert first.path == "alloc/lib.rs" and "impl Allocator for Global" in first.text


def test_a_type_nothing_subclasses_is_searched_as_asked(root: Path) -> None:
    read_as, _ = _ask(root, "subclasses of make_transport0", 1)
    assert read_as is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("subclasses of BaseTransport", "BaseTransport"),
        ("classes that inherit from Auth", "Auth"),
        ("what implements Handler", "Handler"),
        ("Auth subclasses", "Auth"),
        ("implementations of the Renderable protocol", "Renderable"),
        ("how do I subclass Client", None),
        ("who calls send", None),
    ],
)
def test_what_a_question_about_subtypes_names(text: str, name: str | None) -> None:
    got = asked_subclasses(text)
    assert (got.name if got else None) == name


def test_who_imports_a_module_lists_the_files_that_import_it_first(root: Path) -> None:
    """``who imports base``: the files with an import of ``base`` (mock.py's ``from pkg import base``), before
    the ones that use its names more; the preview lands on the import line."""
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    resp = Searcher(root, settings).search("who imports base", limit=10, mode="bm25")
    assert resp.read_as == "imports of base"
    assert resp.results[0].path == "pkg/mock.py"
    assert resp.results[0].best_piece == (1, 1)  # the import line


def test_where_an_exception_is_raised_lists_the_raise_sites(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    resp = Searcher(root, settings).search("where is TooManyHops raised", limit=10, mode="bm25")
    assert resp.read_as == "where TooManyHops is raised"
    assert resp.results[0].path == "pkg/hops.py"
