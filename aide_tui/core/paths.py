"""Where a workspace's state lives: ``<root>/.aide`` (index, cache, config), or a per-workspace folder in
the user's cache dir when the workspace is read-only or its ``.aide`` cannot be trusted.

A cloned repository may ship its own ``.aide/``: a symlinked or foreign-owned ``.aide`` or
``.aide/index`` is never written through; the index then lives in the fallback folder instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

MANIFEST = "manifest.json"
GITIGNORE = "*\n"  # .aide/.gitignore: keep the index out of `git status`, as pytest and ruff do


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/aide-tui`` (default ``~/.cache/aide-tui``): this user's, shared by workspaces."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "aide-tui"


MODELS_ENV = "AIDE_MODELS_DIR"


def models_dir() -> Path:
    """Where files derived from the built-in model are cached (its onnx graphs, the static tier's table):
    ``$AIDE_MODELS_DIR`` when set (one folder several users or caches share), else
    ``$XDG_CACHE_HOME/aide-tui/models``."""
    chosen = os.environ.get(MODELS_ENV)
    return Path(chosen).expanduser() if chosen else user_cache_dir() / "models"


def fallback_dir(root: Path) -> Path:
    """``$XDG_CACHE_HOME/aide-tui/<name>-<hash of the real path>``."""
    real = os.path.realpath(root)
    tag = hashlib.sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return user_cache_dir() / f"{Path(real).name or 'root'}-{tag}"


def trusted_dir(path: Path) -> bool:
    """True when ``path`` is a real directory (not a symlink) owned by us, or does not exist yet."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    return not hasattr(os, "geteuid") or st.st_uid == os.geteuid()


def private_dir(path: Path, within: Path | None = None) -> Path:
    """Create ``path`` (and parents) if needed and make it user-only (0700) whatever the umask. With
    ``within`` (a folder above ``path``) only what lies below it is made: FileNotFoundError when it is
    gone, so a writer inside a workspace that was moved or deleted never makes that workspace again."""
    if within is None:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    else:
        folder = Path(within)
        for part in Path(path).relative_to(within).parts:
            folder = folder / part
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700)
    with contextlib.suppress(OSError):
        if stat.S_IMODE(os.stat(path).st_mode) != 0o700:
            os.chmod(path, 0o700)
    return path


def _usable(state: Path) -> bool:
    """A state folder we may write: trusted ``.aide`` and ``.aide/index`` that accept a probe file."""
    if not (trusted_dir(state) and trusted_dir(state / "index")):
        return False
    try:
        private_dir(state / "index", within=state.parent)
        os.chmod(state, 0o700)
        probe = state / "index" / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        return False
    _write_gitignore(state)
    return True


def _write_gitignore(state: Path) -> None:
    ignore = state / ".gitignore"
    if not os.path.lexists(ignore):
        with contextlib.suppress(OSError):
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(GITIGNORE)


def _has_index(state: Path) -> bool:
    return trusted_dir(state) and trusted_dir(state / "index") and os.path.lexists(state / "index" / MANIFEST)


def state_dir(root: Path, create: bool = True) -> Path:
    """``<root>/.aide`` when usable, else the fallback folder. ``create=False`` only looks (readers)."""
    local = Path(root) / ".aide"
    if not create:
        if _has_index(local):
            return local
        fb = fallback_dir(root)
        return fb if _has_index(fb) else local
    if not os.path.isdir(root):  # never recreate a workspace that was moved or deleted
        raise FileNotFoundError(f"{root}: the workspace folder is gone (moved or deleted)")
    if _usable(local):
        return local
    fb = fallback_dir(root)
    private_dir(fb)
    return fb


def state_note(root: Path) -> str | None:
    """Why the index is not under ``<root>/.aide`` (None when it is): for messages."""
    local = Path(root) / ".aide"
    if not (trusted_dir(local) and trusted_dir(local / "index")):
        return f"{local} is a symlink or belongs to another user: not trusted, using {fallback_dir(root)}"
    return None


def index_dir_for(root: Path, create: bool = True) -> Path:
    """The index folder of a workspace (its state dir's ``index``)."""
    return state_dir(root, create=create) / "index"


def cache_dir_for(state: Path) -> Path:
    """The user-only embedding cache folder inside a state dir."""
    return private_dir(state / "cache" / "embeddings", within=state)
