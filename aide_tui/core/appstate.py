"""Per-workspace app state in the XDG state folder (never inside the workspace): query history, the last
search mode, layout and query, and the user's theme.

``$XDG_STATE_HOME/aide-tui/`` (default ``~/.local/state/aide-tui/``) holds ``app.json`` (the theme,
for every workspace) and one folder per workspace, named after the folder plus a hash of its path,
with ``state.json``. Files are written atomically; an unreadable file reads as empty state.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aide_tui.core.config import MODES

HISTORY_CAP = 500


def state_home() -> Path:
    """``$XDG_STATE_HOME/aide-tui`` (default ``~/.local/state/aide-tui``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "aide-tui"


def workspace_state_dir(root: Path) -> Path:
    """The state folder of one workspace: ``<name>-<hash of the resolved path>``."""
    resolved = str(Path(root).resolve())
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(resolved).name)[:40] or "root"
    return state_home() / "workspaces" / f"{name}-{digest}"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic write (temporary file + rename); a failure leaves the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def add_to_history(history: list[str], query: str, cap: int = HISTORY_CAP) -> list[str]:
    """``history`` (oldest first) with ``query`` as the newest entry, no duplicates, at most ``cap``."""
    query = query.strip()
    if not query:
        return history
    out = [q for q in history if q != query]
    out.append(query)
    return out[-cap:] if cap > 0 else []


@dataclass
class WorkspaceState:
    """What the app remembers about one workspace."""

    root: str = ""
    history: list[str] = field(default_factory=list)  # oldest first
    mode: str | None = None
    preview: bool = True
    last_query: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "history": self.history,
            "mode": self.mode,
            "preview": self.preview,
            "last_query": self.last_query,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkspaceState:
        history = data.get("history")
        mode = data.get("mode")
        return cls(
            root=str(data.get("root") or ""),
            history=[str(q) for q in history if isinstance(q, str)] if isinstance(history, list) else [],
            mode=mode if mode in MODES else None,
            preview=bool(data.get("preview", True)),
            last_query=str(data.get("last_query") or ""),
        )


class AppState:
    """Loads and saves one workspace's state and the user-wide app state (theme)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.dir = workspace_state_dir(self.root)
        self.path = self.dir / "state.json"
        self.app_path = state_home() / "app.json"
        self.workspace = WorkspaceState.from_json(_read_json(self.path))
        self.workspace.root = str(self.root)
        self.theme: str | None = _read_json(self.app_path).get("theme") or None

    def save(self) -> None:
        """Write the workspace state (errors are the caller's to report)."""
        _write_json(self.path, self.workspace.to_json())

    def save_theme(self, theme: str) -> None:
        self.theme = theme
        data = _read_json(self.app_path)
        data["theme"] = theme
        _write_json(self.app_path, data)

    def record(self, query: str, cap: int = HISTORY_CAP) -> bool:
        """Add ``query`` to the history; True when it changed."""
        before = list(self.workspace.history)
        self.workspace.history = add_to_history(self.workspace.history, query, cap)
        return self.workspace.history != before

    def results_file(self) -> Path:
        """Where the app writes the current results as vimgrep lines."""
        return self.dir / "results.vimgrep"
