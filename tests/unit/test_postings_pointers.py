"""A segment's postings pointers (uint32) that go backwards are refused as a corrupt index, whether a
query reads one term or a merge reads them all: an unsigned difference would wrap instead of going
negative, so the check compares the pointers themselves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from store_helpers import segment_of

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.model import Chunk
from aide_tui.core.store.mapped import FileSum
from aide_tui.core.store.part import Part
from aide_tui.core.store.segment_write import SegmentEntry, npy_bytes, write_segment
from aide_tui.core.store.segments import read_segment

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def _entry(tmp_path: Path) -> SegmentEntry:
    chunks = [
        Chunk(f"m{i}.py", 1, 1, "python", None, f"file: m{i}.py", " ".join(WORDS[i:] + WORDS[: i % 3]))
        for i in range(len(WORDS))
    ]
    return write_segment(tmp_path, segment_of(chunks))


def _with_pointers(tmp_path: Path, entry: SegmentEntry, ptr: np.ndarray) -> Part:
    """The segment with its chunk pointers replaced and checksummed as written (a writer's bug, not a
    flipped byte, which the checksums already catch)."""
    data = npy_bytes(ptr)
    path = tmp_path / entry.name / "c_ptr.npy"
    path.chmod(0o600)
    path.write_bytes(data)
    return Part(tmp_path, replace(entry, files={**entry.files, "c_ptr.npy": FileSum.of(data)}))


def test_pointers_as_written_are_uint32_and_read_back(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    part = Part(tmp_path, entry)
    ptr = np.load(tmp_path / entry.name / "c_ptr.npy")
    assert ptr.dtype == np.uint32 and int(ptr[0]) == 0 and bool(np.all(ptr[1:] >= ptr[:-1]))
    docs, _ = part.chunk_field.postings_all()
    assert len(docs) == int(ptr[-1]) > 0
    tid = int(np.argmax(np.diff(ptr.astype(np.int64))))
    assert len(part.chunk_field.postings(tid)[0]) == int(ptr[tid + 1]) - int(ptr[tid])
    some = [tid, 0, len(ptr) - 2, tid]  # several terms end to end, in the order asked
    docs, tfs, counts = part.chunk_field.postings_of(some)
    each = [part.chunk_field.postings(t) for t in some]
    assert counts.tolist() == [len(d) for d, _ in each]
    assert np.array_equal(docs, np.concatenate([d for d, _ in each]))
    assert np.array_equal(tfs, np.concatenate([t for _, t in each]))


def test_backwards_pointers_are_refused_by_a_query_and_by_a_merge(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    ptr = np.load(tmp_path / entry.name / "c_ptr.npy")
    tid = int(np.argmax(np.diff(ptr.astype(np.int64))))  # a term with postings: swap its ends
    bad = ptr.copy()
    bad[tid], bad[tid + 1] = ptr[tid + 1], ptr[tid]
    assert bad[tid + 1] < bad[tid] and bad.dtype == np.uint32
    assert int((bad[1:] - bad[:-1]).min()) >= 0  # unsigned: the difference wraps, it never goes negative
    part = _with_pointers(tmp_path, entry, bad)
    with pytest.raises(IndexCorrupt, match="postings pointers"):
        part.chunk_field.postings(tid)
    with pytest.raises(IndexCorrupt, match="postings pointers"):
        part.chunk_field.postings_of([0, tid])  # a query's terms read together
    with pytest.raises(IndexCorrupt, match="postings pointers"):
        part.chunk_field.postings_all()
    # the other field is untouched and still reads
    assert len(part.piece_field.postings_all()[0]) > 0


def test_pointers_that_do_not_end_at_the_postings_end_are_refused(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    ptr = np.load(tmp_path / entry.name / "c_ptr.npy")
    bad = ptr.copy()
    bad[-1] = bad[-1] + 5
    part = _with_pointers(tmp_path, entry, bad)
    with pytest.raises(IndexCorrupt, match="postings pointers"):
        part.chunk_field.postings(len(ptr) - 2)
    with pytest.raises(IndexCorrupt, match="postings pointers"):
        part.chunk_field.postings_all()


def test_offsets_are_uint32_and_a_count_past_255_keeps_two_bytes_through_a_merge(tmp_path: Path) -> None:
    """Every offset and pointer table is four bytes an entry; counts are one byte where they fit, and a
    word repeated 400 times in one row keeps its count (two bytes for that segment), so a merge, which
    takes each row's length from its counts again, gives every row the length it had."""
    chunks = [
        Chunk("data.json", 1, 1, "json", None, "file: data.json", " ".join(["zebra"] * 400 + WORDS)),
        Chunk("few.py", 1, 1, "python", None, "file: few.py", " ".join(["zebra"] * 20 + WORDS)),
        Chunk("one.py", 1, 1, "python", None, "file: one.py", "zebra " + " ".join(WORDS)),
    ]
    entry = write_segment(tmp_path, segment_of(chunks))
    seg = tmp_path / entry.name
    tables = sorted(n for n in entry.files if n.endswith(("_off.npy", "_ptr.npy")))
    assert {"term_off.npy", "text_off.npy", "c_ptr.npy", "g_ref_ptr.npy", "sym_ptr.npy"} <= set(tables)
    assert {str(np.load(seg / n).dtype) for n in tables} == {"uint32"}
    assert np.load(seg / "c_tf.npy").dtype == np.uint16
    part = Part(tmp_path, entry)
    tid = int(part.terms.ids(["zebra"])[0])
    docs, tfs = part.chunk_field.postings(tid)
    assert dict(zip(docs.tolist(), tfs.tolist(), strict=True)) == {0: 400.0, 1: 20.0, 2: 1.0}
    small = write_segment(tmp_path, segment_of(chunks[1:]))
    assert np.load(tmp_path / small.name / "c_tf.npy").dtype == np.uint8
    merged = write_segment(tmp_path, read_segment(tmp_path, entry))
    assert np.array_equal(Part(tmp_path, merged).chunk_field.lengths, part.chunk_field.lengths)
