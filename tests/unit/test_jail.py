"""``read_span`` refuses exactly what the scanner would not index, by the scanner's own rules (ignore files,
index.exclude, excluded folders, virtualenvs, secrets in any letter case), and hard links (issue 22 #5).
Real files on disk; the MCP tool calls this same function (tests/unit/test_mcp.py drives it over stdio)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aide_tui.core.config import Settings, load_settings
from aide_tui.core.index.scan import Scanner
from aide_tui.serve.jail import SpanRefused, read_span


def _settings(root: Path, tmp_path: Path, exclude: str = "") -> Settings:
    user = tmp_path / "user.toml"
    user.write_text(f"[index]\nexclude = [{exclude}]\n" if exclude else "")
    return load_settings(root, environ={}, user_config=user)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    files = {
        "src/app.py": "def app():\n    return 1\n",
        ".gitignore": "secret_notes.txt\nbuild_out/\n",
        "secret_notes.txt": "the launch date is friday\n",
        "build_out/gen.py": "GENERATED = 1\n",
        "docs/.aideignore": "draft.md\n",
        "docs/draft.md": "unreleased plans\n",
        "private/plan.py": "PLAN = 'private'\n",
        "node_modules/pkg/index.js": "module.exports = 1\n",
        "env/pyvenv.cfg": "home = /usr/bin\n",
        "env/lib/site.py": "import os\n",
        ".ENV": "DB=prod\n",
        "config/Server.KEY": "key material\n",
        "Id_Rsa": "key material\n",
        "home/.AWS/Credentials": "[default]\n",
        ".AIDE/serve.token": "a-token\n",
    }
    for rel, body in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(body)
    return ws


def test_only_what_the_scanner_indexes_is_served(root: Path, tmp_path: Path) -> None:
    settings = _settings(root, tmp_path, exclude='"private/"')
    indexed = {f.rel for f in Scanner(root, extra_excludes=settings.index.exclude).scan().files}
    assert indexed == {"src/app.py", ".gitignore", "docs/.aideignore"}, indexed
    assert read_span(root, settings, "src/app.py", 1, 2).text == "def app():\n    return 1"
    refused = {
        "secret_notes.txt": ".gitignore",
        "build_out/gen.py": ".gitignore",
        "docs/draft.md": ".aideignore",
        "private/plan.py": "index.exclude",
        "node_modules/pkg/index.js": "node_modules",
        "env/lib/site.py": "virtualenv",
        ".ENV": "sensitive",
        "config/Server.KEY": "sensitive",
        "Id_Rsa": "sensitive",
        "home/.AWS/Credentials": "sensitive",
        ".AIDE/serve.token": "out of bounds",
        ".Git/config": "out of bounds",
    }
    for rel, why in refused.items():
        with pytest.raises(SpanRefused, match="refused|out of bounds") as exc:
            read_span(root, settings, rel, 1, 1)
        assert why in str(exc.value), (rel, str(exc.value))


def test_a_hard_link_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("PRIVATE = 'outside the workspace'\n")
    os.link(outside, root / "src" / "notes.py")  # same file system, so the link is allowed
    settings = _settings(root, tmp_path)
    with pytest.raises(SpanRefused, match="hard link"):
        read_span(root, settings, "src/notes.py", 1, 1)
    # a hard link between two workspace files is refused too: the jail cannot tell where the other name is
    os.link(root / "src" / "app.py", root / "src" / "app_copy.py")
    with pytest.raises(SpanRefused, match="hard link"):
        read_span(root, settings, "src/app.py", 1, 1)


def test_sensitive_names_are_case_insensitive_in_the_scanner(tmp_path: Path) -> None:
    for name in (".ENV", ".Env.Local", "server.KEY", "cert.PEM", "ID_RSA", "Credentials.JSON", ".NETRC"):
        assert Scanner(tmp_path).file_skip_reason(name, 10) is not None, name
        assert Scanner(tmp_path).file_skip_reason(f"deep/dir/{name}", 10) is not None, name
    assert Scanner(tmp_path).file_skip_reason("home/.KUBE/Config", 10) is not None
    assert Scanner(tmp_path).file_skip_reason("src/keyboard.py", 10) is None
    assert Scanner(tmp_path, include_sensitive=True).file_skip_reason(".ENV", 10) is None
