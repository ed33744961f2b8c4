"""Hosting as one state machine (issue 30): each move of host/role.py's machine, on its own, with real
processes (serve, a background host, a process holding the lock file, one-shot searches) and real
sockets. A test records the moves through its own Tenure's ``on_move``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_workspace
from serve_helpers import Served, _reap_servers, clean_env, cli  # noqa: F401
from test_host import SLOW_HOST, big_workspace, stop_host, until
from test_host_lock import holding

from aide_tui.core.config import load_settings
from aide_tui.host.lock import host_pid
from aide_tui.host.role import TRANSITIONS, IllegalMove, Role, RoleMachine
from aide_tui.host.tenure import Tenure
from aide_tui.host.workspace import Workspace

NONE = ("--embedder", "none")


class Moves:
    """The moves a Tenure made, in order (from its machine's own threads)."""

    def __init__(self) -> None:
        self.seen: list[tuple[Role, Role]] = []
        self._lock = threading.Lock()

    def __call__(self, old: Role, new: Role) -> None:
        with self._lock:
            self.seen.append((old, new))

    def roles(self) -> list[Role]:
        with self._lock:
            return [new for _, new in self.seen]

    def reached(self, role: Role) -> bool:
        return role in self.roles()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Private config and cache folders for this process and the processes it starts; no embedder."""
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    for key, value in env.items():
        if key.startswith(("XDG_", "AIDE_")):
            monkeypatch.setenv(key, value)
    return env


def app(root: Path, moves: Moves, **kw: object) -> Workspace:
    """The app's workspace, its moves recorded."""
    return Workspace(root, load_settings(root), lambda e: None, tenure=Tenure(root, on_move=moves), **kw)  # type: ignore[arg-type]


def test_the_machine_allows_only_its_moves() -> None:
    machine = RoleMachine()
    assert machine.role is Role.STARTING
    with pytest.raises(IllegalMove, match="starting -> hosting"):
        machine.move(Role.HOSTING)  # a host warms up first
    assert machine.move(Role.WARMING) is Role.STARTING
    assert not machine.move_from({Role.ATTACHED}, Role.TAKING_OVER)  # not attached: nothing happens
    assert machine.move_from({Role.WARMING}, Role.HOSTING) and machine.role is Role.HOSTING
    machine.move(Role.CLOSED)
    assert TRANSITIONS[Role.CLOSED] == frozenset()
    assert all(Role.CLOSED in TRANSITIONS[r] for r in Role if r is not Role.CLOSED)
    with pytest.raises(IllegalMove):
        machine.move(Role.WARMING)  # closed for good


def test_starting_warming_hosting_closed(tmp_path: Path, env: dict[str, str]) -> None:
    """Nobody hosts: the app takes the lock, warms up, answers on its socket; closing lets go."""
    root = write_workspace(tmp_path / "ws")
    moves = Moves()
    ws = app(root, moves)
    try:
        ws.start()
        assert moves.roles()[0] is Role.WARMING and ws.hosting and host_pid(root / ".aide") == os.getpid()
        until(lambda: ws.role is Role.HOSTING and (root / ".aide" / "serve.sock").exists(), "answering")
        got = cli("search", "--path", str(root), "--json", "parse_header", env=env)  # through its socket
        assert got.returncode == 0 and '"src/httpclient/headers.py"' in got.stdout
    finally:
        ws.close()
    assert moves.roles() == [Role.WARMING, Role.HOSTING, Role.CLOSED]
    assert host_pid(root / ".aide") is None and not (root / ".aide" / "serve.lock").exists()


def test_starting_read_only(tmp_path: Path, env: dict[str, str]) -> None:
    """Indexing off, or a lock file this process cannot open: read-only, searching what is on disk."""
    root = write_workspace(tmp_path / "ws")
    assert cli("index", str(root), env=env).returncode == 0
    for how in ("index off", "lock unusable"):
        if how == "lock unusable":
            (root / ".aide" / "serve.lock").mkdir()
        moves = Moves()
        ws = app(root, moves, index=how == "lock unusable")
        try:
            ws.start()
            assert ws.role is Role.READ_ONLY and (ws.problem is not None) == (how == "lock unusable")
            assert ws.index_ready.wait(60)
            assert ws.search("parse_header", mode="bm25").results[0].path == "src/httpclient/headers.py"
        finally:
            ws.close()
        assert moves.roles() == [Role.READ_ONLY, Role.CLOSED]


def test_starting_attached_taking_over_warming(tmp_path: Path, env: dict[str, str]) -> None:
    """serve hosts: the app attaches; serve stops: the app takes over and hosts."""
    root = write_workspace(tmp_path / "ws")
    srv = Served(root, "--no-watch", *NONE, env=env)
    srv.wait_ready()
    moves = Moves()
    ws = app(root, moves)
    try:
        ws.start()
        until(lambda: ws.role is Role.ATTACHED, "attaching to serve")
        assert ws.host_pid == srv.proc.pid
        assert srv.stop() == 0
        until(lambda: ws.role is Role.HOSTING, "taking over")
        assert moves.roles()[:4] == [Role.ATTACHED, Role.TAKING_OVER, Role.WARMING, Role.HOSTING]
        assert host_pid(root / ".aide") == os.getpid()
    finally:
        ws.close()


def test_starting_waiting_attached(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host holds the lock but answers late: the app waits (searching the disk), then attaches."""
    import aide_tui.host.workspace as workspace_mod

    monkeypatch.setattr(workspace_mod, "ATTACH_WAIT", 0.5)
    root = write_workspace(tmp_path / "ws")
    assert cli("index", str(root), env=env).returncode == 0
    flag = tmp_path / "locked"
    host = subprocess.Popen([sys.executable, "-c", SLOW_HOST, str(root), str(flag), "3"], env=env)
    moves = Moves()
    ws = app(root, moves)
    try:
        until(flag.exists, "the slow host to take the lock", 30)
        ws.start()
        until(lambda: ws.role is Role.WAITING, "waiting")
        assert ws.search("parse_header", mode="bm25").results  # the disk answers meanwhile
        until(lambda: ws.role is Role.ATTACHED, "attaching to the late host")
        assert moves.roles()[:2] == [Role.WAITING, Role.ATTACHED] and ws.host_pid == host.pid
    finally:
        ws.close()
        host.terminate()
        host.wait(30)


def test_waiting_warming_when_the_late_host_never_answers(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process holding the lock goes away without ever answering: the waiting app hosts."""
    import aide_tui.host.workspace as workspace_mod

    monkeypatch.setattr(workspace_mod, "ATTACH_WAIT", 0.5)
    root = write_workspace(tmp_path / "ws")
    (root / ".aide").mkdir(mode=0o700)
    moves = Moves()
    ws = app(root, moves)
    try:
        with holding(root / ".aide" / "serve.lock"):
            ws.start()
            until(lambda: ws.role is Role.WAITING, "waiting")
        until(lambda: ws.role is Role.HOSTING, "hosting once the holder went")
        assert moves.roles()[:3] == [Role.WAITING, Role.WARMING, Role.HOSTING]
        assert until(lambda: ws.search("parse_header", mode="bm25").results, "its own index")
    finally:
        ws.close()


def test_hosting_lock_lost_waiting_warming(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process takes the lock file: the app stops hosting, waits for it (it never answers),
    and hosts again once it let go."""
    import aide_tui.host.workspace as workspace_mod

    monkeypatch.setattr(workspace_mod, "ATTACH_WAIT", 0.5)
    root = write_workspace(tmp_path / "ws")
    moves = Moves()
    ws = app(root, moves)
    try:
        ws.start()
        until(lambda: ws.role is Role.HOSTING, "hosting")
        with holding(root / ".aide" / "serve.lock", "replace") as other:
            until(lambda: ws.role is Role.WAITING, "giving hosting up")
            assert host_pid(root / ".aide") == other.pid
            assert ws.search("parse_header", mode="bm25").results
        until(lambda: moves.roles().count(Role.HOSTING) == 2, "hosting again")
        assert moves.roles()[:6] == [Role.WARMING, Role.HOSTING, Role.LOCK_LOST, Role.WAITING, Role.WARMING,
                                     Role.HOSTING]  # fmt: skip
    finally:
        ws.close()


def test_hosting_root_lost_closed(tmp_path: Path, env: dict[str, str]) -> None:
    root = write_workspace(tmp_path / "ws")
    moves = Moves()
    ws = app(root, moves)
    try:
        ws.start()
        until(lambda: ws.role is Role.HOSTING, "hosting")
        root.rename(tmp_path / "moved")
        until(lambda: ws.role is Role.CLOSED, "stopping")
        assert moves.roles() == [Role.WARMING, Role.HOSTING, Role.ROOT_LOST, Role.CLOSED]
        assert not root.exists()  # never made again
    finally:
        ws.close()


def test_updating_handed_over_closed(tmp_path: Path, env: dict[str, str]) -> None:
    """A one-shot command's lock goes to the background host it starts, which then hosts (its socket
    answers) and names itself in the lock; this process's release leaves the file to it."""
    root = write_workspace(tmp_path / "ws")
    moves = Moves()
    tenure = Tenure(root, on_move=moves)
    assert tenure.take()
    tenure.roles.move(Role.UPDATING)
    try:
        tenure.hand_to_background_host(load_settings(root))
        child = host_pid(root / ".aide")
        assert child and child != os.getpid() and not tenure.holds
        # its command line (empty while the kernel is still setting the new program up)
        cmdline = Path(f"/proc/{child}/cmdline")
        until(lambda: b"aide_tui\x00host" in cmdline.read_bytes(), "the host's command line")
        tenure.release()
        tenure.roles.move(Role.CLOSED)
        until(lambda: (root / ".aide" / "serve.sock").exists(), "the background host to answer", 60)
        assert host_pid(root / ".aide") == child  # still its lock: the file was not removed
        assert moves.roles() == [Role.UPDATING, Role.HANDED_OVER, Role.CLOSED]
    finally:
        stop_host(root)


def test_a_one_shot_search_waits_then_updates_when_the_builder_goes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """waiting -> updating: the process that held the lock went away before a first version; the waiting
    search indexes the workspace itself and answers."""
    root = write_workspace(tmp_path / "ws")
    (root / ".aide").mkdir(mode=0o700)
    with holding(root / ".aide" / "serve.lock") as other:
        cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "parse_header"]
        search = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        until(lambda: host_pid(root / ".aide") == other.pid, "the holder")
        with pytest.raises(subprocess.TimeoutExpired):
            search.wait(1.0)  # it waits for the first version
    out, errs = search.communicate(timeout=120)
    assert search.returncode == 0, errs
    assert out.startswith("src/httpclient/headers.py:")
    assert host_pid(root / ".aide") is None and not (root / ".aide" / "serve.lock").exists()


def test_serve_takes_hosting_from_a_background_host(tmp_path: Path) -> None:
    """serve asks a background host to let go (/release) and hosts; the background host closes."""
    root = big_workspace(tmp_path / "ws", files=5)
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    host = subprocess.Popen([sys.executable, "-m", "aide_tui", "host", str(root), "--idle", "600"], env=env,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        until(lambda: (root / ".aide" / "serve.sock").exists() and host_pid(root / ".aide") == host.pid,
              "the background host to answer")  # fmt: skip
        srv = Served(root, *NONE, env=env)
        assert host.wait(60) == 0
        assert host_pid(root / ".aide") == srv.proc.pid
        assert srv.search("step_1_1", mode="bm25")["results"][0]["path"] == "pkg/mod_1.py"
        assert srv.stop() == 0
    finally:
        if host.poll() is None:
            host.kill()
        host.wait(30)
        if host.stderr:
            host.stderr.close()
