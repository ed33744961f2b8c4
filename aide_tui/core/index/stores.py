"""The write side of the stores: the writer for the store the settings choose."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.storekind import LOCAL, MILVUS, store_kind

if TYPE_CHECKING:  # the write side is imported by whoever opens a writer, not by every reader
    from aide_tui.core.index.writer import StoreWriter


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


def embedder_for(
    settings: Settings, root: Path | None = None, *, for_indexing: bool = False, for_queries: bool = False
) -> tuple[Embedder | None, str | None]:
    """(embedder or None, why it is unusable or None); with ``root``, the runtime of the vectors the
    workspace's index holds when the settings leave it to ``auto`` (``for_indexing``, ``for_queries``:
    see the factory)."""
    from aide_tui.core.embed.factory import make_embedder
    from aide_tui.core.errors import EmbedderError

    try:
        recorded = recorded_embedder(root, settings) if root is not None else None
        return make_embedder(
            settings, for_indexing=for_indexing, recorded=recorded, for_queries=for_queries
        ), None
    except EmbedderError as exc:
        return None, str(exc)
