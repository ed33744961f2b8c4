"""Segment upkeep after edits: an edited file's earlier delta goes without a rewrite, a rewrite of a
segment with dead rows leaves big segments alone, and a run's merge cap keeps a search's own update
from reading the base (the next unbounded run merges)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aide_tui.core.config import load_settings
from aide_tui.core.index import local_writer
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.segments import read_manifest

WORDS = ("zebra", "walrus", "narwhal")


def _repo(root: Path, n: int) -> None:
    for i in range(n):
        p = root / "pkg" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def func_{i}_{j}(x):\n    return x + {j}\n" for j in range(4))
        p.write_text(f'"""Module {i}."""\n\n{body}')


def _settings(root: Path, **index: object) -> object:
    return load_settings(root, {"embedding": {"backend": "none"}, "index": index})


def _run(root: Path, **kw: object) -> object:
    index = kw.pop("index", {})
    assert isinstance(index, dict)
    return Indexer(root, _settings(root, **index)).run(**kw)  # type: ignore[arg-type]


def _segments(root: Path) -> list[str]:
    return [s.name for s in read_manifest(index_dir_for(root)).segments]


def _finds(root: Path, query: str) -> list[str]:
    return [h.path for h in Searcher(root, _settings(root)).search(query, limit=5).results]


def test_an_edited_files_earlier_delta_goes_without_a_rewrite(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root, 12)
    _run(root)
    (base,) = _segments(root)
    target = root / "pkg" / "mod_3.py"
    target.write_text("def pelican(x):\n    return x\n")
    _run(root)
    first_delta = _segments(root)[1]
    target.write_text("def flamingo(x):\n    return x\n")
    rep = _run(root)
    assert not rep.merged  # type: ignore[attr-defined]
    segs = _segments(root)
    assert segs[0] == base and len(segs) == 2 and first_delta not in segs
    assert _finds(root, "flamingo") == ["pkg/mod_3.py"]
    assert _finds(root, "pelican") == []
    assert _finds(root, "func_5_2")[0] == "pkg/mod_5.py"
    (root / "pkg" / "mod_4.py").write_text("def other_edit(x):\n    return x\n")
    _run(root)  # the version before is no reader's any more: the dropped delta leaves the disk
    assert not (index_dir_for(root) / first_delta).exists()


def test_a_rewrite_of_a_segment_with_dead_rows_leaves_big_segments_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_writer, "SMALL_SEGMENT", 10)  # the 12-file base counts as big here
    root = tmp_path / "ws"
    _repo(root, 12)
    _run(root)
    (base,) = _segments(root)
    for i in (20, 21, 22):  # one delta of three new files
        (root / "pkg" / f"new_{i}.py").write_text(f"def {WORDS[i - 20]}(x):\n    return x\n")
    _run(root)
    (root / "pkg" / "new_20.py").write_text("def quokka(x):\n    return x\n")
    rep = _run(root)  # a third of the delta is dead now: it is rewritten, with the small new delta
    segs = _segments(root)
    assert rep.merged and segs[0] == base and len(segs) == 2  # type: ignore[attr-defined]
    assert _finds(root, "quokka") == ["pkg/new_20.py"] and _finds(root, "zebra") == []
    assert _finds(root, "walrus") == ["pkg/new_21.py"] and _finds(root, "func_1_1")[0] == "pkg/mod_1.py"


def test_a_merge_cap_keeps_a_runs_merge_off_the_base_until_an_unbounded_run(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root, 12)
    _run(root)
    (root / "pkg" / "extra.py").write_text("def extra_name(x):\n    return x\n")
    rep = _run(root, index={"max_segments": 1}, merge_cap=5)  # the base has 48 chunks: over the cap
    assert not rep.merged and len(_segments(root)) == 2  # type: ignore[attr-defined]
    assert _finds(root, "extra_name") == ["pkg/extra.py"]
    rep = _run(root, index={"max_segments": 1})
    assert rep.merged and len(_segments(root)) == 1  # type: ignore[attr-defined]
    assert _finds(root, "extra_name") == ["pkg/extra.py"] and _finds(root, "func_0_3")[0] == "pkg/mod_0.py"


def test_a_merge_keeps_within_the_piece_bound_so_postings_keep_two_byte_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments whose pieces together pass ``MERGE_CAP_PIECES`` are not merged into one, even past
    ``max_segments`` (a merged segment keeps two-byte posting rows); exactly at the bound they are."""
    root = tmp_path / "ws"
    _repo(root, 12)
    _run(root)
    pieces = read_manifest(index_dir_for(root)).segments[0].n_pieces
    (root / "pkg" / "extra.py").write_text("def extra_name(x):\n    return x\n")
    monkeypatch.setattr(local_writer, "MERGE_CAP_PIECES", pieces)  # the base alone fills the bound
    rep = _run(root, index={"max_segments": 1})
    assert not rep.merged and len(_segments(root)) == 2  # type: ignore[attr-defined]
    assert _finds(root, "extra_name") == ["pkg/extra.py"]
    both = sum(s.n_pieces for s in read_manifest(index_dir_for(root)).segments)  # every row is live
    monkeypatch.setattr(local_writer, "MERGE_CAP_PIECES", both)
    rep = _run(root, index={"max_segments": 1})
    assert rep.merged and len(_segments(root)) == 1  # type: ignore[attr-defined]
    assert _finds(root, "extra_name") == ["pkg/extra.py"] and _finds(root, "func_0_3")[0] == "pkg/mod_0.py"
