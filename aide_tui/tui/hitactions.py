"""What the app's commands do with hits, without Textual: the editor command line (``e``), the
location copied (``y``) and the vimgrep lines written (F4)."""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path

from aide_tui.core.search.hitlines import hit_file, hit_root, shown_path, vimgrep_line
from aide_tui.core.search.response import Hit


def editor_command(hit: Hit, root: Path, line: int, environ: Mapping[str, str]) -> list[str] | str:
    """``$VISUAL``/``$EDITOR`` (else ``vi``) with ``+LINE path``, or why the file cannot be opened."""
    where = hit_root(hit, root)
    if where is None or (where != root and hit_file(hit, root) is None):
        return f"{shown_path(hit)} is not on this machine"
    editor = environ.get("VISUAL") or environ.get("EDITOR") or "vi"
    return [*shlex.split(editor), f"+{line}", str(where / hit.path)]


def location_text(hit: Hit, root: Path, line: int) -> str:
    """``path:line``: relative in this workspace, absolute in another one, its label if elsewhere."""
    where = hit_root(hit, root)
    path = hit.path if where == root else str(where / hit.path) if where else shown_path(hit)
    return f"{path}:{line}"


def vimgrep_text(hits: list[Hit], root: Path) -> str:
    """The hits as ``path:line:col:text`` lines (vim's ``:cfile``), absolute paths."""
    lines = []
    for h in hits:
        where = hit_root(h, root)
        lines.append(vimgrep_line(str(where / h.path) if where else shown_path(h), h))
    return "\n".join(lines) + "\n"


def write_atomically(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` through a temporary file and a rename (OSError on failure; the old
    file stays)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
