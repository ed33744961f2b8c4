"""Opt-in reranking: a real loopback ``/v1/rerank`` server reorders the fused hits; a slow, failing or
malformed one leaves the fused order and says so."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_workspace
from model_server import ModelServer
from test_cli import run

from aide_tui.core.config import ConfigError, load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search import rerank
from aide_tui.core.search.rerank import RerankFailed, parse_scores
from aide_tui.core.search.searcher import Searcher

QUERY = "follow redirects"
SECRET = "glpat-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm"


@pytest.fixture(autouse=True)
def _fresh_cooldown() -> Iterator[None]:
    rerank.reset_cooldown()
    yield
    rerank.reset_cooldown()


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = write_workspace(tmp_path / "ws")
    (ws / "src/httpclient/tokens.py").write_text(f'DEPLOY_TOKEN = "{SECRET}"  # follow redirects with it\n')
    Indexer(ws, load_settings(ws, {"embedding": {"backend": "none"}})).run()
    return ws


def _searcher(root: Path, **search: object) -> Searcher:
    s = Searcher(
        root, load_settings(root, {"embedding": {"backend": "none"}, "search": {"mode": "bm25", **search}})
    )
    s.refresh()
    return s


def _paths(resp: object) -> list[str]:
    return [h.path for h in resp.results]  # type: ignore[attr-defined]


def test_off_by_default_sends_nothing(root: Path, server: ModelServer) -> None:
    resp = _searcher(root, rerank_url=server.url).search(QUERY, limit=5)
    assert resp.rerank is None and "rerank" not in resp.to_json() and server.requests == []


def test_reorders_by_the_servers_scores(root: Path, server: ModelServer) -> None:
    fused = _searcher(root).search(QUERY, limit=30)
    assert len(fused.results) >= 3
    wanted = fused.results[-1].path  # the reranker prefers what fusion put last
    server.scores = lambda q, docs: [10.0 if d.startswith(wanted + "\n") else 1.0 / (i + 1)
                                     for i, d in enumerate(docs)]  # fmt: skip
    resp = _searcher(root, rerank="http", rerank_url=server.url, rerank_model="bge-m3").search(QUERY, limit=2)
    assert resp.rerank == "ok" and resp.to_json()["rerank"] == "ok"
    assert len(resp.results) == 2 and resp.results[0].path == wanted
    assert resp.results[0].ranks["rerank"] == 1 and resp.results[1].ranks["rerank"] == 2
    assert resp.results[1].path == fused.results[0].path  # the rest keep their (equal-score) fused order
    body = server.requests[-1].body
    assert server.requests[-1].path == "/v1/rerank" and body["query"] == QUERY and body["model"] == "bge-m3"
    assert len(body["documents"]) == len(fused.results) == body["top_n"]  # all fused hits, not just 2
    assert all(d.split("\n", 1)[0] == h.path for d, h in zip(body["documents"], fused.results, strict=True))
    assert SECRET not in json.dumps(body)  # the indexed text is masked, and so is what is sent


def test_rerank_top_bounds_the_documents_sent(root: Path, server: ModelServer) -> None:
    _searcher(root, rerank="http", rerank_url=server.url, rerank_top=2).search(QUERY, limit=1)
    assert len(server.requests[-1].body["documents"]) == 2


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("error", "HTTP 500"), ("invalid_json", "invalid JSON"), ("out_of_range", "malformed answer (index")],
)
def test_a_failing_or_malformed_reranker_keeps_the_fused_order(
    root: Path, server: ModelServer, mode: str, reason: str
) -> None:
    fused = _searcher(root).search(QUERY, limit=5)
    server.set_mode(mode)
    resp = _searcher(root, rerank="http", rerank_url=server.url).search(QUERY, limit=5)
    assert resp.rerank is not None and resp.rerank.startswith(f"degraded: {reason}")
    assert _paths(resp) == _paths(fused) and all("rerank" not in h.ranks for h in resp.results)


def test_a_slow_reranker_is_cut_off_and_not_asked_again_for_a_while(root: Path, server: ModelServer) -> None:
    server.set_mode("silent")
    s = _searcher(root, rerank="http", rerank_url=server.url, rerank_timeout=0.4)
    t0 = time.monotonic()
    resp = s.search(QUERY, limit=5)
    assert time.monotonic() - t0 < 3
    assert resp.rerank == "degraded: no answer within 0.4s" and resp.results
    asked = len(server.requests)
    t0 = time.monotonic()
    again = s.search(QUERY, limit=5)
    assert time.monotonic() - t0 < 0.4 * 0.9 and len(server.requests) == asked  # no new request, no wait
    assert again.rerank is not None and "not tried again" in again.rerank


def test_an_unreachable_reranker(root: Path) -> None:
    with ModelServer() as gone:
        url = gone.url
    resp = _searcher(root, rerank="http", rerank_url=url).search(QUERY, limit=5)
    assert resp.rerank == "degraded: not reachable (connection refused)" and resp.results


def test_remote_reranker_needs_the_opt_in(root: Path) -> None:
    resp = _searcher(root, rerank="http", rerank_url="http://192.0.2.7:8080").search(QUERY, limit=3)
    assert resp.rerank is not None and "refusing non-loopback rerank endpoint" in resp.rerank
    assert "--allow-remote-reranker" in resp.rerank and resp.results


def test_the_workspace_config_cannot_opt_in_to_a_remote_reranker(root: Path) -> None:
    (root / ".aide").mkdir(exist_ok=True)
    (root / ".aide/config.toml").write_text(
        '[search]\nrerank = "http"\nrerank_url = "http://192.0.2.7:8080"\nrerank_allow_remote = true\n'
        '[answer]\nurl = "http://192.0.2.7:8080"\nallow_remote = true\n'
    )
    settings = load_settings(root)
    assert settings.search.rerank == "http" and settings.search.rerank_allow_remote is False
    assert settings.answer.allow_remote is False
    env = load_settings(
        root, environ={"AIDE_SEARCH_RERANK_ALLOW_REMOTE": "1", "AIDE_ANSWER_ALLOW_REMOTE": "1"}
    )
    assert env.search.rerank_allow_remote and env.answer.allow_remote


def test_bad_rerank_settings_are_config_errors(root: Path) -> None:
    for flags, message in (({"search": {"rerank": "cohere"}}, "unknown search.rerank"),
                           ({"search": {"rerank_top": 0}}, "out of range"),
                           ({"answer": {"backend": "gpt"}}, "unknown answer.backend"),
                           ({"answer": {"max_context_tokens": 5}}, "out of range")):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            load_settings(root, flags)


def test_filter_only_queries_and_query_errors_are_not_reranked(root: Path, server: ModelServer) -> None:
    s = _searcher(root, rerank="http", rerank_url=server.url)
    assert s.search("lang:py", limit=3).rerank is None
    assert s.search("x lang:cobol", limit=3).rerank is None
    assert server.requests == []


def test_parse_scores_shapes() -> None:
    assert parse_scores({"results": [{"index": 1, "relevance_score": 0.5}]}, 2) == {1: 0.5}
    assert parse_scores([{"index": 0, "score": 2}], 1) == {0: 2.0}  # TEI's bare list
    for bad in ({}, {"results": "x"}, {"results": []}, {"results": [1]},
                {"results": [{"index": True, "relevance_score": 1}]},
                {"results": [{"index": 0, "relevance_score": "high"}]},
                {"results": [{"index": 0, "relevance_score": float("nan")}]},
                {"results": [{"index": 0, "relevance_score": 1},
                             {"index": 0, "relevance_score": 2}]}):  # fmt: skip
        with pytest.raises(RerankFailed, match="malformed"):
            parse_scores(bad, 2)


def test_search_cli_rerank_flag(root: Path, server: ModelServer) -> None:
    base = ("search", "--path", str(root), "--embedder", "none", "--mode", "bm25", "--json", "--no-update")
    out = run(*base, QUERY)
    assert out.returncode == 0 and "rerank" not in json.loads(out.stdout)
    env = {"AIDE_SEARCH_RERANK_URL": server.url}
    out = run(*base, "--rerank", QUERY, env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["rerank"] == "ok", out.stderr
    assert server.requests and server.requests[-1].path == "/v1/rerank"
    server.set_mode("error")
    out = run(*base[:-2], "--no-update", "--rerank", QUERY, env=env)  # text mode: the reason on stderr
    assert out.returncode == 0 and "rerank degraded: HTTP 500" in out.stderr and ":1-" in out.stdout


def test_a_milvus_store_is_reranked_by_the_same_pipeline(
    workspace: Path, tmp_path: Path, server: ModelServer
) -> None:
    """One ranking over both stores: the Milvus store's fused hits go to the reranker as the local ones do."""
    pytest.importorskip("pymilvus", reason="aide-tui[milvus] is not installed")
    db = tmp_path / "team.db"
    out = run("index", str(workspace), "--store", "milvus", "--store-uri", str(db), "--embedder", "none")
    assert out.returncode == 0, out.stderr
    out = run("search", "--path", str(workspace), "--store", "milvus", "--store-uri", str(db), "--embedder",
              "none", "--no-update", "--json", "--rerank", "--no-server", "redirects",
              env={"AIDE_SEARCH_RERANK_URL": server.url})  # fmt: skip
    assert out.returncode == 0 and json.loads(out.stdout)["results"], out.stderr
    assert json.loads(out.stdout)["rerank"] == "ok"
    assert server.requests and server.requests[-1].path == "/v1/rerank"
