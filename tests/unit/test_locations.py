"""A place the query names (``pkg/mod.py:75``, a traceback frame) finds the chunk at that line, not just
the file; a frame's quoted file name is no phrase to look for.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.hitlines import hit_best_line, symbol_at_best_line
from aide_tui.core.search.query import Frame, analyze, locations
from aide_tui.core.search.searcher import Searcher

NAMES = ("rotate", "scale", "shear", "mirror", "project", "translate")


def _geometry() -> str:
    funcs = []
    for name in NAMES:
        body = "\n".join(f"    v{j} = {name}_step(v{j - 1}, {j})" for j in range(1, 20))
        funcs.append(f"def {name}(v0):\n    '''{name.title()} the shape.'''\n{body}\n    return v19\n")
    return "\n\n".join(funcs)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write_workspace(ws, {"pkg/geometry.py": _geometry(), "pkg/other.py": "def other():\n    return 1\n"})
    Indexer(ws, load_settings(ws, {"embedding": {"backend": "none"}})).run()
    return ws


def _hits(root: Path, query: str, **search: object) -> list[tuple[str, int, int, dict[str, int | None]]]:
    settings = load_settings(root, {"embedding": {"backend": "none"}, "search": search})
    found = Searcher(root, settings).search(query).results
    return [(h.path, h.start_line, h.end_line, h.ranks) for h in found]


@pytest.mark.parametrize(
    ("query", "named_function"),
    [
        ("pkg/geometry.py:75", False),
        ("geometry.py:75:12", False),  # a bare file name is enough when it names one file
        ('File "/usr/lib/python3.11/site-packages/pkg/geometry.py", line 75, in mirror', True),
        ("https://github.com/someone/project/blob/main/pkg/geometry.py#L75-L80", True),  # a link
        ("pkg/geometry.py#L75", False),
        ("pkg/geometry.py line 75", False),  # as a person writes it
        ("line 75 of geometry.py", False),
    ],
)
def test_the_chunk_at_the_named_line_comes_first(root: Path, query: str, named_function: bool) -> None:
    assert _geometry().splitlines()[74].strip().startswith("v1 = mirror_step")
    path, start, end, ranks = _hits(root, query)[0]
    assert path == "pkg/geometry.py" and start <= 75 <= end and ranks.get("line") == 1
    if not named_function:  # (a frame's function name alone finds its definition through the symbol list;
        # a link's words, its chunk by BM25 within the file)
        first_off = _hits(root, query, line_weight=0)[0]
        assert not first_off[1] <= 75 <= first_off[2]  # the file alone would lead with another chunk


def test_the_hit_lands_at_the_named_line(root: Path) -> None:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    hit = Searcher(root, settings).search("pkg/geometry.py:75").results[0]
    assert hit.best_piece == (75, 75) and hit_best_line(hit).line == 75  # the preview lands there
    assert symbol_at_best_line(hit) == "def mirror"  # and the row names the function holding it


def test_a_frame_past_the_end_of_a_changed_file_finds_its_function(root: Path) -> None:
    path, start, end, ranks = _hits(root, 'File "x/pkg/geometry.py", line 900, in mirror')[0]
    assert path == "pkg/geometry.py" and start <= 75 <= end and ranks.get("line") == 1


def test_a_link_to_a_file_names_the_file(root: Path) -> None:
    """A repository link's path is the file's path under the host's prefix (github.com/o/r/blob/main/):
    the file is named, as a path written in full would name it."""
    hits = _hits(root, "https://github.com/someone/project/blob/main/pkg/other.py")
    assert hits[0][0] == "pkg/other.py" and hits[0][3].get("path") == 1


def test_a_path_no_file_matches_adds_nothing(root: Path) -> None:
    assert all("line" not in r for *_, r in _hits(root, "src/elsewhere/nothing.py:12 rotate"))


def test_which_places_a_query_names() -> None:
    places = {
        'File "a/b.py", line 3, in run and c/d.ts:40:7': [
            Frame("a/b.py", 3, "run"),
            Frame("c/d.ts", 40, None),
        ],
        "version 3.12: a line of prose": [],
        "at ./src/app.ts:40:7 (see lib/x.go:12)": [
            Frame("./src/app.ts", 40, None),
            Frame("lib/x.go", 12, None),
        ],
        "https://github.com/o/r/blob/v2/src/App.tsx#L40C3-L52 and a.rs#lines-9": [
            Frame("github.com/o/r/blob/v2/src/App.tsx", 40, None),
            Frame("a.rs", 9, None),
        ],
        "src/App.tsx(40,7): error TS2322 in config.yml:3": [
            Frame("src/App.tsx", 40, None),
            Frame("config.yml", 3, None),
        ],
        "see mod.py, at line 12, then line 3 in lib/x.go": [
            Frame("mod.py", 12, None),
            Frame("lib/x.go", 3, None),
        ],
        "SEE LIB/MOD.PY LINE 7": [Frame("LIB/MOD.PY", 7, None)],  # words in any case
    }
    for query, want in places.items():
        assert locations(query) == want, query
    for prose in ("example.com:8080", "the line 5 of x", "a py line 3", "docs#L12", "line 4 of the file",
                  "line 3 in config.yaml.example", "a.py line " + "1" * 5000, "a.py#L" + "7" * 5000,
                  'File "a.py", line ' + "9" * 5000, "a.py:" + "3" * 5000):  # fmt: skip
        assert locations(prose) == [], prose  # (a line number of 4,300 digits made int() raise)
    pasted = " ".join(f"word{i}" for i in range(40))
    assert analyze(f'{pasted} File "a.py", line {"9" * 5000}').frames == []
    assert analyze(pasted + " " + "a/" * 16000).long  # (a written path's pattern is bounded: 40 folders)
    for garbage in ("abcdefghij" * 3200, "a/" * 16000, "src/" * 8000 + "x"):
        assert locations(garbage) == []  # and at once: a path is tried only where a word starts
