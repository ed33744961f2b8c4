"""Fault injection: kill -9 during indexing, hostile trees, secrets, and no network beyond loopback."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import read_index

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    """The environment of a test's subprocess, read when it starts: the isolation fixture's config,
    cache and models folders, never the ones this module was imported under."""
    return {**os.environ, "PYTHONPATH": str(REPO)}


def generate_repo(root: Path, n_files: int, seed: int) -> None:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "parse", "render", "fetch", "store", "retry", "token"]
    for i in range(n_files):
        p = root / f"pkg{i % 7}" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        funcs = []
        for j in range(rng.randint(3, 12)):
            name = f"{rng.choice(words)}_{rng.choice(words)}_{i}_{j}"
            body = "\n".join(
                f"    x{k} = {rng.choice(words)}_{k}(x{k - 1})" for k in range(1, rng.randint(3, 15))
            )
            funcs.append(
                f"def {name}(x0):\n    '''Do {rng.choice(words)} things.'''\n{body}\n    return x0\n"
            )
        p.write_text("import os\n\n\n" + "\n\n".join(funcs))


def test_kill_9_at_random_points_never_corrupts(tmp_path: Path) -> None:
    """`aide-tui index` is SIGKILLed after seeded random delays; every time the index stays usable.

    Rounds rotate over a delta commit, a delta commit followed by a merge (max_segments = 1), a rebuild
    and a run that adds the static tier's vectors; each round changes 10 files and the kill lands
    somewhere inside that round's work.
    """
    rounds = int(os.environ.get("AIDE_KILL_ROUNDS", "8"))
    root = tmp_path / "repo"
    generate_repo(root, 120, seed=1)
    rng = random.Random(42)
    cmd = [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none"]
    modes = {
        "delta": ([], {}),
        "merge": ([], {"AIDE_INDEX_MAX_SEGMENTS": "1"}),
        "rebuild": (["--rebuild"], {}),
        "static": (["--embedder", "static"], {}),  # the static tier's vectors are written too
    }
    took: dict[str, float] = {}
    for mode, (extra, env) in modes.items():  # how long each kind of run takes here, now
        p = root / "pkg0" / "mod_0.py"
        p.write_text(p.read_text() + f"\n\ndef timing_{mode}():\n    return 0\n")
        t0 = time.perf_counter()
        subprocess.run([*cmd, *extra], env={**_env(), **env}, check=True, capture_output=True)
        took[mode] = time.perf_counter() - t0
    survived = 0
    kinds = list(modes)
    for r in range(rounds):
        mode = kinds[r % len(kinds)]
        extra, env = modes[mode]
        for i in rng.sample(range(120), 10):
            p = root / f"pkg{i % 7}" / f"mod_{i}.py"
            p.write_text(p.read_text() + f"\n\ndef round_{r}_{i}():\n    return {r}\n")
        proc = subprocess.Popen([*cmd, *extra], env={**_env(), **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(rng.uniform(0.0, took[mode] * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        out = subprocess.run(
            [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--embedder", "none",
             "--no-update", "--json", "parse_alpha"], env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["results"], "a valid (old or new) index answers"
        survived += 1
    done = subprocess.run([*cmd, "--json"], env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1])["files"] == 120
    data = read_index(index_dir_for(root))
    assert any(f"round_{rounds - 1}_" in c.text for c in data.chunks)
    assert survived == rounds
    names = {p.name for p in index_dir_for(root).iterdir()}
    assert not [n for n in names if n.startswith(".")], names  # no temp folder or file left behind


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _helpers(pid: int) -> list[int]:
    """The helper processes of the build running as ``pid`` (forked, or spawned: not its resource
    tracker)."""
    out = []
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            out.append(child)
    return out


def _module(i: int) -> str:
    """~27 KB of Python: 60 functions and one marker the test looks for."""
    units = [
        f'def unit_{i}_{j}(value):\n    """Scale unit {j} of module {i}."""\n'
        + "".join(f"    value = value * {k} + {j} - len(str(value)) % {k + 1}\n" for k in range(6))
        + "    return value\n"
        for j in range(60)
    ]
    return "\n\n".join(units) + f"\n\ndef marker_of_module_{i}():\n    return {i}\n"


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_helper_killed_mid_build_costs_a_warning_not_the_build(tmp_path: Path, start: str) -> None:
    """A big build's two helpers are stopped as soon as both exist (neither can finish a job), then one
    is SIGKILLed, as the kernel's OOM killer would: the build still ends with every file indexed, exit 0,
    and a warning that says what happened. Forked helpers are the CLI's; spawned ones the app's and
    `serve`'s (their indexer runs beside other threads)."""
    root = tmp_path / "repo"
    n = 150  # 4 MB: two jobs of seconds each
    for i in range(n):
        p = root / f"pkg{i % 5}" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_module(i))
    args = ["index", str(root), "--embedder", "none", "--json"]
    if start == "fork":
        cmd = [sys.executable, "-m", "aide_tui", *args]
    else:  # a second thread in the indexer's process: helpers are spawned (parallel.helper_context)
        code = (
            "import sys, threading\n"
            "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
            f"from aide_tui.cli import main\nsys.exit(main({args!r}))"
        )
        cmd = [sys.executable, "-c", code]
    env = {**_env(), "AIDE_INDEX_BUILD_WORKERS": "2"}  # helpers on a one-core machine too
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # both helpers are stopped once both exist (a spawned helper stopped before it has read what
        # its parent sends would stop the parent too), before either can finish a job of seconds;
        # then one is killed while jobs are pending, and the other goes on
        deadline = time.monotonic() + 120
        stopped: list[int] = []
        while len(stopped) < 2 and proc.poll() is None and time.monotonic() < deadline:
            helpers = _helpers(proc.pid)
            if len(helpers) >= 2:
                for helper in helpers[:2]:
                    os.kill(helper, signal.SIGSTOP)
                stopped = helpers[:2]
            time.sleep(0.002)
        assert len(stopped) == 2, f"the build started {len(_helpers(proc.pid))} helpers"
        os.kill(stopped[0], signal.SIGKILL)
        os.kill(stopped[1], signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["files"] == n
    assert any("helper process of the index build ended abruptly" in w for w in summary["warnings"]), (
        summary,
        err,
        stopped,
    )
    data = read_index(index_dir_for(root))
    marked = {c.path for c in data.chunks if "def marker_of_module_" in c.text}
    assert marked == {f"pkg{i % 5}/mod_{i}.py" for i in range(n)}
    assert not [p.name for p in index_dir_for(root).iterdir() if p.name.startswith(".")]  # no staging left


def _hostile_tree(root: Path) -> None:
    root.mkdir()
    (root / "ok.py").write_text("def fine_function():\n    return 'fine'\n")
    (root / "fake.py").write_bytes(b"def looks_like_code():\n\x00\x01\x02 binary")
    (root / "huge.js").write_bytes(b"var a=" + b"1" * (50 * 1024 * 1024) + b";")
    (root / "latin1.py").write_bytes(b"# caf\xe9\ndef cafe_latin():\n    return '\xe9'\n")
    (root / os.fsdecode(b"bad\xffname.py")).write_text("def badly_named():\n    pass\n")
    (root / "crlf.py").write_bytes(
        b"def crlf_one():\r\n    return 1\r\n\r\ndef crlf_two():\n    return 2\r\n"
    )
    (root / "loop").symlink_to(root)
    (root / "outside").symlink_to("/etc")
    deep = root
    for i in range(60):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "deep.py").write_text("def deepest_function():\n    return 60\n")
    (root / ".env").write_text("AWS_SECRET_ACCESS_KEY=abc\n")
    (root / "config.py").write_text(
        'AWS_KEY = "AKIAIOSFODNN7EXAMPLE"\napi_key = "sk_live_0123456789abcdef"\n'
        "PEM = '''\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nqwertyuiop\n"
        "-----END RSA PRIVATE KEY-----\n'''\n"
    )


def test_hostile_tree_indexes_what_it_can(tmp_path: Path) -> None:
    root = tmp_path / "hostile"
    _hostile_tree(root)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    rep = Indexer(root, settings).run()
    data = read_index(index_dir_for(root))
    paths = {c.path for c in data.chunks}
    assert paths == {
        "ok.py",
        "latin1.py",
        "crlf.py",
        "config.py",
        "/".join(f"d{i}" for i in range(60)) + "/deep.py",
    }
    assert rep.skipped_files["fake.py"] == "binary (NUL bytes)"
    assert rep.skipped_files["huge.js"].startswith("over size cap")
    assert "leaves the workspace" in rep.skipped_files["outside"]
    assert any("not UTF-8" in v for v in rep.skipped_files.values())
    assert ".env" in rep.skipped_files
    stored = "\n".join(c.text for c in data.chunks if c.path == "config.py")
    assert "AKIAIOSFODNN7EXAMPLE" not in stored and "sk_live_0123456789abcdef" not in stored
    assert "MIIEowIBAAKCAQEA" not in stored and stored.count("\n") == 7  # masked, line count kept
    s = Searcher(root, settings)
    s.refresh()
    assert s.search("crlf_two").results[0].path == "crlf.py"
    assert s.search("cafe_latin").results[0].path == "latin1.py"
    assert s.search("deepest_function").results[0].path.endswith("deep.py")


def test_no_connection_leaves_loopback(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Index and search with every backend; any socket connect outside loopback fails the test."""
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError("non-loopback connect blocked by test")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    from aide_tui.core.embed.factory import make_embedder
    from aide_tui.core.errors import EmbedderError

    for backend in ("builtin", "openai", "ollama"):
        settings = load_settings(workspace, {"embedding": {"backend": backend}})
        emb = make_embedder(settings)
        Indexer(workspace, settings, emb).run()
        Searcher(workspace, settings, emb).search("parse_header")
    remote = load_settings(workspace, {"embedding": {"backend": "openai", "url": "http://192.0.2.7:8080"}})
    with pytest.raises(EmbedderError, match="non-loopback"):
        make_embedder(remote)
    assert attempts == []


@pytest.mark.benchmark
def test_hundred_thousand_tiny_files(tmp_path: Path) -> None:
    """Benchmark variant (``-m benchmark``): 100,000 tiny files index, reindex as a no-op, and answer."""
    root = tmp_path / "many"
    for d in range(100):
        sub = root / f"d{d:03}"
        sub.mkdir(parents=True)
        for f in range(1000):
            (sub / f"f{f:04}.py").write_text(f"def tiny_{d}_{f}():\n    return {f}\n")
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    t0 = time.perf_counter()
    rep = Indexer(root, settings).run()
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = Indexer(root, settings).run()
    noop = time.perf_counter() - t0
    print(f"\n100k tiny files: cold {cold:.1f}s, no-op {noop:.1f}s, {rep.chunks} chunks")
    assert rep.files == 100_000 and again.changed == 0
    s = Searcher(root, settings)
    s.refresh()
    assert s.search("tiny_42_999").results[0].path == "d042/f0999.py"


def test_file_deleted_or_replaced_between_scan_and_read(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scanned file is gone (or is a directory) when it is read: skipped, the rest indexed."""
    from aide_tui.core.index import scan as scan_mod

    real_scan = scan_mod.Scanner.scan

    def racing_scan(self: scan_mod.Scanner) -> scan_mod.ScanResult:
        result = real_scan(self)
        (workspace / "src/httpclient/retry.py").unlink()
        (workspace / "docs/usage.md").unlink()
        (workspace / "docs/usage.md").mkdir()  # replaced by a directory
        return result

    monkeypatch.setattr(scan_mod.Scanner, "scan", racing_scan)
    rep = Indexer(workspace, load_settings(workspace, {"embedding": {"backend": "none"}})).run()
    assert "vanished" in rep.skipped_files["src/httpclient/retry.py"]
    assert rep.skipped_files["docs/usage.md"] == "changed between scan and read (now a directory)"
    assert rep.files == 3
