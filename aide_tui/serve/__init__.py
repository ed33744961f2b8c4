"""Long-running front ends over one warm workspace: ``aide-tui serve`` (HTTP/1.1 JSON on a private Unix
socket, optionally loopback TCP with a token) and ``aide-tui mcp`` (Model Context Protocol over stdio).

Both are thin layers over :class:`aide_tui.core.live.LiveWorkspace`; neither owns indexing logic.
Only ``app``, ``runner`` and ``mcp_server`` need the optional ``aide-tui[serve]`` extra; ``client``,
``locations`` and ``jail`` use the default install, so ``aide-tui search`` can talk to a running server.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = "pip install 'aide-tui[serve]'"
EXTRA_MODULES = ("starlette", "uvicorn", "mcp")


def missing_extra() -> list[str]:
    """The modules of the ``serve`` extra that are not installed (empty when it is)."""
    return [name for name in EXTRA_MODULES if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules
        return False
