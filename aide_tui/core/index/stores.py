"""The write side of the stores: the writer for the store the settings choose."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.index.writer import StoreWriter


def open_writer(root: Path, settings: Settings) -> StoreWriter:
    """The local segments' writer, or a Milvus collection's."""
    if settings.store.backend == "milvus":
        from aide_tui.core.milvus.writer import MilvusWriter

        return MilvusWriter(root, settings)
    from aide_tui.core.index.local_writer import LocalWriter

    return LocalWriter(settings)
