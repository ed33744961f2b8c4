"""Shared by the Milvus tests of the live workspace, the app and mcp: settings, a second workspace, and
a Milvus Lite gRPC server in its own process standing in for a Milvus server."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from aide_tui.core.config import Settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.milvus.lite import release_engine

OTHER = {
    "lib/render.py": '''
        def render_template(name: str, context: dict) -> str:
            """Render a template by name with the given context."""
            return name.format(**context)
    ''',
}


def milvus_settings(uri: Path | str, collection: str = "team", **store: Any) -> Settings:
    """BM25-only settings on a Milvus store (a Lite ``.db`` path or a server URI)."""
    s = Settings()
    return replace(
        s,
        embedding=replace(s.embedding, backend="none"),
        store=replace(s.store, backend="milvus", uri=str(uri), collection=collection, **store),
    )


def index_and_release(root: Path, settings: Settings) -> None:
    """Index ``root`` into the store, then stop the engine this process started (the file is free)."""
    Indexer(root, settings, None, None).run()
    release_engine(settings.store.uri)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def lite_server(db: Path, port: int = 0) -> Iterator[str]:
    """A Milvus Lite gRPC server on ``db`` in another process (``port`` 0: any free one); yields its
    ``http://127.0.0.1:PORT`` URI and kills the process on exit."""
    code = (
        "import sys\n"
        "from milvus_lite.adapter.grpc.server import start_server_in_thread\n"
        f"server, db, port = start_server_in_thread({str(db)!r}, port={port})\n"  # kept: a lost server stops
        "print(f'http://127.0.0.1:{port}', flush=True)\n"
        "sys.stdin.read()\n"
    )
    host = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        uri = host.stdout.readline().strip()
        assert uri.startswith("http://127.0.0.1:"), uri
        yield uri
    finally:
        host.kill()
        host.wait(20)
