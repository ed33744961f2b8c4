"""The cyclic garbage collector paused while a batch is read, chunked, embedded and written.

A cold build allocates millions of short-lived objects (parse trees, term counts, chunk texts) that
hold no cycles; reference counting frees them, but every generation-2 collection still walks the whole
heap: a quarter of the CPU of a cold build (SQLAlchemy 41 -> 31 CPU-s, the same peak memory). The pause
lasts one batch; collection resumes after it, and pauses nest (threads included).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collection off for the block (on again after the outermost one, when it was on before)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
