"""Scanner and reader against hostile trees: swaps between scan and read, FIFOs, sockets, devices,
byte-order marks, invalid ignore lines and very deep folders. Real files, FIFOs and sockets on disk."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.index import scan as scan_mod
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.index.scan import Scanner, read_entry
from aide_tui.core.index.watch import ChangeFilter
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    """The environment of a test's subprocess, read when it starts: the isolation fixture's config,
    cache and models folders, never the ones this module was imported under."""
    return {**os.environ, "PYTHONPATH": str(REPO)}


MARKER = "outside_the_root_marker_7f3a"


def _w(root: Path, rel: str, data: str | bytes = "x = 1\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def _index_bytes(root: Path) -> bytes:
    """Every byte of every file under the workspace's .aide folder."""
    out = b""
    for dirpath, _, names in os.walk(root / ".aide"):
        for name in names:
            out += Path(dirpath, name).read_bytes()
    return out


def _unblock_fifo(path: Path) -> None:
    """Give a reader blocked in open() on a FIFO a writer, then EOF (old code hangs there)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def _run_with_hang_guard(fn, fifo: Path, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Run ``fn`` in a thread; a hang (open() on a FIFO) fails the test instead of blocking it."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    hung = t.is_alive()
    if hung:
        _unblock_fifo(fifo)
        t.join(timeout)
    assert not hung, "reading hung on a FIFO put in place of a scanned file"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def _swap(root: Path, outside: Path) -> None:
    (root / "a.py").unlink()
    (root / "a.py").symlink_to(outside)  # now a symlink to a file outside the root
    (root / "b.py").unlink()
    os.mkfifo(root / "b.py")  # now a FIFO: open() without O_NONBLOCK blocks forever
    (root / "c.py").unlink()
    (root / "c.py").mkdir()  # now a folder
    (root / "alias.py").unlink()
    (root / "alias.py").symlink_to(outside)  # an in-root link retargeted out of the root


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = _w(tmp_path / "outside", "passwd", f"root:x:0:0:{MARKER}:/root:/bin/bash\n")
    root = tmp_path / "ws"
    for name in ["a.py", "b.py", "c.py", "keep.py"]:
        _w(root, name, f"def func_{name[0]}():\n    return '{name}'\n")
    _w(root, "real/target.py", "def linked_target():\n    return 1\n")
    (root / "alias.py").symlink_to(root / "real" / "target.py")  # inside the root: followed
    (root / "inner.py").symlink_to(root / "real" / "target.py")
    return root, outside


def test_read_entry_refuses_files_swapped_between_scan_and_read(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    res = Scanner(root).scan()
    entries = {e.rel: e for e in res.files}
    assert {"a.py", "b.py", "c.py", "keep.py", "alias.py", "inner.py", "real/target.py"} <= set(entries)
    _swap(root, outside)
    reads = _run_with_hang_guard(
        lambda: {rel: read_entry(e, 10**6) for rel, e in entries.items()}, root / "b.py"
    )
    assert (
        reads["a.py"][:2] == (None, None)
        and reads["a.py"][2] == "changed between scan and read (now a symlink)"
    )
    assert reads["b.py"][2] == "changed between scan and read (now a FIFO)"
    assert reads["c.py"][2] == "changed between scan and read (now a directory)"
    assert reads["alias.py"][2] == "changed between scan and read (now a different file)"
    for rel in ["a.py", "b.py", "c.py", "alias.py"]:
        assert reads[rel][0] is None and reads[rel][1] is None
    # the untouched files, including the in-root symlink the scanner followed, still read
    assert reads["keep.py"][2] is None and "func_k" in (reads["keep.py"][0] or "")
    assert reads["inner.py"][2] is None and "linked_target" in (reads["inner.py"][0] or "")
    # a file replaced by another regular file (editor-style rename) is not the scanned one either
    _w(root, "keep.py.new", "def replaced():\n    pass\n").rename(root / "keep.py")
    assert read_entry(entries["keep.py"], 10**6)[2] == "changed between scan and read (now a different file)"


def test_indexer_never_reads_a_file_swapped_after_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: the swap happens right after the indexer's own scan; nothing outside the root
    reaches the index, the FIFO does not hang the run, and the other files are indexed."""
    root, outside = _tree(tmp_path)
    real_scan = scan_mod.Scanner.scan

    def racing_scan(self: Scanner) -> scan_mod.ScanResult:
        result = real_scan(self)
        _swap(root, outside)
        return result

    monkeypatch.setattr(scan_mod.Scanner, "scan", racing_scan)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    rep = _run_with_hang_guard(lambda: Indexer(root, settings).run(), root / "b.py")
    monkeypatch.undo()
    assert rep.skipped_files["a.py"] == "changed between scan and read (now a symlink)"
    assert rep.skipped_files["b.py"] == "changed between scan and read (now a FIFO)"
    assert rep.skipped_files["alias.py"].startswith("changed between scan and read")
    assert MARKER.encode() not in _index_bytes(root)
    s = Searcher(root, settings)
    s.refresh()
    assert s.search(MARKER).results == []
    assert s.search("linked_target").results[0].path in ("inner.py", "real/target.py")
    assert {h.path for h in s.search("func_k").results} == {"keep.py"}


def test_cli_index_finishes_with_a_fifo_in_the_tree_and_lists_it_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "mod.py", "def fifo_neighbour():\n    return 1\n")
    os.mkfifo(root / "pipe.py")
    out = subprocess.run(
        [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none", "--progress"],
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout.splitlines()[-1])
    assert done["event"] == "done" and done["files"] == 1 and done["skipped"] == 1
    rep = Indexer(root, load_settings(root, {"embedding": {"backend": "none"}})).run()
    assert rep.skipped_files["pipe.py"] == "FIFO, not a regular file"


def test_fifos_sockets_and_devices_are_recorded_as_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "ok.py")
    _w(root, ".gitignore", "ignored.fifo\n")
    os.mkfifo(root / "named.pipe")
    os.mkfifo(root / "ignored.fifo")  # ignored by rule: not listed at all
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / "app.sock"))
    try:
        devices = True
        try:
            os.mknod(root / "null.dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except (PermissionError, OSError):
            devices = False  # not root: no device files
        res = Scanner(root).scan()
    finally:
        sock.close()
    assert [f.rel for f in res.files] == [".gitignore", "ok.py"]
    assert res.skipped["named.pipe"] == "FIFO, not a regular file"
    assert res.skipped["app.sock"] == "socket, not a regular file"
    assert "ignored.fifo" not in res.skipped
    if devices:
        assert res.skipped["null.dev"] == "character device, not a regular file"


def test_byte_order_marks_select_utf16_utf32_and_utf8(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    body = "def wide_function_name():\n    return 'ünïcode'\n"
    _w(root, "u16le.py", b"\xff\xfe" + body.replace("wide", "le16").encode("utf-16-le"))
    _w(root, "u16be.py", b"\xfe\xff" + body.replace("wide", "be16").encode("utf-16-be"))
    _w(root, "u32le.py", b"\xff\xfe\x00\x00" + body.replace("wide", "le32").encode("utf-32-le"))
    _w(root, "u32be.py", b"\x00\x00\xfe\xff" + body.replace("wide", "be32").encode("utf-32-be"))
    _w(root, "u8bom.py", b"\xef\xbb\xbf" + body.replace("wide", "bom8").encode("utf-8"))
    _w(root, "nul.py", b"def f():\n\x00\x00 binary")
    res = Scanner(root).scan()
    texts = {e.rel: read_entry(e, 10**6) for e in res.files}
    for rel, word in [("u16le.py", "le16"), ("u16be.py", "be16"), ("u32le.py", "le32"), ("u32be.py", "be32")]:
        text, raw, why = texts[rel]
        assert why is None and text == body.replace("wide", word), rel
        assert raw is not None and len(raw) == (root / rel).stat().st_size
    assert texts["u8bom.py"][0] == body.replace("wide", "bom8")  # BOM stripped
    assert texts["nul.py"][2] == "binary (NUL bytes)"
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    rep = Indexer(root, settings).run()
    assert rep.files == 5 and "u16le.py" not in rep.skipped_files
    s = Searcher(root, settings)
    s.refresh()
    assert s.search("le16_function_name").results[0].path == "u16le.py"
    assert s.search("be32_function_name").results[0].path == "u32be.py"
    hit = s.search("bom8_function_name").results[0]
    assert hit.path == "u8bom.py" and hit.start_line == 1 and not hit.text.startswith("\ufeff")


def test_invalid_ignore_lines_are_skipped_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, ".gitignore", "*.log\n!\nfoo\\\n[z-a]\n")
    _w(root, "sub/.aideignore", "# comment\n[z-a]*.tmp\ngenerated.py\n")
    _w(root, "keep.py", "def keep_me():\n    return 1\n")
    _w(root, "debug.log", "log")
    _w(root, "sub/generated.py", "def generated():\n    pass\n")
    _w(root, "sub/mod.py", "def sub_module():\n    pass\n")
    scanner = Scanner(root, extra_excludes=("*.bak", "[z-a]"))
    res = scanner.scan()
    files = [f.rel for f in res.files]
    assert files == [".gitignore", "keep.py", "sub/.aideignore", "sub/mod.py"]  # valid rules still apply
    assert res.warnings == [
        "index.exclude:2: ignoring invalid pattern '[z-a]' (bad character range z-a)",
        ".gitignore:2: ignoring invalid pattern '!'",
        ".gitignore:3: ignoring invalid pattern 'foo\\\\'",
        ".gitignore:4: ignoring invalid pattern '[z-a]' (bad character range z-a)",
        "sub/.aideignore:2: ignoring invalid pattern '[z-a]*.tmp' (bad character range z-a)",
    ]
    assert scanner.is_ignored("debug.log") and not scanner.is_ignored("keep.py")
    # the watcher's filter builds a Scanner from the same files and settings
    settings = load_settings(
        root, {"embedding": {"backend": "none"}, "index": {"exclude": ["[z-a]", "*.bak"]}}
    )
    filt = ChangeFilter(root, settings)
    from watchfiles import Change

    assert filt(Change.modified, str(root / "keep.py")) and not filt(Change.modified, str(root / "x.bak"))
    # index and search both work, and the index run reports the warnings
    rep = Indexer(root, settings).run()
    assert rep.files == 4
    assert sum("ignoring invalid pattern" in m for m in rep.warnings) == 5
    s = Searcher(root, settings)
    s.refresh()
    assert s.search("keep_me").results[0].path == "keep.py"


def test_nine_hundred_ninety_nested_folders(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    deep = root
    root.mkdir()
    for _ in range(990):  # one by one: Path.mkdir(parents=True) itself recurses
        deep = deep / "d"
        os.mkdir(deep)
    (deep / "deep.py").write_text("def deepest_of_all():\n    return 990\n")
    _w(root, "top.py", "def top_level():\n    pass\n")
    try:
        res = Scanner(root).scan()
        assert [f.rel for f in res.files] == ["d/" * 990 + "deep.py", "top.py"]
        settings = load_settings(root, {"embedding": {"backend": "none"}})
        rep = Indexer(root, settings).run()
        assert rep.files == 2
        s = Searcher(root, settings)
        s.refresh()
        assert s.search("deepest_of_all").results[0].path.endswith("/deep.py")
        assert index_dir_for(root).is_dir()
    finally:  # pytest's own clean-up of old temp folders recurses and gives up on a tree this deep
        subprocess.run(["rm", "-rf", str(root / "d")], check=False)


def test_a_watcher_driven_run_never_reads_a_named_file_swapped_after_its_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The targeted (watcher) path stats only the named files; the same identity check applies."""
    from aide_tui.core.index import indexer as indexer_mod

    root, outside = _tree(tmp_path)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    (root / "a.py").write_text("def edited_a():\n    pass\n")
    real = indexer_mod.targeted_scan

    def racing(scanner: Scanner, paths):  # type: ignore[no-untyped-def]
        found = real(scanner, paths)
        (root / "a.py").unlink()
        (root / "a.py").symlink_to(outside)
        return found

    monkeypatch.setattr(indexer_mod, "targeted_scan", racing)
    rep = Indexer(root, settings).run(paths=["a.py"])
    monkeypatch.undo()
    assert rep.skipped_files["a.py"] == "changed between scan and read (now a symlink)"
    assert MARKER.encode() not in _index_bytes(root)


def test_a_hard_link_is_neither_indexed_nor_served_unless_the_user_opts_in(tmp_path: Path) -> None:
    """Issue 32 #10: the scanner and read_span share one rule (scan.hard_link_reason)."""
    from aide_tui.serve.jail import SpanRefused, read_span

    secret = tmp_path / "home" / "notes.txt"
    _w(secret.parent, "notes.txt", f"api password is {MARKER}\n")
    root = tmp_path / "ws"
    _w(root, "app.py", "def app():\n    return 1\n")
    os.link(secret, root / "linked_notes.txt")
    out = subprocess.run(
        [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "none", "--json"],
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(out.stdout.splitlines()[-1])["skipped"]}
    assert skipped["linked_notes.txt"].startswith(
        "a hard link (2 names; another may be outside the workspace)"
    )
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    assert MARKER.encode() not in _index_bytes(root)
    assert Searcher(root, settings).search(MARKER, mode="bm25").results == []
    with pytest.raises(SpanRefused, match="hard link") as refused:
        read_span(root, settings, "linked_notes.txt", 1, 1)
    assert skipped["linked_notes.txt"] in str(refused.value)  # the same rule, the same words
    # a watcher-driven run names the file: still skipped
    rep = Indexer(root, settings).run(paths=["linked_notes.txt"])
    assert rep.skipped_files.get("linked_notes.txt", "").startswith("a hard link")
    # the workspace's own config cannot opt in (whoever planted the link could write it); the user's can
    _w(root, ".aide/config.toml", "[index]\ninclude_hard_links = true\n")
    assert not load_settings(root, environ={}).index.include_hard_links
    user = tmp_path / "user.toml"
    user.write_text("[index]\ninclude_hard_links = true\n")
    opted = load_settings(root, {"embedding": {"backend": "none"}}, environ={}, user_config=user)
    assert "linked_notes.txt" in {f.rel for f in Scanner.from_settings(root, opted).scan().files}
    assert MARKER in read_span(root, opted, "linked_notes.txt", 1, 1).text
