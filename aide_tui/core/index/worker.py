"""The long-lived indexing process behind :class:`~aide_tui.core.index.service.IndexService`.

    python -m aide_tui.core.index.worker ROOT SETTINGS_JSON

One process serves every reindex of a session, so an edit costs neither a Python start-up nor
reloading the vocabulary, the embedding cache or the encoder. It runs a little below normal priority
(nice 2): an edit's lexical update is small and should land at once even on a busy machine. Bulk
embedding runs in the encoder's worker processes at low priority (nice 10, ``SCHED_BATCH``), so the
interface always wins the CPU.

Requests arrive as JSON lines on stdin: ``{"op": "run", "rebuild": bool, "priority": [paths]}``,
``{"op": "yield"}`` (newer work waits: stop embedding at the next batch, after committing),
``{"op": "cancel"}`` and ``{"op": "exit"}``. Events leave as JSON lines on stdout
(:mod:`aide_tui.core.events`); every run ends with exactly one Done, Failed or Cancelled.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from aide_tui.core.embed.base import Embedder
from aide_tui.core.priority import WORKER_NICE, lower_priority


def main(argv: list[str]) -> int:
    """Serve indexing requests for one workspace until stdin closes or ``exit`` arrives."""
    from aide_tui.core.config import Settings, apply_mapping
    from aide_tui.core.embed.factory import make_embedder
    from aide_tui.core.errors import EmbedderError, IndexProblem
    from aide_tui.core.events import Cancelled, Event, Failed, event_to_json
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.index.service import settings_from_child_env
    from aide_tui.core.index.stores import recorded_embedder

    root = Path(argv[0])
    settings = apply_mapping(Settings(), settings_from_child_env(argv[1]), "settings")
    from aide_tui.core.embed.pool import die_with_parent

    # the service starts this process from a thread that ends when it is idle: watch the parent process
    die_with_parent(os.getppid(), kernel=False)
    lower_priority(WORKER_NICE, batch=False)
    # SIGTERM (a host stopping while a commit runs long) ends the process the normal way: the encoder
    # pool is shut down and its semaphores released (a kill leaves them to the resource tracker's
    # "leaked semaphore" warning)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    out_lock = threading.Lock()

    def emit(event: Event) -> None:
        line = json.dumps(event_to_json(event))
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    try:
        embedder: Embedder | None = make_embedder(
            settings, for_indexing=True, recorded=recorded_embedder(root, settings)
        )
        emb_error = None
    except EmbedderError as exc:
        embedder, emb_error = None, str(exc)
    indexer = Indexer(root, settings, embedder, emb_error)
    requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
    cancel = threading.Event()
    yield_now = threading.Event()
    threading.Thread(target=_read_requests, args=(requests, cancel, yield_now), daemon=True).start()
    try:
        while True:
            req = requests.get()
            if req is None:
                return 0
            cancel.clear()
            yield_now.clear()
            try:
                report = indexer.run(
                    on_progress=emit,
                    cancel=cancel,
                    rebuild=bool(req.get("rebuild")),
                    priority=[str(p) for p in req.get("priority") or []][:2000],
                    should_yield=yield_now.is_set,
                    paths=None if req.get("paths") is None else [str(p) for p in req["paths"]],
                )
            except IndexProblem as exc:
                emit(Failed(str(exc)))
                continue
            except OSError as exc:
                emit(Failed(f"cannot write the index: {exc}"))
                continue
            emit(Cancelled() if report.cancelled else report)
    finally:
        close = getattr(embedder, "close", None)
        if close is not None:
            close()


def _read_requests(
    requests: queue.Queue[dict[str, Any] | None], cancel: threading.Event, yield_now: threading.Event
) -> None:
    """Stdin reader: runs are queued; cancel and yield act at once on the run in progress."""
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        op = req.get("op") if isinstance(req, dict) else None
        if op == "run":
            requests.put(req)
        elif op == "yield":
            yield_now.set()
        elif op == "cancel":
            cancel.set()
        elif op == "exit":
            break
    cancel.set()
    requests.put(None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
