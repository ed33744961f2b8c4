"""What the subcommands share: the root and settings, stderr lines, paths as the shell sees them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aide_tui.core.textsafe import printable

if TYPE_CHECKING:
    from aide_tui.core.config import Settings

__all__ = ["err", "path_from_cwd", "printable", "root_arg", "setup"]


def err(message: str) -> None:
    """One line on stderr, prefixed with the program name (control characters escaped: messages
    quote file names, ignore-file paths and server replies)."""
    print(f"aide-tui: {printable(message)}", file=sys.stderr)


def path_from_cwd(root: Path, rel: str) -> str:
    """A workspace path as the user's shell sees it: relative to the current folder when under it."""
    full = root / rel
    try:
        return str(full.relative_to(Path.cwd()))
    except ValueError:
        return str(full)


def root_arg(args: argparse.Namespace) -> str | None:
    """The root given as ROOT or ``--path`` (default "."); None after saying why when both name
    different folders (the caller exits 2)."""
    given, opt = getattr(args, "root", None), getattr(args, "path_opt", None)
    if given is not None and opt is not None and Path(given).expanduser() != Path(opt).expanduser():
        err(f"two roots given ({printable(given)} and --path {printable(opt)}): give one")
        return None
    return opt or given or "."


def setup(
    root_arg: str, args: argparse.Namespace, *, new_workspace: bool = True
) -> tuple[Path, Settings] | None:
    """(resolved root, settings), or None after printing why (the caller exits 2). A command that may
    make the root a workspace (``new_workspace``) refuses the file system's root and the home folder
    when they are only the current folder, "." (see :func:`aide_tui.host.scope.too_broad`)."""
    from aide_tui.cli.parser import flags
    from aide_tui.core.config import Settings, apply_mapping, load_settings
    from aide_tui.core.errors import ConfigError

    root = Path(root_arg).expanduser()
    if not root.is_dir():
        err(_not_a_folder(root_arg, root))
        return None
    if new_workspace and root_arg in (".", "./"):  # the current folder, not named
        from aide_tui.host.scope import too_broad

        why = too_broad(root.resolve())
        if why is not None:
            err(why)
            return None
    try:
        if getattr(args, "settings_json", None):  # already resolved by the parent process
            from aide_tui.core.index.service import settings_from_child_env

            data = settings_from_child_env(args.settings_json)
            return _checked(root.resolve(), apply_mapping(Settings(), data, "settings"))
        notes: list[str] = []  # what the workspace config set but may not (ignored)
        settings = load_settings(root.resolve(), flags(args), notes=notes)
    except (ConfigError, ValueError) as exc:  # ValueError: settings handed over by a parent process
        err(f"config error: {exc}")
        return None
    for note in notes:
        err(f"note: {note}")
    return _checked(root.resolve(), settings)


def _not_a_folder(given: str, root: Path) -> str:
    """Why ``root`` (not a folder) cannot be a workspace, in the user's words."""
    if root.is_file():
        return f"{given} is a file, not a folder: give the folder that holds it"
    if root.exists():
        return f"{given} is not a folder"
    try:
        root.lstat()
    except OSError:
        return f"{given}: no such folder"
    return f"{given}: a broken symbolic link, not a folder"


def _checked(root: Path, settings: Settings) -> tuple[Path, Settings] | None:
    """A store needs its extra installed (milvus): else one line with the install command (exit 2)."""
    from aide_tui.core.search.stores import store_missing

    missing = store_missing(settings)
    if missing:
        err(missing)
        return None
    return root, settings
