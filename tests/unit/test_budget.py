"""Answers that fit a token budget (search --json --max-tokens, MCP search_code max_tokens) and the
confidence and refine hints every search answer carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.budget import fit, row_tokens
from aide_tui.core.search.confidence import confidence, hints, margin, near_miss_hint, term_hint
from aide_tui.core.search.response import Hit
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.tokens import estimate_tokens

REPO = Path(__file__).resolve().parents[2]


def searcher(root: Path) -> Searcher:
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    return s


def big_workspace(root: Path) -> Path:
    """Eighty documented functions in eight files (forty chunks): far more than a small budget holds."""
    for f in range(8):
        body = []
        for i in range(10):
            body.append(f'def handle_request_{f}_{i}(request):\n    """Handle one request, kind {i}."""\n')
            body.extend(f"    step_{k} = request.part({k})  # request handling step\n" for k in range(12))
            body.append("    return request\n\n\n")
        p = root / f"pkg/mod{f}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(body))
    return root


def test_hits_fit_the_budget_in_rank_order_trimmed_around_their_best_line(tmp_path: Path) -> None:
    root = big_workspace(tmp_path / "ws")
    resp = searcher(root).search("handle one request kind", limit=40, mode="bm25")
    assert len(resp.results) == 40
    got = fit(resp.results, 1000)
    assert 0 < got.tokens <= 1000 and got.tokens == sum(row_tokens(r) for r in got.rows)
    assert got.left_out == 40 - len(got.rows) > 0
    assert [(r["path"], r["score"]) for r in got.rows] == [
        (h.path, round(h.score, 6)) for h in resp.results[: len(got.rows)]
    ]
    seen: set[str] = set()
    for row, hit in zip(got.rows, resp.results, strict=False):
        lines = (root / row["path"]).read_text().split("\n")
        assert row["text"] == "\n".join(lines[row["start_line"] - 1 : row["end_line"]])  # the file's lines
        assert hit.start_line <= row["start_line"] <= row["best_line"] <= row["end_line"] <= hit.end_line
        if row["path"] in seen:  # a file's later hits keep their best line and one line each side
            assert row["end_line"] - row["start_line"] <= 2
        seen.add(row["path"])
    more = fit(resp.results, 4000)
    assert len(more.rows) > len(got.rows) and more.rows[: len(got.rows)] == got.rows


def test_a_tiny_budget_still_gets_the_first_hit_cut_to_fit(tmp_path: Path) -> None:
    root = big_workspace(tmp_path / "ws")
    resp = searcher(root).search("handle one request kind", limit=10, mode="bm25")
    got = fit(resp.results, 120)
    assert len(got.rows) == 1 and got.left_out == 9
    row = got.rows[0]
    assert row["start_line"] <= row["best_line"] <= row["end_line"] and row["truncated"] is True
    assert row["end_line"] - row["start_line"] >= 2


def hit(path: str, score: float, start: int = 1, text: str = "x", **ranks: int | None) -> Hit:
    return Hit(path, start, start + text.count("\n"), score, None, "python", dict(ranks), [], text)


def test_confidence_follows_the_margin_and_the_lists_that_agree() -> None:
    assert confidence([]) is None
    assert confidence([hit("a.py", 1.0), hit("b.py", 0.4)]) == "high"  # leads by 60 %
    assert confidence([hit("a.py", 1.0, bm25=1, piece=1, dense=1), hit("b.py", 0.85)]) == "high"
    assert confidence([hit("a.py", 1.0, bm25=1, dense=2), hit("b.py", 0.8)]) == "medium"
    assert confidence([hit("a.py", 1.0, bm25=1), hit("a.py", 0.99), hit("b.py", 0.95)]) == "low"
    assert margin([hit("a.py", 1.0), hit("a.py", 0.9)]) == 1.0  # one file only


def test_hints_name_a_sibling_a_near_miss_and_an_alternate_term(tmp_path: Path) -> None:
    from conftest import write_workspace

    root = write_workspace(tmp_path / "ws")
    s = searcher(root)
    resp = s.search("send one request over a socket and return the response", mode="bm25")
    from aide_tui.core.search.hitlines import hit_best_line

    top = resp.results[0]
    assert top.path == "src/httpclient/client.py" and 16 <= hit_best_line(top).line <= 20  # in Client.send
    assert resp.confidence in ("high", "medium", "low")
    sibling = resp.hints[0]
    assert sibling["kind"] == "symbol" and sibling["symbol"] in ("Client.__init__", "Client.follow_redirects")
    assert sibling["path"] == "src/httpclient/client.py"
    answer = resp.to_json()
    assert answer["confidence"] == resp.confidence and answer["hints"] == resp.hints
    typed = s.search("send one request over a socket and return the response", mode="bm25", hints=False)
    assert typed.hints == [] and typed.confidence == resp.confidence  # what the app asks for as you type
    assert [(h.path, h.start_line) for h in typed.results] == [(h.path, h.start_line) for h in resp.results]
    files = [hit(f"f{i}.py", 1.0 - i / 100) for i in range(14)]
    assert near_miss_hint(files) == {"kind": "file", "path": "f10.py", "rank": 11, "line": 1,
                                     "text": "near miss: f10.py (file ranked 11)"}  # fmt: skip
    assert near_miss_hint(files[:10]) is None
    shared = [
        hit("a.py", 1, text="retry_policy = build(RetryPolicy)\n"),
        hit("b.py", 0.9, text="retry_policy()"),
    ]
    assert term_hint(shared, "how are failed calls repeated", None) == {
        "kind": "term", "term": "retry_policy", "text": "try also: retry_policy"}  # fmt: skip
    assert term_hint(shared, "retry policy", None) is None  # the query already uses its words
    assert len(hints(files, "q", None, None)) <= 3


def test_a_name_the_code_has_no_trace_of_is_said_so(tmp_path: Path) -> None:
    """An identifier nothing in the workspace has (no word of the index, no definition, no use, not
    with an underscore either) answers with its words' hits at low confidence, the first hint saying
    the name is not in the code; a name that is, misspelt or written without its underscore, does not."""
    from conftest import write_workspace

    root = write_workspace(tmp_path / "ws")
    (root / "src/httpclient/posting.py").write_text(
        "def _post_entry(book, entry):\n    return book.append(entry)\n\n\npost = _post_entry\n\n\n"
        "class EntryBook:\n    pass\n\n\ndef http_status_text(code):\n    return str(code)\n"
    )
    (root / "tests").mkdir(exist_ok=True)  # "tests for X" finds this file by its word "tests"
    (root / "tests/test_posting.py").write_text("def test_post():\n    assert post([], 1) is None\n")
    s = searcher(root)
    asked = {
        "SocketRequestFactory": "SocketRequestFactory",
        "Client.reconnect_socket": "reconnect_socket",
        "who calls reconnect_socket": "reconnect_socket",
        "where is SocketRequestFactory defined": "SocketRequestFactory",
        "subclasses of SocketRequestFactory": "SocketRequestFactory",
        "tests for reconnect_socket": "reconnect_socket",  # (the path list finds tests/ by its word)
    }
    for query, name in asked.items():
        resp = s.search(query, mode="bm25")
        assert resp.results and resp.confidence == "low", query
        assert resp.hints[0]["kind"] == "absent" and resp.hints[0]["name"] == name, query
    for query in ("Client.send", "follow_redirects", "Client.folow_redirects", "post_entry", "client.py",
                  "who calls post_entry", "where is Client defined", "who calls socket",
                  "tests for post_entry", "tests for Client.send", "tests for entry_book",  # EntryBook's
                  "HttpStatusText", "who calls HTTPStatusText"):  # http_status_text's  # fmt: skip
        resp = s.search(query, mode="bm25")
        assert all(h["kind"] != "absent" for h in resp.hints), (query, resp.hints)
    assert s.search("SocketRequestFactory", mode="bm25", hints=False).hints == []  # typing: no hints


def sent_tokens(rows: list[dict[str, Any]], ascii: bool = True) -> int:
    """The rows' tokens by the project's rule, as sent: each row's compact JSON (``search --json``
    prints ASCII only), one token per three characters."""
    return sum(estimate_tokens(json.dumps(r, ensure_ascii=ascii)) for r in rows)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True,
                          timeout=300, env=env, check=False)  # fmt: skip


def test_search_json_max_tokens(tmp_path: Path) -> None:
    root = big_workspace(tmp_path / "ws")
    out = run_cli("search", "--path", str(root), "--embedder", "none", "--json", "--max-tokens", "400",
                  "--limit", "30", "handle one request kind")  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["max_tokens"] == 400 and 0 < got["tokens_used"] <= 400
    assert got["left_out"] == 30 - len(got["results"]) > 0
    assert got["tokens_used"] == sent_tokens(got["results"])  # as printed: ranks included
    assert all(r["text"] and "best_line" in r for r in got["results"])
    assert got["confidence"] in ("high", "medium", "low") and isinstance(got["hints"], list)
    out = run_cli("search", "--path", str(root), "--embedder", "none", "--max-tokens", "400", "request")
    assert out.returncode == 2 and "--max-tokens needs --json" in out.stderr
    out = run_cli("search", "--path", str(root), "--embedder", "none", "--json", "--max-tokens", "0", "x")
    assert out.returncode == 2


@pytest.mark.parametrize("max_tokens", [None, 300, 0])
async def test_mcp_search_code_fits_its_budget(tmp_path: Path, max_tokens: int | None) -> None:
    pytest.importorskip("mcp")
    from test_mcp import call, session

    root = big_workspace(tmp_path / "ws")
    async with session(root, tmp_path) as s:
        args = {} if max_tokens is None else {"max_tokens": max_tokens}
        err, got = await call(s, "search_code", query="handle one request kind", limit=30, **args)
        assert not err, got
        assert got["confidence"] in ("high", "medium", "low") and len(got["hints"]) <= 3
        if max_tokens == 0:  # no budget: up to limit results of at most 40 lines
            assert len(got["results"]) == 30 and "tokens_used" not in got
            return
        budget = max_tokens or 2000
        assert got["max_tokens"] == budget and 0 < got["tokens_used"] <= budget
        assert got["left_out"] == 30 - len(got["results"]) > 0
        err, msg = await call(s, "search_code", query="x", max_tokens=10)
        assert err and "max_tokens must be 0 or between" in msg


LONG_LINE = "    data = [" + ", ".join(f'"item_{i}"' for i in range(2700)) + "]"  # about 32,000 characters


def budget_workspace(root: Path) -> Path:
    """The big workspace, a file with one 32,000-character line, a file of non-ASCII comments (escaped
    six characters each by ``search --json``) and a function of 72 lines (one chunk)."""
    big_workspace(root)
    (root / "pkg/minified.py").write_text(f"def load_items():\n{LONG_LINE}\n    return data\n")
    notes = "".join(
        f"    # 请求处理步骤 {k}：检查请求的内容\n    step_{k} = request.part({k})\n" for k in range(8)
    )
    (root / "pkg/notes.py").write_text(f"def handle_request_notes(request):\n{notes}    return request\n")
    body = "".join(f"    v_{k} = parse_part({k})\n" for k in range(70))  # one chunk of 72 lines
    (root / "pkg/longfn.py").write_text(f"def parse_long_request(request):\n{body}    return request\n")
    return root


QUERIES = ["handle one request kind", "item_1234", "请求处理步骤 request", "parse the long request"]


def shown_text(root: Path, row: dict[str, Any]) -> str:
    """What the file holds at the row's lines (and columns, for a part of one line)."""
    lines = (root / row["path"]).read_text().split("\n")
    text = "\n".join(lines[row["start_line"] - 1 : row["end_line"]])
    if "columns" in row:
        assert row["start_line"] == row["end_line"] == row["best_line"] and row["truncated"] is True
        first, last = row["columns"]
        return text[first - 1 : last]
    return text


@pytest.mark.parametrize("max_tokens", [20, 50, 100, 400])
def test_max_tokens_is_a_limit_on_the_rows_as_printed(tmp_path: Path, max_tokens: int) -> None:
    root = budget_workspace(tmp_path / "ws")
    batch = tmp_path / "queries.txt"
    batch.write_text("\n".join(QUERIES) + "\n")
    plain = run_cli("search", "--path", str(root), "--embedder", "none", "--json", "--limit", "20",
                    "--batch", str(batch))  # fmt: skip
    hits = [len(json.loads(line)["results"]) for line in plain.stdout.splitlines()]
    out = run_cli("search", "--path", str(root), "--embedder", "none", "--json", "--max-tokens",
                  str(max_tokens), "--limit", "20", "--batch", str(batch))  # fmt: skip
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == len(QUERIES)
    for got, found in zip(answers, hits, strict=True):
        rows = got["results"]
        assert got["tokens_used"] == sent_tokens(rows) <= max_tokens, (got["query"], got["tokens_used"])
        assert got["left_out"] + len(rows) == found
        for row in rows:
            assert "ranks" in row and row["text"] == shown_text(root, row)
    long_line = answers[1]["results"]
    if max_tokens >= 100:  # the one hit of the minified file: a part of its line, around the match
        assert long_line[0]["path"] == "pkg/minified.py" and '"item_1234"' in long_line[0]["text"]
    if max_tokens == 20:  # not even one row fits: none is sent
        assert all(a["results"] == [] and a["tokens_used"] == 0 for a in answers)


def test_a_row_names_the_definition_its_best_line_is_in() -> None:
    """A chunk packing several definitions is recorded under its first; a row trimmed around its best
    line named that first one (``def raise_for_status`` for ``Response.json``'s lines), so an agent
    read a name the row's text may not even hold."""
    text = (
        "    def raise_for_status(self):\n        return self\n\n"
        "    def json(self, **kwargs):\n        return jsonlib.loads(self.content, **kwargs)\n"
    )
    hit = Hit("pkg/models.py", 10, 14, 1.0, "class Response > def raise_for_status", "python", {"bm25": 1},
              ["jsonlib", "loads"], text)  # fmt: skip
    row = fit([hit], 2000).rows[0]
    assert (row["best_line"], row["symbol"]) == (14, "class Response > def json"), row


def test_a_row_cut_to_fit_never_exceeds_the_budget() -> None:
    text = f"def load_items():\n{LONG_LINE}\n    return data"
    long = Hit("pkg/minified.py", 10, 12, 1.0, "load_items", "python", {"bm25": 1}, ["item_1234"], text)
    other = Hit("pkg/other.py", 1, 1, 0.5, None, "python", {"bm25": 2}, ["item"], "item = 1")
    for budget in (1, 20, 50, 51, 60, 100, 400, 2000, 10_000):
        got = fit([long, other], budget, shape=lambda hit, row: {**row, "ranks": hit.ranks}, ascii=True)
        assert got.tokens == sum(row_tokens(r, ascii=True) for r in got.rows) <= budget
        assert got.left_out == 2 - len(got.rows)
        if got.rows:
            row = got.rows[0]
            assert row["ranks"] == {"bm25": 1} and row["text"] in LONG_LINE and row["best_line"] == 11
            assert row["text"] == LONG_LINE[row["columns"][0] - 1 : row["columns"][1]]
            assert '"item_1234"' in row["text"] or budget < 100
    assert not fit([long], 20).rows  # no room for the row's keys: left out, not sent over the budget
    whole = fit([long], 20_000)
    assert whole.rows[0]["text"] == text and "columns" not in whole.rows[0]


@pytest.mark.parametrize("max_tokens", [50, 100, None, 0])
async def test_mcp_max_tokens_is_a_limit_and_rows_say_the_lines_they_hold(
    tmp_path: Path, max_tokens: int | None
) -> None:
    pytest.importorskip("mcp")
    from test_mcp import session

    root = budget_workspace(tmp_path / "ws")
    found: dict[str, int] = {}
    async with session(root, tmp_path) as s:
        for query in QUERIES:
            res = await s.call_tool("search_code", {"query": query, "limit": 20, "max_tokens": 0})
            found[query] = len((res.structured_content or {})["results"])
            args: dict[str, Any] = {"query": query, "limit": 20}
            if max_tokens is not None:
                args["max_tokens"] = max_tokens
            res = await s.call_tool("search_code", args)
            assert not res.is_error, res.content
            got = res.structured_content
            assert got is not None and json.loads(res.content[0].text) == got  # one answer, compact
            rows = got["results"]
            for row in rows:
                if "columns" in row or not row["truncated"] or max_tokens != 0:
                    assert row["text"] == shown_text(root, row)
                else:  # max_tokens 0: at most 40 lines and 2,000 characters, the last line maybe cut
                    held = shown_text(root, row)
                    assert held.startswith(row["text"]) and row["text"].count("\n") == held.count("\n")
            if max_tokens == 0:
                assert "tokens_used" not in got and len(rows) == found[query]
                continue
            budget = max_tokens or 2000
            assert got["tokens_used"] == sent_tokens(rows, ascii=False) <= budget, (query, got["tokens_used"])
            assert len(rows) + got["left_out"] == found[query]
