"""``aide-tui search`` odds and ends: argument checks, help texts, query errors, filters (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_cli import REPO, run

from aide_tui.core.config import SearchSettings
from aide_tui.core.search.fuse import DEFAULT_K


def _search(workspace: Path, *args: str) -> object:
    return run("search", "--path", str(workspace), "--embedder", "none", "--mode", "bm25", *args)


def test_a_bad_limit_is_one_line_without_the_usage(workspace: Path) -> None:
    for bad, why in (
        ("0", "must be at least 1, got 0"),
        ("-1", "must be at least 1, got -1"),
        ("abc", "expected a whole number, got 'abc'"),
    ):
        out = _search(workspace, "--limit", bad, "parse_header")
        assert out.returncode == 2 and out.stdout == "", out.stderr
        assert out.stderr.splitlines() == [f"aide-tui search: --limit: {why} (see aide-tui search --help)"]


def test_unknown_argument_prints_the_search_usage() -> None:
    out = run("search", "--bogus", "x")
    assert out.returncode == 2
    assert "usage: aide-tui search" in out.stderr and "unrecognized arguments: --bogus" in out.stderr


def test_help_texts_and_the_real_rrf_default() -> None:
    out = run("search", "--help")
    text = " ".join(out.stdout.split())
    assert f"RRF constant (default {SearchSettings().rrf_k})" in text
    assert SearchSettings().rrf_k == DEFAULT_K
    for flag in ("--limit LIMIT results", "--mode {hybrid,bm25,dense} hybrid", "--json same as"):
        assert flag in text


def test_unknown_language_exits_2_with_one_line(workspace: Path) -> None:
    out = _search(workspace, "redirect lang:cobol")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "python" in out.stderr and "cobol" in out.stderr
    out = run("search", "--path", str(workspace), "--embedder", "none", "--mode", "bm25", "--json",
              "--batch", "-", stdin="redirect lang:cobol\nredirect lang:py\n")  # fmt: skip
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert out.returncode == 2 and len(lines) == 2
    assert "cobol" in lines[0]["error"] and lines[0]["results"] == []
    assert "error" not in lines[1] and lines[1]["results"]


def test_filter_only_query_lists_files(workspace: Path) -> None:
    out = _search(workspace, "--json", "lang:py")
    paths = [r["path"] for r in json.loads(out.stdout)["results"]]
    assert out.returncode == 0 and paths and all(p.endswith(".py") for p in paths)
    assert len(paths) == len(set(paths))


def test_prefix_completes_the_word_being_typed(workspace: Path) -> None:
    """``--prefix`` (for fzf's reload on every key): the last word also finds the words it begins; a
    space after it says it is complete. Without the flag the CLI never completes (the eval's answers)."""
    base = ("search", "--path", str(workspace), "--embedder", "none", "--json")

    def paths(*args: str) -> list[str]:
        out = run(*base, *args)
        assert out.returncode == 0, out.stderr
        return [r["path"] for r in json.loads(out.stdout.splitlines()[-1])["results"]]

    assert paths("--prefix", "backo")[0] == "src/httpclient/retry.py"
    assert "src/httpclient/retry.py" not in paths("backo")
    assert "src/httpclient/retry.py" not in paths("--prefix", "backo ")


def test_a_folder_of_an_indexed_workspace_is_searched_in_that_index(workspace: Path) -> None:
    """Issue 33 #17: ``search --path ..`` from deep in an indexed workspace built a second, nested index
    of the same files (and a background host for it) without a word. The enclosing workspace's index
    answers, kept to that folder's files with paths relative to it, and stderr says so."""
    assert run("index", str(workspace), "--embedder", "none").returncode == 0
    sub = workspace / "src" / "httpclient"
    out = _search(sub, "--json", "parse_header")
    assert out.returncode == 0, out.stderr
    assert f"{sub} is inside {workspace}, which is indexed" in out.stderr
    assert "src/httpclient/ only" in out.stderr and f"`aide-tui index {sub}` indexes it" in out.stderr
    paths = [r["path"] for r in json.loads(out.stdout)["results"]]
    assert paths and paths[0] == "headers.py"
    assert all(not p.startswith(("src/", "docs/", "web/")) for p in paths)
    assert not (sub / ".aide").exists()  # no second index, no second host
    text = _search(sub, "parse_header")
    assert text.stdout.splitlines()[0].startswith("headers.py:"), text.stdout
    elsewhere = _search(sub, "--json", "renderPage")  # web/app.ts: not in this folder
    assert json.loads(elsewhere.stdout)["results"] == [], elsewhere.stdout
    assert run("index", str(sub), "--embedder", "none").returncode == 0  # indexed on its own: searched so
    own = _search(sub, "--json", "parse_header")
    assert "which is indexed" not in own.stderr
    assert json.loads(own.stdout)["results"][0]["path"] == "headers.py"


def test_a_folder_written_as_a_path_after_the_query_is_the_root(workspace: Path, tmp_path: Path) -> None:
    """``search QUERY... DIR`` (as ``rg PATTERN PATH`` reads it): DIR is searched for the words before it,
    and the folder the command runs in is neither indexed nor searched. A bare word and a filter stay
    in the query."""
    here = tmp_path / "elsewhere"
    (here / "src").mkdir(parents=True)

    def search(cwd: Path, *words: str) -> dict[str, object]:
        cmd = [sys.executable, "-m", "aide_tui", "search", "--json", "--embedder", "none", "--mode", "bm25"]
        out = subprocess.run(
            [*cmd, *words],
            cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    want = search(workspace, "parse_header")
    assert want["results"]
    relative = os.path.relpath(workspace, here)
    roots = ((here, str(workspace)), (here, relative), (workspace / "src", "../../ws"))
    for cwd, root in roots:
        got = search(cwd, "parse_header", root)
        assert got["query"] == "parse_header" and got["results"] == want["results"], root
    assert not (here / ".aide").exists()
    assert search(workspace, "parse_header", "path:src/")["query"] == "parse_header path:src/"
    assert search(here, "parse_header", "src")["query"] == "parse_header src"  # a bare word: the query's
    for word in ("//", "~", "..", "~Widget", "~root", "/" + "x" * 300 + "/y", "./nothing/here/"):
        assert search(workspace, "destructor", word)["query"] == f"destructor {word}"  # no folder: text


def test_the_home_folder_as_the_current_folder_is_not_made_a_workspace(tmp_path: Path) -> None:
    """A search (or index, defs, the app) typed in the home folder would index everything under it: it
    is refused with a way out, nothing is written; naming the folder indexes it, and from then on a
    search there answers."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "proj" / "notes.py").write_text("def remember_this():\n    return 1\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home)}

    def here(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "aide_tui", *args], cwd=home, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    for args in (["search", "remember_this"], ["search", "--no-update", "x"], ["index"], ["defs", "x"], []):
        out = here(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert "is your home folder" in out.stderr and f"aide-tui index {home}" in out.stderr, out.stderr
    assert not (home / ".aide").exists()
    assert here("status").returncode == 0  # reading is fine
    assert here("search", "remember_this", "./proj", "--embedder", "none").returncode == 0  # a project
    assert here("index", str(home), "--embedder", "none").returncode == 0  # named on purpose
    out = here("search", "remember_this", "--json", "--embedder", "none")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["path"] == "proj/notes.py"


def test_the_root_of_the_file_system_is_too_broad_unless_indexed() -> None:
    from aide_tui.host.scope import too_broad

    why = too_broad(Path("/"))
    assert why is not None and "the root of the file system" in why
    assert too_broad(REPO) is None
