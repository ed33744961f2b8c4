"""``aide-tui serve`` end to end: a real server process, its real Unix socket (and loopback TCP), httpx."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import write_workspace
from loopback_server import LoopbackServer
from serve_helpers import Served, _reap_servers, clean_env, cli, without_took  # noqa: F401

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

NONE = ("--embedder", "none")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[Served]:
    """One server for the route tests (they leave the workspace as they found it)."""
    root = write_workspace(home / "ws")
    srv = Served(root, *NONE, env=clean_env(home), shared=True)
    try:
        srv.wait_ready()
        yield srv
    finally:
        code = srv.stop()
    assert code == 0
    assert not srv.sock.exists()  # removed on a clean stop


def test_status_is_the_cli_object_and_files_are_private(served: Served, home: Path) -> None:
    r = served.http.get("/status")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    local = cli("status", str(served.root), "--json", "--no-server", *NONE, env=clean_env(home))
    assert r.json() == json.loads(local.stdout)
    assert r.json()["files"] == 5
    state = served.root / ".aide"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(served.sock.lstat().st_mode) and stat.S_IMODE(served.sock.lstat().st_mode) == 0o600
    assert int((state / "serve.lock").read_text()) == served.proc.pid


def test_search_answers_one_contract_line(served: Served, home: Path) -> None:
    got = served.search("parse_header", limit=3, mode="bm25")
    assert {"query", "degraded", "degraded_reason", "took_ms", "results"} <= set(got)
    assert got["results"][0]["path"] == "src/httpclient/headers.py" and len(got["results"]) <= 3
    assert set(got["results"][0]) == {"path", "start_line", "end_line", "score", "symbol", "ranks"}
    local = cli("search", "--path", str(served.root), "--json", "--no-server", "--no-update", "--limit", "3",
                "--mode", "bm25", *NONE, "parse_header", env=clean_env(home))  # fmt: skip
    assert without_took(json.dumps(got)) == without_took(local.stdout)
    # defaults: limit 20, the configured mode; filters work as in the CLI
    assert len(served.search("client")["results"]) <= 20
    assert {r["path"] for r in served.search("page lang:typescript")["results"]} == {"web/app.ts"}


def test_defs_and_refs_answer_what_the_cli_prints(served: Served, home: Path) -> None:
    """/defs and /refs give the ``defs`` / ``refs --json`` objects, and the CLI goes through them: the
    same stdout with and without ``--no-server``, and ``served_symbols`` gets the host's answer."""
    from aide_tui.core.config import load_settings
    from aide_tui.host.served import served_symbols

    env = clean_env(home)
    for route, cmd, name in (("/defs", "defs", "Client.send"), ("/refs", "refs", "backoff_delays")):
        r = served.http.post(route, json={"name": name})
        assert r.status_code == 200, r.text
        local = cli(
            cmd, "--path", str(served.root), "--json", "--no-server", "--no-update", *NONE, name, env=env
        )
        assert local.returncode == 0, local.stderr
        assert r.json() == json.loads(local.stdout)
        through = cli(cmd, "--path", str(served.root), "--json", *NONE, name, env=env)
        assert through.stdout == local.stdout
        text = (cmd, "--path", str(served.root), *NONE, name)
        assert cli(*text, env=env).stdout == cli(*text, "--no-server", "--no-update", env=env).stdout
    defs = served.http.post("/defs", json={"name": "Client.send"}).json()["definitions"]
    assert [(d["path"], d["qualname"]) for d in defs] == [("src/httpclient/client.py", "Client.send")]
    refs = served.http.post("/refs", json={"name": "backoff_delays", "limit": 1}).json()
    assert len(refs["references"]) == 1 and refs["total"] >= 1
    assert refs["left_out"] == refs["total"] - 1
    missing = served.http.post("/defs", json={"name": "no_such_name_here"}).json()
    assert missing["total"] == 0 and missing["definitions"] == []
    gone = cli("defs", "--path", str(served.root), *NONE, "no_such_name_here", env=env)
    assert gone.returncode == 1 and gone.stdout == ""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        settings = load_settings(served.root, {"embedding": {"backend": "none"}})
        got = served_symbols(served.root, settings, "definitions", "Client.send", 5)
    assert got == served.http.post("/defs", json={"name": "Client.send", "limit": 5}).json()


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [
        ("POST", "/search", b"{not json", 400, "malformed JSON"),
        ("POST", "/search", b"[" * 100_000, 400, "malformed JSON"),  # deep nesting
        ("POST", "/search", b"\xff\xfe", 400, "malformed JSON"),
        ("POST", "/search", b'["parse_header"]', 400, "query"),
        ("POST", "/search", b"", 400, "query"),
        ("POST", "/search", b'{"limit": 3}', 400, "no query"),
        ("POST", "/search", b'{"query": "   "}', 400, "no query"),
        ("POST", "/search", b'{"query": 42}', 400, "no query"),
        ("POST", "/search", b'{"query": "x", "mode": "fuzzy"}', 400, "unknown mode"),
        ("POST", "/search", b'{"query": "x", "limit": -1}', 400, "limit"),
        ("POST", "/search", b'{"query": "x", "limit": 1001}', 400, "limit"),
        ("POST", "/search", b'{"query": "x", "limit": "5"}', 400, "limit"),
        ("POST", "/search", b'{"query": "x", "limit": true}', 400, "limit"),
        ("POST", "/defs", b'{"limit": 3}', 400, "no name"),
        ("POST", "/defs", b'["Client"]', 400, "name"),
        ("POST", "/refs", b'{"name": "not a name!"}', 400, "not an identifier"),
        ("POST", "/refs", b'{"name": "Client", "limit": 0}', 400, "limit"),
        ("POST", "/defs", b'{"name": "Client", "limit": "3"}', 400, "limit"),
        ("GET", "/defs", None, 405, "method not allowed"),
        ("POST", "/reindex", b'{"rebuild": "yes"}', 400, "rebuild"),
        ("POST", "/reindex", b"[]", 400, "object"),
        ("POST", "/search", b'{"query": "\\ud800"}', 400, "lone surrogate"),  # JSON spells one
        ("POST", "/search", b'{"query": "x\xed\xa0\x80y"}', 400, "lone surrogate"),  # UTF-8 bytes of one
        ("POST", "/search", b'{"query": "x", "\\udfff": 1}', 400, "lone surrogate"),  # in a key
        ("POST", "/reindex", b'{"rebuild": false, "x": ["\\udc80"]}', 400, "lone surrogate"),
        ("GET", "/nope", None, 404, "no such route"),
        ("GET", "/", None, 404, "no such route"),
        ("GET", "/search", None, 405, "method not allowed"),
        ("DELETE", "/status", None, 405, "method not allowed"),
        ("PUT", "/reindex", b"{}", 405, "method not allowed"),
        ("POST", "/search", b'{"query": "' + b"a" * (1 << 20) + b'"}', 413, "over"),
    ],
)
def test_bad_requests_get_json_errors(
    served: Served, method: str, path: str, body: bytes | None, status: int, needle: str
) -> None:
    r = served.http.request(method, path, content=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert needle in r.json()["error"]
    assert served.http.get("/status").status_code == 200  # still serving


def test_body_over_1mb_is_refused_while_streaming(served: Served) -> None:
    """No Content-Length (chunked): the server stops reading at 1 MB instead of buffering it all."""
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"query": "'
        for _ in range(64):  # up to 4 MB, 64 KB at a time
            sent += 1 << 16
            yield b"a" * (1 << 16)
        yield b'"}'

    try:
        r = served.http.post("/search", content=chunks())
        assert r.status_code == 413 and "over" in r.json()["error"]
    except httpx.RemoteProtocolError:
        pass  # the server answered and closed before the client finished sending: also a refusal
    assert served.http.get("/status").status_code == 200


def _read_events(srv: Served, out: list[tuple[str, dict]], connected: threading.Event, until: str) -> None:
    with srv.http.stream("GET", "/events", timeout=httpx.Timeout(60)) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in resp.iter_lines():
            if line.startswith(": connected"):
                connected.set()
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.append((name, json.loads(line[6:])))
                if name == until:
                    return


def test_reindex_is_accepted_and_streams_progress_events(served: Served) -> None:
    events: list[tuple[str, dict]] = []
    connected = threading.Event()
    reader = threading.Thread(target=_read_events, args=(served, events, connected, "done"), daemon=True)
    reader.start()
    assert connected.wait(30)
    r = served.http.post("/reindex", json={"rebuild": True})
    assert r.status_code == 202 and r.json() == {"accepted": True, "rebuild": True}
    reader.join(90)
    assert not reader.is_alive(), events
    kinds = [name for name, _ in events]
    assert kinds[-1] == "done" and "progress" in kinds
    assert all(obj["event"] == name for name, obj in events)  # the `index --progress` objects
    done = events[-1][1]
    assert done["files"] == 5 and done["chunks"] >= 5 and done["cancelled"] is False
    assert {"state", "files_done", "files_total"} <= set(next(o for n, o in events if n == "progress"))
    assert served.http.post("/reindex").status_code == 202  # an empty body means {"rebuild": false}


def test_clients_that_drop_event_streams_are_forgotten(served: Served) -> None:
    """More disconnects than the server accepts concurrent streams: every one must have been released."""
    for _ in range(70):
        with served.http.stream("GET", "/events") as resp:
            assert resp.status_code == 200
            next(resp.iter_lines())  # ": connected", then hang up mid-stream
        assert served.http.head("/events").status_code == 200  # headers only, no stream held open
    assert served.http.get("/status").status_code == 200


def test_an_answer_from_the_host_loads_no_index_reader(tmp_path: Path) -> None:
    """``search``, ``defs`` and ``refs`` that a running host answers import neither numpy nor the
    store: the interpreter and the client are the whole cost of such a call (a second's tenth or two);
    with ``--no-server`` the same commands read the index in-process and give the same answer."""
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    srv = Served(root, *NONE, "--no-watch", env=env)
    srv.wait_ready()
    code = (
        "import sys\nfrom aide_tui.cli import main\ncode = main(sys.argv[1:])\n"
        "print('LOADED', [m for m in ('numpy', 'aide_tui.core.store.segments') if m in sys.modules])\n"
        "sys.exit(code)"
    )
    for args in (("search", "--json", "parse_header"), ("defs", "--json", "Client.send"),
                 ("refs", "--json", "backoff_delays")):  # fmt: skip
        for where in ((), ("--no-server",)):
            argv = [sys.executable, "-c", code, *args, "--path", str(root), *NONE, *where]
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
            assert out.returncode == 0, out.stderr
            body, _, loaded = out.stdout.rpartition("LOADED ")
            answer = [{k: v for k, v in json.loads(ln).items() if k != "took_ms"} for ln in body.splitlines()]
            if not where:
                served, through = answer, loaded.strip()
            else:
                assert answer == served, args  # the host's answer is the index's
                assert through == "[]" and "numpy" in loaded, (args, through, loaded)
    srv.kill()


def test_cli_goes_through_the_server_with_identical_output(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    srv = Served(root, *NONE, "--no-watch", env=env)
    try:
        srv.wait_ready()
        queries = "parse_header\n\nwhere are redirects followed\nPageCache lang:typescript\n"
        for mode in ("hybrid", "bm25"):
            args = ("search", "--path", str(root), "--json", "--mode", mode, "--limit", "5", *NONE)
            args += ("--batch", "-")
            through = cli(*args, stdin=queries, env=env)
            local = cli(*args, "--no-server", stdin=queries, env=env)
            assert through.returncode == local.returncode == 0, through.stderr + local.stderr
            assert without_took(through.stdout) == without_took(local.stdout)
            assert len(through.stdout.splitlines()) == 4
        text_args = ("search", "--path", str(root), *NONE, "follow redirects")
        assert cli(*text_args, env=env).stdout == cli(*text_args, "--no-server", env=env).stdout
        status = ("status", str(root), *NONE)
        assert cli(*status, "--json", env=env).stdout == cli(*status, "--json", "--no-server", env=env).stdout
        assert cli(*status, env=env).stdout == cli(*status, "--no-server", env=env).stdout

        # the server hosts the workspace: with --no-watch it has not seen this new file, and an
        # in-process search does not write behind its back; `index` asks the host, then both find it
        (root / "src" / "fresh.py").write_text("def zanzibar_quokka():\n    return 42\n")
        q = ("search", "--path", str(root), "--json", *NONE, "zanzibar_quokka")
        assert json.loads(cli(*q, env=env).stdout)["results"] == []
        manifest = (root / ".aide" / "index" / "manifest.json").read_bytes()
        assert json.loads(cli(*q, "--no-server", env=env).stdout)["results"] == []
        assert (root / ".aide" / "index" / "manifest.json").read_bytes() == manifest
        indexed = cli("index", str(root), *NONE, env=env)
        assert indexed.returncode == 0 and "1 changed" in indexed.stdout, indexed.stdout + indexed.stderr
        assert json.loads(cli(*q, env=env).stdout)["results"][0]["path"] == "src/fresh.py"
        assert json.loads(cli(*q, "--no-server", env=env).stdout)["results"][0]["path"] == "src/fresh.py"
        # other settings than the server's: in-process, same answer as --no-server
        other = ("search", "--path", str(root), "--json", "--rrf-k", "30", *NONE, "parse_header")
        local = cli(*other, "--no-server", env=env).stdout
        assert without_took(cli(*other, env=env).stdout) == without_took(local)
    finally:
        assert srv.stop() == 0


def _token_file(srv: Served) -> Path:
    """The token file the server names in its start-up line."""
    line = next(x for x in srv.lines if x.startswith("listening http://"))
    return Path(line.split("Bearer <", 1)[1].rsplit(">", 1)[0])


def test_tcp_needs_the_token_and_only_loopback(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    planted = root / ".aide" / "serve.token"  # issue 22 #2: a token that came with the repository
    planted.parent.mkdir()
    planted.write_text("p" * 43 + "\n")
    srv = Served(root, *NONE, "--port", "0", env=env)
    try:
        assert srv.port
        token_file = _token_file(srv)
        assert root not in token_file.parents and token_file.parent.is_relative_to(tmp_path / "xdg-cache")
        st = token_file.stat()
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid() and st.st_nlink == 1
        token = token_file.read_text().strip()
        assert len(token) >= 32 and token != "p" * 43
        url = f"http://127.0.0.1:{srv.port}"
        with httpx.Client(base_url=url, timeout=30) as web:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token},
                            {"Authorization": "Bearer " + "p" * 43}):  # fmt: skip
                for method, path in (("GET", "/status"), ("POST", "/search"), ("GET", "/nope")):
                    r = web.request(method, path, headers=headers, json={"query": "x"})
                    assert r.status_code == 401 and r.json() == {"error": "missing or wrong bearer token"}
                    assert r.headers["www-authenticate"] == "Bearer"
                    assert "x-aide-pid" not in r.headers and "x-aide-settings" not in r.headers
            ok = {"Authorization": f"Bearer {token}"}
            srv.wait_ready()
            r = web.get("/status", headers=ok)
            assert r.status_code == 200 and r.headers["x-aide-pid"] == str(srv.proc.pid)
            r = web.post("/search", headers=ok, json={"query": "parse_header", "mode": "bm25"})
            assert r.status_code == 200 and r.json()["results"][0]["path"] == "src/httpclient/headers.py"
            # DNS rebinding and web pages: a foreign Host or any Origin is refused, even with the token
            for extra in ({"Host": f"evil.example:{srv.port}"}, {"Host": "127.0.0.1.nip.io"},
                          {"Host": f"localhost:{srv.port + 1}"}, {"Origin": "http://evil.example"},
                          {"Origin": f"http://127.0.0.1:{srv.port}"}, {"Origin": "null"}):  # fmt: skip
                r = web.get("/status", headers={**ok, **extra})
                assert r.status_code == 403 and "error" in r.json(), (extra, r.text)
                assert "x-aide-pid" not in r.headers and "x-aide-settings" not in r.headers
            for host in (f"localhost:{srv.port}", f"[::1]:{srv.port}", "localhost", f"127.0.0.1:{srv.port}"):
                assert web.get("/status", headers={**ok, "Host": host}).status_code == 200, host
        assert srv.http.get("/status").status_code == 200  # the socket needs no token
    finally:
        assert srv.stop() == 0
    assert planted.read_text() == "p" * 43 + "\n"  # left alone, never used
    # the token survives restarts; any non-loopback bind is refused before anything starts
    srv = Served(root, *NONE, "--port", "0", env=env)
    srv.stop()
    assert token_file.read_text().strip() == token
    for host in ("0.0.0.0", "192.0.2.1", "::"):
        out = cli("serve", str(root), "--port", "0", "--host", host, *NONE, env=env, timeout=30)
        assert out.returncode == 2 and "loopback only" in out.stderr


def test_a_token_file_we_did_not_create_is_refused(tmp_path: Path) -> None:
    """A token file that others can read, that is a link, or that is not ours, is never used."""
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    srv = Served(root, *NONE, "--port", "0", env=env)
    token_file = _token_file(srv)
    srv.stop()
    token = token_file.read_text()
    other = tmp_path / "other.token"
    damage = {
        "readable by others": lambda: token_file.chmod(0o644),
        "a symlink": lambda: (token_file.unlink(), other.write_text(token), token_file.symlink_to(other)),
        "a hard link": lambda: (
            token_file.unlink(),
            other.write_text(token),
            other.chmod(0o600),
            os.link(other, token_file),
        ),  # fmt: skip
        "another user's": lambda: os.chown(token_file, 65534, 65534),
    }
    for what, spoil in damage.items():
        for p in (token_file, other):
            if p.is_symlink() or p.exists():
                p.unlink()
        token_file.write_text(token)
        token_file.chmod(0o600)
        spoil()
        out = cli("serve", str(root), "--port", "0", *NONE, env=env, timeout=60)
        assert out.returncode == 1 and "not a token file aide-tui created" in out.stderr, (what, out.stderr)
        assert "listening" not in out.stdout, what


def test_second_server_on_the_same_root_is_refused(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    first = Served(root, *NONE, env=env)
    try:
        second = cli("serve", str(root), *NONE, env=env, timeout=60)
        assert second.returncode == 1
        assert f"PID {first.proc.pid}" in second.stderr and "already running" in second.stderr
        assert first.http.get("/status").status_code == 200  # the first one is untouched
    finally:
        assert first.stop() == 0


def test_dead_socket_is_removed_and_a_restart_serves_the_index(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    srv = Served(root, *NONE, env=env)
    srv.wait_ready()
    srv.stop(signal.SIGKILL)
    assert srv.sock.exists()  # left behind by kill -9
    out = cli("search", "--path", str(root), "--json", *NONE, "parse_header", env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
    assert not srv.sock.exists()
    again = Served(root, *NONE, env=env)
    try:
        assert again.wait_ready()["files"] == 5
        assert again.search("parse_header")["results"]
    finally:
        assert again.stop() == 0


def test_hybrid_with_a_loopback_embedding_server(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path)
    with LoopbackServer(dim=16) as emb:
        flags = ("--embedder", "openai", "--embedding-url", emb.url)
        srv = Served(root, *flags, env=env)
        try:
            deadline = time.monotonic() + 90
            while srv.wait_ready()["state"] != "ready" and time.monotonic() < deadline:
                time.sleep(0.2)  # vectors land after the lexical commit
            got = srv.search("follow redirects until done", limit=5)  # hybrid: the configured mode
            assert got["degraded"] is False and any(r["ranks"]["dense"] for r in got["results"])
            query = "follow redirects until done"
            args = ("search", "--path", str(root), "--json", "--limit", "5", *flags, query)
            local = cli(*args, "--no-server", "--no-update", env=env)
            assert without_took(json.dumps(got)) == without_took(local.stdout)
            assert without_took(cli(*args, env=env).stdout) == without_took(local.stdout)
        finally:
            assert srv.stop() == 0


def test_without_the_extra_mcp_exits_2(workspace: Path) -> None:
    """Only mcp needs the optional extra (the MCP SDK); serve is part of the default install."""
    code = "import sys; sys.modules.update(mcp=None); from aide_tui.cli import main; "
    code += f"sys.exit(main(['mcp', {str(workspace)!r}]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=clean_env(workspace.parent), timeout=60)  # fmt: skip
    assert out.returncode == 2 and "pip install 'aide-tui[mcp]'" in out.stderr
    assert "from a checkout of aide-tui: pip install '.[mcp]'" in out.stderr
    assert not os.path.exists(workspace / ".aide" / "serve.sock")


def test_blank_query_answer_matches_the_search_module() -> None:
    """The served path answers blank batch lines itself (no numpy import); the shape must not drift."""
    from aide_tui.core.search.response import SearchResponse
    from aide_tui.host.served import BLANK

    got = dict(BLANK, query="  ")
    assert json.dumps(got) == json.dumps(SearchResponse(query="  ", results=[]).to_json())


SLOWLORIS = """
import socket, sys, time
port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
partial = b"GET /status HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nX-Slow: "  # never finished

def opened():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(partial)
    s.setblocking(False)
    return s

held = [opened() for _ in range(count)]
print("ready", flush=True)
end, reopened = time.monotonic() + seconds, 0
while time.monotonic() < end:  # keep every connection open: reopen the ones the server closed
    for i, s in enumerate(held):
        try:
            if s.recv(1) == b"":
                raise ConnectionResetError
        except BlockingIOError:
            continue
        except OSError:
            s.close()
            held[i] = opened()
            reopened += 1
    time.sleep(0.05)
print("reopened", reopened, flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv")
def test_half_open_connections_from_another_user_do_not_starve_the_port(tmp_path: Path) -> None:
    """Issue 22 #6: 600 connections that never finish their headers, held by uid 65534 and reopened as
    soon as the server closes them, while the token holder's requests keep getting answers."""
    root = write_workspace(tmp_path / "ws")
    srv = Served(root, *NONE, "--port", "0", env=clean_env(tmp_path))
    attacker = None
    try:
        token = _token_file(srv).read_text().strip()
        srv.wait_ready()
        attacker = subprocess.Popen(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", SLOWLORIS,
             str(srv.port), "600", "20"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert attacker.stdout is not None and attacker.stdout.readline().strip() == "ready"
        ok = {"Authorization": f"Bearer {token}"}
        codes = []
        with httpx.Client(base_url=f"http://127.0.0.1:{srv.port}", timeout=15) as web:
            for _ in range(10):
                codes.append(web.get("/status", headers=ok).status_code)
                time.sleep(0.3)
            r = web.post("/search", headers=ok, json={"query": "parse_header", "mode": "bm25"})
        assert codes == [200] * 10 and r.status_code == 200, (codes, r.text)
        assert srv.http.get("/status").status_code == 200
        assert attacker.poll() is None  # still attacking all along
    finally:
        if attacker is not None:
            attacker.kill()
            attacker.wait(20)
            for pipe in (attacker.stdout, attacker.stderr):
                if pipe:
                    pipe.close()
        assert srv.stop() == 0


def _post_raw(sock_path: Path, path: str, body: dict[str, object]) -> socket.socket:
    """A POST written whole to the server's socket; its reply is read later (:func:`_reply`)."""
    data = json.dumps(body).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(sock_path))
    head = (f"POST {path} HTTP/1.1\r\nHost: aide\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")  # fmt: skip
    conn.sendall(head.encode() + data)
    return conn


def _answered(conn: socket.socket) -> bool:
    """Whether the reply has begun (a byte, or the end of the stream) without waiting for it."""
    try:
        conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    return True


def _reply(conn: socket.socket, timeout: float = 120) -> tuple[int, dict[str, object]]:
    conn.settimeout(timeout)
    raw = b""
    while chunk := conn.recv(65536):
        raw += chunk
    conn.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_waiting_reindex_requests_leave_search_and_status_answering(tmp_path: Path) -> None:
    """Issue 32 #5: 45 ``POST /reindex`` with wait during a bulk run held one worker thread each (the
    server has 40): /search and /status waited for the run. They answer while every request waits."""
    root = write_workspace(tmp_path / "ws")
    with LoopbackServer(dim=8) as emb:
        srv = Served(
            root, env=clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=emb.url)
        )
        waiting: list[socket.socket] = []
        try:
            srv.wait_ready()
            emb.set_mode("hang")  # the bulk run's embedding requests wait until released
            seen = len(emb.requests)
            for i in range(80):
                (root / "bulk").mkdir(exist_ok=True)
                (root / "bulk" / f"mod_{i}.py").write_text(
                    f"def bulk_step_{i}(value):\n    return value + {i}\n"
                )
            deadline = time.monotonic() + 60
            while len(emb.requests) == seen:  # the watcher's run is embedding: a bulk run in progress
                assert time.monotonic() < deadline, "no bulk run started"
                time.sleep(0.1)
            waiting = [_post_raw(srv.sock, "/reindex", {"wait": True}) for _ in range(45)]
            got = srv.search("parse_header", mode="bm25")
            assert got["results"][0]["path"] == "src/httpclient/headers.py"
            assert srv.http.get("/status").status_code == 200
            assert not any(_answered(c) for c in waiting), "/search answered only once the run had ended"
            emb.release()
            replies = [_reply(c) for c in waiting]
            assert all(code == 200 and body["event"] == "done" for code, body in replies), replies[:3]
        finally:
            emb.release()
            for c in waiting:
                c.close()
            assert srv.stop() == 0
