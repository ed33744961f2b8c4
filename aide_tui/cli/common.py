"""What the subcommands share: settings, the embedder, running the indexer with progress on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aide_tui.core.textsafe import printable

__all__ = ["err", "make_embedder", "path_from_cwd", "printable", "root_arg", "setup"]


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


def setup(root_arg: str, args: argparse.Namespace) -> tuple[Path, Any] | None:
    """(resolved root, settings), or None after printing why (the caller exits 2)."""
    from aide_tui.cli.parser import flags
    from aide_tui.core.config import Settings, apply_mapping, load_settings
    from aide_tui.core.errors import ConfigError

    root = Path(root_arg).expanduser()
    if not root.is_dir():
        err(_not_a_folder(root_arg, root))
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


def _checked(root: Path, settings: Any) -> tuple[Path, Any] | None:
    """A store needs its extra installed (milvus): else one line with the install command (exit 2)."""
    from aide_tui.core.search.stores import store_missing

    missing = store_missing(settings)
    if missing:
        err(missing)
        return None
    return root, settings


def make_embedder(
    settings: Any, for_indexing: bool = False, root: Path | None = None, for_queries: bool = False
) -> tuple[Any, str | None]:
    """(embedder or None, why it is unusable or None); with ``root``, the runtime of the vectors the
    workspace's index holds when the settings leave it to ``auto`` (``for_queries``: see the factory)."""
    from aide_tui.core.embed.factory import make_embedder as make
    from aide_tui.core.errors import EmbedderError
    from aide_tui.core.index.stores import recorded_embedder

    try:
        recorded = recorded_embedder(root, settings) if root is not None else None
        return make(settings, for_indexing=for_indexing, recorded=recorded, for_queries=for_queries), None
    except EmbedderError as exc:
        return None, str(exc)


def run_index(
    root: Path,
    settings: Any,
    embedder: Any,
    emb_err: str | None,
    rebuild: bool = False,
    as_json: bool = False,
    priority: tuple[str, ...] = (),
    embed: bool = True,
) -> Any:
    """Run the indexer; progress goes to stderr on a terminal, or as JSON event lines with ``as_json``."""
    from aide_tui.core.events import Event, Progress, event_to_json
    from aide_tui.core.index.indexer import Indexer

    show = sys.stderr.isatty() and not as_json

    def progress(p: Event) -> None:
        if as_json:
            print(json.dumps(event_to_json(p)), flush=True)
            return
        if not show or not isinstance(p, Progress):
            return
        if p.state == "distilling":
            line = p.message
        elif p.state == "embedding" and p.vectors_total:
            line = f"embedding {p.vectors_done}/{p.vectors_total} vectors"
        elif p.state == "indexing" and p.files_total and p.files_done >= p.files_total:
            line = f"writing the index of {p.files_total} files"  # the last phase, seconds on a big tree
        elif p.files_total:
            line = f"{p.state} {p.files_done}/{p.files_total} files"
        else:
            line = f"{p.state} {p.message}".strip()
        print(f"\r\x1b[K{printable(line)}", end="", file=sys.stderr, flush=True)  # quotes file names

    try:
        report = Indexer(root, settings, embedder, emb_err).run(
            on_progress=progress, rebuild=rebuild, priority=priority, embed=embed
        )
    finally:
        if hasattr(embedder, "close"):
            embedder.close()
    if show:
        print("\r\x1b[K", end="", file=sys.stderr)
    if not as_json:
        for msg in report.messages:
            err(msg)
    return report
