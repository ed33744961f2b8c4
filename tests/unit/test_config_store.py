"""The [store] settings: the workspace config may choose a local Milvus Lite file, never a server or a
token; a missing milvus extra is one line with the install command (exit 2). No pymilvus needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aide_tui.core.config import is_network_uri, load_settings
from aide_tui.core.errors import ConfigError


def _ws_config(root: Path, body: str) -> Path:
    (root / ".aide").mkdir(parents=True, exist_ok=True)
    (root / ".aide" / "config.toml").write_text(body)
    return root


def test_store_defaults_and_environment(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    assert (s.store.backend, s.store.uri, s.store.read_only) == ("local", "", False)
    env = {
        "AIDE_STORE_BACKEND": "milvus",
        "AIDE_STORE_URI": "http://db.example:19530",
        "AIDE_STORE_TOKEN": "root:Milvus",
        "AIDE_STORE_READ_ONLY": "1",
        "AIDE_STORE_COLLECTION": "team",
    }
    s = load_settings(tmp_path, environ=env, user_config=tmp_path / "none.toml")
    assert s.store.backend == "milvus" and s.store.uri == "http://db.example:19530"
    assert s.store.token == "root:Milvus" and s.store.read_only and s.store.collection == "team"


@pytest.mark.parametrize(
    "uri", ["http://db.example:19530", "https://x.example", "tcp://10.0.0.1:19530", "db.example:19530",
            "unix:/run/milvus.sock", "HTTP://LOUD.example"],
)  # fmt: skip
def test_workspace_config_may_not_choose_a_network_uri(tmp_path: Path, uri: str) -> None:
    assert is_network_uri(uri)
    root = _ws_config(tmp_path / "ws", f'[store]\nbackend = "milvus"\nuri = "{uri}"\n')
    with pytest.raises(ConfigError, match="network address"):
        load_settings(root, environ={}, user_config=tmp_path / "none.toml")
    # the user's own choice (environment, flag or user config) is honoured
    s = load_settings(root, environ={"AIDE_STORE_URI": "http://mine.example:19530"},
                      user_config=tmp_path / "none.toml")  # fmt: skip
    assert s.store.uri == "http://mine.example:19530"
    s = load_settings(
        root, flags={"store": {"uri": "/tmp/x.db"}}, environ={}, user_config=tmp_path / "n.toml"
    )
    assert s.store.uri == "/tmp/x.db"
    user = tmp_path / "user.toml"
    user.write_text(f'[store]\nuri = "{uri}"\n')
    assert load_settings(root, environ={}, user_config=user).store.uri == uri  # the same one: it is yours


def test_workspace_config_may_choose_milvus_but_not_which_store(tmp_path: Path) -> None:
    """Issue 22 #4: a clone's config naming a shared Lite file, collection and workspace id replaced another
    workspace's index. It may choose backend = "milvus" (its own Lite file); the rest is ignored, said."""
    team = tmp_path / "team.db"
    root = _ws_config(
        tmp_path / "ws",
        f'[store]\nbackend = "milvus"\nuri = "{team}"\ncollection = "team"\nworkspace = "api"\n'
        'token = "stolen:creds"\n[embedding]\nallow_remote = true\n',
    )
    notes: list[str] = []
    s = load_settings(root, environ={}, user_config=tmp_path / "none.toml", notes=notes)
    assert s.store.backend == "milvus" and s.store.read_only is False
    assert (s.store.uri, s.store.collection, s.store.workspace, s.store.token) == ("", "", "", "")
    assert s.embedding.allow_remote is False
    (note,) = notes
    for key in ("store.uri", "store.collection", "store.workspace", "store.token", "embedding.allow_remote"):
        assert key in note, note
    assert "ignored" in note and "config.toml" in note and "team.db" not in note
    # the user's own choices are honoured, from the user config, the environment or flags
    user = tmp_path / "user.toml"
    user.write_text(f'[store]\nuri = "{team}"\ncollection = "team"\nworkspace = "api"\n')
    s = load_settings(root, environ={"AIDE_STORE_TOKEN": "mine"}, user_config=user)
    assert (s.store.uri, s.store.collection, s.store.workspace, s.store.token) == (
        str(team),
        "team",
        "api",
        "mine",
    )
    s = load_settings(root, environ={}, user_config=tmp_path / "none.toml",
                      flags={"store": {"collection": "flagged"}})  # fmt: skip
    assert s.store.collection == "flagged"
    # a workspace config without those keys gets no note
    plain = _ws_config(tmp_path / "plain", '[store]\nbackend = "milvus"\n')
    notes.clear()
    assert load_settings(plain, environ={}, user_config=tmp_path / "none.toml", notes=notes).store.uri == ""
    assert notes == []


def test_bad_store_values(tmp_path: Path) -> None:
    for env, msg in [
        ({"AIDE_STORE_BACKEND": "sqlite"}, "unknown store backend"),
        ({"AIDE_STORE_URI": "/tmp/milvus"}, "must end in .db"),
        ({"AIDE_STORE_COLLECTION": "bad-name"}, "letters, digits and _"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            load_settings(tmp_path, environ=env, user_config=tmp_path / "none.toml")


def test_settings_json_never_carries_the_token() -> None:
    from dataclasses import replace

    from aide_tui.core.config import Settings
    from aide_tui.core.index.service import settings_json

    s = Settings()
    s = replace(s, store=replace(s.store, backend="milvus", token="secret-token"))
    assert "secret-token" not in settings_json(s)


def _cli(
    args: list[str], tmp_path: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)  # fmt: skip


def _hide_pymilvus(tmp_path: Path) -> Path:
    """A folder for PYTHONPATH whose sitecustomize makes pymilvus look not installed (to the import
    system and to importlib.util.find_spec alike), as in an install without the extra."""
    stub = tmp_path / "no-pymilvus"
    stub.mkdir()
    (stub / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'pymilvus':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    return stub


def test_missing_extra_exits_2_with_the_install_command(tmp_path: Path, workspace: Path) -> None:
    stub = _hide_pymilvus(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(stub), str(Path(__file__).resolve().parents[2])])}
    for args in (["search", "--path", str(workspace), "--store", "milvus", "--embedder", "none", "client"],
                 ["index", str(workspace), "--store", "milvus", "--embedder", "none"],
                 ["status", str(workspace)]):  # fmt: skip
        extra = {**env, "AIDE_STORE_BACKEND": "milvus"} if args[0] == "status" else env
        proc = _cli(args, tmp_path, extra)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'aide-tui[milvus]'" in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (workspace / ".aide" / "index").exists() or not any((workspace / ".aide" / "index").iterdir())


def test_all_workspaces_needs_the_milvus_store(tmp_path: Path, workspace: Path) -> None:
    proc = _cli(
        ["search", "--path", str(workspace), "--embedder", "none", "--all-workspaces", "client"], tmp_path
    )
    assert proc.returncode == 2 and "store.backend" in proc.stderr


@pytest.mark.parametrize("args", [["."], ["serve", "."], ["mcp", "."]])
def test_long_running_front_ends_on_milvus_need_the_extra(
    tmp_path: Path, workspace: Path, args: list[str]
) -> None:
    """The app, serve and mcp use a Milvus store like the CLI does: without the extra, one line (exit 2)."""
    stub = _hide_pymilvus(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(stub), str(Path(__file__).resolve().parents[2])]),
           "AIDE_STORE_BACKEND": "milvus"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True,
                          cwd=workspace,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}, **env},
                          timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'aide-tui[milvus]'" in proc.stderr and "Traceback" not in proc.stderr


def test_child_processes_get_settings_in_their_environment_not_on_the_command_line(tmp_path: Path) -> None:
    """The indexing process's command line (readable by every user through ps) holds no settings: a
    store or embedding URI may carry credentials."""
    from aide_tui.core.index.service import IndexService

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    marker = "zz-marker-*.private"
    settings = load_settings(tmp_path, {"embedding": {"backend": "none"}, "index": {"exclude": [marker]}})
    events: list[object] = []
    svc = IndexService(tmp_path, settings, events.append)
    try:
        svc.request()
        assert svc.wait(120)
        proc = svc._proc
        assert proc is not None and proc.poll() is None  # the long-lived indexing process
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().decode()
        assert marker not in cmdline and "{" not in cmdline
        assert marker in environ  # it did receive the settings, through its environment
        assert any(type(e).__name__ == "Done" for e in events)
    finally:
        svc.close()


def test_a_clone_cannot_overwrite_another_workspace_in_a_shared_lite_file(
    tmp_path: Path, workspace: Path
) -> None:
    """Issue 22 #4, end to end: the victim's index in a shared Milvus Lite file stays theirs when a clone
    whose config names that file, collection and workspace id is searched; the clone is told why."""
    pytest.importorskip("milvus_lite")
    team = tmp_path / "team.db"
    home = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    mine = {**home, "AIDE_STORE_BACKEND": "milvus", "AIDE_STORE_URI": str(team),
            "AIDE_STORE_COLLECTION": "team", "AIDE_STORE_WORKSPACE": "api"}  # fmt: skip
    done = _cli(["index", str(workspace), "--embedder", "none"], tmp_path, mine)
    assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    (clone / "src").mkdir(parents=True)
    (clone / "src" / "evil.py").write_text("def parse_header(line):\n    return 'served from the clone'\n")
    _ws_config(
        clone, f'[store]\nbackend = "milvus"\nuri = "{team}"\ncollection = "team"\nworkspace = "api"\n'
    )
    out = _cli(
        ["search", "--path", str(clone), "--embedder", "none", "--json", "parse_header"], tmp_path, home
    )
    assert out.returncode == 0, out.stderr
    assert "note:" in out.stderr and "ignored store.uri, store.collection, store.workspace" in out.stderr
    assert [r["path"] for r in json.loads(out.stdout)["results"]] == ["src/evil.py"]  # its own store
    assert (clone / ".aide" / "milvus.db").exists() or any((clone / ".aide").rglob("*.db"))
    victim = _cli(["search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header"],
                  tmp_path, mine)  # fmt: skip
    assert victim.returncode == 0, victim.stderr
    paths = [r["path"] for r in json.loads(victim.stdout)["results"]]
    assert paths[0] == "src/httpclient/headers.py" and "src/evil.py" not in paths, paths
    st = _cli(["status", str(workspace), "--json"], tmp_path, mine)
    assert json.loads(st.stdout)["files"] == 5, st.stdout
