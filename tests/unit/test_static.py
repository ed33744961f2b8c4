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
    heavy = ["aide_tui.core.index.indexer", "aide_tui.core.index.scan", "aide_tui.core.chunk.chunker",
             "aide_tui.core.chunk.code", "aide_tui.core.secrets", "pathspec", "textual"]  # fmt: skip
    code = "import sys, aide_tui.core.search.searcher, aide_tui.core.live\n"
    code += f"print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


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
