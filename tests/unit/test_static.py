"""The code's own promises about itself: ruff-clean, and the type hints checked by mypy."""

from __future__ import annotations

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
    heavy = ["aide_tui.core.indexer", "aide_tui.core.scan", "aide_tui.core.chunk", "aide_tui.core.chunk_code",
             "aide_tui.core.secrets", "pathspec", "textual"]  # fmt: skip
    code = "import sys, aide_tui.core.search, aide_tui.core.live\n"
    code += f"print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
