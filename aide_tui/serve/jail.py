"""``read_span``: lines of a workspace file for an agent, jailed to the workspace.

A relative posix path only (no ``..``, nothing absolute); every component is opened relative to its parent
with O_NOFOLLOW, so no symlink is followed anywhere on the way; the state folder (``.aide``: the server's
token) and version-control folders are out of bounds, in any letter case; files the scanner would not
index are refused by the scanner's own rules (:meth:`Scanner.path_skip_reason`: ignored by
``.gitignore``/``.aideignore``/``index.exclude``, excluded folders, virtualenvs, secrets such as ``.env``
or keys in any letter case, binaries, files over the size cap); credential-looking lines are masked as
in the index.

Hard links are refused by the scanner's rule too (:func:`~aide_tui.core.index.scan.hard_link_reason`:
a file with more than one name may be a second name of a file outside the workspace, ``ln
~/.ssh/config notes.txt``, and O_NOFOLLOW cannot tell), so what read_span refuses is not in the index
either; ``index.include_hard_links`` in the user's config opts in for both. Generated output the scan
leaves out (build trees, rendered docs, minified bundles) is refused as well.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aide_tui.core.config import Settings
from aide_tui.core.index.scan import PRIVATE_DIRS, Scanner
from aide_tui.core.secrets import mask_secrets

MAX_SPAN_LINES = 400
MAX_SPAN_CHARS = 64_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON can spell one; nothing can encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class SpanRefused(ValueError):
    """A path or range read_span will not serve (the message says why)."""


@dataclass
class Span:
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "total_lines": self.total_lines,
            "truncated": self.truncated,
            "text": self.text,
        }


def clean_relative(path: str) -> list[str]:
    """The components of a workspace-relative path, or SpanRefused."""
    if not isinstance(path, str) or not path.strip() or "\0" in path:
        raise SpanRefused("path must be a non-empty workspace-relative path")
    if not is_unicode(path):
        raise SpanRefused("path is not valid Unicode text (a lone surrogate)")
    if path.startswith(("/", "\\", "~")) or os.path.isabs(path) or (len(path) > 1 and path[1] == ":"):
        raise SpanRefused(f"{path}: absolute paths are refused; give a path relative to the workspace")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SpanRefused(f"{path}: '..' is refused; paths stay inside the workspace")
    if not parts:
        raise SpanRefused(f"{path}: not a file")
    if any(p.lower() in PRIVATE_DIRS for p in parts):
        raise SpanRefused(f"{path}: the state and version-control folders are out of bounds")
    return parts


def _open_jailed(root: Path, parts: list[str]) -> int:
    """An fd of the file at ``root/parts``, never crossing a symlink."""
    rel = "/".join(parts)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SpanRefused(f"{rel}: symlinks are not followed") from None
        if exc.errno == errno.ENOENT:
            raise SpanRefused(f"{rel}: no such file") from None
        raise SpanRefused(f"{rel}: cannot open ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_span(root: Path, settings: Settings, path: str, start_line: int, end_line: int) -> Span:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) of a workspace file, at most MAX_SPAN_LINES."""
    if isinstance(start_line, bool) or isinstance(end_line, bool):
        raise SpanRefused("start_line and end_line must be integers")
    if start_line < 1 or end_line < start_line:
        raise SpanRefused("need 1 <= start_line <= end_line")
    parts = clean_relative(path)
    rel = "/".join(parts)
    scanner = Scanner.from_settings(root, settings)
    reason = scanner.path_skip_reason(rel, 0)
    if reason is not None:
        raise SpanRefused(f"{rel}: refused ({reason})")
    fd = _open_jailed(Path(root), parts)
    with contextlib.closing(os.fdopen(fd, "rb")) as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpanRefused(f"{rel}: not a regular file")
        reason = scanner.stat_skip_reason(rel, st)
        if reason is not None:
            raise SpanRefused(f"{rel}: refused ({reason})")
        data = fh.read(scanner.max_file_bytes + 1)
    if len(data) > scanner.max_file_bytes:
        raise SpanRefused(f"{rel}: refused (grew over the size cap)")
    if b"\0" in data[:8192]:
        raise SpanRefused(f"{rel}: refused (binary)")
    text = data.decode("utf-8", "replace")
    reason = scanner.content_skip_reason(rel, text)
    if reason is not None:
        raise SpanRefused(f"{rel}: refused ({reason})")
    lines = mask_secrets(text).splitlines()
    if start_line > max(len(lines), 1):
        raise SpanRefused(f"{rel} has {len(lines)} lines; start_line {start_line} is past the end")
    last = min(end_line, len(lines), start_line + MAX_SPAN_LINES - 1)
    text = "\n".join(lines[start_line - 1 : last])
    truncated = last < min(end_line, len(lines))
    if len(text) > MAX_SPAN_CHARS:
        text, truncated = text[:MAX_SPAN_CHARS], True
    return Span(rel, start_line, last, len(lines), text, truncated)
