"""``aide-tui`` CLI edges (issue 23, item 7): real subprocesses, a real terminal (pty) for progress, real
locks held by other processes, a real background host stopped mid-embedding."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import write_workspace
from test_cli import REPO, run

NONE = ("--embedder", "none")


def _search(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run("search", "--path", str(root), *NONE, "--mode", "bm25", *args, stdin=stdin)


def test_paths_format_limits_files_not_chunks(tmp_path: Path) -> None:
    body = "".join(f"    widget = widget.resize({k}, widget.height)  # widget step {k}\n" for k in range(30))
    files = {
        "pkg/widgets.py": "\n\n".join(
            f"def widget_{i}(widget):\n{body}    return widget\n" for i in range(12)
        )
    }
    files |= {f"pkg/user_{i}.py": f"def use_{i}(x):\n    return make_widget(x, {i})\n" for i in range(8)}
    root = write_workspace(tmp_path / "ws", files)
    out = _search(root, "--format", "paths", "--limit", "5", "widget")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 5 and len(set(lines)) == 5, out.stdout
    assert lines[0].endswith("pkg/widgets.py")
    # fewer files than asked: every one of them, once
    out = _search(root, "--format", "paths", "--limit", "50", "widget")
    assert len(out.stdout.splitlines()) == 9
    # the text and json formats still count chunks
    assert len(_search(root, "--limit", "5", "widget").stdout.splitlines()) == 5


def test_a_missing_root_and_a_file_root_are_named_as_such(tmp_path: Path) -> None:
    missing, a_file = tmp_path / "nope", tmp_path / "notes.txt"
    a_file.write_text("hello\n")
    for cmd in (("search", "--path", str(missing), "x"), ("index", str(missing)), ("status", str(missing))):
        out = run(*cmd, *NONE)
        assert out.returncode == 2 and out.stderr == f"aide-tui: {missing}: no such folder\n", out.stderr
    for cmd in (("search", "--path", str(a_file), "x"), ("index", str(a_file))):
        out = run(*cmd, *NONE)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr == f"aide-tui: {a_file} is a file, not a folder: give the folder that holds it\n"


def test_an_empty_query_is_refused_like_a_bad_limit(workspace: Path) -> None:
    for empty in ("", "   "):
        out = _search(workspace, empty)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr == "aide-tui: search needs a QUERY: the one given is empty\n"
    # a batch's blank line still gets its empty answer (the contract)
    out = _search(workspace, "--json", "--batch", "-", stdin="\nparse_header\n")
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 2


def _in_terminal(args: list[str], env: dict[str, str], until: float = 120) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal (stdout piped); (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "aide_tui", *args], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + until
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.stdout is not None
    proc.stdout.read()
    proc.stdout.close()
    return proc.wait(30), seen.decode(errors="replace")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}


def test_the_first_search_shows_its_progress_on_a_terminal(tmp_path: Path) -> None:
    files = {f"src/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(250)}
    root = write_workspace(tmp_path / "ws", files)
    code, seen = _in_terminal(["search", "--path", str(root), *NONE, "f7"], _env(tmp_path))
    assert code == 0
    assert "indexing 100/250 files" in seen and "writing the index of 250 files" in seen, seen


HOLD = """
import sys, time
from pathlib import Path
{take}
print("held", flush=True)
sys.stdin.read()
"""


def _holder(take: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Another process holding a lock until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD).format(take=take)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _let_go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(30)


def test_waiting_for_another_process_counts_the_seconds(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = _env(tmp_path)
    take = (
        f"from aide_tui.host.lock import try_host_lock\nfd = try_host_lock(Path({str(root / '.aide')!r}))\n"
    )
    (root / ".aide").mkdir(mode=0o700)
    holder = _holder(take, env)  # hosts the workspace but builds no index: the search waits for it
    try:
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "aide_tui", "search", "--path", str(root), *NONE,
                                 "parse_header"], stdout=subprocess.PIPE, stderr=slave, env=env)  # fmt: skip
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 30
        while b": 2 s" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 65536)
    finally:
        _let_go(holder)  # it goes away before a first version: the search indexes by itself
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    assert proc.wait(60) == 0 and "src/httpclient/headers.py" in out
    os.close(master)
    text = seen.decode(errors="replace")
    assert f"waiting for PID {holder.pid} (another aide-tui) to index {root}: 0 s" in text, text
    assert ": 1 s" in text and ": 2 s" in text


def test_the_lock_notice_is_said_once_per_indexing_process(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    assert _search(root, "parse_header").returncode == 0  # an index to answer from
    (root / "src/httpclient/new.py").write_text("def fresh():\n    return 1\n")  # so the search updates
    env = _env(tmp_path)
    take = (f"from aide_tui.core.store.records import writer_lock\n"
            f"hold = writer_lock(Path({str(root / '.aide' / 'index')!r}))\nhold.__enter__()\n")  # fmt: skip
    for _ in range(2):  # a second indexing process is named again
        holder = _holder(take, env)
        try:
            said = [_search(root, "parse_header") for _ in range(3)]
        finally:
            _let_go(holder)
        assert all(out.returncode == 0 and "headers.py" in out.stdout for out in said)
        notice = (
            f"PID {holder.pid} (another aide-tui) is indexing {root}: searching the index as it was before"
        )
        assert said[0].stderr == f"aide-tui: {notice}\n"
        assert said[1].stderr == said[2].stderr == ""


def test_stopping_the_background_host_leaves_no_leaked_semaphores(tmp_path: Path) -> None:
    """The host a first search hands its bulk embedding to, stopped mid-embedding (the issue was filed
    against the detached `index --background` it replaced, which left "leaked semaphore" warnings)."""
    files = {f"src/mod{i}.py": "\n\n".join(f"def f{i}_{j}(x):\n    '''Add {j} to x.'''\n    return x + {j}\n"
                                           for j in range(8)) for i in range(160)}  # fmt: skip
    root = write_workspace(tmp_path / "ws", files)
    env = {**_env(tmp_path), "AIDE_EMBEDDING_WORKERS": "2"}  # the encoder pool runs in two processes
    out = subprocess.run([sys.executable, "-m", "aide_tui", "search", "--path", str(root), "add"],
                         capture_output=True, text=True, env=env, timeout=240)  # fmt: skip
    assert out.returncode == 0, out.stderr
    state = root / ".aide"
    pid = int((state / "serve.lock").read_text())
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _pool_running(pid):
        time.sleep(0.2)
    assert _pool_running(pid), "the background host never started embedding"
    os.kill(pid, signal.SIGTERM)
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    time.sleep(2)  # the resource tracker speaks last
    log = (state / "index.log").read_text()
    assert "stopped hosting" in log and "leaked" not in log and "Traceback" not in log, log


def _children(pid: int | str) -> list[str]:
    """The processes ``pid`` started, from any of its threads (a host starts its indexer from one)."""
    out: list[str] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += (task / "children").read_text().split()
        except OSError:
            pass  # the thread ended meanwhile
    return out


def _pool_running(host: int) -> bool:
    """Whether the host's indexing process has started its encoder pool (a grandchild of the host)."""
    return any(_children(c) for c in _children(host))


def test_index_and_status_take_the_root_as_search_does(workspace: Path, tmp_path: Path) -> None:
    """``--path ROOT`` works for ``index`` and ``status`` as for ``search`` (ROOT stays the contract's
    form); two different roots are one line and exit 2."""
    out = run("index", "--path", str(workspace), "--embedder", "none", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["files"] == 5
    by_flag = run("status", "--path", str(workspace), "--json")
    by_arg = run("status", str(workspace), "--json")
    assert by_flag.returncode == by_arg.returncode == 0
    assert json.loads(by_flag.stdout)["chunks"] == json.loads(by_arg.stdout)["chunks"] > 0
    assert run("status", str(workspace), "--path", str(workspace), "--json").returncode == 0  # the same
    other = tmp_path / "other"
    other.mkdir()
    out = run("status", str(workspace), "--path", str(other))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "two roots given" in out.stderr
