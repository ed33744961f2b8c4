"""Long-running front ends over one warm workspace: ``aide-tui serve`` (the workspace protocol on its
private Unix socket, optionally loopback TCP with a token) and ``aide-tui mcp`` (Model Context Protocol
over stdio). Both host the workspace (:mod:`aide_tui.host`) or attach to its host; neither owns indexing
logic. Only ``mcp_server`` needs the optional ``mcp`` extra (the official ``mcp`` SDK; ``serve`` is its old
name and still installs it).
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = "pip install 'aide-tui[mcp]' (from a checkout of aide-tui: pip install '.[mcp]')"
EXTRA_MODULES = ("mcp",)


def missing_extra() -> list[str]:
    """The modules of the ``mcp`` extra that are not installed (empty when it is)."""
    return [name for name in EXTRA_MODULES if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules
        return False
