"""What the app's commands do with hits, without Textual: the editor command line (``e``), the
location copied (``y``) and the vimgrep lines written (F4)."""

from __future__ import annotations

import os
import re
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


def home_path(path: Path) -> str:
    """``path`` with the home folder written ``~``."""
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if home != "/" and (text == home or text.startswith(home + "/")) else text


def wrap_path(path: str, width: int) -> str:
    """``path`` on lines of at most ``width`` cells, broken only after a ``/`` (a name is never cut; one
    longer than a line is split before its last ``-``, which keeps a ``name-hash`` folder's hash whole)."""
    lines: list[str] = []
    line = ""
    for part in re.findall(r"[^/]*/|[^/]+$", path):
        pieces = [part]
        if len(part) > width and "-" in part:
            head, _, tail = part.rpartition("-")
            pieces = [head, "-" + tail]
        for piece in pieces:
            if line and len(line) + len(piece) > width:
                lines.append(line)
                line = ""
            line += piece
    lines.append(line)
    return "\n".join(lines)


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
