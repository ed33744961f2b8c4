"""``search`` and ``status`` through a running ``aide-tui serve`` for the same root and settings.

Answers come from the server's warm index with output identical to in-process work; whenever the server
cannot answer (none running, other settings, a refused request), the caller carries on in-process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

# SearchResponse(query, []).to_json(), without importing the search module (numpy) on the served path
BLANK: dict[str, Any] = {
    "query": "", "degraded": False, "degraded_reason": None, "took_ms": 0.0,
    "vectors_missing": 0, "static_missing": 0, "results": [],
}  # fmt: skip


def served_search(
    root: Path,
    settings: Any,
    queries: list[str],
    limit: int,
    mode: str,
    write: Callable[[dict[str, Any]], object],
    all_workspaces: bool = False,
    prefix: bool = False,
) -> int:
    """Answer ``queries`` in order through a server; returns how many were answered (0: none running).

    ``--mode dense`` goes through the server only when its embedder works, so the in-process path
    reports a missing embedder exactly as it always does.
    """
    from aide_tui.host.client import BadRequest, ServeUnavailable, connect

    if mode == "dense" and settings.embedding.backend == "none":
        return 0
    client = connect(root, settings)
    if client is None:
        return 0
    done = 0
    try:
        if mode == "dense" and client.search("probe", 1, "dense")["degraded"]:
            return 0
        for q in queries:
            q = q.rstrip("\r")
            try:
                resp = (
                    client.search(q, limit, mode, all_workspaces=all_workspaces, prefix=prefix)
                    if q.strip()
                    else dict(BLANK, query=q)
                )
            except BadRequest as exc:  # the query cannot be understood: its answer says why
                resp = dict(BLANK, query=q, error=str(exc))
            write(resp)
            done += 1
    except ServeUnavailable:
        pass  # the rest in-process
    finally:
        client.close()
    return done


def served_status(root: Path, settings: Any) -> tuple[dict[str, Any], Any] | None:
    """(``status --json`` object, IndexStatus) from a running server, or None."""
    from aide_tui.core.status import IndexStatus
    from aide_tui.host.client import ServeUnavailable, connect

    client = connect(root, settings)
    if client is None:
        return None
    try:
        obj = client.status()
    except ServeUnavailable:
        return None
    finally:
        client.close()
    names = {f.name for f in fields(IndexStatus)}
    return obj, IndexStatus(**{k: v for k, v in obj.items() if k in names})
