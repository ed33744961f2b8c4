"""The host lock under attack (issue 32): its file removed or replaced under a running host, a lock file
another user owns, a workspace moved while its host warms up. Real ``serve`` and ``mcp`` processes, real
sockets; the other user is uid 65534 through ``setpriv``."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write_workspace
from loopback_server import LoopbackServer
from serve_helpers import REPO, Served, _reap_servers, clean_env, cli  # noqa: F401
from test_host import until

from aide_tui.core.config import load_settings
from aide_tui.core.events import Failed
from aide_tui.core.live import Hosting
from aide_tui.host.lock import host_pid, try_host_lock
from aide_tui.host.workspace import Workspace

NONE = ("--embedder", "none")
HOLD = """
import fcntl, os, sys
path, swap = sys.argv[1], sys.argv[2] == "replace"
fd = os.open(path + ".new" if swap else path, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.write(fd, f"{os.getpid()}\\n".encode())
if swap:
    os.replace(path + ".new", path)  # the lock file replaced at once by one this process holds
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@contextlib.contextmanager
def holding(lock: Path, how: str = "open") -> Iterator[subprocess.Popen[str]]:
    """Another process holding an flock on ``lock`` (opened, created if missing; or a new file of its
    own put in its place), as a second host would."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), how], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(20)
        if proc.stdout:
            proc.stdout.close()


def test_a_removed_or_replaced_lock_file_is_taken_back_and_no_second_host_starts(tmp_path: Path) -> None:
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    root = write_workspace(tmp_path / "ws")
    lock = root / ".aide" / "serve.lock"
    srv = Served(root, env=env)
    srv.wait_ready()
    pid = srv.proc.pid
    assert host_pid(lock.parent) == pid
    lock.unlink()  # rm .aide/serve.lock while serve runs
    # whoever tries at once gets nothing: serve still answers on its socket, so it hosts
    assert try_host_lock(lock.parent) is None
    second = cli("serve", str(root), *NONE, env=env, timeout=60)
    assert second.returncode == 1 and f"PID {pid}" in second.stderr, second.stderr
    until(lambda: host_pid(lock.parent) == pid, "serve to take its lock file back", 30)
    assert cli("serve", str(root), *NONE, env=env, timeout=60).returncode == 1
    (lock.parent / "planted").write_text("4242\n")
    (lock.parent / "planted").replace(lock)  # replaced by a file nobody holds: taken back too
    until(lambda: host_pid(lock.parent) == pid, "serve to take the replaced lock file", 30)
    assert srv.search("parse_header", mode="bm25")["results"][0]["path"] == "src/httpclient/headers.py"
    assert srv.stop() == 0
    assert not lock.exists()


def test_a_host_whose_lock_another_process_took_stops_hosting(tmp_path: Path) -> None:
    """The lock file replaced by one another process holds (a host that started in the moment the file
    was gone): serve sees its lock went to that process and exits 1 saying so; a serve started once
    that process let go hosts."""
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    root = write_workspace(tmp_path / "ws")
    state = root / ".aide"
    first = Served(root, env=env)
    first.wait_ready()
    with holding(state / "serve.lock", "replace") as other:
        assert first.proc.wait(60) == 1
        assert first.proc.stderr is not None
        said = first.proc.stderr.read()
        assert f"PID {other.pid} holds it now: no longer hosting" in said, said
        assert host_pid(state) == other.pid
    second = Served(root, env=env)
    assert host_pid(state) == second.proc.pid
    assert second.search("parse_header", mode="bm25")["results"], "the new host answers"
    assert second.stop() == 0


def test_the_app_gives_hosting_up_to_the_process_that_took_its_lock_and_takes_it_back_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in clean_env(tmp_path).items():
        if key.startswith("XDG_"):
            monkeypatch.setenv(key, value)
    root = write_workspace(tmp_path / "ws")
    lock = root / ".aide" / "serve.lock"
    events: list[object] = []
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    ws = Workspace(root, settings, events.append, front_end="app", watch=True)
    try:
        ws.start()
        assert ws.index_ready.wait(60), "the first index"
        assert ws.hosting and host_pid(lock.parent) == os.getpid()
        # another process put a lock file of its own in place, held, before the app's next check (in
        # one step: an unlink and then a second process starting raced the app taking its file back)
        with holding(lock, "replace") as other:
            said = f"PID {other.pid} holds it now: no longer hosting"
            until(
                lambda: any(isinstance(e, Failed) and said in e.message for e in events), "the app to say so"
            )
            until(lambda: not ws.hosting and ws.index_ready.is_set(), "the app to read the index on disk")
            assert ws.search("parse_header", mode="bm25").results
            assert host_pid(lock.parent) == other.pid
        # (its role turns to hosting before it says so: wait for both, not the flag alone)
        until(
            lambda: ws.hosting and sum(isinstance(e, Hosting) for e in events) == 2,
            "the app to host again once the other process let go, and say so",
        )
        assert host_pid(lock.parent) == os.getpid()
        (root / "src" / "later.py").write_text("def hosted_again():\n    return 1\n")
        until(lambda: ws.search("hosted_again", mode="bm25").results, "indexing here again")
    finally:
        ws.close()
    assert host_pid(lock.parent) is None


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv")
def test_a_lock_file_another_user_owns_is_one_line_not_a_traceback(held: bool) -> None:
    base = Path(tempfile.mkdtemp(prefix="aide-lock-", dir="/tmp"))  # pytest's tmp dirs are root-only
    try:
        base.chmod(0o755)
        root, bare, home = write_workspace(base / "ws"), write_workspace(base / "bare"), base / "home"
        home.mkdir()
        for path in (root, bare, home, *root.rglob("*"), *bare.rglob("*"), *home.rglob("*")):
            os.chown(path, 65534, 65534)
        env = clean_env(home, HOME=str(home), AIDE_EMBEDDING_BACKEND="none")
        user = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*user, sys.executable, "-m", "aide_tui", *args], capture_output=True,
                                  text=True, env=env, timeout=120)  # fmt: skip

        assert run("index", str(root)).returncode == 0  # as the user: their own index
        run("index", str(bare))
        for ws in (root, bare):
            (ws / ".aide" / "serve.lock").unlink(missing_ok=True)
            (ws / ".aide" / "serve.lock").write_text("1\n")  # root's: 0600, uid 0
            (ws / ".aide" / "serve.lock").chmod(0o600)
        shutil.rmtree(bare / ".aide" / "index")  # no index on disk there
        with contextlib.ExitStack() as stack:
            if held:
                stack.enter_context(holding(root / ".aide" / "serve.lock"))
            out = run("search", "--path", str(root), "parse_header")
            assert out.returncode == 0 and out.stdout.startswith("src/httpclient/headers.py:"), out.stderr
            assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
            assert "serve.lock belongs to another user (uid 0)" in out.stderr
            assert "searching the index on disk" in out.stderr
            got = mcp_calls(user, env, root, {"query": "parse_header", "limit": 1})
            assert got["results"][0]["path"] == "src/httpclient/headers.py"
            error = mcp_calls(user, env, bare, {"query": "parse_header"})
            assert "no index:" in error["error"] and "belongs to another user (uid 0)" in error["error"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def mcp_calls(
    user: tuple[str, ...], env: dict[str, str], root: Path, search: dict[str, Any]
) -> dict[str, Any]:
    """``initialize`` then one ``search_code`` to ``aide-tui mcp ROOT`` as ``user``: the answer's JSON, or
    ``{"error": text}`` for a tool error."""
    proc = subprocess.Popen([*user, sys.executable, "-m", "aide_tui", "mcp", str(root), *NONE],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj).encode() + b"\n")
        proc.stdin.flush()

    def reply() -> dict[str, Any]:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no reply within a minute"
        return dict(json.loads(proc.stdout.readline()))

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert reply()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search_code", "arguments": search}})  # fmt: skip
        got = reply()
        text = got["result"]["content"][0]["text"]
        return {"error": text} if got["result"].get("isError") else dict(json.loads(text))
    finally:
        proc.kill()
        proc.wait(20)
        err = proc.stderr.read().decode()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
        assert "Traceback" not in err and "belongs to another user (uid 0)" in err, err


def test_a_root_moved_while_its_host_warms_up_is_never_made_again(tmp_path: Path) -> None:
    """serve with vectors still to compute (an embedding server that has not answered yet), the root
    moved before the socket appears: serve stops with a message, exit 1, and makes nothing at the old
    path."""
    root = write_workspace(tmp_path / "ws")
    moved = tmp_path / "moved"
    with LoopbackServer(dim=8, mode="hang") as srv:
        env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="openai", AIDE_EMBEDDING_URL=srv.url)
        proc = subprocess.Popen([sys.executable, "-m", "aide_tui", "serve", str(root)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            until(lambda: host_pid(root / ".aide") == proc.pid, "serve to take the lock", 60)
            assert not (root / ".aide" / "serve.sock").exists()  # still warming up
            root.rename(moved)
            assert proc.wait(60) == 1
            _, said = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=20)
    assert "moved or deleted" in said, said
    assert not root.exists() and not (moved / ".aide" / "serve.sock").exists()


@pytest.mark.parametrize("kind", ["folder", "symlink", "fifo"])
def test_a_lock_path_that_is_not_a_file_is_one_line(tmp_path: Path, kind: str) -> None:
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    root = write_workspace(tmp_path / "ws")
    assert cli("index", str(root), env=env).returncode == 0
    lock = root / ".aide" / "serve.lock"
    lock.unlink(missing_ok=True)
    {
        "folder": lock.mkdir,
        "symlink": lambda: lock.symlink_to("/etc/passwd"),
        "fifo": lambda: os.mkfifo(lock),
    }[kind]()
    out = cli("search", "--path", str(root), "parse_header", env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("src/httpclient/headers.py:"), out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    what = {"folder": "is a folder", "symlink": "is a symlink", "fifo": "is not a regular file"}[kind]
    assert f"serve.lock {what}: cannot take the host lock" in out.stderr
    for command in ("serve", "host"):  # serve, and the background host search would start
        out = cli(command, str(root), env=env, timeout=60)
        assert out.returncode == 1 and what in out.stderr and "Traceback" not in out.stderr, (
            command,
            out.stderr,
        )
