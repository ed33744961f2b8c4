"""The largest few of a big score array (core/topk.py): the same answers as a whole-array partition,
whatever the sample sees."""

from __future__ import annotations

import numpy as np
import pytest

from aide_tui.core.topk import SAMPLE_FROM, STRIDE, _passing, kth_largest, top_k


def _arrays() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    n = SAMPLE_FROM * 4
    ascending = np.sort(rng.standard_normal(n)).astype(np.float32)
    skewed = np.full(n, -np.inf, np.float32)  # a filtered search: few rows may be picked
    skewed[rng.choice(n, 300, replace=False)] = rng.random(300).astype(np.float32)
    clustered = np.zeros(n, np.float32)  # the best rows all in one place, where a stride can miss them
    clustered[1000 : 1000 + STRIDE - 1] = 5.0
    clustered[5000:9000] = rng.random(4000).astype(np.float32)
    comb = np.zeros(n, np.float32)  # what the sample sees is all of the best: too few pass its threshold
    comb[::STRIDE] = 1.0
    return [
        ("comb", comb),
        ("normal", rng.standard_normal(n).astype(np.float32)),
        ("bm25-like ties", rng.integers(0, 40, n).astype(np.float32) / 8),
        ("ascending", ascending),
        ("descending", ascending[::-1].copy()),
        ("skewed", skewed),
        ("clustered", clustered),
        ("constant", np.ones(n, np.float32)),
        ("small", rng.standard_normal(SAMPLE_FROM // 2).astype(np.float32)),
    ]


@pytest.mark.parametrize(("name", "values"), _arrays(), ids=[n for n, _ in _arrays()])
def test_the_same_answers_as_a_whole_partition(name: str, values: np.ndarray) -> None:
    for k in (
        1,
        7,
        200,
        800,
        4096,
        len(values) // 16,
        len(values) // 8,
        len(values) // 8 + 1,
        len(values) - 1,
        len(values),
    ):
        expected = np.partition(values, len(values) - k)[len(values) - k]
        got = kth_largest(values, k)
        assert got == expected and got.dtype == values.dtype, (name, k)
        idx = top_k(values, k)
        assert len(idx) == k == len(np.unique(idx)), (name, k)
        # the k largest: everything above the k-th is in, nothing below it is
        assert np.all(values[idx] >= expected), (name, k)
        assert int(np.sum(values > expected)) <= k and np.all(np.isin(np.flatnonzero(values > expected), idx))


def test_the_sample_narrows_a_big_array_and_a_skewed_one_falls_back() -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal(SAMPLE_FROM * 8).astype(np.float32)
    narrowed = _passing(values, 4096)
    assert narrowed is not None and 4096 <= len(narrowed) < 4 * 4096  # a few thousand, not 524k
    assert _passing(values[: SAMPLE_FROM - 1], 10) is None  # small: partitioned whole
    assert _passing(values, len(values) // 4) is None  # k too close to n for a sample to pay
    clustered = np.zeros(SAMPLE_FROM * 8, np.float32)
    clustered[10 : 10 + STRIDE - 1] = 1.0  # 31 top values between two sampled ones
    passing = _passing(clustered, STRIDE - 1)
    assert passing is None or len(passing) >= STRIDE - 1
    assert kth_largest(clustered, STRIDE - 1) == 1.0 and kth_largest(clustered, STRIDE) == 0.0
