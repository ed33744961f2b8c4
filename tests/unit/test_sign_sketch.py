"""Sign sketches of the static tier's vectors: stored with each segment, checksummed like every file, and
the prefilter of a big index's static list (the rows nearest by Hamming distance, then scored exactly)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from store_helpers import resident_kb, view_of

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import Chunk
from aide_tui.core.store import view as view_mod
from aide_tui.core.store.part import Part
from aide_tui.core.store.quantize import pack, unpack
from aide_tui.core.store.segment_write import signs_file
from aide_tui.core.store.sketch import distances, nearest, sketch
from aide_tui.core.store.view import IndexView

STATIC_ID = "static-test"


def _bits(rows: np.ndarray) -> np.ndarray:
    """(n, words * 64) bools of a (words, n) sketch, value order."""
    as_bytes = np.ascontiguousarray(rows.T).astype("<u8").view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little").astype(bool)


def test_a_sketch_holds_which_values_are_above_zero_and_distances_count_the_differences() -> None:
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(500, 200)).astype(np.float32)  # 200 values: the last word is part padding
    rows = sketch(vecs)
    assert rows.shape == (4, 500) and rows.dtype == np.uint64
    bits = _bits(rows)
    assert np.array_equal(bits[:, :200], vecs > 0) and not bits[:, 200:].any()
    q = sketch(vecs[7:8])[:, 0]
    assert np.array_equal(distances(rows, q), ((vecs > 0) != (vecs[7] > 0)).sum(axis=1))
    packed = pack(np.hstack([vecs, vecs[:, :56]]))  # packed rows are sketched from what they store
    assert np.array_equal(sketch(packed), sketch(unpack(packed)))


def test_nearest_takes_the_k_smallest_and_of_the_tied_ones_the_first() -> None:
    rng = np.random.default_rng(2)
    dist = rng.integers(0, 40, 10_000).astype(np.uint16)  # many ties at every distance
    for k in (0, 1, 37, 250, 9_999, 10_000, 20_000):
        want = np.sort(np.lexsort((np.arange(len(dist)), dist))[:k])
        assert np.array_equal(nearest(dist, k), want), k


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(40, dim)).astype(np.float32)
    vecs = centers[rng.integers(0, 40, n)] + 0.6 * rng.normal(size=(n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(f"f{i}.py", 1, 1, "python", None, "", "x") for i in range(n)]


def _ranked(ix: IndexView, q: np.ndarray) -> list[int]:
    return [r for r, _ in ix.static_ranked(q, STATIC_ID, 10)[0]]


def _queries(vecs: np.ndarray, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(20):
        q = vecs[rng.integers(0, len(vecs))] + 0.3 * rng.normal(size=vecs.shape[1]).astype(np.float32)
        out.append(q / np.linalg.norm(q))
    return out


def _without_signs(ix: IndexView) -> IndexView:
    """The same segment as one written before sketches were stored (its entry names no sketch)."""
    part = ix.parts[0]
    files = {k: v for k, v in part.entry.files.items() if k != signs_file(part.entry.static_file)}
    return IndexView([Part(part.index_dir, replace(part.entry, files=files))], [None], ix.files)


def test_the_static_prefilter_by_sketch_keeps_the_exact_top_results(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    n = 6000
    vecs = _clustered(n, 128, 7)
    ix = view_of(tmp_path, _chunks(n), static=vecs, static_id=STATIC_ID)
    assert signs_file(ix.parts[0].entry.static_file) in ix.parts[0].entry.files
    queries = _queries(vecs, 8)
    exact = [_ranked(ix, q) for q in queries]  # a one-shot reader of a small index scans exactly
    monkeypatch.setattr(view_mod, "PREFILTER_MIN", 1000)
    assert [_ranked(ix, q) for q in queries] == exact
    monkeypatch.setattr(view_mod, "ONE_SHOT_SKETCH_MIN", 1000)
    monkeypatch.setattr(view_mod, "STATIC_SKETCH_CANDIDATES", 2000)
    one_shot = [_ranked(ix, q) for q in queries]  # a one-shot reader reads the stored sketch
    recall = [len(set(a) & set(b)) / 10 for a, b in zip(exact, one_shot, strict=True)]
    assert np.mean(recall) >= 0.95
    older = _without_signs(ix)
    assert [_ranked(older, q) for q in queries] == exact  # nothing stored: a one-shot scans exactly
    older.warm_vectors(STATIC_ID)  # a long-lived reader makes the sketch: the same candidates
    assert [_ranked(older, q) for q in queries] == one_shot


def test_a_flipped_byte_in_a_stored_sketch_is_found_when_read(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    vecs = _clustered(3000, 64, 9)
    ix = view_of(tmp_path, _chunks(3000), static=vecs, static_id=STATIC_ID)
    part = ix.parts[0]
    path = part.dir / signs_file(part.entry.static_file)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.chmod(0o600)
    path.write_bytes(bytes(data))
    monkeypatch.setattr(view_mod, "ONE_SHOT_SKETCH_MIN", 1000)
    fresh = IndexView([Part(part.index_dir, part.entry)], [None], ix.files)
    with pytest.raises(IndexCorrupt, match="static.signs.npy is damaged"):
        fresh.static_ranked(vecs[0], STATIC_ID, 5)


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")
def test_a_one_shot_static_search_does_not_leave_the_vectors_or_their_sketch_resident(
    tmp_path: Path,
    monkeypatch,  # noqa: ANN001
) -> None:
    n = 60_000
    vecs = _clustered(n, 256, 11)
    ix = view_of(tmp_path, _chunks(n), static=vecs, static_id=STATIC_ID)
    part = ix.parts[0]
    files = [part.dir / part.entry.static_file, part.dir / signs_file(part.entry.static_file)]
    monkeypatch.setattr(view_mod, "PREFILTER_MIN", 1000)
    monkeypatch.setattr(view_mod, "ONE_SHOT_SKETCH_MIN", 1000)
    monkeypatch.setattr(view_mod, "STATIC_SKETCH_CANDIDATES", 4000)  # candidates in every page
    one_shot = IndexView([Part(part.index_dir, part.entry)], [None], ix.files)
    assert _ranked(one_shot, vecs[5])[0] == 5
    for path in files:
        assert resident_kb(path) < path.stat().st_size // 1024 // 4, path.name
    long_lived = IndexView([Part(part.index_dir, part.entry)], [None], ix.files)
    long_lived.warm_vectors(STATIC_ID)
    assert _ranked(long_lived, vecs[5])[0] == 5  # a long-lived reader keeps what every query reads
    assert resident_kb(files[1]) > files[1].stat().st_size // 1024 // 2


def test_the_prefilter_by_sketch_leaves_dead_rows_out_query_after_query(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A segment with dead rows (a later version replaced their files): the sketch's candidates are
    live rows only, the same from the first query to the next (the live rows are listed once a view),
    and they hold the exact top results of the live rows."""
    n = 6000
    vecs = _clustered(n, 128, 11)
    ix = view_of(tmp_path, _chunks(n), static=vecs, static_id=STATIC_ID)
    alive = np.ones(n, bool)
    alive[::3] = False
    queries = _queries(vecs, 12)
    exact = [_ranked(IndexView(ix.parts, [alive], ix.files), q) for q in queries]
    assert all(alive[r] for ranked in exact for r in ranked)
    monkeypatch.setattr(view_mod, "ONE_SHOT_SKETCH_MIN", 1000)
    monkeypatch.setattr(view_mod, "STATIC_SKETCH_CANDIDATES", 2000)
    live = IndexView(ix.parts, [alive], ix.files)
    first = [_ranked(live, q) for q in queries]
    assert [_ranked(live, q) for q in queries] == first
    assert all(alive[r] for ranked in first for r in ranked)
    recall = [len(set(a) & set(b)) / 10 for a, b in zip(exact, first, strict=True)]
    assert np.mean(recall) >= 0.95
