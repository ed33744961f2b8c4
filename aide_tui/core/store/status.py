"""The local store's status, read from the manifest alone (no index load): cheap after every commit."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.errors import IndexCorrupt, IndexMissing, IndexProblem
from aide_tui.core.paths import index_dir_for
from aide_tui.core.status import IndexStatus
from aide_tui.core.store.segments import check_sizes, read_manifest, referenced_bytes


def has_readable_index(root: Path) -> bool:
    """Whether ``root``'s local store has a manifest that reads (a damaged one counts as none: it is
    rebuilt)."""
    try:
        read_manifest(index_dir_for(root, create=False))
    except IndexProblem:
        return False
    return True


def static_missing_for(missing: int, tier: str, chunks: int, wanted: bool) -> int:
    """Chunks without a static-tier vector, as a user whose settings ``wanted`` the tier reads it: the
    index's own count (``missing``, of its tier ``tier``), or every chunk when the index has no tier."""
    return missing if tier or not wanted else chunks


def read_status(root: Path, backend: str = "none", static_wanted: bool = False) -> IndexStatus:
    """The status of ``root``'s index for a user whose configured embedding backend is ``backend`` (and
    whose settings use the static tier when ``static_wanted``).

    ``degraded`` says why the dense side the user configured is missing: no vectors although an
    embedder is configured, or the last run's failure (dead server, bad vectors, wrong dimension).
    """
    idx_dir = index_dir_for(root, create=False)
    try:
        manifest = read_manifest(idx_dir)
    except IndexMissing:
        return IndexStatus("missing")
    except IndexCorrupt as exc:
        return IndexStatus("corrupt", error=str(exc))
    damage = check_sizes(idx_dir, manifest)
    if damage:
        return IndexStatus("corrupt", error=damage)
    counts, meta = manifest.counts, manifest.meta
    emb = meta.embedder or "none"
    missing = counts.vectors_missing
    static_missing = static_missing_for(counts.static_missing, meta.static, counts.chunks, static_wanted)
    complete = (emb == "none" or missing == 0) and static_missing == 0
    st = IndexStatus(
        state="ready" if complete else "partial",
        files=counts.files,
        chunks=counts.chunks,
        embedded=counts.embedded,
        embedder=emb,
        last_indexed=manifest.written or None,
        vectors_missing=missing if emb != "none" else 0,
        static_missing=static_missing,
        static=meta.static,
        size_bytes=referenced_bytes(manifest),
        skipped=meta.skipped,
    )
    reason = meta.degraded_reason
    if backend == "static":
        if not meta.static:
            st.degraded_reason = str(reason) if reason else "index has no static-tier vectors"
    elif backend != "none" and emb == "none":
        st.degraded_reason = (
            str(reason) if reason else f"index has no vectors although embedder {backend!r} is configured"
        )
    elif backend != "none" and reason:
        st.degraded_reason = str(reason)
    st.degraded = st.degraded_reason is not None
    if st.degraded:
        st.state = "partial"  # the dense side the user configured is missing or incomplete
    return st
