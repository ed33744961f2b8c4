"""The long-running front ends on a Milvus store (Milvus Lite, the real engine): the live workspace the
app, ``serve`` and ``mcp`` share indexes, watches and searches it, one workspace or all of a shared
collection; ``serve`` answers the CLI while it holds the Lite store."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pymilvus", reason="the milvus extra is not installed (pip install 'aide-tui[milvus]')")
pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (pip install 'aide-tui[milvus]')")

from conftest import write_workspace  # noqa: E402
from milvus_helpers import OTHER, free_port, index_and_release, lite_server, milvus_settings  # noqa: E402
from serve_helpers import Served, _reap_servers, clean_env, cli  # noqa: E402, F401

from aide_tui.core.config import Settings  # noqa: E402
from aide_tui.core.live import LiveWorkspace, Opened  # noqa: E402
from aide_tui.core.milvus.connection import workspace_id  # noqa: E402
from aide_tui.core.search.milvus import MilvusRetriever  # noqa: E402
from aide_tui.host.tenure import EngineHost  # noqa: E402


def until(cond: Any, what: str, timeout: float = 60.0) -> Any:
    """Poll ``cond()`` until it returns something truthy (a hang fails instead of blocking)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def team(tmp_path: Path) -> dict[str, Any]:
    """Two workspaces and one Lite store; beta is already in the shared collection."""
    alpha = write_workspace(tmp_path / "alpha")
    beta = write_workspace(tmp_path / "beta", OTHER)
    db = tmp_path / "team.db"
    index_and_release(beta, milvus_settings(db))
    return {"alpha": alpha, "beta": beta, "db": db, "home": tmp_path}


def test_live_workspace_indexes_watches_and_searches_a_lite_store(team: dict[str, Any]) -> None:
    alpha, beta, db = team["alpha"], team["beta"], team["db"]
    events: list[object] = []
    live = LiveWorkspace(alpha, milvus_settings(db), events.append, watch=True, engine=EngineHost())
    live.start()
    try:
        assert live.index_ready.wait(90), events
        # the indexing process reached the engine this process hosts (Lite opens in one process only)
        assert not any(isinstance(e, Opened) and e.error and "in use" in e.error for e in events)
        top = live.search("parse_header", mode="bm25").results[0]
        assert top.path == "src/httpclient/headers.py"
        # beta's file is in the collection, not in this workspace's answers
        assert "lib/render.py" not in {h.path for h in live.search("render_template", mode="bm25").results}

        (alpha / "src" / "jitter.py").write_text(
            "def quantize_jitter_window(attempt: int) -> float:\n    return min(30.0, 0.5 * 2**attempt)\n"
        )
        hits = until(lambda: live.search("quantize_jitter_window", mode="bm25").results, "the new file")
        assert hits[0].path == "src/jitter.py"

        everywhere = live.search("render_template", mode="bm25", all_workspaces=True).results
        assert everywhere[0].path == "lib/render.py"
        assert everywhere[0].workspace == workspace_id(beta, milvus_settings(db))  # type: ignore[attr-defined]
        assert everywhere[0].root == str(beta)  # type: ignore[attr-defined]
        mine = live.search("quantize_jitter_window", mode="bm25", all_workspaces=True).results[0]
        assert (mine.path, mine.root) == ("src/jitter.py", str(alpha))  # type: ignore[attr-defined]

        st = live.current_status()
        assert st.extra["store"] == "milvus" and st.files == 6 and st.state == "ready"
    finally:
        live.close()
    # closing stops the engine: the store is free for the next process (here the CLI, in-process)
    index_and_release(alpha, milvus_settings(db))


def test_all_workspaces_needs_the_shared_store(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    s = Settings()
    live = LiveWorkspace(root, replace(s, embedding=replace(s.embedding, backend="none")), lambda e: None)
    with pytest.raises(ValueError, match="shared store"):
        live.search("x", all_workspaces=True)


def test_a_damaged_lite_store_is_one_message_and_no_indexing(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    db = tmp_path / "team.db"
    db.mkdir()  # a folder that is not a Lite store
    events: list[object] = []
    live = LiveWorkspace(root, milvus_settings(db), events.append, watch=False, engine=EngineHost())
    live.start()
    try:
        opened = until(lambda: next((e for e in events if isinstance(e, Opened)), None), "the open")
        assert opened.error and "damaged" in opened.error and "Traceback" not in opened.error
        time.sleep(0.5)
        assert live.service.runs == 0 and not live.service.running
    finally:
        live.close()


def test_serve_on_a_lite_store_answers_the_cli_for_every_workspace(team: dict[str, Any]) -> None:
    alpha, beta, db, home = team["alpha"], team["beta"], team["db"], team["home"]
    env = clean_env(
        home, AIDE_STORE_BACKEND="milvus", AIDE_STORE_URI=str(db), AIDE_STORE_COLLECTION="team",
        AIDE_INDEX_LOCK_TIMEOUT="1",
    )  # fmt: skip
    srv = Served(alpha, "--embedder", "none", env=env)
    try:
        try:
            st = srv.wait_ready(timeout=60)
        except AssertionError:
            srv.kill()
            raise AssertionError(f"no index; server said: {srv.proc.stderr.read()[-3000:]}") from None  # type: ignore[union-attr]
        assert st["files"] == 5 and st["state"] == "ready"
        got = srv.search("render_template", mode="bm25", all_workspaces=True)
        assert got["results"][0]["path"] == "lib/render.py"
        assert got["results"][0]["workspace"] == workspace_id(beta, Settings())
        assert srv.http.post("/search", json={"query": "x", "all_workspaces": 1}).status_code == 400

        # the CLI goes through the server, which holds the Lite store ...
        proc = cli("search", "--path", str(alpha), "--embedder", "none", "--json", "--all-workspaces",
                   "render_template", env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(proc.stdout)["results"]
        assert rows[0]["path"] == "lib/render.py" and rows[0]["workspace"] == workspace_id(beta, Settings())
        # ... without it the store is busy: one line saying so, no traceback
        proc = cli(
            "search", "--path", str(alpha), "--embedder", "none", "--no-server", "parse_header", env=env
        )
        assert proc.returncode == 1 and "in use by another process" in proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        assert srv.stop() == 0


def test_two_workspaces_index_at_once_into_a_server_and_search_each_other(tmp_path: Path) -> None:
    """A Milvus server (here Milvus Lite's own gRPC server in another process, spoken to over loopback
    exactly like a standalone Milvus) takes writers from several processes at once."""
    import subprocess
    import sys

    with lite_server(tmp_path / "server.db") as uri:
        alpha = write_workspace(tmp_path / "alpha")
        beta = write_workspace(tmp_path / "beta", OTHER)
        env = clean_env(
            tmp_path, AIDE_STORE_BACKEND="milvus", AIDE_STORE_URI=uri, AIDE_STORE_COLLECTION="team"
        )
        cmd = [sys.executable, "-m", "aide_tui", "index", "--embedder", "none"]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        writers = [subprocess.Popen([*cmd, str(root)], env=env, **pipes) for root in (alpha, beta)]  # type: ignore[call-overload]
        for w in writers:
            _, err = w.communicate(timeout=120)
            assert w.returncode == 0, err
        proc = cli("search", "--path", str(alpha), "--embedder", "none", "--json", "--all-workspaces",
                   "--no-update", "render_template parse_header", env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        found = {(r["workspace"], r["path"]) for r in json.loads(proc.stdout)["results"]}
        assert (workspace_id(beta, Settings()), "lib/render.py") in found
        assert (workspace_id(alpha, Settings()), "src/httpclient/headers.py") in found


def test_a_server_that_comes_up_later_is_indexed_without_a_restart(tmp_path: Path) -> None:
    """The app and serve keep running while the Milvus server is down (the open says why) and index
    it once it answers: a failed run on a shared store is retried."""
    port = free_port()
    root = write_workspace(tmp_path / "ws")
    events: list[object] = []
    live = LiveWorkspace(
        root, milvus_settings(f"http://127.0.0.1:{port}"), events.append, watch=False, engine=EngineHost()
    )
    live.start()
    try:
        opened = until(lambda: next((e for e in events if isinstance(e, Opened)), None), "the open")
        assert opened.error and "cannot connect" in opened.error
        assert not live.index_ready.is_set()
        with lite_server(tmp_path / "late.db", port):
            assert live.index_ready.wait(90), [e for e in events if not isinstance(e, Opened)][-3:]
            assert live.search("parse_header", mode="bm25").results[0].path == "src/httpclient/headers.py"
    finally:
        live.close()


def test_a_reindex_asked_before_the_engine_is_hosted_waits_for_it(team: dict[str, Any]) -> None:
    """A watcher event or a key press right at start must not start the indexing process on the Lite
    file itself (it would hold the store and lock the front end out)."""
    alpha, db = team["alpha"], team["db"]
    live = LiveWorkspace(alpha, milvus_settings(db), lambda e: None, watch=False, engine=EngineHost())
    live.start()
    live.reindex()
    live.reindex(paths=["src/httpclient/headers.py"])
    try:
        assert live.index_ready.wait(90)
        assert live.service.settings.store.uri.startswith("http://127.0.0.1:")
        assert live.search("parse_header", mode="bm25").results[0].path == "src/httpclient/headers.py"
    finally:
        live.close()


def test_a_malformed_workspace_record_from_another_writer_is_skipped(team: dict[str, Any]) -> None:
    alpha, db = team["alpha"], team["db"]
    backend = MilvusRetriever(team["beta"], milvus_settings(db))
    backend.store().put_meta("evil", ["not", "an", "object"])  # type: ignore[arg-type]
    backend.close()
    events: list[object] = []
    reloaded = threading.Event()  # the reloader sets index_ready before it emits Reloaded: wait for that

    def seen(event: object) -> None:
        events.append(event)
        if type(event).__name__ == "Reloaded":
            reloaded.set()

    live = LiveWorkspace(alpha, milvus_settings(db), seen, watch=False, engine=EngineHost())
    live.start()
    try:
        assert live.index_ready.wait(90) and reloaded.wait(90)
        hits = live.search("render_template", mode="bm25", all_workspaces=True).results
        assert hits[0].path == "lib/render.py"
        assert "Opened" in {type(e).__name__ for e in events}
    finally:
        live.close()


def test_a_read_only_shared_store_never_starts_indexing(team: dict[str, Any]) -> None:
    beta, db = team["beta"], team["db"]
    live = LiveWorkspace(
        beta, milvus_settings(db, read_only=True), lambda e: None, watch=False, engine=EngineHost()
    )
    live.start()
    try:
        assert live.index_ready.wait(60)
        live.reindex()
        live.reindex(rebuild=True)
        time.sleep(0.5)
        assert live.service.runs == 0 and not live.service.running
        assert live.search("render_template", mode="bm25").results[0].path == "lib/render.py"
    finally:
        live.close()
