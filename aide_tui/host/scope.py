"""A search kept to a folder inside an indexed workspace (``search --path DIR`` from deep in a checkout,
DIR without an index of its own): the enclosing workspace's index answers, kept to DIR's files, with
their paths relative to DIR, as its own index would give them (no second index of the same files, no
second background host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aide_tui.core.paths import state_dir
from aide_tui.host.lock import host_pid


def _indexed(root: Path) -> bool:
    """Whether ``root`` has an index of its own (being built or served by its host, or readable). The
    host is asked after first: a search it answers never loads the store (numpy, 0.15 s of a call)."""
    if host_pid(state_dir(root, create=False)) is not None:
        return True
    from aide_tui.core.store.status import has_readable_index

    return has_readable_index(root)


def too_broad(root: Path) -> str | None:
    """Why ``root``, the current folder, does not become a workspace unasked: it is the file system's
    root or the home folder (a search typed in the wrong terminal would index everything under it) and
    has no index yet; None when it may. Naming the folder itself indexes it."""
    try:
        home = Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        home = None
    if root == Path(root.anchor):
        what = "the root of the file system"
    elif root == home:
        what = "your home folder"
    else:
        return None
    if _indexed(root):
        return None
    return (
        f"{root} is {what}: making it a workspace would index everything under it. Run this in a "
        f"project's folder or name one (aide-tui search QUERY ~/src/project); to index this folder "
        f"anyway, name it: aide-tui index {root}"
    )


def enclosing_workspace(root: Path) -> tuple[Path, str] | None:
    """The indexed workspace ``root`` sits inside, and ``root``'s path in it, when ``root`` has no index
    of its own; None otherwise."""
    if _indexed(root):
        return None
    for outer in root.parents:
        if _indexed(outer):
            return outer, root.relative_to(outer).as_posix()
    return None


class Within:
    """Answers from an enclosing workspace's index kept to ``rel``'s files, with their paths relative to
    the root that was asked for (as its own index would give them)."""

    def __init__(self, rel: str) -> None:
        self.prefix = rel.rstrip("/") + "/"

    def query(self, q: str) -> str:
        return f"{q} path:{self.prefix}*" if q.strip() else q

    def inside(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        kept = [dict(h, path=h["path"][len(self.prefix) :]) for h in answer.get("results", [])
                if self.inside(str(h.get("path", "")))]  # fmt: skip
        return {**answer, "results": kept}
