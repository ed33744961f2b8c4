"""File watching: turn watchfiles change batches into the set of workspace files worth reindexing."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from watchfiles import Change

from aide_tui.core.config import Settings
from aide_tui.core.scan import Scanner

# watchfiles grouping: a batch is yielded after QUIET_MS without changes, or after MAX_GROUP_MS at most.
# Waiting for quiet (not the default 50 ms) keeps a multi-second `git checkout` to one or two reindexes.
QUIET_MS = 400
MAX_GROUP_MS = 5000


class ChangeFilter:
    """A ``watch_filter`` for watchfiles that applies the scanner's ignore rules.

    Changes to ``.gitignore``/``.aideignore`` pass (they change what is indexed) and clear the cache.
    """

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = os.path.realpath(root)
        self.settings = settings
        self._scanner = self._new_scanner()

    def _new_scanner(self) -> Scanner:
        s = self.settings.index
        return Scanner(Path(self.root), s.max_file_kb * 1024, s.exclude, s.include_sensitive)

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
