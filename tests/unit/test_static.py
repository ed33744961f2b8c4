"""The code's own promises about itself: ruff-clean, and the type hints checked by mypy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=900
    )


def test_ruff_is_clean() -> None:
    if shutil.which("ruff", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    out = _run("ruff", "check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    out = _run("mypy", "--no-incremental")
    assert out.returncode == 0, out.stdout + out.stderr


def test_search_does_not_load_the_indexing_side() -> None:
    """Loading the searcher (app, serve, CLI search) must not pull in chunkers, scanner, pathspec, secrets."""
    heavy = ["aide_tui.core.index.indexer", "aide_tui.core.index.scan", "aide_tui.core.chunk.chunker",
             "aide_tui.core.chunk.code", "aide_tui.core.secrets", "pathspec", "textual"]  # fmt: skip
    code = "import sys, aide_tui.core.search.searcher, aide_tui.core.live\n"
    code += f"print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_one_shot_search_loads_only_what_it_answers_with(tmp_path: Path) -> None:
    """A one-shot search of an index (no update, no host) imports neither the update's machinery, the
    sockets, a TOML parser when no config file exists, nor (hybrid) the packages' metadata: each is
    milliseconds of every call. A workspace config still brings the parser in (and a misspelt key its
    suggestion)."""
    (tmp_path / "pool.py").write_text("def overflow_timeout():\n    return 30\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    index = [sys.executable, "-m", "aide_tui", "index", str(tmp_path), "--embedder", "static"]
    assert subprocess.run(index, capture_output=True, text=True, timeout=120, env=env).returncode == 0
    lazy = ["tomllib", "difflib", "socket", "subprocess", "tempfile", "importlib.metadata", "email",
            "aide_tui.core.index.writer", "aide_tui.host.tenure", "aide_tui.core.index.indexer"]  # fmt: skip
    code = (
        "import json, sys\nfrom aide_tui.cli import main\n"
        "main(['search', '--path', sys.argv[1], '--no-update', '--no-server', '--mode', sys.argv[2],"
        " '--embedder', 'static', '--json', 'overflow timeout'])\n"
        f"print('LOADED', json.dumps([m for m in {lazy!r} if m in sys.modules]))"
    )

    def search(mode: str = "bm25") -> tuple[subprocess.CompletedProcess[str], str, list[str]]:
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path), mode], capture_output=True,
                             text=True, timeout=120, env=env)  # fmt: skip
        body, _, loaded = out.stdout.rpartition("LOADED ")
        return out, body, json.loads(loaded)

    for mode in ("bm25", "hybrid"):  # hybrid: the static tier's table and tokenizer, not the metadata
        out, body, loaded = search(mode)
        assert out.returncode == 0, out.stderr
        assert [r["path"] for r in json.loads(body)["results"]] == ["pool.py"]
        assert loaded == [], mode
    (tmp_path / ".aide" / "config.toml").write_text("[search]\ntop_m = 5\n")  # parsed, and misspelt
    out, body, loaded = search()
    assert "unknown key search.top_m (did you mean search.top_n?)" in out.stderr
    assert "tomllib" in loaded and "difflib" in loaded


def test_no_op_run_with_a_binary_file_does_not_load_the_chunkers(tmp_path: Path) -> None:
    """A binary file is read again on every run (it has no record): that must not import the chunkers."""
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "blob.dat").write_bytes(b"\x00\x01binary\x00" * 100)
    code = (
        "import sys\nfrom aide_tui.cli import main\n"
        "try:\n    main(['index', sys.argv[1], '--embedder', 'none'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', [m for m in ('aide_tui.core.chunk.chunker', 'aide_tui.core.secrets')\n"
        "                 if m in sys.modules])"
    )
    cmd = [sys.executable, "-c", code, str(tmp_path)]
    runs = [subprocess.run(cmd, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    assert "blob.dat" in runs[1].stdout  # still reported as skipped
    assert runs[0].stdout.strip().endswith("LOADED ['aide_tui.core.chunk.chunker', 'aide_tui.core.secrets']")
    assert runs[1].stdout.strip().endswith("LOADED []")
