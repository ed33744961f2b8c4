"""The read side of the stores: the retriever the settings choose for a workspace, and its status.

Nothing here imports the indexing side (at any depth): searching never loads the chunkers, the scanner
or a store writer.
"""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.search.retriever import Retriever
from aide_tui.core.status import IndexStatus


def open_retriever(
    root: Path, settings: Settings, all_workspaces: bool = False, alongside: Retriever | None = None
) -> Retriever:
    """The local segments' retriever, or a Milvus collection's (``all_workspaces``: every workspace in
    it; ``alongside``: share that retriever's connection). ValueError when ``all_workspaces`` is asked
    of the local store."""
    if settings.store.backend == "milvus":
        from aide_tui.core.search.milvus import MilvusRetriever

        shared = alongside if isinstance(alongside, MilvusRetriever) else None
        return MilvusRetriever(root, settings, all_workspaces=all_workspaces, alongside=shared)
    if all_workspaces:
        raise ValueError('searching all workspaces needs a shared store: store.backend = "milvus"')
    from aide_tui.core.search.local import LocalRetriever

    return LocalRetriever(root, settings)


def store_status(root: Path, settings: Settings) -> IndexStatus:
    """What the workspace's store holds (read without loading the index)."""
    retriever = open_retriever(root, settings)
    try:
        return retriever.status()
    finally:
        retriever.close()
