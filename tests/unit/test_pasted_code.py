"""A passage pasted from a file (a few lines of code, or the same joined onto one line; a comment) finds
the chunk that holds it: its word trigrams are looked for verbatim among the keyword lists' chunks.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import indexed_bm25

from aide_tui.core.config import load_settings
from aide_tui.core.search.query import code_line, pasted_code
from aide_tui.core.search.searcher import Searcher

# two functions made of the same words; only their order tells them apart, and the short one holds
# the snippet's words more densely (what BM25 alone puts first)
FILES = {
    "pkg/sync.py": """
        def push_changes(repo, remote, branch, force=False):
            local = repo.head(branch)
            theirs = remote.head(branch)
            if theirs is not None and not force:
                base = repo.merge_base(local, theirs)
                if base != theirs:
                    raise RuntimeError("remote has commits the local branch lacks")
            remote.update(branch, local)
            repo.log("pushed", branch, local)
            for hook in repo.hooks("post-push"):
                hook.run(repo, remote, branch)
            repo.stats.pushes += 1
            repo.stats.last_push = repo.clock()
            return local
    """,
    "pkg/fetch.py": """
        def pull_changes(repo, remote, branch, force=False):
            theirs = remote.head(branch)
            local = repo.head(branch)
            if local is not None and not force:
                base = repo.merge_base(theirs, local)
                if base != local and theirs is not None:
                    repo.update(branch, theirs)
            return theirs
    """,
    "pkg/notes.py": """
        def describe(repo, branch):
            # the local head, their head and the merge base: what a push compares
            return f"{branch}: local {repo.head(branch)}, merge base unknown"


        def compare(repo, remote, branch):
            # a push compares the local head with the remote head and the merge base of the two
            return repo.head(branch), remote.head(branch)
    """,
    "pkg/labels.py": """
        LABELS = {"pushed": "Pushed", "pulled": "Pulled", "merged": "Merged"}


        def label(event):
            return LABELS.get(event, event.title())
    """,
}

SNIPPET = """\
local = repo.head(branch)
theirs = remote.head(branch)
if theirs is not None and not force:
    base = repo.merge_base(local, theirs)"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return indexed_bm25(tmp_path / "ws", FILES)


def _first(root: Path, query: str, **search: object) -> tuple[str, dict[str, int | None]]:
    settings = load_settings(root, {"embedding": {"backend": "none"}, "search": search})
    hit = Searcher(root, settings).search(query, limit=5, mode="bm25").results[0]
    return hit.path, hit.ranks


@pytest.mark.parametrize("query", [SNIPPET, " ".join(SNIPPET.split())], ids=["lines", "one-line"])
def test_pasted_lines_find_the_chunk_holding_them_and_keyword_ranking_alone_does_not(
    root: Path, query: str
) -> None:
    path, ranks = _first(root, query)
    assert path == "pkg/sync.py" and ranks.get("verbatim") == 1
    assert _first(root, query, verbatim_weight=0)[0] == "pkg/fetch.py"  # the lever is what moves it


def test_a_line_changed_in_the_paste_still_finds_the_chunk(root: Path) -> None:
    edited = SNIPPET.replace("not force", "not overwrite")
    path, ranks = _first(root, edited)
    assert path == "pkg/sync.py" and ranks.get("verbatim") == 1


def test_a_string_in_pasted_code_is_not_a_quoted_phrase(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    query = 'if base != theirs:\n    raise RuntimeError("remote has commits the local branch lacks")'
    hits = Searcher(root, settings).search(query, limit=5, mode="bm25").results
    assert hits[0].path == "pkg/sync.py" and hits[0].ranks.get("verbatim") == 1
    assert not any(h.ranks.get("phrase") for h in hits)


def test_the_row_and_the_preview_say_the_hit_holds_the_pasted_code(root: Path) -> None:
    from aide_tui.tui.widgets.preview import why
    from aide_tui.tui.widgets.results import rank_tags

    settings = load_settings(root, {"embedding": {"backend": "none"}})
    searcher = Searcher(root, settings)
    hit = searcher.search(SNIPPET, mode="bm25").results[0]
    assert "pasted passage #1" in why(hit) and "V1" in rank_tags(hit).split()
    prose = searcher.search("where does a push compare the local head with the remote", mode="bm25")
    assert prose.results and not any(h.ranks.get("verbatim") for h in prose.results)  # not half of it


def test_a_pasted_comment_finds_its_chunk(root: Path) -> None:
    path, ranks = _first(root, "the local head, their head and the merge base: what a push compares")
    assert path == "pkg/notes.py" and ranks.get("verbatim") == 1


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (SNIPPET, True),
        (" ".join(SNIPPET.split()), True),
        ("headers=headers, cookies=cookies, timeout=timeout, follow_redirects=follow_redirects", True),
        ("for (let i = 0; i < items.length; i++) { total += items[i].price; }", True),
        ("where does a push compare the local head with the remote", False),  # prose
        ("Loads a macro (or variable) a template exports.", False),  # prose with a bracket
        ("repo.merge_base(local, theirs)", False),  # a call: the symbol and BM25 lists' job
        ("RuntimeError: remote has commits the local branch lacks (code=3)", False),  # an error line
    ],
)
def test_which_queries_read_as_pasted_code(text: str, code: bool) -> None:
    assert (pasted_code(text) is not None) == code


def _method(name: str, first: str, n: int = 36) -> str:
    body = "\n".join(
        f"        part_{name}_{j} = self._store.fetch_{name}(part_{name}_{j - 1}, {j})" for j in range(1, n)
    )
    head = f"    def {name}(self, key):\n        {first}\n        part_{name}_0 = key\n"
    return f"{head}{body}\n        return part_{name}_{n - 1}\n"


def _headers_module() -> str:
    encoding = (
        "    @property\n    def encoding(self):\n"
        '        """The encoding of the keys: ascii, else utf-8, else iso-8859-1 (a header key is lower and\n'
        '        encoded with it; the key lookup, the encoded raw list and the encoding are kept apart)."""\n'
        "        for encoding in ('ascii', 'utf-8'):\n            if self._fits(encoding):\n"
        "                return encoding\n        return 'iso-8859-1'\n"
    )
    methods = [
        _method("lookup", "get_key = key.lower().encode(self.encoding)"),
        _method("remove", "del_key = key.lower().encode(self.encoding)"),
        _method("assign", "set_key = key.lower().encode(self.encoding)"),
    ]
    return "class Headers:\n" + encoding + "\n" + "\n".join(methods)


def test_one_pasted_line_finds_where_it_is_not_where_its_names_are_defined(tmp_path: Path) -> None:
    root = indexed_bm25(tmp_path / "ws", {"pkg/headers.py": _headers_module(), **FILES})
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    searcher = Searcher(root, settings)
    line = "del_key = key.lower().encode(self.encoding)"
    hit = searcher.search(line, limit=5, mode="bm25").results[0]
    assert line in hit.text and hit.ranks.get("verbatim") == 1 and "symbol" not in hit.ranks
    asked = searcher.search("encoding", limit=5, mode="bm25").results[0]  # the name alone: its definition
    assert "def encoding(self):" in asked.text


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("del_key = key.lower().encode(self.encoding)", True),
        ("for endpoint, func in self.view_functions.items():", True),
        ("if v, err := cmd.newFlagSet(); err != nil {", True),
        ('raise ValueError("bad header")', True),
        ("Client.send", False),  # a name: the symbol list's job
        ("a = b", False),  # too few words to say where
        ("Return `(key, value)` items of headers.", False),  # prose quoting code
        ("fix(table): highlight columns added by add_row", False),  # a commit subject
        ("retry with exponential backoff", False),
        ("how does dict.get() work", False),  # a question about code, not a line of it
        ("where is client.send() called", False),
        ("what is self._cache[key]", False),
        ("return self.send(request)", True),
        ("ValueError: bad header (code=3)", False),  # an error line
        (SNIPPET, False),  # several lines: pasted code
    ],
)
def test_which_queries_read_as_one_pasted_line(text: str, line: bool) -> None:
    assert code_line(text) == line
