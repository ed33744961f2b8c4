"""LiveWorkspace: the shared front-end service (index, reload on every commit, watcher) on real files."""

from __future__ import annotations

import queue
import time
from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.live import EmbedderReady, FilesChanged, LiveEvent, LiveWorkspace, Opened, Reloaded


def wait_for(events: queue.Queue[LiveEvent], kind: type, timeout: float = 60.0) -> LiveEvent:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ev = events.get(timeout=0.2)
        except queue.Empty:
            continue
        if isinstance(ev, kind):
            return ev
    raise AssertionError(f"no {kind.__name__} within {timeout}s")


def test_live_workspace_indexes_reloads_and_follows_edits(workspace: Path) -> None:
    events: queue.Queue[LiveEvent] = queue.Queue()
    settings = load_settings(workspace, {"embedding": {"backend": "none"}})
    live = LiveWorkspace(workspace, settings, events.put)
    live.start()
    try:
        opened = wait_for(events, Opened)
        assert isinstance(opened, Opened) and opened.missing
        ready = wait_for(events, EmbedderReady)
        assert isinstance(ready, EmbedderReady) and ready.embedder_id is None
        reloaded = wait_for(events, Reloaded)
        assert isinstance(reloaded, Reloaded) and reloaded.status.files == 5
        assert live.search("parse_header").results[0].path == "src/httpclient/headers.py"

        time.sleep(1.2)  # a lone edit after a quiet second is reported without coalescing
        (workspace / "src" / "fresh.py").write_text("def zanzibar_quokka():\n    return 42\n")
        changed = wait_for(events, FilesChanged)
        assert isinstance(changed, FilesChanged) and "src/fresh.py" in changed.paths
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = live.search("zanzibar_quokka").results
            if hits:
                break
            time.sleep(0.05)
        assert hits and hits[0].path == "src/fresh.py"
    finally:
        live.close()
