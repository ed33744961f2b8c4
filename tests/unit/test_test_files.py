"""A query that asks for the tests of something (``tests for headers``, ``where is config tested``) names
the test files called after it in the usual conventions (``test_headers.py``, ``headers_test.go``,
``headers.test.ts``, ``HeadersTest.java``) as a file name would. Real files, indexed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.searcher import Searcher

FILES = {
    "pkg/headers.py": """
        class Headers:
            def get(self, key):
                return self.items.get(key.lower())
    """,
    "pkg/config.py": """
        def load_config(path):
            return parse(open(path).read())
    """,
    # the test files, their words say little about what they test
    "tests/test_headers.py": """
        def test_case_insensitive_get():
            assert make().get("A") == make().get("a")
    """,
    "tests/test_config.py": """
        def test_loads_a_file(tmp_path):
            assert run(tmp_path) == {}
    """,
    "web/src/config.test.ts": """
        import { load } from "./config";

        it("reads the file", () => {
          expect(run()).toEqual({});
        });
    """,
    # files that say the words over and over
    **{
        f"tests/test_client{i}.py": f"""
            def test_headers_and_config_{i}():
                # headers tests: the config's headers, the headers of the config, tested here
                headers = config_headers()
                assert headers == config_headers() and headers
        """
        for i in range(6)
    },
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_bm25(tmp_path_factory.mktemp("tests_of") / "ws", FILES)


def _paths(root: Path, query: str, n: int = 2) -> list[str]:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    return [h.path for h in Searcher(root, settings).search(query, limit=10, mode="bm25").results[:n]]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("where is headers tested", {"tests/test_headers.py"}),
        ("unit tests of headers", {"tests/test_headers.py"}),
        ("config tests", {"tests/test_config.py", "web/src/config.test.ts"}),
    ],
)
def test_the_tests_of_a_word_are_the_files_named_after_it(root: Path, query: str, wanted: set[str]) -> None:
    """The first hit is a file named after the word, and every such file is in the first three."""
    got = _paths(root, query, 3)
    assert got[0] in wanted and wanted <= set(got), got


def test_a_query_that_does_not_ask_for_tests_names_no_test_file(root: Path) -> None:
    assert "tests/test_headers.py" not in _paths(root, "headers config", 3)
