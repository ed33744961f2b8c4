"""Deterministic app instances for the snapshot tests.

The sample workspace of ``tests/conftest.py`` is written to a fixed path and indexed in-process
before the app starts; the app neither reindexes nor watches and hides times, rates and sizes, so
every rendering is the same on every run.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from conftest import write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.tui.app import AideApp

ROOT = Path(tempfile.gettempdir()) / "aide-tui-snapshot" / "ws"
DEAD_URL = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused at once


POOL = "src/httpclient/transport/connection_pool/async_pool_manager.py"
POOL_CODE = '''"""Connection pools."""


class AsyncConnectionPoolManager:
    """Keeps keepalive connections per host."""

    def rebalance_keepalive_connections(self, hosts):
        """Move idle keepalive sockets to the busiest hosts."""
        for host in hosts:
            host.keepalive = max(1, host.keepalive - 1)
        return hosts
'''


def fixed_workspace(rows: bool = False) -> Path:
    """A fresh copy of the sample workspace at :data:`ROOT` (``rows``: plus a deep file with a long
    qualified name), indexed with BM25 only."""
    if ROOT.exists():
        shutil.rmtree(ROOT)
    write_workspace(ROOT)
    if rows:
        (ROOT / POOL).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / POOL).write_text(POOL_CODE)
    settings = load_settings(ROOT, {"embedding": {"backend": "none"}})
    Indexer(ROOT, settings, None, None).run()
    return ROOT


def build(kind: str = "main", answer_url: str = DEAD_URL) -> AideApp:
    """``main``: BM25 settings; ``rows``: the same plus a deep file with a long qualified name;
    ``degraded``: an OpenAI-style embedder on a dead port; ``tiers``: the same embedder configured but
    its probe not awaited (the snapshot feeds index events); ``answer_url``: the ask mode's model server."""
    root = fixed_workspace(rows=kind == "rows")
    flags: dict[str, Any] = {"embedding": {"backend": "none"}}
    if kind in ("degraded", "tiers"):
        flags = {"embedding": {"backend": "openai", "url": DEAD_URL, "model": "test-model", "timeout": 1.0}}
    flags["answer"] = {"backend": "openai", "url": answer_url, "timeout": 20.0}
    settings = load_settings(root, flags)
    return AideApp(root, settings, watch=False, show_timing=False, start_index=False)


if __name__ == "__main__":
    build().run()
