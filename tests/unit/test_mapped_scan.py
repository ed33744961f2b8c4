"""A one-shot scan of mapped vectors is verified on a second thread while it multiplies, and the
manifest's file records as columns: real files, the real classes, no mocks."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.store.filetable import FIELDS, FileTable, column, segment_of, segments_of
from aide_tui.core.store.mapped import ALONGSIDE_BYTES, BLOCK, FileSum, MappedArray, MappedFile
from aide_tui.core.store.part import VectorBlock
from aide_tui.core.store.quantize import pack, unpacked_matmul
from aide_tui.core.store.records import FileRecord


def _packed_file(tmp_path: Path, rows: int, flip_at: int | None = None) -> tuple[MappedArray, np.ndarray]:
    """A static tier's packed vectors written as a segment holds them (sums taken before any damage),
    mapped as a reader maps them; ``flip_at`` flips one bit of that byte after the sums are taken."""
    vectors = np.random.default_rng(7).standard_normal((rows, 64)).astype(np.float32)
    packed = pack(vectors)
    buf = io.BytesIO()
    np.save(buf, packed)
    raw = bytearray(buf.getvalue())
    sums = FileSum.of(bytes(raw))
    if flip_at is not None:
        raw[flip_at] ^= 0x10
    path = tmp_path / "static.npy"
    path.write_bytes(bytes(raw))
    return MappedArray(MappedFile(path, sums, "s1/static.npy")), packed


def test_a_big_scan_verifies_every_block_alongside_and_gives_the_plain_product(tmp_path: Path) -> None:
    arr, packed = _packed_file(tmp_path, 40_000)  # 2.7 MB: over ALONGSIDE_BYTES, so a second thread checks
    assert arr.file.unchecked_bytes > ALONGSIDE_BYTES
    q = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    got = VectorBlock(arr, packed=True).scan(q)
    np.testing.assert_allclose(got, unpacked_matmul(packed, q), rtol=1e-6, atol=1e-6)
    assert arr.file.unchecked_bytes == 0  # every block was checked by the time the scan returned


@pytest.mark.parametrize("rows", [40_000, 2_000], ids=["checked-alongside", "checked-first"])
def test_a_damaged_block_fails_the_scan_wherever_it_is(tmp_path: Path, rows: int) -> None:
    size = len(_packed_file(tmp_path, rows)[1].tobytes())
    arr, _ = _packed_file(tmp_path, rows, flip_at=size - 3)  # in the last block, the last the checker reads
    with pytest.raises(IndexCorrupt, match="static.npy is damaged"):
        VectorBlock(arr, packed=True).scan(np.ones(64, np.float32))


def test_the_damage_is_reported_again_by_the_next_scan(tmp_path: Path) -> None:
    """A failed check leaves its block unchecked: a reader that goes on never takes it as verified."""
    arr, _ = _packed_file(tmp_path, 40_000, flip_at=BLOCK * 3 + 5)
    block = VectorBlock(arr, packed=True)
    for _ in range(2):
        with pytest.raises(IndexCorrupt):
            block.scan(np.ones(64, np.float32))
    assert arr.file.unchecked_bytes > 0


def test_file_table_round_trip_and_segment_lookup() -> None:
    files = {
        "a/x.py": FileRecord(10, 1, "0" * 40, 0, 2, 3, 3, 2),
        "b/y.go": FileRecord(20, -5, "f" * 40, 1, 1, 1, 0, 0),
    }
    table = FileTable.from_json(FileTable.to_json(files), n_segments=2)
    assert table is not None
    assert dict(table) == files and list(table) == list(files) and len(table) == 2
    assert segment_of(table, "b/y.go") == 1 and segment_of(table, "nope.py") == -1
    assert segment_of(files, "b/y.go") == 1 and segment_of(files, "nope.py") == -1  # a plain dict too
    asked = ["b/y.go", "nope.py", "a/x.py", "b/y.go"]
    for mapping in (table, files):  # every path at once: the same answers
        assert segments_of(mapping, asked).tolist() == [1, -1, 0, 1]
    assert segments_of(table, []).tolist() == []
    for name in FIELDS:  # one field of every record, from the columns or from the records
        assert column(table, name) == column(files, name) == [getattr(r, name) for r in files.values()]
    assert "a/x.py" in table and "nope.py" not in table
    assert FileTable.from_json(FileTable.to_json(files), n_segments=1) is None  # segment 1 out of range
    bools = FileTable.to_json(files)
    bools["chunks"] = [True, 1]  # a bool is not a count
    assert FileTable.from_json(bools, n_segments=2) is None


def test_ranges_read_several_row_spans_end_to_end_and_check_only_their_blocks(tmp_path: Path) -> None:
    arr, packed = _packed_file(tmp_path, 20_000)
    lo, hi = [5, 100, 100, 19_990], [9, 100, 7_000, 20_000]
    got = arr.ranges(lo, hi)
    np.testing.assert_array_equal(got, np.concatenate([packed[a:b] for a, b in zip(lo, hi, strict=True)]))
    assert arr.file.unchecked_bytes > 0  # the blocks no span touched are still to check
    assert arr.ranges([3], [3]).shape == (0, packed.shape[1])
    row = packed.shape[1]
    (tmp_path / "d").mkdir()
    damaged, _ = _packed_file(tmp_path / "d", 20_000, flip_at=arr.offset + 12_000 * row)
    np.testing.assert_array_equal(damaged.ranges([0], [10]), packed[:10])  # a span away from the damage
    with pytest.raises(IndexCorrupt, match="damaged"):
        damaged.ranges([0, 11_990], [10, 12_010])


def test_check_spans_verifies_the_blocks_of_many_short_spans_at_once(tmp_path: Path) -> None:
    """The blocks a set of short spans fall in (one straddling two blocks) are checked, the others are
    not; a span past the end checks nothing; a long span checks every block it covers; a damaged block
    that a span touches fails, one no span touches does not."""
    raw = bytes(np.random.default_rng(3).integers(0, 256, 8 * BLOCK, dtype=np.uint8))
    sums = FileSum.of(raw)
    (tmp_path / "ok.bin").write_bytes(raw)
    f = MappedFile(tmp_path / "ok.bin", sums, "s1/ok.bin")
    lo, hi = [10, 2 * BLOCK - 3, 8 * BLOCK + 5], [20, 2 * BLOCK + 4, 8 * BLOCK + 9]
    f.check_spans(np.asarray(lo), np.asarray(hi))
    assert f._checked.tolist() == [True, True, True, False, False, False, False, False]
    f.check_spans(np.asarray([3 * BLOCK]), np.asarray([6 * BLOCK + 1]))
    assert f._checked.tolist() == [True] * 7 + [False]
    damaged = bytearray(raw)
    damaged[5 * BLOCK + 7] ^= 0x40
    (tmp_path / "bad.bin").write_bytes(bytes(damaged))
    bad = MappedFile(tmp_path / "bad.bin", sums, "s1/bad.bin")
    bad.check_spans(np.asarray([0, 4 * BLOCK]), np.asarray([9, 4 * BLOCK + 9]))  # away from the damage
    with pytest.raises(IndexCorrupt, match="damaged"):
        bad.check_spans(np.asarray([0, 5 * BLOCK + 2]), np.asarray([9, 5 * BLOCK + 9]))


@pytest.mark.parametrize("dtype", ["<u2", "|u1", "<u4", "<i4", "<i8", "<f2", "<f4", ">i4", "|b1", "<u8"])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 0, 5)])
def test_a_npy_header_reads_as_numpy_reads_it(dtype: str, shape: tuple[int, ...]) -> None:
    """Every ``.npy`` file a reader maps has its header read (hundreds per one-shot search on a big
    index): the header numpy writes is read without parsing Python, and agrees with numpy's reader."""
    from numpy.lib import format as npy_format

    from aide_tui.core.safeio import npy_header

    for order in "CF":
        buf = io.BytesIO()
        np.save(buf, np.zeros(shape, dtype=dtype, order=order))
        raw = buf.getvalue()
        head = io.BytesIO(raw)
        npy_format.read_magic(head)
        want_shape, want_fortran, want_dtype = npy_format.read_array_header_1_0(head)
        assert npy_header(raw) == (want_shape, want_dtype, want_fortran, head.tell())


def test_a_npy_header_in_another_hand_still_reads_and_a_bad_one_is_refused() -> None:
    """A header numpy did not format (keys in another order, other spacing) is read the slow way; an
    object or structured dtype, a negative shape or a broken dict is a ValueError (the reader's "damaged
    index"), never a pickle or a traceback."""
    from aide_tui.core.safeio import npy_header

    def npy(header: str) -> bytes:
        text = header.encode("latin1") + b"\n"
        return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text

    assert npy_header(npy("{'shape': (3,), 'fortran_order': False, 'descr': '<u2'}"))[:3] == (
        (3,),
        np.dtype("<u2"),
        False,
    )
    assert npy_header(npy("{'descr':'<f4','fortran_order':True,'shape':(2,3)}"))[:3] == (
        (2, 3),
        np.dtype("<f4"),
        True,
    )
    for bad in (
        "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': [('a', '<u2')], 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<u2', 'fortran_order': False, 'shape': (-1,), }",
        "{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<u2', 'fortran_order': False, 'shape': (3,",
        "{'descr': '<u2', 'fortran_order': False, 'shape': (3), }",  # not a tuple: numpy refuses it
        "{'descr': '<u2', 'fortran_order': False, 'shape': (03,), }",
        "__import__('os').system('true')",
    ):
        with pytest.raises(ValueError):
            npy_header(npy(bad))
