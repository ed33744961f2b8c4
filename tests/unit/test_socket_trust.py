"""Issue 22 #3: ``search``/``status``/``mcp`` never talk to a server socket another user planted. A real fake
server runs as uid 65534 (``setpriv``) where a victim's client looks for a server: the shared runtime
folder (``/tmp/aide-tui-<uid>``, for deep workspaces) and a workspace ``.aide`` owned by someone else.
The fake answers with the victim's settings fingerprint and logs every byte it receives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_workspace
from serve_helpers import Served, _reap_servers, clean_env, cli  # noqa: F401

from aide_tui.host.locations import MAX_SOCKET_PATH, SOCKET_NAME

pytest.importorskip("starlette")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv"
)
NONE = ("--embedder", "none")
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

FAKE = r"""
import json, os, socket, sys, threading
path, fingerprint, log = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(os.path.dirname(path), exist_ok=True)
os.chmod(os.path.dirname(path), 0o777)
if os.path.lexists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
os.chmod(path, 0o777)
srv.listen(16)
body = json.dumps({"state": "ready", "files": 99, "chunks": 99, "query": "x", "degraded": False,
                   "degraded_reason": None, "took_ms": 1.0, "results": [{"path": "ATTACKER.py",
                   "start_line": 1, "end_line": 1, "score": 9.9, "symbol": None, "ranks": {}}]}).encode()
answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
          b"x-aide-settings: %s\r\nx-aide-pid: 1\r\n\r\n" % (len(body), fingerprint.encode())) + body

def serve(conn):
    conn.settimeout(10)
    try:
        while True:
            data = conn.recv(65536)
            with open(log, "ab") as fh:
                fh.write(data)
            if not data:
                return
            conn.sendall(answer)
    except OSError:
        pass
    finally:
        conn.close()

print("ready", flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A world-writable sticky folder like /tmp, private to this test."""
    path = Path(tempfile.mkdtemp(prefix="aide-trust-", dir="/tmp"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _fingerprint(tmp_path: Path, env: dict[str, str]) -> str:
    """The settings fingerprint a real server with these settings sends (what a fake must echo)."""
    srv = Served(write_workspace(tmp_path / "probe"), *NONE, env=env)
    try:
        return str(srv.http.get("/status").headers["x-aide-settings"])
    finally:
        srv.stop()


def _fake(sock: Path, fingerprint: str, log: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([*AS_NOBODY, sys.executable, "-c", FAKE, str(sock), fingerprint, str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait(20)
    for pipe in (proc.stdout, proc.stderr):
        if pipe:
            pipe.close()


def _searched_locally(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 0, out.stderr
    paths = [r["path"] for r in json.loads(out.stdout)["results"]]
    assert paths[0] == "src/httpclient/headers.py" and "ATTACKER.py" not in paths, paths
    assert "ignoring a server socket" in out.stderr and "another user" in out.stderr, out.stderr


def test_a_socket_planted_in_the_shared_runtime_folder_gets_nothing(tmp_path: Path, shared_tmp: Path) -> None:
    env = clean_env(tmp_path, TMPDIR=str(shared_tmp))
    env.pop("XDG_RUNTIME_DIR", None)
    fingerprint = _fingerprint(tmp_path, env)
    root = write_workspace(tmp_path / ("deep-" + "d" * 90) / "ws")
    assert len(os.fsencode(root / ".aide" / SOCKET_NAME)) > MAX_SOCKET_PATH  # the socket goes to /tmp
    import hashlib

    tag = hashlib.sha1(os.path.realpath(root).encode()).hexdigest()[:16]
    runtime = shared_tmp / f"aide-tui-{os.geteuid()}"  # created first, 0777, by uid 65534
    log = shared_tmp / "received.log"
    fake = _fake(runtime / f"{tag}.sock", fingerprint, log)
    try:
        _searched_locally(cli("search", "--path", str(root), *NONE, "--json", "parse_header", env=env))
        st = cli("status", str(root), *NONE, "--json", env=env)
        assert st.returncode == 0 and json.loads(st.stdout)["files"] == 5, st.stdout
        assert not log.exists() or log.read_bytes() == b"", log.read_bytes()[:300]  # nothing was sent
        # and our own server will not listen in that folder either
        out = cli("serve", str(root), *NONE, env=env, timeout=60)
        assert out.returncode == 1 and "belongs to another user" in out.stderr, out.stderr
    finally:
        _stop(fake)


def test_a_socket_in_a_foreign_aide_folder_gets_nothing(tmp_path: Path, shared_tmp: Path) -> None:
    env = clean_env(tmp_path)
    fingerprint = _fingerprint(tmp_path, env)
    root = write_workspace(shared_tmp / "ws")
    root.chmod(0o777)  # a shared checkout another user may write to
    log = shared_tmp / "received.log"
    fake = _fake(root / ".aide" / SOCKET_NAME, fingerprint, log)  # .aide and the socket are theirs, 0777
    try:
        _searched_locally(cli("search", "--path", str(root), *NONE, "--json", "parse_header", env=env))
        assert not log.exists() or log.read_bytes() == b"", log.read_bytes()[:300]
    finally:
        _stop(fake)


def test_our_file_but_another_users_listener_is_refused(tmp_path: Path) -> None:
    """SO_PEERCRED: a socket file and folder of ours whose listener runs as another user (a server that
    dropped privileges, or a file descriptor passed on) is refused after connecting, before sending."""
    from aide_tui.host.client import ServeClient, UntrustedSocket

    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    code = (
        "import os, socket\n"
        f"s = socket.socket(socket.AF_UNIX); s.bind({str(folder / 'x.sock')!r})\n"
        "os.setresgid(65534, 65534, 65534); os.setgroups([]); os.setresuid(65534, 65534, 65534)\n"
        "s.listen(4)\n"
        "print('ready', flush=True)\n"
        "c, _ = s.accept(); c.settimeout(5)\n"
        "try: data = c.recv(65536)\n"
        "except OSError: data = b''\n"
        "print(len(data), flush=True)\n"
    )  # binds as root (our file, our folder), then listens as uid 65534 (what SO_PEERCRED reports)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        client = ServeClient(folder / "x.sock", "fingerprint", timeout=5)
        with pytest.raises(UntrustedSocket, match="another user"):
            client.status()
        assert proc.stdout.readline().strip() == "0"  # connected, refused before sending a byte
        assert proc.wait(20) == 0
    finally:
        _stop(proc)
