"""One voice for bad queries, and search as you type, through every front end (issue 23, items 1 and 6).

A query that cannot be understood (an unknown ``lang:``) is an error with the valid names everywhere:
the CLI exits 2, ``serve`` answers 400 with ``{"error"}``, ``mcp``'s ``search_code`` is a tool error.
Real ``aide-tui serve`` processes on their real socket, and the MCP SDK's own stdio client.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_workspace
from serve_helpers import Served, _reap_servers, clean_env, cli  # noqa: F401
from test_mcp import call, session

NONE = ("--embedder", "none")


def test_serve_refuses_an_unknown_language_and_completes_the_typed_word(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    srv = Served(root, *NONE, env=env)
    try:
        srv.wait_ready()
        for body in ({"query": "redirect lang:klingon"}, {"query": "redirect lang:klingon", "mode": "bm25"},
                     {"query": "lang:klingon"}):  # fmt: skip
            r = srv.http.post("/search", json=body)
            assert r.status_code == 400 and set(r.json()) == {"error"}, r.text
            assert "'klingon'" in r.json()["error"] and "python" in r.json()["error"]
        assert srv.search("redirect lang:py")["results"]  # and the server keeps answering
        # the CLI going through this host still says it in one line and exits 2 (a batch: its line)
        out = cli("search", "--path", str(root), *NONE, "redirect lang:klingon", env=env)
        assert out.returncode == 2 and out.stdout == "" and len(out.stderr.splitlines()) == 1
        assert "klingon" in out.stderr and "python" in out.stderr
        out = cli("search", "--path", str(root), *NONE, "--json", "--batch", "-", env=env,
                  stdin="redirect lang:klingon\nredirect\n")  # fmt: skip
        lines = [json.loads(x) for x in out.stdout.splitlines()]
        assert out.returncode == 2 and "klingon" in lines[0]["error"] and lines[1]["results"]
        # search as you type, on request only
        plain = srv.search("timeou", mode="bm25")  # a complete word: searched as its one-slip fix
        assert plain["corrected"] == "timeout"
        typing = srv.search("timeou", mode="bm25", prefix=True)  # completed instead
        typed = typing["results"]
        assert typed and typed[0]["path"] == "src/httpclient/client.py" and "corrected" not in typing
        r = srv.http.post("/search", json={"query": "timeou", "prefix": "yes"})
        assert r.status_code == 400 and r.json() == {"error": "prefix must be true or false"}
    finally:
        assert srv.stop() == 0


async def test_mcp_search_code_says_an_unknown_language_is_an_error(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    async with session(root, tmp_path) as s:
        for args in ({"query": "redirect", "lang": "klingon"}, {"query": "redirect lang:klingon"},
                     {"query": "redirect lang:klingon", "mode": "bm25"}):  # fmt: skip
            err, got = await call(s, "search_code", **args)
            assert err, got
            assert "'klingon'" in got and "python" in got and "typescript" in got
        err, got = await call(s, "search_code", query="redirect", lang="py")
        assert not err and got["results"]
        # search as you type, on request only
        err, got = await call(s, "search_code", query="timeou", mode="bm25")
        assert not err and got["corrected"] == "timeout"  # a complete word: searched as its one-slip fix
        err, got = await call(s, "search_code", query="timeou", mode="bm25", prefix=True, path="src")
        assert not err and got["results"][0]["path"] == "src/httpclient/client.py" and "corrected" not in got
        err, got = await call(s, "search_code", query="timeou ", mode="bm25", prefix=True)
        assert not err and got["corrected"] == "timeout"  # a space after the word: it is complete


@pytest.mark.parametrize("fmt", ["text", "json", "vimgrep", "paths"])
def test_cli_says_an_unknown_language_the_same_in_every_format(tmp_path: Path, fmt: str) -> None:
    root = write_workspace(tmp_path / "ws")
    out = cli(
        "search", "--path", str(root), *NONE, "--format", fmt, "parse lang:klingon", env=clean_env(tmp_path)
    )
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and "'klingon'" in out.stderr and "python" in out.stderr
