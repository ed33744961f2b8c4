"""``aide-tui search --format vimgrep|paths`` as a real subprocess on the sample workspace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from aide_tui.core.tokens import tokenize


def _search(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "aide_tui", "search", "--path", str(root), "--embedder", "none", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=120, check=False)


def test_vimgrep_lines_parse_and_point_at_a_query_term(workspace: Path) -> None:
    query = "follow redirects header"
    out = _search(workspace, "--format", "vimgrep", query)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines
    terms = set(tokenize(query))
    for line in lines:
        m = re.fullmatch(r"([^:]+):(\d+):(\d+):(.*)", line)
        assert m, line
        path, number, col = workspace / m[1], int(m[2]), int(m[3])
        assert not Path(m[1]).is_absolute()  # relative to the current folder (the workspace here)
        text = path.read_text().splitlines()[number - 1]
        assert text.strip() == m[4]
        assert set(tokenize(text)) & terms, line
        assert 1 <= col <= len(text) + 1


def test_paths_are_distinct_and_in_rank_order(workspace: Path) -> None:
    query = "client send request"
    paths = _search(workspace, "--format", "paths", "--no-update", query)
    if paths.returncode != 0:  # no index yet: the first call indexes
        paths = _search(workspace, "--format", "paths", query)
    listed = paths.stdout.splitlines()
    assert listed and len(listed) == len(set(listed))
    ranked = json.loads(_search(workspace, "--format", "json", "--no-update", query).stdout)["results"]
    assert listed == list(dict.fromkeys(r["path"] for r in ranked))
    assert all((workspace / p).is_file() for p in listed)
