"""The mapped term dictionary: exact lookups by hash (a query's few words, or a file's many called
names), prefix ranges bisect an in-memory sample first, batches decode in place, and the static tier's
packed vectors multiply without a scaled copy; each checked against the plain computation on real
files."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aide_tui.core.errors import IndexCorrupt
from aide_tui.core.store.mapped import FileSum, MappedArray, MappedFile
from aide_tui.core.store.quantize import BUFFER_BYTES, pack, pack_bytes, unpack, unpacked_matmul, width
from aide_tui.core.store.terms import (
    FEW_TERMS,
    SAMPLE_EVERY,
    HashedTerms,
    TermDict,
    encode_terms,
    sort_terms,
    term_bytes,
)


def _open(folder: Path, terms: list[str]) -> TermDict:
    """Write ``terms``' dictionary files to ``folder`` and map them as a reader does."""
    files: dict[str, MappedFile] = {}
    for name, data in encode_terms(terms).items():
        if isinstance(data, np.ndarray):
            buf = io.BytesIO()
            np.save(buf, data)
            raw = buf.getvalue()
        else:
            raw = data
        (folder / name).write_bytes(raw)
        files[name] = MappedFile(folder / name, FileSum.of(raw), name)
    return TermDict(
        files["terms.bin"],
        MappedArray(files["term_off.npy"]),
        MappedArray(files["term_hash.npy"]),
        MappedArray(files["term_hid.npy"]),
    )


def _naive_range(terms: list[str], prefix: str) -> tuple[int, int]:
    hits = [i for i, t in enumerate(terms) if term_bytes(t).startswith(term_bytes(prefix))]
    return (hits[0], hits[-1] + 1) if hits else (-1, -1)


WORDS = st.text(alphabet="abcdeé_.x9", min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=5 * SAMPLE_EVERY), st.lists(WORDS, min_size=1, max_size=8))
def test_prefix_range_matches_a_scan_of_every_term(
    tmp_path_factory, words: list[str], prefixes: list[str]
) -> None:
    terms = sort_terms(words)
    d = _open(tmp_path_factory.mktemp("terms"), terms)
    for prefix in [*prefixes, terms[0], terms[-1], "", "zzz", "\u0000"]:
        lo, hi = d.prefix_range(prefix)
        want = _naive_range(terms, prefix)
        if want == (-1, -1):
            assert lo == hi, (prefix, lo, hi)
        else:
            assert (lo, hi) == want, prefix
        assert d.terms_at(np.arange(lo, hi)) == terms[lo:hi]


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=200), st.lists(WORDS, max_size=3 * FEW_TERMS))
def test_ids_are_a_plain_lookups_few_or_many_crc_collisions_too(
    tmp_path_factory, words: list[str], asked: list[str]
) -> None:
    """``plumless`` and ``buckeroo`` share a CRC-32: each finds itself, and one asked for while only
    the other is held finds nothing, whether the terms are read one by one or all at once."""
    terms = sort_terms([*words, "plumless"])
    d = _open(tmp_path_factory.mktemp("ids"), terms)
    where = {t: i for i, t in enumerate(terms)}
    for query in (asked, [*asked, *terms], ["buckeroo", *asked], ["plumless", "buckeroo", *terms]):
        assert d.ids(query).tolist() == [where.get(t, -1) for t in query]
        assert d.ids(HashedTerms.of(query)).tolist() == [where.get(t, -1) for t in query]
    both = _open(tmp_path_factory.mktemp("both"), sort_terms(["buckeroo", "plumless"]))
    assert both.ids(["plumless", "buckeroo"]).tolist() == [1, 0]
    assert both.ids(["buckeroo", "plumless"] * (FEW_TERMS + 1)).tolist() == [0, 1] * (FEW_TERMS + 1)


def test_many_ids_check_the_blocks_they_compare_and_only_those(tmp_path: Path) -> None:
    """A dictionary of several blocks damaged in one: a lookup of many terms stored elsewhere answers,
    one that compares a term stored in the damaged block fails (never a silent wrong answer)."""
    terms = sort_terms(f"name_{i:06d}" for i in range(30_000))  # 330 KB of terms: six blocks
    d = _open(tmp_path, terms)
    offsets = d.off.all()
    at = int(offsets[20_000])  # a byte of term 20,000
    raw = bytearray((tmp_path / "terms.bin").read_bytes())
    raw[at] ^= 0x01
    (tmp_path / "terms.bin").write_bytes(bytes(raw))
    damaged = TermDict(
        MappedFile(tmp_path / "terms.bin", d.blob.sums, "s1/terms.bin"), d.off, d._hashes, d._hid
    )
    far = [f"name_{i:06d}" for i in range(0, 40 * FEW_TERMS, 5)]  # all in the first block
    assert damaged.ids(far).tolist() == [terms.index(t) for t in far]
    with pytest.raises(IndexCorrupt, match="damaged"):
        damaged.ids([*far, "name_020000"])


def _mapped(folder: Path, name: str, data: bytes | np.ndarray) -> MappedFile:
    """``data`` written as a segment file (an array as ``.npy``), sums taken from what is written."""
    if isinstance(data, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, data)
        data = buf.getvalue()
    (folder / name).write_bytes(data)
    return MappedFile(folder / name, FileSum.of(data), name)


def test_terms_of_decodes_as_terms_at_and_refuses_offsets_outside_the_file(tmp_path: Path) -> None:
    """``terms_of`` answers as ``terms_at``; an offsets table whose sums match but whose offsets lie
    outside the terms file (negative in an int64 table, past the end, decreasing) is damage, never a
    read of bytes no check covered."""
    terms = sort_terms(f"w{i:05d}" for i in range(20_000))  # 120 KB of terms: two blocks
    d = _open(tmp_path, terms)
    ids = np.asarray([0, 7, 19_999, 12_345, 7])
    assert d.terms_of(ids) == d.terms_at(ids) == [terms[i] for i in ids.tolist()]
    assert d.terms_of(np.zeros(0, np.int64)) == []
    off = d.off.all().astype(np.int64)
    for bad in ([-7, -1], [len(d.blob) - 2, len(d.blob) + 4], [40, 30]):
        crafted = off.copy()
        crafted[5:7] = bad
        folder = tmp_path / f"bad{bad[0]}"
        folder.mkdir()
        damaged = TermDict(d.blob, MappedArray(_mapped(folder, "term_off.npy", crafted)), d._hashes, d._hid)
        with pytest.raises(IndexCorrupt, match="outside"):
            damaged.terms_of(np.asarray([3, 5]))


def test_a_dictionary_table_of_the_wrong_shape_is_damage(tmp_path: Path) -> None:
    d = _open(tmp_path, sort_terms(["alpha", "beta", "gamma", "delta"]))
    flat = d.off.all()
    square = MappedArray(_mapped(tmp_path, "off2.npy", np.stack([flat, flat])))
    with pytest.raises(IndexCorrupt, match="shape"):
        TermDict(d.blob, square, d._hashes, d._hid)


def test_prefix_range_at_every_sample_boundary(tmp_path: Path) -> None:
    """Terms exactly at, before and after each sampled id: the bisect must not skip a block."""
    terms = sort_terms(f"t{i:05d}" for i in range(4 * SAMPLE_EVERY + 3))
    d = _open(tmp_path, terms)
    for i in range(0, len(terms), SAMPLE_EVERY // 2):
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(terms):
                assert d.prefix_range(terms[j]) == (j, j + 1)
    assert d.prefix_range("t") == (0, len(terms))
    assert d.prefix_range("t000") == (0, 100)  # t00000 … t00099
    assert d.prefix_range("t0025") == (250, len(terms))  # t00250 … t00258
    assert d.terms_at(np.asarray([0, SAMPLE_EVERY, len(terms) - 1])) == [
        terms[0], terms[SAMPLE_EVERY], terms[-1]
    ]  # fmt: skip


Packer = Callable[[np.ndarray], np.ndarray]
PACKERS = [pytest.param(pack, id="four-bits"), pytest.param(pack_bytes, id="a-byte-as-before")]


@pytest.mark.parametrize(("dim", "dtype", "top"), [(48, np.uint8, 7), (47, np.int8, 127)])
def test_four_bits_a_value_where_the_dimension_is_even(dim: int, dtype: type, top: int) -> None:
    """Each value comes back within half a step of its row's scale (the largest magnitude over ``top``)
    and the row's largest value exactly; an odd dimension keeps a byte a value."""
    rng = np.random.default_rng(3)
    v = rng.standard_normal((50, dim)).astype(np.float32) * rng.uniform(0.01, 5, (50, 1)).astype(np.float32)
    packed = pack(v)
    assert packed.dtype == dtype and width(packed) == dim
    assert packed.shape[1] == (dim // 2 if dtype == np.uint8 else dim) + 4
    step = np.abs(v).max(axis=1, keepdims=True) / top
    assert np.all(np.abs(unpack(packed) - v) <= step / 2 + 1e-6)
    peak = np.abs(v).argmax(axis=1)
    np.testing.assert_allclose(unpack(packed)[np.arange(50), peak], v[np.arange(50), peak], rtol=1e-5)


@pytest.mark.parametrize("packer", PACKERS)
def test_packed_product_equals_the_product_of_the_unpacked_rows(
    packer: Callable[[np.ndarray], np.ndarray],
) -> None:
    rng = np.random.default_rng(7)
    v = rng.standard_normal((300, 48)).astype(np.float32) * rng.uniform(0.01, 5, (300, 1)).astype(np.float32)
    packed = packer(v)
    right = rng.standard_normal((48, 9)).astype(np.float32)
    q = rng.standard_normal(48).astype(np.float32)
    np.testing.assert_allclose(unpacked_matmul(packed, right), unpack(packed) @ right, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(unpacked_matmul(packed, q), unpack(packed) @ q, rtol=1e-4, atol=1e-4)
    assert unpacked_matmul(packed[:0], q).shape == (0,)


@pytest.mark.parametrize("packer", PACKERS)
def test_packed_product_over_several_blocks_and_a_ragged_last_one(
    packer: Callable[[np.ndarray], np.ndarray],
) -> None:
    """The product is taken a buffer's rows at a time through one buffer: every block's rows keep
    their own scale, and a short last block is not padded with the previous block's values."""
    rng = np.random.default_rng(11)
    block_rows = BUFFER_BYTES // (4 * 32)
    n = 2 * block_rows + 17
    v = rng.standard_normal((n, 32)).astype(np.float32) * rng.uniform(0.01, 5, (n, 1)).astype(np.float32)
    packed = packer(v)
    q = rng.standard_normal(32).astype(np.float32)
    right = rng.standard_normal((32, 5)).astype(np.float32)
    np.testing.assert_allclose(unpacked_matmul(packed, q), unpack(packed) @ q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(unpacked_matmul(packed, right), unpack(packed) @ right, rtol=1e-4, atol=1e-4)
    tail = packed[-(block_rows + 3) :]  # a view that starts mid-block of the array it comes from
    np.testing.assert_allclose(unpacked_matmul(tail, q), unpack(tail) @ q, rtol=1e-4, atol=1e-4)
