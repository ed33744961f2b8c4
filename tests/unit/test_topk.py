"""The largest few of a big score array (core/topk.py): the same answers as the whole-array partitions
they replace (``-np.partition(-v, k - 1)[k - 1]``, ``np.argpartition(-v, k - 1)[:k]``), whatever the
sample sees."""

from __future__ import annotations

import numpy as np
import pytest

from aide_tui.core.topk import SAMPLE_FROM, STRIDE, _passing, kth_largest, top_k

N = SAMPLE_FROM * 4


def _arrays() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    ascending = np.sort(rng.standard_normal(N)).astype(np.float32)
    skewed = np.full(N, -np.inf, np.float32)  # a filtered search: few rows may be picked
    skewed[rng.choice(N, 300, replace=False)] = rng.random(300).astype(np.float32)
    clustered = np.zeros(N, np.float32)  # the best rows all in one place, where a stride can miss them
    clustered[1000 : 1000 + STRIDE - 1] = 5.0
    clustered[5000:9000] = rng.random(4000).astype(np.float32)
    comb = np.zeros(N, np.float32)  # what the sample sees is all of the best: N / 32 pass its threshold
    comb[::STRIDE] = 1.0
    tied_mass = np.ones(N, np.float32)  # BM25-like: a few high scores over many equal low ones
    tied_mass[:2000] = np.arange(2, 2002)
    with_nan = rng.standard_normal(N)
    with_nan[rng.choice(N, 500, replace=False)] = np.nan
    return [
        ("comb", comb),
        ("normal", rng.standard_normal(N).astype(np.float32)),
        ("float64", rng.standard_normal(N)),
        ("int64", rng.integers(-1000, 1000, N)),
        ("bm25-like ties", rng.integers(0, 40, N).astype(np.float32) / 8),
        ("tied mass", tied_mass),
        ("ascending", ascending),
        ("descending", ascending[::-1].copy()),
        ("strided view", rng.standard_normal(2 * N).astype(np.float32)[::2]),
        ("skewed", skewed),
        ("clustered", clustered),
        ("constant", np.ones(N, np.float32)),
        ("nan", with_nan),
        ("small", rng.standard_normal(SAMPLE_FROM // 2).astype(np.float32)),
    ]


def _ks(n: int) -> list[int]:
    passing_comb = n // STRIDE  # the comb's sample threshold lets exactly this many through
    return [
        1,
        7,
        200,
        800,
        4096,
        passing_comb - 1,
        passing_comb,
        passing_comb + 1,
        n // 8,
        n // 8 + 1,
        n - 1,
        n,
    ]


@pytest.mark.parametrize(("name", "values"), _arrays(), ids=[n for n, _ in _arrays()])
def test_the_same_answers_as_the_whole_partitions(name: str, values: np.ndarray) -> None:
    for k in _ks(len(values)):
        expected = -np.partition(-values, k - 1)[k - 1]
        got = kth_largest(values, k)
        assert got.dtype == values.dtype and (got == expected or (np.isnan(got) and np.isnan(expected))), (
            name,
            k,
        )
        idx = top_k(values, k)
        old = np.argpartition(-values, k - 1)[:k] if k < len(values) else np.arange(len(values))
        assert len(idx) == k == len(np.unique(idx)), (name, k)
        # the same values: every one above the cut is in both, and the ties at the cut fill the rest
        assert np.array_equal(np.sort(values[idx]), np.sort(values[old]), equal_nan=True), (name, k)


def test_the_sample_narrows_a_big_array_and_falls_back_when_it_cannot() -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal(SAMPLE_FROM * 8).astype(np.float32)
    narrowed = _passing(values, 4096)
    assert narrowed is not None and 4096 <= len(narrowed) < 4 * 4096  # a few thousand, not 524k
    assert _passing(values[: SAMPLE_FROM - 1], 10) is None  # small: partitioned whole
    assert _passing(values, len(values) // 4) is None  # k too close to n for a sample to pay
    comb = np.zeros(SAMPLE_FROM * 8, np.float32)
    comb[::STRIDE] = 1.0  # exactly len / 32 pass the sample's threshold
    assert _passing(comb, len(comb) // STRIDE) is not None
    assert _passing(comb, len(comb) // STRIDE + 1) is None  # one fewer than asked passes: the whole array
    mass = np.ones(SAMPLE_FROM * 8, np.float32)
    mass[:100] = 2.0
    assert _passing(mass, 4096) is None  # the threshold lands on the tied mass: everything would pass
