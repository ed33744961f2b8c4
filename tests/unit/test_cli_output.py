"""What the CLI prints for hostile names, damaged indexes and broken ignore files (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVIL = "evil\x1b[2J\x1b[31mred\x07.py"  # clear screen, red, bell
NEWLINE = "two\nlines.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "aide_tui", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def _has_raw_controls(text: str) -> bool:
    return any(ord(c) < 32 and c not in "\n\t" or c == "\x7f" for c in text)


def test_text_output_escapes_control_characters_in_file_names(workspace: Path) -> None:
    (workspace / EVIL).write_text("def escape_sequence_function():\n    return 1\n")
    (workspace / NEWLINE).write_text("def newline_named_function():\n    return 2\n")
    os.mkfifo(workspace / "pipe\x1b]0;title\x07")  # listed as skipped
    (workspace / "dir\x1b[5m").mkdir()
    (workspace / "dir\x1b[5m" / ".gitignore").write_text("[z-a]\n")  # a warning naming that folder
    out = run("index", str(workspace), "--embedder", "none")
    assert out.returncode == 0, out.stderr
    assert not _has_raw_controls(out.stdout) and not _has_raw_controls(out.stderr)
    assert "pipe\\x1b]0;title\\x07: FIFO, not a regular file" in out.stdout
    assert "dir\\x1b[5m/.gitignore:1: ignoring invalid pattern" in out.stderr
    for query, shown in [("escape_sequence_function", "evil\\x1b[2J\\x1b[31mred\\x07.py:1-2"),
                         ("newline_named_function", "two\\nlines.py:1-2")]:  # fmt: skip
        out = run("search", "--path", str(workspace), "--embedder", "none", "--no-update", query)
        assert out.returncode == 0, out.stderr
        assert not _has_raw_controls(out.stdout) and out.stdout.startswith(shown), out.stdout
    # JSON is escaped by the encoder already and gives the real name back
    out = run("search", "--path", str(workspace), "--embedder", "none", "--no-update", "--json",
              "escape_sequence_function")  # fmt: skip
    assert json.loads(out.stdout)["results"][0]["path"] == EVIL


def test_search_no_update_on_a_damaged_index_says_what_to_run(workspace: Path) -> None:
    assert run("index", str(workspace), "--embedder", "none").returncode == 0
    manifest = workspace / ".aide" / "index" / "manifest.json"
    data = json.loads(manifest.read_text())
    seg_files = sorted(p for p in manifest.parent.rglob("*") if p.is_file() and p.stat().st_size > 64
                       and p.name not in ("manifest.json", "lock"))  # fmt: skip
    assert seg_files, list(manifest.parent.rglob("*"))
    victim = seg_files[0]
    victim.write_bytes(b"\xff" * victim.stat().st_size)  # same size, wrong checksum
    out = run("search", "--path", str(workspace), "--embedder", "none", "--no-update", "parse_header")
    assert out.returncode == 1
    assert "rebuilding" not in out.stderr
    assert f"run `aide-tui index {workspace} --rebuild`" in out.stderr
    assert out.stderr.count("\n") == 1 and json.loads(manifest.read_text()) == data  # nothing rebuilt
    # without --no-update the same search rebuilds and answers
    out = run("search", "--path", str(workspace), "--embedder", "none", "parse_header")
    assert out.returncode == 0 and out.stdout.startswith("src/httpclient/headers.py"), out.stderr


def test_index_reports_ignore_file_warnings_in_text_json_and_progress(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("*.log\n!\nfoo\\\n")
    (workspace / "docs" / ".aideignore").write_text("[z-a]\n")
    expected = [
        ".gitignore:2: ignoring invalid pattern '!'",
        ".gitignore:3: ignoring invalid pattern 'foo\\\\'",
        "docs/.aideignore:1: ignoring invalid pattern '[z-a]' (bad character range z-a)",
    ]
    out = run("index", str(workspace), "--embedder", "none")
    assert out.returncode == 0, out.stderr
    for w in expected:
        assert f"aide-tui: {w}\n" in out.stderr
    out = run("index", str(workspace), "--embedder", "none", "--json")
    summary = json.loads(out.stdout.splitlines()[-1])
    assert {"files", "chunks", "seconds", "embedder", "degraded", "degraded_reason"} <= set(summary)
    assert summary["warnings"] == expected
    out = run("index", str(workspace), "--embedder", "none", "--progress", "--rebuild")
    done = json.loads(out.stdout.splitlines()[-1])
    assert done["event"] == "done" and [w for w in done["warnings"] if "invalid pattern" in w] == expected
    # search still works with the broken lines skipped
    out = run("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header")
    assert json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
