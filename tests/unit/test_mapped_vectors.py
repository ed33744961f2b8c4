"""Memory-mapped vector blocks: checksummed, projected and searched without staying resident."""

from __future__ import annotations

import io
import zlib
from pathlib import Path

import numpy as np
import pytest

from aide_tui.core import safeio
from aide_tui.core.bm25 import DocTerms, Postings
from aide_tui.core.model import Chunk
from aide_tui.core.store import view as view_mod


def _resident_kb(path: Path) -> int:
    """Resident kB of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total, current = 0, None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            current = fields[-1] if len(fields) >= 6 else None
        elif fields and fields[0] == "Rss:" and current == str(path):
            total += int(fields[1])
    return total


def _mapped(tmp_path: Path, vecs: np.ndarray) -> tuple[Path, np.ndarray]:
    buf = io.BytesIO()
    np.save(buf, vecs)
    path = tmp_path / "b0.vec.npy"
    path.write_bytes(buf.getvalue())
    return path, safeio.load_npy(path, expect_size=path.stat().st_size, mmap_mode=True)


def _view(vecs: np.ndarray) -> view_mod.IndexView:
    n = len(vecs)
    chunks = [Chunk(f"f{i}.py", 1, 1, "python", None, "", "x") for i in range(n)]
    empty = Postings.build(
        DocTerms(np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32)), 0
    )
    part = view_mod.Part(
        "s0", chunks, empty, empty, np.arange(n), [view_mod.VectorBlock(vecs, rows=np.arange(n))]
    )
    return view_mod.IndexView([part], [None], {}, {}, {})


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")
def test_mapped_block_answers_like_memory_and_is_not_left_resident(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    rng = np.random.default_rng(3)
    n, dim = 6000, 128
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    path, mapped = _mapped(tmp_path, vecs)
    monkeypatch.setattr(safeio, "WINDOW_BYTES", 64 << 10)
    monkeypatch.setattr(view_mod, "PREFILTER_MIN", 1000)
    monkeypatch.setattr(view_mod, "PREFILTER_CANDIDATES", 300)

    assert safeio.crc32_mapped(mapped) == zlib.crc32(path.read_bytes())
    size_kb = path.stat().st_size // 1024
    assert _resident_kb(path) < size_kb // 10  # the checksum pass did not leave the file mapped in

    in_memory, on_disk = _view(vecs), _view(mapped)
    for _ in range(5):
        q = vecs[rng.integers(0, n)] + 0.2 * rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        assert on_disk.dense_ranked_chunks(q, 10) == in_memory.dense_ranked_chunks(q, 10)
    # the projection (a pass over every row) and five prefiltered queries leave little of the file resident
    assert _resident_kb(path) < size_kb // 10


def test_gather_rows_equals_fancy_indexing(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    vecs = np.arange(5000 * 16, dtype=np.float32).reshape(5000, 16)
    _, mapped = _mapped(tmp_path, vecs)
    monkeypatch.setattr(safeio, "WINDOW_BYTES", 4096)
    rows = np.sort(np.random.default_rng(0).choice(5000, 700, replace=False))
    assert np.array_equal(safeio.gather_rows(mapped, rows), vecs[rows])
    assert np.array_equal(safeio.gather_rows(vecs, rows), vecs[rows])
    assert safeio.gather_rows(mapped, rows[:0]).shape == (0, 16)
