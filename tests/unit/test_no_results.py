"""Hybrid search says "no results" when nothing supports a query (issue 23, item 2).

A query no lexical list supports (no word in the index, no symbol, no path) whose closest chunk is
below the calibrated similarity floor of the builtin encoder answers nothing, and says why. The real
packaged encoder, a real index of the sample workspace, and the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_workspace
from test_cli import run

from aide_tui.core.config import load_settings
from aide_tui.core.embed.factory import make_embedder
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.rank import dense_floor, nonsense
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.wordshape import MIN_TRIGRAMS, reads_as_nonsense

GIBBERISH = ("qxgsplzkqlkn", "xq zzkv pmbw", "zlorpfnagle")


@pytest.fixture(scope="module")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def _model_cache(_shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One user cache for the module (the encoder's graph is built once; conftest gives each test its own)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(_shared_cache))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, _shared_cache: Path) -> Path:
    """The sample workspace with every vector computed by the builtin encoder."""
    ws = write_workspace(tmp_path_factory.mktemp("noresults") / "ws")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("XDG_CACHE_HOME", str(_shared_cache))
        m.setenv("XDG_CONFIG_HOME", str(_shared_cache.parent / "xdg-config"))
        settings = load_settings(ws, {})
        report = Indexer(ws, settings, make_embedder(settings)).run()
    assert report.vectors_missing == 0 and not report.degraded
    return ws


def _searcher(root: Path, **search: object) -> Searcher:
    settings = load_settings(root, {"search": search} if search else {})
    s = Searcher(root, settings, make_embedder(settings))
    s.refresh()
    return s


def test_gibberish_finds_nothing_and_says_why(root: Path) -> None:
    s = _searcher(root)
    for q in GIBBERISH:
        resp = s.search(q, limit=10, mode="hybrid")
        assert resp.results == [] and not resp.degraded, [(h.path, h.ranks) for h in resp.results]
        assert (
            resp.no_results is not None and "below 0.25" in resp.no_results and "spelling" in resp.no_results
        )
        assert resp.to_json()["no_results"] == resp.no_results
    # a misspelt query is gibberish to the index too: the hint says what to do
    assert s.search("recieve hedaer", mode="hybrid").no_results is not None


def test_meaning_without_shared_words_still_answers(root: Path) -> None:
    s = _searcher(root)
    resp = s.search("wait longer after every failure", limit=5, mode="hybrid")  # no word of it is indexed
    assert s.search("wait longer after every failure", mode="bm25").results == []
    assert resp.no_results is None and resp.results[0].path == "src/httpclient/retry.py"
    assert "no_results" not in resp.to_json()
    # words of the index answer as before, whatever the similarity
    assert s.search("parse_header", mode="hybrid").results[0].path == "src/httpclient/headers.py"


def test_only_hybrid_holds_back_and_the_floor_is_a_setting(root: Path) -> None:
    s = _searcher(root)
    assert s.search("qxgsplzkqlkn", mode="dense").results  # dense ranks by similarity, always
    assert s.search("qxgsplzkqlkn", mode="bm25").no_results is None  # nothing to say: no word matched
    off = _searcher(root, no_match_floor=0.0)
    assert off.search("qxgsplzkqlkn", mode="hybrid").results
    assert dense_floor(off.settings.search, "builtin:all-MiniLM-L6-v2:53aa5117") is None
    auto = s.settings.search
    assert dense_floor(auto, "builtin:all-MiniLM-L6-v2:53aa5117:onnx-int8-u8") == auto.no_match_floor == 0.25
    assert dense_floor(auto, "openai:nomic-embed-text") is None  # not calibrated: never held back
    assert dense_floor(auto, "builtin:my-own-bert:0123abcd") is None


def test_cli_prints_no_results_with_the_hint(root: Path) -> None:
    out = run("search", "--path", str(root), "--no-update", "qxgsplzkqlkn")
    assert out.returncode == 0 and out.stdout == "no results\n"
    assert "no code is close to it in meaning" in out.stderr and "check the spelling" in out.stderr
    out = run("search", "--path", str(root), "--no-update", "--json", "qxgsplzkqlkn")
    answer = json.loads(out.stdout)
    assert answer["results"] == [] and "below 0.25" in answer["no_results"] and out.returncode == 0


@pytest.fixture(scope="module")
def real_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's own core, BM25 only: a vocabulary as large as a small real project's."""
    import shutil

    ws = tmp_path_factory.mktemp("wordshape") / "ws"
    shutil.copytree(Path(__file__).resolve().parents[2] / "aide_tui" / "core", ws / "core")
    settings = load_settings(ws, {"embedding": {"backend": "none"}})
    Indexer(ws, settings, None).run()
    return ws


def test_words_that_read_as_no_words_of_the_code(real_code: Path) -> None:
    """Keyboard mashing reads as no words of the code; real words the code lacks still read as words.
    Such a query is held back when its closest code is below the ceiling (even above the floor)."""
    settings = load_settings(real_code, {"embedding": {"backend": "none"}})
    searcher = Searcher(real_code, settings, None)
    searcher.refresh()
    stats = searcher.retriever.term_stats
    assert stats is not None
    seen = stats.letter_trigrams()
    assert len(seen) >= MIN_TRIGRAMS
    for q in ("qxgsplzkqlkn", "zqxjkvwp", "qwzx pfkt"):
        assert reads_as_nonsense(q, seen), q
        assert "reads like a word of this code" in (nonsense(q, stats, 0.45, 0.25) or "")
        assert nonsense(q, stats, 0.65, 0.25) is None  # close enough to trust: the dense list answers
        assert nonsense(q, stats, 0.45, None) is None  # an uncalibrated model: never held back
    for q in ("wait longer after every failure", "authentication flow", "kubernetes deployment", "recieve"):
        assert not reads_as_nonsense(q, seen), q
        assert nonsense(q, stats, 0.3, 0.25) is None
    assert not reads_as_nonsense("qxgsplzkqlkn timeout", seen)  # one real word is enough
    assert not reads_as_nonsense("12345 ++", seen)  # no word at all: nothing to say


def test_a_delta_adds_its_words_trigrams(tmp_path: Path) -> None:
    """A version's trigrams are those of every segment's words: a delta's new word reads as a word."""
    from conftest import write_workspace

    from aide_tui.core.config import load_settings
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.search.local import LocalRetriever

    root = write_workspace(tmp_path / "ws")
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    r = LocalRetriever(root, settings)
    r.refresh()
    assert r.view is not None and "zyg" not in r.view.letter_trigrams() and "^pa" in r.view.letter_trigrams()
    (root / "src" / "zoo.py").write_text("def zygote_count():\n    return 'zygote'\n")
    Indexer(root, settings).run()
    assert r.refresh() and r.view is not None and len(r.view.parts) == 2
    assert "zyg" in r.view.letter_trigrams() and "^pa" in r.view.letter_trigrams()


def test_the_reason_never_reads_a_value_below_itself() -> None:
    """Issue 33 #11: "best similarity 0.25, below 0.25" (SQLAlchemy, zzkqxwvvbn: 0.2496 under 0.25)."""
    from aide_tui.core.search.rank import far_from_everything

    why = far_from_everything(0.2496, 0.25)
    assert why is not None and "(best similarity 0.2496, below 0.2500)" in why
    assert "(best similarity 0.21, below 0.25)" in (far_from_everything(0.2104, 0.25) or "")
    assert far_from_everything(0.25, 0.25) is None and far_from_everything(0.3, 0.25) is None
