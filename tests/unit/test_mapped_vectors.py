"""Memory-mapped vectors: checksummed as read, projected and searched without staying resident."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from store_helpers import resident_kb, view_of

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import Chunk
from aide_tui.core.store import view as view_mod


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(f"f{i}.py", 1, 1, "python", None, "", "x") for i in range(n)]


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")
def test_mapped_block_answers_like_memory_and_is_not_left_resident(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    rng = np.random.default_rng(3)
    n, dim = 60_000, 64
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    monkeypatch.setattr(view_mod, "PREFILTER_MIN", 1000)
    monkeypatch.setattr(view_mod, "PREFILTER_CANDIDATES", 300)
    ix = view_of(tmp_path, _chunks(n), vecs)
    path = ix.parts[0].dir / "b0.vec.npy"
    size_kb = path.stat().st_size // 1024
    exact = vecs @ vecs[:5].T
    for k in range(5):  # the first pass checks every block of the file, the projection is one more pass
        q = vecs[k]
        got = ix.dense_ranked_chunks(q, 10)
        assert got[0] == k and set(got) <= set(np.argsort(-exact[:, k])[:400].tolist())
    assert resident_kb(path) < size_kb // 4  # the passes did not leave the file mapped in


def test_a_flipped_byte_in_a_vector_block_is_found_when_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(3000, 32)).astype(np.float32)
    ix = view_of(tmp_path, _chunks(3000), vecs)
    path = ix.parts[0].dir / "b0.vec.npy"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.chmod(0o600)
    path.write_bytes(bytes(data))
    again = view_of(tmp_path / "x", _chunks(1), vecs[:1])  # another view works as ever
    assert again.dense_ranked_chunks(vecs[0], 1) == [0]
    fresh = view_mod.IndexView(
        [type(ix.parts[0])(ix.parts[0].index_dir, ix.parts[0].entry)], [None], ix.files
    )
    with pytest.raises(IndexCorrupt, match="checksum"):
        fresh.dense_ranked_chunks(vecs[0], 5)
