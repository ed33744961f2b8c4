"""One-shot commands through the workspace's running host: ``search``, ``defs``, ``refs`` and
``status`` when it runs with the same settings, ``index`` whatever its settings (it indexes; the command
waits for the run).

Answers come from the host's warm index with output identical to in-process work; whenever the host
cannot answer (none running, other settings, a refused request), the caller carries on in-process.
Nothing here imports the search side (numpy): a served answer stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aide_tui.core.config import Settings

if TYPE_CHECKING:
    from aide_tui.core.events import Done
    from aide_tui.core.status import IndexStatus
    from aide_tui.host.client import ServeClient


def _connect(root: Path, settings: Settings, any_settings: bool = False) -> ServeClient | None:
    """A client for the host of ``root`` (see ``client.connect``), or None. Without a socket where a host
    would listen nothing is tried, and the HTTP client (http.client and ssl: 15 ms of a one-shot
    command) is never imported."""
    from aide_tui.host.locations import listening_sockets

    if not listening_sockets(Path(root)):
        return None
    from aide_tui.host.client import connect

    return connect(root, settings, any_settings)


# SearchResponse(query, []).to_json(), without importing the search module (numpy) on the served path
BLANK: dict[str, Any] = {
    "query": "", "degraded": False, "degraded_reason": None, "took_ms": 0.0,
    "vectors_missing": 0, "static_missing": 0, "results": [],
}  # fmt: skip


def served_search(
    root: Path,
    settings: Settings,
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
    if mode == "dense" and settings.embedding.backend == "none":
        return 0
    client = _connect(root, settings)
    if client is None:
        return 0
    from aide_tui.host.client import BadRequest, ServeUnavailable

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


def served_symbols(root: Path, settings: Settings, what: str, name: str, limit: int) -> dict[str, Any] | None:
    """The ``defs`` (``what`` "definitions") or ``refs --json`` object from a running host, or None (none
    runs, or it could not answer: the caller looks the name up in-process, which says why)."""
    client = _connect(root, settings)
    if client is None:
        return None
    from aide_tui.host.client import BadRequest, ServeUnavailable

    try:
        return client.symbols(what, name, limit)
    except (BadRequest, ServeUnavailable):
        return None
    finally:
        client.close()


def served_status(root: Path, settings: Settings) -> tuple[dict[str, Any], IndexStatus] | None:
    """(``status --json`` object, IndexStatus) from a running server, or None."""
    client = _connect(root, settings)
    if client is None:
        return None
    from aide_tui.core.status import IndexStatus
    from aide_tui.host.client import ServeUnavailable

    try:
        obj = client.status()
    except ServeUnavailable:
        return None
    finally:
        client.close()
    names = {f.name for f in fields(IndexStatus)}
    return obj, IndexStatus(**{k: v for k, v in obj.items() if k in names})


def workspace_status(
    root: Path, settings: Settings, use_server: bool = True
) -> tuple[dict[str, Any] | None, IndexStatus]:
    """(the host's ``status --json`` object or None, the status): through the running host when
    ``use_server`` and it serves the same settings (a local store: a shared store's status is read from
    the store), else read from the store without loading the index."""
    from aide_tui.core.search.stores import store_status
    from aide_tui.core.storekind import store_kind

    served = served_status(root, settings) if use_server and not store_kind(settings).shared else None
    return served if served is not None else (None, store_status(root, settings))


def served_index(root: Path, settings: Settings, rebuild: bool) -> Done | None:
    """When another process hosts the workspace, it indexes: ask it and wait for the run (its done
    event); None when nobody hosts it (index here). IndexProblem when the host did not index it."""
    client = _connect(root, settings, any_settings=True)
    if client is None:
        return None
    from aide_tui.core.errors import IndexProblem
    from aide_tui.core.events import Done, event_from_json
    from aide_tui.host.client import ServeUnavailable

    try:
        outcome = event_from_json(client.reindex(rebuild=rebuild, wait=True))
    except ServeUnavailable as exc:
        raise IndexProblem(f"the process hosting {root} did not index it: {exc}") from None
    finally:
        client.close()
    if not isinstance(outcome, Done):
        why = getattr(outcome, "message", "") or "no answer"
        raise IndexProblem(f"the process hosting {root} could not index it: {why}")
    return outcome
