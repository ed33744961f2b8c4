"""Files left out for what they hold (binary, generated output) are remembered with their size and
mtime: a later run passes them over unread, says the same reason, and reads them again once they change."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aide_tui.core.config import Settings, load_settings
from aide_tui.core.events import Done, Event, Progress
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import encode_manifest, parse_manifest, read_manifest

GENERATED = "var marmot=function(a){return a+1};" * 100 + "\n"  # a minified bundle: generated output


def _settings(root: Path) -> Settings:
    return load_settings(root, {"embedding": {"backend": "none"}})


def _run(root: Path, paths: list[str] | None = None) -> tuple[Done, list[int]]:
    """One index run; the report and the totals of files to read its progress announced."""
    totals: list[int] = []

    def seen(e: Event) -> None:
        if isinstance(e, Progress) and e.state == "indexing":
            totals.append(e.files_total)

    return Indexer(root, _settings(root)).run(on_progress=seen, paths=paths), totals


def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "web").mkdir(parents=True)
    (root / "main.py").write_text("def capybara():\n    return 1\n")
    (root / "blob.dat").write_bytes(b"\x00\x01binary\x00" * 64)
    (root / "web" / "app.js").write_text(GENERATED)
    return root


def _found(root: Path, query: str) -> list[str]:
    return [h.path for h in Searcher(root, _settings(root)).search(query, limit=5).results]


def test_a_file_left_out_for_its_content_is_not_read_again_until_it_changes(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    first, totals = _run(root)
    assert first.skipped_files["blob.dat"].startswith("binary")
    assert "generated" in first.skipped_files["web/app.js"]
    assert max(totals) == 3
    passed = read_manifest(index_dir_for(root)).passed.files
    assert sorted(passed) == ["blob.dat", "web/app.js"]

    second, totals = _run(root)
    assert totals == [] and second.changed == 0  # nothing was read
    assert second.skipped_files["blob.dat"] == first.skipped_files["blob.dat"]
    assert second.skipped_files["web/app.js"] == first.skipped_files["web/app.js"]

    # the same size and mtime are the same verdict (as for an indexed file): proof it was not read
    blob = root / "blob.dat"
    st = blob.stat()
    text = b"def okapi():\n    return 2\n"
    blob.write_bytes(text.ljust(st.st_size, b"#"))
    os.utime(blob, ns=(st.st_atime_ns, st.st_mtime_ns))
    _run(root)
    assert "blob.dat" not in _found(root, "okapi")

    os.utime(blob, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # now it changed: read, indexed
    third, _ = _run(root)
    assert "blob.dat" not in third.skipped_files
    assert "blob.dat" in _found(root, "okapi")
    assert sorted(read_manifest(index_dir_for(root)).passed.files) == ["web/app.js"]


def test_a_targeted_run_keeps_the_verdicts_of_files_it_did_not_look_at(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    _run(root)
    (root / "main.py").write_text("def capybara():\n    return 3\n")
    rep, _ = _run(root, paths=["main.py"])
    assert rep.changed == 1
    assert sorted(read_manifest(index_dir_for(root)).passed.files) == ["blob.dat", "web/app.js"]
    (root / "web" / "app.js").unlink()
    _run(root, paths=["web/app.js"])
    assert sorted(read_manifest(index_dir_for(root)).passed.files) == ["blob.dat"]


def test_verdicts_of_other_rules_are_taken_again(tmp_path: Path) -> None:
    """A manifest written before verdicts were kept (no "passed"), or by other rules, reads as none."""
    root = _ws(tmp_path)
    _run(root)
    path = index_dir_for(root) / "manifest.json"
    obj = json.loads(path.read_bytes())
    del obj["checksum"]
    obj["passed"]["rules"] = "0"
    path.write_bytes(encode_manifest(obj))
    rep, totals = _run(root)
    assert max(totals) == 2 and rep.skipped_files["blob.dat"].startswith("binary")
    assert read_manifest(index_dir_for(root)).passed.rules != "0"
    del obj["passed"]
    assert parse_manifest(encode_manifest(obj)).passed.files == {}
