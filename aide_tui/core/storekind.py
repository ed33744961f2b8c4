"""The kind of store a workspace's index lives in, as what it can do.

Front ends, the host and the core ask ``store_kind(settings)`` what the store implements (a shared
collection? a symbol graph? an engine its host must run?) instead of testing its name; only this module
reads ``settings.store.backend``, and only the two factories (``search/stores.py``, ``index/stores.py``)
pick a class by :attr:`StoreKind.name`. harlequin's adapters say what they implement the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aide_tui.core.config import Settings, is_network_uri

SHARED_STORE = 'store.backend = "milvus"'  # how a user gets a shared store


class NeedsSharedStore(ValueError):
    """Every workspace was asked of a store that holds only this one."""

    def __init__(self, asked: str, advice: str = SHARED_STORE) -> None:
        super().__init__(f"{asked} needs a shared store: {advice}")


@dataclass(frozen=True)
class StoreKind:
    """What one kind of store implements."""

    name: str  # settings.store.backend: "local" | "milvus"
    shared: bool  # one collection for many workspaces: they can be searched at once, and rows that do
    # not read are not this workspace's alone to drop and rebuild
    needs_engine_host: bool  # indexing starts once the host resolved the engine for its indexing
    # process (a Milvus Lite file's engine started in the host); a failed run is tried again later (the
    # engine may be restarting); the connection closes with the workspace
    embedded_engine: bool  # a Milvus Lite file: the engine runs inside the process hosting the workspace,
    # and the front ends that attach read the store through it
    symbol_graph: bool  # definitions and references (defs/refs, d/r, the graph levers of the ranking)
    static_tier: bool  # keeps the static tier's vectors beside the dense ones
    read_only: bool = False  # this process never writes to it (store.read_only, honoured by a shared store)

    @property
    def all_workspaces(self) -> bool:
        """Whether every workspace in the store can be searched at once."""
        return self.shared

    @property
    def writable(self) -> bool:
        """Whether this process may index into the store."""
        return not self.read_only

    def require_all_workspaces(self, asked: str, advice: str = SHARED_STORE) -> None:
        """The one guard for "every workspace": NeedsSharedStore (``asked`` names what asked for it, in
        the front end's words; ``advice``, how to get a shared store) unless the store is shared."""
        if not self.all_workspaces:
            raise NeedsSharedStore(asked, advice)


LOCAL = StoreKind("local", shared=False, needs_engine_host=False, embedded_engine=False, symbol_graph=True,
                  static_tier=True)  # fmt: skip
MILVUS = StoreKind("milvus", shared=True, needs_engine_host=True, embedded_engine=True, symbol_graph=False,
                   static_tier=False)  # fmt: skip


def store_kind(settings: Settings) -> StoreKind:
    """The kind of store the settings choose (ConfigError for an unknown one is raised when settings load)."""
    st = settings.store
    if st.backend != MILVUS.name:
        return LOCAL
    return replace(MILVUS, embedded_engine=not is_network_uri(st.uri), read_only=st.read_only)
