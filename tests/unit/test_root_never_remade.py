"""A workspace moved or deleted while something still writes into it is never made again: every writer
below the root (the state folder, the index's lock, the embedding cache, an index run) fails with
FileNotFoundError instead of creating the root's path anew. (A hosting app once re-made a renamed
workspace: an index run passed its root check, the folder was renamed, then the writer lock's
``mkdir(parents=True)`` made ``ws/.aide/index`` again.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import write_workspace

import aide_tui.core.index.indexer as indexer_module
from aide_tui.core.config import load_settings
from aide_tui.core.index.embcache import EmbeddingCache
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import cache_dir_for, private_dir, state_dir
from aide_tui.core.store.records import writer_lock

NO_EMBEDDER = {"embedding": {"backend": "none"}}


def test_private_dir_within_makes_only_what_lies_below(tmp_path: Path) -> None:
    base = tmp_path / "ws"
    base.mkdir()
    made = private_dir(base / "a" / "b", within=base)
    assert made.is_dir() and (made.stat().st_mode & 0o777) == 0o700
    assert private_dir(base / "a" / "b", within=base) == made  # already there: fine
    shutil.rmtree(base)
    with pytest.raises(FileNotFoundError):
        private_dir(base / "a" / "b", within=base)
    assert not base.exists()


def test_writers_below_a_gone_root_do_not_remake_it(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    state = state_dir(root)
    cache = EmbeddingCache(state, "test-embedder", 4)
    cache.add(["k1"], np.ones((1, 4), np.float32))
    root.rename(tmp_path / "moved")
    with pytest.raises(FileNotFoundError), writer_lock(state / "index"):
        pass
    with pytest.raises(FileNotFoundError):
        cache_dir_for(state)
    with pytest.raises(FileNotFoundError):
        cache.save()
    with pytest.raises(FileNotFoundError):
        state_dir(root)
    assert not root.exists()
    assert (tmp_path / "moved" / ".aide" / "index").is_dir()  # what was there went with the folder


def test_an_index_run_whose_root_goes_after_its_check_does_not_remake_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window the hosting app hit: the run found its state folder, then the workspace was moved."""
    root = write_workspace(tmp_path / "ws")
    indexer = Indexer(root, load_settings(root, NO_EMBEDDER))
    indexer.run()
    real_state_dir = indexer_module.state_dir

    def then_moved(path: Path, create: bool = True) -> Path:
        found = real_state_dir(path, create=create)
        if root.exists():
            root.rename(tmp_path / "moved")
        return found

    monkeypatch.setattr(indexer_module, "state_dir", then_moved)
    (root / "new.py").write_text("def added():\n    return 1\n")
    with pytest.raises(FileNotFoundError):
        indexer.run()
    assert not root.exists()
    assert (tmp_path / "moved" / "new.py").is_file()
