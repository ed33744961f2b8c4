"""``aide-tui mcp`` through the official SDK's own stdio client: list the tools, call each, check answers."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import write_workspace
from serve_helpers import Served, _reap_servers, clean_env  # noqa: F401

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

NONE = ("--embedder", "none")


@asynccontextmanager
async def session(root: Path, home: Path, **env: str):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "aide_tui", "mcp", str(root), *NONE], env=clean_env(home, **env)
    )
    with open(home / "mcp-stderr.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            yield s


async def call(s: ClientSession, tool: str, **args: Any) -> tuple[bool, Any]:
    """(is_error, structured result or error text)."""
    res = await s.call_tool(tool, args)
    if res.is_error:
        return True, res.content[0].text
    return False, res.structured_content


async def test_tools_answer_from_their_own_index(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    async with session(root, tmp_path) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == {
            "search_code",
            "find_definition",
            "find_references",
            "index_status",
            "read_span",
        }
        assert set(tools["search_code"].input_schema["properties"]) == {
            "query",
            "limit",
            "mode",
            "path",
            "lang",
            "all_workspaces",
            "prefix",
            "max_tokens",
        }

        err, got = await call(s, "search_code", query="parse_header", limit=3)
        assert not err, got
        top = got["results"][0]
        assert top["path"] == "src/httpclient/headers.py" and top["symbol"] == "def parse_header"
        assert top["start_line"] == 1 and top["end_line"] >= 4 and top["score"] > 0
        assert "def parse_header(line: str)" in top["text"] and top["truncated"] is False
        assert len(got["results"]) <= 3 and got["degraded"] is False and "corrected" not in got
        err, got = await call(s, "search_code", query="parse_haeder", limit=3)  # misspelt: searched as fixed
        assert not err and got["corrected"] == "parse_header"
        assert got["results"][0]["symbol"] == "def parse_header"

        err, got = await call(s, "search_code", query="render", path="web", mode="bm25")
        assert not err and {r["path"] for r in got["results"]} == {"web/app.ts"}
        err, got = await call(s, "search_code", query="redirects", lang="markdown")
        assert not err and {r["path"] for r in got["results"]} == {"docs/usage.md"}
        err, got = await call(s, "search_code", query="x", mode="fuzzy")
        assert err and "unknown mode" in got
        err, got = await call(s, "search_code", query="x", all_workspaces=True)
        assert err and "shared store" in got

        err, st = await call(s, "index_status")
        assert not err and st["state"] == "ready" and st["files"] == 5 and st["source"] == "in-process"

        err, span = await call(s, "read_span", path="src/httpclient/headers.py", start_line=4, end_line=5)
        assert not err
        assert span["text"] == (
            "def parse_header(line: str) -> tuple[str, str]:\n"
            '    """Split a raw header line into a lower-cased name and its value."""'
        )
        assert span["total_lines"] == 12 and span["end_line"] == 5


async def test_find_definition_and_references(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    (root / "src/httpclient/mock.py").write_text("class Mock:\n    def send(self):\n        return 1\n")
    async with session(root, tmp_path) as s:
        err, got = await call(s, "find_definition", name="parse_header")
        assert not err, got
        assert got["ambiguous"] is False and got["total"] == 1
        assert got["definitions"] == [{
            "path": "src/httpclient/headers.py", "line": 4, "col": 5, "kind": "function",
            "text": "def parse_header(line: str) -> tuple[str, str]:", "qualname": "parse_header",
            "end_line": 7,
        }]  # fmt: skip
        err, got = await call(s, "find_references", name="send", limit=5)
        assert not err and got["ambiguous"] is True and "may be to any of them" in got["note"]
        assert [(d["qualname"], d["path"]) for d in got["definitions"]] == [
            ("Client.send", "src/httpclient/client.py"), ("Mock.send", "src/httpclient/mock.py")]  # fmt: skip
        assert [(r["path"], r["line"], r["kind"]) for r in got["references"]] == [
            ("src/httpclient/client.py", 25, "call")]  # fmt: skip
        err, got = await call(s, "find_references", name="Mock.send")
        assert not err and got["ambiguous"] is False and got["definitions"][0]["qualname"] == "Mock.send"
        err, got = await call(s, "find_definition", name="no such name")
        assert err and "not an identifier" in got
        err, got = await call(s, "find_references", name="send", limit=0)
        assert err and "limit must be between" in got


async def test_read_span_stays_in_the_workspace(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'not for agents'\n")
    (root / "escape.py").symlink_to(outside / "secret.py")
    (root / "escdir").symlink_to(outside)
    (root / ".env").write_text("API_KEY=abc\n")
    (root / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (root / "blob.py").write_bytes(b"x = 1\n\0\0\0")
    async with session(root, tmp_path) as s:
        refused = {
            "../outside/secret.py": "'..'",
            "src/../../outside/secret.py": "'..'",
            str(outside / "secret.py"): "absolute",
            "/etc/passwd": "absolute",
            "escape.py": "symlink",
            "escdir/secret.py": "symlink",
            ".env": "sensitive",
            "deploy.pem": "sensitive",
            ".aide/serve.lock": "out of bounds",
            ".git/config": "out of bounds",
            "blob.py": "binary",
            "src/missing.py": "no such file",
        }
        for path, why in refused.items():
            err, text = await call(s, "read_span", path=path, start_line=1, end_line=3)
            assert err and why in text, (path, text)
        err, text = await call(s, "read_span", path="src/httpclient/retry.py", start_line=100, end_line=120)
        assert err and "past the end" in text
        err, span = await call(
            s, "read_span", path="./src//httpclient/retry.py", start_line=1, end_line=10_000
        )
        assert (
            not err and span["path"] == "src/httpclient/retry.py" and span["end_line"] == span["total_lines"]
        )
    assert os.path.exists(outside / "secret.py")


async def test_mcp_uses_a_running_server(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    srv = Served(root, *NONE, env=clean_env(tmp_path))
    try:
        srv.wait_ready()
        async with session(root, tmp_path) as s:
            err, st = await call(s, "index_status")
            # serve hosts the workspace: mcp attaches to it and searches what it commits
            assert (
                not err and st["source"] == f"in-process, indexed by PID {srv.proc.pid}" and st["files"] == 5
            )
            err, got = await call(s, "search_code", query="follow_redirects", limit=2)
            assert not err and got["results"][0]["path"] == "src/httpclient/client.py"
            assert "def follow_redirects" in got["results"][0]["text"]
            # the server goes away: mcp takes hosting over and keeps answering
            assert srv.stop() == 0
            err, got = await call(s, "search_code", query="follow_redirects", limit=2)
            assert not err and got["results"][0]["path"] == "src/httpclient/client.py"
            for _ in range(100):
                err, st = await call(s, "index_status")
                if st["source"] == "in-process":
                    break
                await asyncio.sleep(0.1)
            assert st["source"] == "in-process"
    finally:
        srv.stop()


async def test_mcp_on_a_milvus_store_searches_every_workspace(tmp_path: Path) -> None:
    """``mcp`` hosts a Milvus Lite store like the app does; ``all_workspaces`` labels each result."""
    pytest.importorskip("milvus_lite")
    from serve_helpers import cli

    beta = write_workspace(
        tmp_path / "beta", {"lib/render.py": "def render_template(name):\n    return name\n"}
    )
    alpha = write_workspace(tmp_path / "alpha")
    env = {"AIDE_STORE_BACKEND": "milvus", "AIDE_STORE_URI": str(tmp_path / "team.db"),
           "AIDE_STORE_COLLECTION": "team"}  # fmt: skip
    done = cli("index", str(beta), *NONE, env=clean_env(tmp_path, **env))
    assert done.returncode == 0, done.stderr
    async with session(alpha, tmp_path, **env) as s:
        err, got = await call(s, "search_code", query="render_template", limit=3, all_workspaces=True)
        assert not err, got
        top = got["results"][0]
        assert top["path"] == "lib/render.py" and top["workspace"].startswith("beta-")
        assert "def render_template" in top["text"]
        err, got = await call(s, "search_code", query="parse_header", limit=3)
        assert not err and got["results"][0]["path"] == "src/httpclient/headers.py"
        assert "workspace" not in got["results"][0]
        err, st = await call(s, "index_status")
        assert not err and st["files"] == 5 and st["source"] == "in-process"
        err, span = await call(s, "read_span", path="lib/render.py", start_line=1, end_line=2)
        assert err  # read_span reads this workspace's files only


class RawClient:
    """JSON-RPC lines written by hand to a real ``aide-tui mcp``: the SDK's own client cannot send a lone
    surrogate (its serializer refuses one), but JSON can spell it and other clients send it."""

    def __init__(self, root: Path, home: Path) -> None:
        self.errlog = open(home / "mcp-raw-stderr.log", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aide_tui", "mcp", str(root), *NONE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog, env=clean_env(home),
        )  # fmt: skip

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 30) -> dict[str, Any] | None:
        """The next line from the server as JSON, or None when nothing came within ``timeout``."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return json.loads(self.proc.stdout.readline()) if ready else None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(20)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe:
                pipe.close()
        self.errlog.close()


def test_a_lone_surrogate_gets_a_tool_error_not_silence(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    raw = RawClient(root, tmp_path)
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        assert (raw.reply() or {}).get("id") == 1
        raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        calls = {
            2: '{"name": "search_code", "arguments": {"query": "parse\\ud800header"}}',
            3: '{"name": "read_span", "arguments": {"path": "\\udc80.py", "start_line": 1, "end_line": 2}}',
            4: '{"name": "search_code", "arguments": {"query": "x", "path": "\\udfff"}}',
        }
        for rid, params in calls.items():
            raw.send(f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/call", "params": {params}}}')
            got = raw.reply(timeout=20)
            assert got is not None, f"no reply to request {rid}: the client would wait forever"
            assert got["id"] == rid and got["result"]["isError"] is True, got
            assert "lone surrogate" in got["result"]["content"][0]["text"]
        raw.send('{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"cursor": "\\ud800"}}')
        got = raw.reply(timeout=20)
        assert got is not None and got["id"] == 5 and "lone surrogate" in got["error"]["message"], got
        # the server keeps working
        params = {"name": "search_code", "arguments": {"query": "parse_header", "limit": 1}}
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": params}))
        got = raw.reply(timeout=90)
        assert got is not None and got["id"] == 6 and not got["result"].get("isError"), got
        assert (
            json.loads(got["result"]["content"][0]["text"])["results"][0]["path"]
            == "src/httpclient/headers.py"
        )
    finally:
        raw.close()


def test_requests_followed_at_once_by_eof_are_all_answered(tmp_path: Path) -> None:
    """``printf '<requests>' | aide-tui mcp``: stdin ends right after the requests. Every request gets
    its answer before the process exits (0)."""
    root = write_workspace(tmp_path / "ws")
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "pipe", "version": "0"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search_code", "arguments": {"query": "parse_header", "limit": 3}}},
        {"jsonrpc": "2.0", "id": "three", "method": "tools/call",
         "params": {"name": "find_definition", "arguments": {"name": "Client"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "no/such/method"},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "aide_tui", "mcp", str(root), *NONE],
        input="".join(json.dumps(m) + "\n" for m in lines).encode(),
        capture_output=True, env=clean_env(tmp_path), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    replies = {r["id"]: r for r in map(json.loads, done.stdout.decode().splitlines())}
    assert set(replies) == {1, 2, "three", 4}, done.stdout.decode()
    found = json.loads(replies[2]["result"]["content"][0]["text"])
    assert found["results"][0]["path"] == "src/httpclient/headers.py"
    defs = json.loads(replies["three"]["result"]["content"][0]["text"])["definitions"]
    assert defs[0]["path"] == "src/httpclient/client.py"
    assert replies[4]["error"]["code"] == -32601
    assert b"Traceback" not in done.stderr


async def test_in_flight_requests_settle_on_an_answer_or_a_cancellation() -> None:
    """What EOF waits for: requests, not notifications; an answer or the client's cancellation settles
    one (a cancelled request gets no answer, so waiting for it would hang)."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    from aide_tui.serve.mcp_server import InFlight

    def msg(**m: Any) -> SessionMessage:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **m}))

    flight = InFlight()
    flight.saw(msg(id=1, method="tools/call", params={"name": "x"}))
    flight.saw(msg(id="b", method="ping"))
    flight.saw(msg(method="notifications/initialized"))
    assert flight.ids == {1, "b"}
    flight.answered(msg(id=1, result={}))
    flight.saw(msg(method="notifications/cancelled", params={"requestId": "b"}))
    assert flight.ids == set()
    await flight.drained(5)  # returns at once
    flight.saw(msg(id=3, method="ping"))
    await flight.drained(0.05)  # gives up after its timeout
    assert flight.ids == {3}
