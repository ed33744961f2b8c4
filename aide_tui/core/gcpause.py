"""The cyclic garbage collector paused while a batch is read, chunked, embedded and written.

A cold build allocates millions of short-lived objects (parse trees, term counts, chunk texts) that
hold no cycles; reference counting frees them, but every generation-2 collection still walks the whole
heap: a quarter of the CPU of a cold build (SQLAlchemy 41 -> 31 CPU-s, the same peak memory). The pause
lasts one batch; collection resumes after it, and pauses nest (threads included).

A long-lived reader has the same problem with what it loaded: a loaded version is hundreds of thousands
of objects that live until the next version, and each generation-2 collection walks them all (about
100 ms on the 5.9M-line monorepo benchmark, in the middle of whichever search allocated last).
:func:`freeze_heap` collects once after a load and moves the survivors to the permanent generation,
which collections skip. An old version is freed by reference counting when the next replaces it (it
holds no reference cycle); what other cycles leave frozen is freed by every eighth call, which
unfreezes everything first and walks the whole heap (a few hundred ms in the app).

A one-shot command (``search``, ``defs``, ``ask`` without a host) loads a version, answers and exits:
it loads and answers with collection paused and :func:`freeze_loaded` keeps the version out of later
walks without a collection (20–25 ms of a 0.5 s one-shot search on the monorepo benchmark).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator

FULL_EVERY = 8  # freezes between two full collections (unfrozen first)
FULL_AFTER = 300.0  # ... or seconds

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_freezes = 0
_full_at = 0.0


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


def freeze_loaded() -> None:
    """Keep everything alive now out of later collections' walks, without collecting first: for a
    short-lived process after its one load (what the load left in cycles lives until exit)."""
    gc.freeze()


def freeze_heap() -> None:
    """Collect, then keep everything alive now out of later collections' walks (a long-lived reader,
    after loading a version; off the query path). Usually the collection walks only what is not frozen
    yet (the new version); every ``FULL_EVERY``-th call, or ``FULL_AFTER`` seconds after the last full
    one, it unfreezes everything first, so what older versions left in reference cycles is freed too."""
    global _freezes, _full_at
    with _lock:
        now = time.monotonic()
        if _freezes % FULL_EVERY == 0 or now - _full_at > FULL_AFTER:
            gc.unfreeze()
            _full_at = now
        gc.collect()
        gc.freeze()
        _freezes += 1
