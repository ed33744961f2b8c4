"""The static tier as an indexing run uses it: its table opened (or distilled, the first time on a
machine) in the background while the run chunks, and vectors for a batch of pieces.

A batch committed while the table is ready carries its static vectors in the same commit as its
lexical rows; a batch committed before (only on a machine that has never distilled the table) gets
them in one later commit per segment, when the table is ready.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from aide_tui.core.config import Settings
from aide_tui.core.embed.factory import make_static
from aide_tui.core.embed.static import StaticEmbedder
from aide_tui.core.errors import EmbedderError
from aide_tui.core.events import Event, Progress
from aide_tui.core.store.quantize import pack


class StaticTier:
    """One static embedder, loaded once per process in a background thread."""

    def __init__(self, embedder: StaticEmbedder) -> None:
        self.embedder = embedder
        self.error: str | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._progress: tuple[int, int] = (0, 0)
        self._emit: Callable[[Event], None] | None = None
        self.cached = False  # the table was built before: loading it takes a fraction of a second

    @property
    def id(self) -> str:
        return self.embedder.id

    @property
    def ready(self) -> bool:
        """Whether vectors can be computed now (the table is loaded)."""
        t = self._thread
        return t is not None and not t.is_alive() and self.error is None

    @property
    def failed(self) -> bool:
        t = self._thread
        return t is not None and not t.is_alive() and self.error is not None

    def start(self, emit: Callable[[Event], None]) -> None:
        """Open the table in the background (distilling it when the machine has none yet)."""
        with self._lock:
            self._emit = emit
            if self._thread is not None:
                return
            self.cached = self.embedder.ready()
            self._thread = threading.Thread(target=self._load, name="aide-static-tier", daemon=True)
            self._thread.start()

    def _load(self) -> None:
        last = [0.0]

        def progress(done: int, total: int) -> None:
            self._progress = (done, total)
            now = time.monotonic()
            emit = self._emit
            if emit is not None and (now - last[0] > 0.5 or done == total):
                last[0] = now
                emit(
                    Progress(
                        "distilling", message=f"static tier: distilling the word-piece table {done}/{total}"
                    )
                )

        try:
            self.embedder.load(progress)
        except EmbedderError as exc:
            self.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a failed table must not cost the lexical index
            self.error = f"static tier unavailable: {exc.__class__.__name__}: {exc}"

    def wait(self, keep_waiting: Callable[[], bool]) -> bool:
        """Wait for the table while ``keep_waiting()`` says so; True when it is ready."""
        t = self._thread
        while t is not None and t.is_alive():
            if not keep_waiting():
                return False
            t.join(0.05)
        return self.ready

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' static vectors as the store keeps them: packed rows (quantize.py)."""
        return pack(self.embedder.embed(list(texts)))


_TIERS: dict[str, StaticTier] = {}
_TIERS_LOCK = threading.Lock()


def static_tier_for(settings: Settings) -> StaticTier | None:
    """The static tier these settings ask for (one per process and model), None when it is off."""
    embedder = make_static(settings)
    if embedder is None:
        return None
    key = settings.embedding.model_dir or ""
    with _TIERS_LOCK:
        tier = _TIERS.get(key)
        if tier is None:
            tier = _TIERS[key] = StaticTier(embedder)
        return tier
