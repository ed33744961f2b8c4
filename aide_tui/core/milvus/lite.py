"""Milvus Lite: an engine inside the process that opens a ``*.db`` folder (one process at a time).

Whether this process serves a folder, waiting while another process holds it, and checking a folder
before opening it (the engine crashes on a damaged one).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def quiet_engine_logs() -> None:
    """Milvus Lite logs its own failures with tracebacks on stderr; we report them in one line instead."""
    import logging

    for name in ("milvus_lite", "pymilvus", "grpc"):  # grpc: the engine's server logs unimplemented calls
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def served_here() -> set[str]:
    """Lite folders whose engine runs in this process (pymilvus reuses it for every client)."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return set()
    return set(getattr(server_manager_instance, "_servers", {}))


def release_engine(uri: str) -> None:
    """Stop the engine this process runs for the Lite folder ``uri`` (the folder is free again)."""
    if os.path.abspath(uri) in served_here():
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(uri)


def wait_for_lite(folder: Path, wait: float) -> bool:
    """Whether the Lite folder is free to open (polls up to ``wait`` seconds while another process has it)."""
    lock = folder / "LOCK"
    if not lock.exists() or os.path.abspath(folder) in served_here():
        return True  # nobody has it, or this process does (its engine serves every client here)
    try:
        import fcntl
    except ImportError:  # Windows: let the engine say it
        return True
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
        finally:
            os.close(fd)
        time.sleep(0.1)


def lite_damage(folder: Path) -> str | None:
    """Why a Milvus Lite data folder cannot be opened (None when it looks intact)."""
    if not folder.is_dir():
        return "not a Milvus Lite data folder"
    for name in ("collections", "databases"):
        if not (folder / name).is_dir():
            return f"its {name}/ folder is missing"
    for manifest in [*folder.glob("collections/*/manifest.json"), *folder.glob("collections/*/schema.json")]:
        try:
            json.loads(manifest.read_bytes())
        except (OSError, ValueError):
            return f"{manifest.relative_to(folder)} is not readable JSON"
    return None
