"""Where a workspace's index lives: the seam between ranking and storage.

The local store (segments under ``<root>/.aide/index``, see store.py) is the default. Another engine
plugs in here by providing the same four things: a cheap key that changes when a new version is
committed, an :class:`~aide_tui.core.store.view.IndexView` of the current version, an indexer (same
``run`` contract as :class:`~aide_tui.core.index.indexer.Indexer`), and the status. Ranking and fusion
stay above this seam.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from aide_tui.core.config import Settings
from aide_tui.core.paths import MANIFEST, index_dir_for
from aide_tui.core.status import IndexStatus, read_status
from aide_tui.core.store.view import IndexView


class Backend(Protocol):
    """What search, indexing front ends and status need from a store."""

    def version_key(self) -> object | None:
        """Changes whenever a new version is committed (None when unknown: reload)."""
        ...

    def load_view(self, previous: IndexView | None) -> IndexView:
        """The current version (raise IndexMissing / IndexCorrupt)."""
        ...

    def make_indexer(self, embedder: Any, embedder_error: str | None) -> Any:
        """An object with ``run(...) -> IndexReport`` like :class:`~aide_tui.core.index.indexer.Indexer`."""
        ...

    def status(self) -> IndexStatus:
        """What the index holds, for ``status`` and the app."""
        ...


class LocalBackend:
    """Segments under the workspace's state dir."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root)
        self.settings = settings

    def version_key(self) -> object | None:
        try:
            st = os.stat(index_dir_for(self.root, create=False) / MANIFEST)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def load_view(self, previous: IndexView | None) -> IndexView:
        from aide_tui.core.store.segments import load_view

        return load_view(index_dir_for(self.root, create=False), previous)

    def make_indexer(self, embedder: Any, embedder_error: str | None) -> Any:
        from aide_tui.core.index.indexer import Indexer

        return Indexer(self.root, self.settings, embedder, embedder_error)

    def status(self) -> IndexStatus:
        return read_status(self.root, self.settings.embedding.backend)


def backend_for(root: Path, settings: Settings) -> Backend:
    """The store the settings choose for ``root``: the local segments, or a Milvus collection."""
    if settings.store.backend == "milvus":
        from aide_tui.core.milvus.store import MilvusBackend

        return MilvusBackend(root, settings)
    return LocalBackend(root, settings)


def searcher_for(root: Path, settings: Settings, all_workspaces: bool = False) -> Any:
    """The searcher for ``root``'s store: :class:`~aide_tui.core.search.searcher.Searcher` over the local
    segments, or :class:`~aide_tui.core.milvus.search.MilvusSearcher` (``all_workspaces``: every workspace
    of the collection). Both have ``refresh``, ``search``, ``version``, ``backend``, embedder fields."""
    if settings.store.backend == "milvus":
        from aide_tui.core.milvus.search import MilvusSearcher

        return MilvusSearcher(root, settings, all_workspaces=all_workspaces)
    if all_workspaces:
        raise ValueError('searching all workspaces needs a shared store: store.backend = "milvus"')
    from aide_tui.core.search.searcher import Searcher

    return Searcher(root, settings)
