"""Search as you type: the word being typed is completed over the index's vocabulary (issue 23, item 1).

On a real tree (the installed httpx package, indexed by the real CLI): partial words find what the
whole word finds; only the last word is completed, and only when nothing follows it; completions
weigh less than exact terms; the sorted vocabulary is grown from the previous version's on a delta.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from conftest import write_workspace
from test_cli import run

from aide_tui.core.config import load_settings
from aide_tui.core.live import LiveWorkspace
from aide_tui.core.search.local import LocalRetriever
from aide_tui.core.search.rank import PREFIX_CAP, PREFIX_WEIGHT, completions, partial_word, with_completions
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.tokens import prefix_forms

BM25 = {"embedding": {"backend": "none"}}


def _index(root: Path) -> None:
    home = {f"XDG_{k}_HOME": str(root.parent / f"xdg-{k.lower()}") for k in ("CONFIG", "CACHE", "STATE")}
    out = run("index", str(root), "--embedder", "none", env=home)
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def httpx_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed httpx package's sources, indexed by the CLI (BM25 only)."""
    root = tmp_path_factory.mktemp("typeahead") / "httpx-tree"
    shutil.copytree(Path(httpx.__file__).parent, root / "httpx", ignore=shutil.ignore_patterns("__pycache__"))
    _index(root)
    return root


@pytest.fixture
def searcher(httpx_tree: Path) -> Searcher:
    s = Searcher(httpx_tree, load_settings(httpx_tree, BM25))
    s.refresh()
    return s


def _keys(resp: object) -> list[tuple[str, int]]:
    return [(h.path, h.start_line) for h in resp.results]  # type: ignore[attr-defined]


def _files(resp: object) -> list[str]:
    return list(dict.fromkeys(h.path for h in resp.results))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("typed", "word"), [("coo", "cookies"), ("cook", "cookies"), ("prox", "proxy"),
                                             ("timeou", "timeout")])  # fmt: skip
def test_a_partial_word_finds_what_the_whole_word_finds(searcher: Searcher, typed: str, word: str) -> None:
    exact = searcher.search(typed, limit=20, mode="bm25")  # the search CLI: exact words, or a slip's fix
    assert exact.results == [] if len(typed) < 5 else exact.corrected == word
    whole = searcher.search(word, limit=10, mode="bm25")
    typing = searcher.search(typed, limit=20, mode="bm25", prefix=True)
    assert _keys(whole)[0] in _keys(typing)[:5], (_keys(whole)[:3], _keys(typing)[:8])
    assert _files(whole)[0] in _files(typing)[:5]
    assert len(set(_keys(whole)) & set(_keys(typing))) >= 5  # most of what the word finds, within 20


def test_two_letters_already_reach_the_word(searcher: Searcher) -> None:
    typing = searcher.search("co", limit=50, mode="bm25", prefix=True)
    whole = searcher.search("cookies", limit=10, mode="bm25")
    assert _keys(whole)[0] in _keys(typing)
    assert "cooky" in typing.results[0].query_terms  # `cookies` is indexed folded, as `cooky`


def test_a_half_typed_name_finds_its_definition(searcher: Searcher) -> None:
    for typed, symbol in (("AsyncClie", "class AsyncClient"), ("raise_for_sta", "def raise_for_status"),
                          ("Timeou", "class Timeout")):  # fmt: skip
        top = searcher.search(typed, limit=5, mode="bm25", prefix=True).results
        assert any((h.symbol or "").endswith(symbol) for h in top[:3]), [h.symbol for h in top]


def test_only_the_word_being_typed_is_completed(searcher: Searcher) -> None:
    for done in ("timeou ", "timeou\t", "timeou lang:python", "timeou path:httpx", "(timeou)", '"timeou"'):
        # a complete word is not completed: it is searched as written, here as its one-slip fix
        resp = searcher.search(done, limit=5, mode="bm25", prefix=True)
        assert resp.corrected is not None and "timeout" in resp.corrected, done
    assert searcher.search("timeou", limit=5, mode="bm25", prefix=True).corrected is None  # completed
    # a query whose last word is complete answers exactly as without completion
    plain = searcher.search("proxy timeout", limit=20, mode="bm25")
    spaced = searcher.search("proxy timeout ", limit=20, mode="bm25", prefix=True)
    assert [h.to_json() for h in plain.results] == [h.to_json() for h in spaced.results]
    # the other words stay exact: "prox" is not completed before "timeout"
    assert searcher.search("prox timeout", limit=20, mode="bm25", prefix=True).results[0].query_terms[:2] == [
        "prox", "timeout"]  # fmt: skip


def test_partial_word_and_prefix_forms() -> None:
    assert partial_word("parse hea") == "hea"
    assert partial_word("Client.se") == "Client.se" and partial_word("f(x, timeou") == "timeou"
    for none in ("", "cook ", "lang:py", "cook path:src", "cook)", "x -"):
        assert partial_word(none) is None, none
    assert prefix_forms("cookie") == ["cookie", "cooky", "cooki"]  # cookies is indexed `cooky`
    assert prefix_forms("parsin") == ["parsin", "pars"]  # parsing is indexed `pars`
    assert prefix_forms("parse_hea") == ["parse_hea", "hea"]  # the compound and its last part
    assert prefix_forms("x") == [] and prefix_forms("__") == []


def test_completions_weigh_less_than_exact_terms(searcher: Searcher) -> None:
    stats = searcher.retriever.term_stats
    found = completions(stats, "prox")
    assert {"proxy", "proxytypes", "proxyerror"} <= set(found) and not any(
        "_" in t or "." in t for t in found
    )
    terms, weights = with_completions(["timeout", "prox"], None, found)
    assert terms[:2] == ["timeout", "prox"] and weights is not None
    done = terms[2:]
    assert "proxy" in done and 1 <= len(done) <= PREFIX_CAP
    assert "timeout" not in weights and max(weights[t] for t in done) == PREFIX_WEIGHT == weights["proxy"]
    assert all(0 < weights[t] <= PREFIX_WEIGHT for t in done)
    # compounds of a more frequent completion are left out (a chunk holding ProxyTypes holds "proxy")
    assert "proxytypes" not in done and "proxyerror" not in done
    # a compound being typed completes to compounds
    assert "raise_for_status" in completions(stats, "raise_for_st")
    # a store that keeps its vocabulary to itself (Milvus) completes nothing
    assert completions(None, "prox") == {}
    # the definitions a half-typed name may mean: the shortest names it begins
    assert stats.defined_names("cook", 3) == ["cookies", "cookietypes", "cookieconflict"]
    assert stats.defined_names("timeou", 1) == ["timeout"]
    assert stats.defined_names("cook", 0) == []  # none asked for: none given (a batch of 0 names failed)


def test_completions_follow_a_delta(tmp_path: Path) -> None:
    """Each segment keeps its terms sorted: a delta's new words complete at once, a deleted file's do not."""
    root = write_workspace(tmp_path / "ws")
    _index(root)
    r = LocalRetriever(root, load_settings(root, BM25))
    r.refresh()
    first = r.view
    assert first is not None and [t for t, _ in first.prefix_terms("redirect", 5)] == ["redirect"]
    (root / "src/httpclient/zebra.py").write_text("def zebrafish_count():\n    return 'zebras'\n")
    (root / "src/httpclient/retry.py").unlink()  # its words (backoff) must not be completed any more
    _index(root)
    assert r.refresh()
    view = r.view
    assert view is not None and view is not first
    assert [t for t, _ in view.prefix_terms("zebr", 5, compounds=False)] == ["zebra", "zebrafish"]
    assert [t for t, _ in view.prefix_terms("zebr", 5)] == [
        "zebra",
        "zebra.py",
        "zebrafish",
        "zebrafish_count",
    ]
    assert view.prefix_terms("backof", 5) == [] and "backoff" in view.vocab


def test_a_live_workspace_completes_the_first_keystroke(httpx_tree: Path) -> None:
    live = LiveWorkspace(
        httpx_tree, load_settings(httpx_tree, BM25), lambda e: None, watch=False, index=False
    )
    live.start()
    try:
        assert live.index_ready.wait(30)
        hits = live.search("timeou", mode="bm25", prefix=True).results
        assert hits and any("timeout" in h.matched_terms() for h in hits)
    finally:
        live.close()
