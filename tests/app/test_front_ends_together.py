"""The app, `aide-tui search` and `aide-tui mcp` on one workspace at once (issue 20): one host, every
front end sees an edit, and when the hosting app closes an attached front end takes over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

import pytest
from apphelpers import make_app, wait_for
from conftest import write_workspace
from serve_helpers import clean_env, cli

from aide_tui.host.lock import host_pid

pytest.importorskip("mcp")
from test_mcp import call, session  # noqa: E402


async def test_app_cli_and_mcp_share_one_host(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    saved = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    os.environ.update({k: env[k] for k in saved})
    app = make_app(root, watch=True)
    try:
        async with contextlib.AsyncExitStack() as stack:
            pilot = await stack.enter_async_context(app.run_test(size=(120, 40)))
            await wait_for(
                pilot, lambda: app.live.hosting and (root / ".aide" / "serve.sock").exists(), "hosting"
            )
            mcp = await contextlib.AsyncExitStack().__aenter__()
            s = await mcp.enter_async_context(session(root, tmp_path))
            try:
                err, status = await call(s, "index_status")
                assert not err and status["source"].endswith(f"indexed by PID {os.getpid()}"), status
                (root / "src" / "shared_edit.py").write_text("def seen_by_everyone():\n    return 1\n")
                await wait_for(
                    pilot, lambda: bool(app.live.search("seen_by_everyone", mode="bm25").results), "app"
                )
                out = cli("search", "--path", str(root), "--json", "--embedder", "none", "seen_by_everyone",
                          env=env)  # fmt: skip
                assert json.loads(out.stdout)["results"][0]["path"] == "src/shared_edit.py", out.stderr
                got: dict = {}
                for _ in range(100):
                    err, got = await call(s, "search_code", query="seen_by_everyone", mode="bm25")
                    if not err and got["results"]:
                        break
                    await pilot.pause(0.1)
                assert got["results"][0]["path"] == "src/shared_edit.py"
                assert host_pid(root / ".aide") == os.getpid()
                await stack.aclose()  # the app closes: the attached mcp takes over
                for _ in range(200):
                    if host_pid(root / ".aide") not in (None, os.getpid()):
                        break
                    await asyncio.sleep(0.1)
                assert host_pid(root / ".aide") not in (None, os.getpid())
                (root / "src" / "after_the_app.py").write_text("def indexed_by_mcp_now():\n    return 2\n")
                for _ in range(200):
                    err, got = await call(s, "search_code", query="indexed_by_mcp_now", mode="bm25")
                    if not err and got["results"]:
                        break
                    await asyncio.sleep(0.1)
                assert got["results"][0]["path"] == "src/after_the_app.py"
            finally:
                await mcp.aclose()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
