"""Which file the app reads for a hit (preview, editor): its own workspace's, or another workspace's of a
shared collection, never anything a stored path or root could point it at outside that root."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from aide_tui.core.search.hitlines import hit_file, hit_root, shown_path, workspace_label


@dataclass
class FakeHit:
    """The fields the functions read (a search hit, or a hit of a search over several workspaces)."""

    path: str
    workspace: str = ""
    root: str = ""
    file_hash: str = ""


def test_own_hits_read_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    assert hit_root(FakeHit("src/a.py"), tmp_path) == tmp_path
    assert hit_file(FakeHit("src/a.py"), tmp_path) == Path(os.path.realpath(tmp_path / "src" / "a.py"))
    assert hit_file(FakeHit("src/gone.py"), tmp_path) is None


def test_paths_that_climb_out_or_are_odd_are_never_read(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret\n")
    (root / "link.py").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(root / "pipe.py")
    (root / "dev.py").symlink_to("/dev/zero")
    for path in ("../secret.txt", "/etc/hostname", "a\0b.py", "", "link.py", "pipe.py", "dev.py"):
        assert hit_file(FakeHit(path), root) is None, path
    assert hit_root(FakeHit("../secret.txt"), root) is None


def test_another_workspaces_root_must_be_absolute_and_its_files_stay_inside(tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "r.py").write_text("def r(): ...\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    sha1 = hashlib.sha1(b"def r(): ...\n").hexdigest()
    assert hit_file(FakeHit("lib/r.py", "other-1a2b3c4d", str(other), sha1), mine) == Path(
        os.path.realpath(other / "lib" / "r.py")
    )
    (other / "lib" / "r.py").write_text("def r(): return 2\n")  # changed since it was indexed
    assert hit_file(FakeHit("lib/r.py", "other-1a2b3c4d", str(other), sha1), mine) is None
    assert hit_root(FakeHit("lib/r.py", "other-1a2b3c4d", "relative/root"), mine) is None
    assert hit_root(FakeHit("lib/r.py", "other-1a2b3c4d", ""), mine) is None  # unknown: indexed text
    assert hit_file(FakeHit("zero", "evil", "/dev"), mine) is None  # a device is not a regular file
    # a record naming any root and path of this machine shows nothing of it unless its bytes were indexed
    if Path("/etc/hostname").is_file():
        assert hit_file(FakeHit("hostname", "evil", "/etc", "0" * 40), mine) is None
        assert hit_file(FakeHit("hostname", "evil", "/etc"), mine) is None


def test_labels_escape_control_characters() -> None:
    hit = FakeHit("evil\x1b]52;c;AAAA\x07.py", "ws\x1b[2J-1a2b3c4d")
    assert "\x1b" not in shown_path(hit) and "\x07" not in shown_path(hit)
    assert workspace_label(hit) == "ws\\x1b[2J"
    assert workspace_label(FakeHit("a.py", "alpha-1a2b3c4d")) == "alpha"
