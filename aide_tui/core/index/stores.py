"""The write side of the stores: the writer for the store the settings choose."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.index.writer import StoreWriter
from aide_tui.core.storekind import LOCAL, MILVUS, store_kind


def open_writer(root: Path, settings: Settings) -> StoreWriter:
    """The local segments' writer, or a Milvus collection's."""
    if store_kind(settings).name == MILVUS.name:
        from aide_tui.core.index.milvus_writer import MilvusWriter

        return MilvusWriter(root, settings)
    from aide_tui.core.index.local_writer import LocalWriter

    return LocalWriter(settings)


def recorded_embedder(root: Path, settings: Settings) -> str | None:
    """The embedder id the workspace's local index records (None: no index, or a Milvus store, whose
    collection keeps its own): embedders are made to match it (see ``make_embedder(recorded=...)``)."""
    if store_kind(settings).name != LOCAL.name:
        return None
    from aide_tui.core.store.status import read_status

    emb = read_status(root).embedder
    return None if emb == "none" else emb
