"""The read side of the stores: the retriever the settings choose for a workspace, and its status.

Nothing here imports the indexing side (at any depth): searching never loads the chunkers, the scanner
or a store writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aide_tui.core.config import Settings
from aide_tui.core.status import IndexStatus
from aide_tui.core.storekind import MILVUS, store_kind

if TYPE_CHECKING:  # the CLI's served path checks the store's extra without loading the search side
    from aide_tui.core.search.retriever import Retriever


def open_retriever(
    root: Path, settings: Settings, all_workspaces: bool = False, alongside: Retriever | None = None
) -> Retriever:
    """The local segments' retriever, or a Milvus collection's (``all_workspaces``: every workspace in
    it; ``alongside``: share that retriever's connection). NeedsSharedStore (a ValueError) when
    ``all_workspaces`` is asked of the local store."""
    kind = store_kind(settings)
    if kind.name == MILVUS.name:
        from aide_tui.core.search.milvus import MilvusRetriever

        shared = alongside if isinstance(alongside, MilvusRetriever) else None
        return MilvusRetriever(root, settings, all_workspaces=all_workspaces, alongside=shared)
    if all_workspaces:
        kind.require_all_workspaces("searching all workspaces")
    from aide_tui.core.search.local import LocalRetriever

    return LocalRetriever(root, settings)


def store_missing(settings: Settings) -> str | None:
    """What the store the settings choose needs and is not installed (the Milvus client), None if all is."""
    if store_kind(settings).name != MILVUS.name:
        return None
    from aide_tui.core.milvus.connection import milvus_missing

    return milvus_missing(settings)


def store_status(root: Path, settings: Settings) -> IndexStatus:
    """What the workspace's store holds (read without loading the index)."""
    retriever = open_retriever(root, settings)
    try:
        return retriever.status()
    finally:
        retriever.close()
