"""A short question about where a name is used (``who calls settle``, ``usages of Ledger``) or tested
(``tests for settle``) finds the places the symbol graph knows, not the definition the name's words
point at.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.hitlines import hit_best_line
from aide_tui.core.search.query import UsesAsked, asked_uses
from aide_tui.core.search.searcher import Searcher

FILES = {
    # the definition says "settle" and "ledger" all the time: the words alone put it first
    "pkg/ledger.py": '''
        class Ledger:
            """A ledger: settle moves what is owed; a settled ledger settles nothing twice."""

            def settle(self, account):
                """Settle the account: the ledger's settle step, settled once."""
                self.settled = getattr(self, "settled", set())
                self.settled.add(account)
                return account
    ''',
    "pkg/billing.py": """
        from pkg.ledger import Ledger


        def close_month(accounts):
            book = Ledger()
            for account in accounts:
                book.settle(account)
            return book


        def open_month():
            return []
    """,
    "tests/test_ledger.py": """
        from pkg.ledger import Ledger


        def test_twice():
            book = Ledger()
            book.settle("a")
            assert book.settle("a") == "a"
    """,
    "pkg/orphan.py": '''
        def lonely_helper():
            """Nobody calls this helper."""
            return 1
    ''',
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(indexed_bm25(tmp_path_factory.mktemp("uses") / "ws", FILES))


def _hits(root: Path, query: str) -> list[tuple[str, int, dict[str, int | None]]]:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    results = Searcher(root, settings).search(query, limit=5, mode="bm25").results
    return [(h.path, hit_best_line(h).line, h.ranks) for h in results]


@pytest.mark.parametrize("query", ["who calls settle", "where is settle called", "usages of Ledger.settle"])
def test_who_calls_a_name_finds_the_call_not_the_definition(root: Path, query: str) -> None:
    path, line, ranks = _hits(root, query)[0]
    assert (path, ranks.get("uses")) == ("pkg/billing.py", 1)
    assert (root / path).read_text().splitlines()[line - 1].strip() == "book.settle(account)"
    assert _hits(root, "settle")[0][0] == "pkg/ledger.py"  # the name alone: its definition


def test_tests_for_a_name_are_the_tests_that_use_it(root: Path) -> None:
    path, _, ranks = _hits(root, "tests for settle")[0]
    assert path == "tests/test_ledger.py" and ranks.get("uses") == 1


def test_a_name_nothing_uses_answers_with_its_definition(root: Path) -> None:
    hits = _hits(root, "who calls lonely_helper")
    assert hits[0][0] == "pkg/orphan.py" and not any(r.get("uses") for *_, r in hits)


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("who calls settle", UsesAsked("settle", tests=False)),
        ("where is Ledger used?", UsesAsked("Ledger", tests=False)),
        ("find all callers of Ledger.settle()", UsesAsked("Ledger.settle", tests=False)),
        ("tests for settle", UsesAsked("settle", tests=True)),
        ("Ledger tests", UsesAsked("Ledger", tests=True)),
        ("settle tests", None),  # two plain words: a topic ("unit tests", "call graph")
        ("call graph", None),
        ("uses of self", None),
        ("where is settle defined", None),  # the definition: asked_name's
        ("test for redirect handling", None),  # two words: a question, not a name
        ("who calls", None),
        ("settle", None),
    ],
)
def test_which_questions_ask_for_uses(query: str, asked: UsesAsked | None) -> None:
    assert asked_uses(query) == asked


def test_the_answer_says_what_the_question_was_read_as(root: Path) -> None:
    searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    asked = ("who calls settle", "tests for settle", "where is Ledger defined", "settle")
    said = {q: searcher.search(q, mode="bm25").to_json().get("read_as") for q in asked}
    assert said == {"who calls settle": "uses of settle", "tests for settle": "tests using settle",
                    "where is Ledger defined": "the definition of Ledger", "settle": None}  # fmt: skip


TESTING = {
    # the helpers a test uses live in the source; the project's own tests say "test" and "cli" more
    "pkg/testing.py": '''
        class CliRunner:
            """Invokes a cli in isolation: what it printed and how it ended are kept."""

            def invoke(self, cli, args):
                return cli(args)
    ''',
    **{
        f"tests/test_cli_{i}.py": f"""
            from pkg.testing import CliRunner


            def test_cli_output_{i}():
                # test my cli: capture its output and its exit code (the output, the exit code)
                result = CliRunner().invoke(print, ["test", "cli", "output"])
                assert result is None
        """
        for i in range(4)
    },
}


def test_a_how_question_about_testing_finds_the_helpers_not_the_tests(tmp_path: Path) -> None:
    root = indexed_bm25(tmp_path / "ws", TESTING)
    searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    first = searcher.search("how do I test my cli and capture its output and exit code", mode="bm25")
    assert first.results[0].path == "pkg/testing.py"
    asked = searcher.search("test the cli output and exit code", mode="bm25")  # tests rank as they are
    assert asked.results[0].path.startswith("tests/")


def test_a_name_asked_without_its_underscore_is_the_private_one_the_code_has(tmp_path: Path) -> None:
    """``who calls post_entry`` when the code only has ``_post_entry``: its callers, and the answer says
    whose; a name the code has as written (even never called) keeps it."""
    root = Path(
        indexed_bm25(
            tmp_path / "ws",
            {
                "pkg/book.py": """
                    def _post_entry(book, entry):
                        return book.append(entry)


                    def record(book, entry):
                        # every record goes through the poster
                        return _post_entry(book, entry)


                    def _unused():
                        return None


                    def unused():
                        return None
                """,
                "pkg/guide.py": '''
                    def post_entry_guide():
                        """Post entry: how to post an entry, the post entry way (post, entry)."""
                        return "post entry"
                ''',
            },
        )
    )
    searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
    found = searcher.search("who calls post_entry", mode="bm25")
    assert found.to_json().get("read_as") == "uses of _post_entry"
    top = found.results[0]
    assert (top.path, top.ranks.get("uses")) == ("pkg/book.py", 1)
    assert (root / top.path).read_text().splitlines()[hit_best_line(top).line - 1].strip() == (
        "return _post_entry(book, entry)"
    )
    assert searcher.search("who calls unused", mode="bm25").to_json().get("read_as") == "uses of unused"
