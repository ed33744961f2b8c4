"""Process priority: background work (indexing, bulk embedding) yields the CPU to interactive work."""

from __future__ import annotations

import os

NICE = 10
WORKER_NICE = 2


def lower_priority(nice: int = NICE, batch: bool = True) -> None:
    """Make this process (and the processes it starts) yield the CPU to interactive work."""
    try:
        os.nice(max(0, nice - os.nice(0)))
    except OSError:
        pass
    if not batch:
        return
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        pass
