"""The CLI contract (shared/eval/CONTRACT.md) end to end, as subprocesses on a real workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loopback_server import LoopbackServer

REPO = Path(__file__).resolve().parents[2]


def run(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args],
        input=stdin, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip


def test_version() -> None:
    out = run("--version")
    assert out.returncode == 0 and out.stdout.startswith("aide-tui ")


def test_index_search_status_contract(workspace: Path) -> None:
    out = run("index", str(workspace), "--embedder", "none", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(summary) >= {"files", "chunks", "seconds", "embedder", "degraded", "degraded_reason"}
    assert summary["skipped"] == [] and summary["vectors_missing"] == 0
    assert summary["files"] == 5 and summary["embedder"] == "none" and summary["degraded"] is False

    batch = "parse_header\n\nwhere are redirects followed\n"
    out = run("search", "--path", str(workspace), "--embedder", "none", "--mode", "bm25", "--limit", "3",
              "--json", "--batch", "-", stdin=batch)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [x["query"] for x in lines] == ["parse_header", "", "where are redirects followed"]
    assert lines[1]["results"] == []
    first = lines[0]
    assert set(first) == {
        "query", "degraded", "degraded_reason", "took_ms", "vectors_missing", "static_missing", "results",
        "confidence", "hints",
    }  # fmt: skip
    assert first["confidence"] in {"high", "medium", "low"} and isinstance(first["hints"], list)
    assert first["vectors_missing"] == 0
    assert first["degraded"] is False and first["took_ms"] >= 0
    top = first["results"][0]
    assert top["path"] == "src/httpclient/headers.py" and top["start_line"] >= 1
    assert top["end_line"] >= top["start_line"] and isinstance(top["score"], float)
    assert {"bm25", "dense"} <= set(top["ranks"]) and top["ranks"]["dense"] is None
    assert len(first["results"]) <= 3
    assert "src/httpclient/client.py" in [r["path"] for r in lines[2]["results"]]

    out = run("status", str(workspace), "--json", "--embedder", "none")
    st = json.loads(out.stdout)
    assert set(st) >= {"state", "files", "chunks", "embedded", "embedder", "degraded", "degraded_reason",
                       "last_indexed"}  # fmt: skip
    assert st["vectors_missing"] == 0 and st["size_bytes"] > 0
    assert st["state"] == "ready" and st["files"] == 5 and st["last_indexed"]


def test_search_indexes_first_and_plain_output(workspace: Path) -> None:
    out = run("search", "--path", str(workspace), "--embedder", "none", "backoff_delays")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith("src/httpclient/retry.py:")


def test_dead_server_degrades_and_dense_mode_exits_1(workspace: Path) -> None:
    with LoopbackServer() as srv:
        url = srv.url
    args = ["--embedder", "openai", "--embedding-url", url]
    out = run("index", str(workspace), *args, "--json")
    assert out.returncode == 0
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["degraded"] is True and "not reachable" in summary["degraded_reason"]
    assert "degraded" in out.stderr
    out = run("search", "--path", str(workspace), *args, "--json", "parse_header")
    res = json.loads(out.stdout)
    assert res["degraded"] is True and res["results"][0]["path"] == "src/httpclient/headers.py"
    out = run("search", "--path", str(workspace), *args, "--mode", "dense", "--json", "parse_header")
    assert out.returncode == 1 and "dense" in out.stderr


def test_remote_embedder_refused_without_opt_in(workspace: Path) -> None:
    (workspace / ".aide").mkdir()
    # a workspace config cannot opt in: a cloned repository must not be able to exfiltrate code
    (workspace / ".aide" / "config.toml").write_text(
        '[embedding]\nbackend = "openai"\nurl = "http://192.0.2.1:8080"\nallow_remote = true\n'
    )
    out = run("index", str(workspace), "--json")
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["degraded"] is True and "non-loopback" in summary["degraded_reason"]


def test_bad_root_and_config_errors(tmp_path: Path, workspace: Path) -> None:
    out = run("index", str(tmp_path / "missing"))
    assert out.returncode == 2 and out.stderr == f"aide-tui: {tmp_path / 'missing'}: no such folder\n"
    (workspace / ".aide").mkdir()
    (workspace / ".aide" / "config.toml").write_text("[search]\nrrf_k = 'many'\n")
    out = run("index", str(workspace))
    assert out.returncode == 2 and "rrf_k" in out.stderr


def test_core_imports_no_textual() -> None:
    code = (
        "import sys, aide_tui.cli, aide_tui.core.search.searcher, aide_tui.core.index.indexer\n"
        "import aide_tui.core.embed.factory\n"
        "assert 'textual' not in sys.modules, 'core imported textual'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0


def test_index_and_search_without_a_host_load_neither_the_http_client_nor_index_the_searcher(
    workspace: Path,
) -> None:
    """No socket where a host would listen: nothing to ask, so http.client (and ssl) stay unloaded; and
    ``index`` never loads the search side's Searcher."""
    code = (
        "import sys\nfrom aide_tui.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, 'http.client' in sys.modules, 'aide_tui.core.search.searcher' in sys.modules)\n"
    )

    def loaded(*args: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)  # fmt: skip
        return out.stdout.split()[-3:]

    assert loaded("index", str(workspace), "--embedder", "none") == ["0", "False", "False"]
    assert loaded("search", "--path", str(workspace), "--mode", "bm25", "--json", "parse") == [
        "0", "False", "True",
    ]  # fmt: skip


def test_second_writer_waits_then_exits_1_naming_holder(workspace: Path) -> None:
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.store.records import writer_lock

    assert run("index", str(workspace), "--embedder", "none").returncode == 0
    with writer_lock(index_dir_for(workspace)):
        out = run("index", str(workspace), "--embedder", "none", "--lock-timeout", "0.3")
        assert out.returncode == 1 and f"process {os.getpid()}" in out.stderr
        # search does not wait for the writer: it answers from the existing index
        out = run("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header")
        assert (
            out.returncode == 0
            and json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
        )


def test_status_reports_the_indexers_degraded_reason(workspace: Path) -> None:
    with LoopbackServer() as srv:
        url = srv.url
    args = ["--embedder", "openai", "--embedding-url", url]
    assert run("index", str(workspace), *args).returncode == 0
    st = json.loads(run("status", str(workspace), "--json", *args).stdout)
    assert st["degraded"] is True and "not reachable" in st["degraded_reason"]
