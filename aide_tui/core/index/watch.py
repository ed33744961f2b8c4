"""File watching: turn watchfiles change batches into sets of workspace files worth reindexing.

A lone edit is reported after a short settle (``SETTLE_MS``) so it is searchable at once; while
events keep arriving (a checkout, a build, a copy of 2,000 files) they are coalesced until the tree
has been quiet for ``QUIET_MS`` (at most ``MAX_GROUP_MS``), so a storm costs one or two reindexes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from watchfiles import Change

from aide_tui.core.config import Settings
from aide_tui.core.index.scan import DEFAULT_EXCLUDED_DIRS, Scanner

SETTLE_MS = 30  # a raw batch ends after this much quiet
QUIET_BEFORE_MS = 1000  # a batch after this much quiet is a lone edit: reported at once
LONE_EDIT_MAX = 20  # ... if it names at most this many files
QUIET_MS = 400  # otherwise changes are coalesced until this much quiet
MAX_GROUP_MS = 5000  # or this long at most


class ChangeFilter:
    """A ``watch_filter`` for watchfiles that applies the scanner's ignore rules.

    Changes to ``.gitignore``/``.aideignore`` pass (they change what is indexed) and clear the cache.
    """

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = os.path.realpath(root)
        self.settings = settings
        self._scanner = self._new_scanner()

    def _new_scanner(self) -> Scanner:
        return Scanner.from_settings(Path(self.root), self.settings)

    def relative(self, path: str) -> str | None:
        """Posix path relative to the root, or None when outside it."""
        real = os.path.abspath(path)
        if not real.startswith(self.root + os.sep):
            return None
        return os.path.relpath(real, self.root).replace(os.sep, "/")

    def __call__(self, change: Change, path: str) -> bool:
        rel = self.relative(path)
        if rel is None:
            return False
        name = rel.rsplit("/", 1)[-1]
        if any(part in DEFAULT_EXCLUDED_DIRS for part in rel.split("/")[:-1]):
            return False  # .git, .aide (our own writes), node_modules, ...
        if name in (".gitignore", ".aideignore"):
            self._scanner = self._new_scanner()
            return True
        if name.startswith(".") and name.endswith((".swp", ".swx", ".tmp")) or name.endswith("~"):
            return False  # editor temp files
        try:
            return not self._scanner.is_ignored(rel, is_dir=os.path.isdir(path))
        except (OSError, ValueError):
            return True


def changed_paths(filt: ChangeFilter, changes: Iterable[tuple[Change, str]]) -> set[str]:
    """The distinct workspace-relative paths in a batch of changes that pass the filter."""
    out: set[str] = set()
    for change, path in changes:
        rel = filt.relative(path)
        if rel is not None and filt(change, path):
            out.add(rel)
    return out


def only_own_writes(filt: ChangeFilter, changes: Iterable[tuple[Change, str]]) -> bool:
    """Whether every change is under the workspace's ``.aide/`` (our commits, merges and cache saves):
    those are not the user's activity and must not turn the next lone edit into a storm."""
    for _, path in changes:
        rel = filt.relative(path)
        if rel is None or not (rel == ".aide" or rel.startswith(".aide/")):
            return False
    return True


def watch_batches(root: Path, settings: Settings, stop: threading.Event) -> Iterator[set[str]]:
    """Yield the workspace-relative paths worth reindexing, batch by batch, until ``stop`` is set.

    Raises whatever watchfiles raises when the workspace cannot be watched.
    """
    from watchfiles import watch

    filt = ChangeFilter(root, settings)
    pending: set[str] = set()
    first_at = 0.0
    last_activity = -1e9
    for changes in watch(
        root,
        watch_filter=None,
        debounce=QUIET_MS,
        step=SETTLE_MS,
        stop_event=stop,
        rust_timeout=100,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        now = time.monotonic()
        if changes and not only_own_writes(filt, changes):
            paths = changed_paths(filt, changes)
            quiet_before = (now - last_activity) * 1000 >= QUIET_BEFORE_MS
            last_activity = now
            if paths and not pending and quiet_before and len(paths) <= LONE_EDIT_MAX:
                yield paths
                continue
            if paths and not pending:
                first_at = now
            pending |= paths
        if pending and ((now - last_activity) * 1000 >= QUIET_MS or (now - first_at) * 1000 >= MAX_GROUP_MS):
            yield pending
            pending = set()
