"""The few largest of a big array of scores, found from a strided sample first.

A ranked list keeps its best few hundred or few thousand rows of hundreds of thousands (the dense
prefilter's 4,096 candidates among 457k pieces; a long query's BM25 pieces). ``np.partition`` over the
whole array costs 2-5 ms there. A sample of every ``STRIDE``-th value gives a threshold that some
twice-as-many values pass; only those are partitioned. The answer is exact: when fewer than ``k``
values pass (a skewed sample), the whole array is partitioned as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

STRIDE = 32  # one value in 32 goes into the sample
SAMPLE_FROM = 1 << 16  # smaller arrays are partitioned whole (the sample would not pay)


def _passing(values: np.ndarray, k: int) -> np.ndarray | None:
    """Indices of a subset of ``values`` that holds every value at least as large as the ``k``-th
    largest (usually about 2k of them), or None when the array is best partitioned whole: it is small,
    ``k`` is not, or the sample's threshold does not narrow it (too few pass, or most: a mass of tied
    or -inf values)."""
    n = len(values)
    if n < SAMPLE_FROM or k * 8 > n:
        return None
    sample = values[::STRIDE]
    j = min(len(sample), 2 * (k // STRIDE) + 16)  # the sample's j-th largest: below the k-th, nearly always
    threshold = -np.partition(-sample, j - 1)[j - 1]
    above = values >= threshold
    passed = int(np.count_nonzero(above))
    if passed < k or passed > n // 4:  # at least k pass: the k-th largest passes, so do all above it
        return None
    return np.flatnonzero(above)


def kth_largest(values: np.ndarray, k: int) -> np.floating[Any]:
    """The ``k``-th largest value of ``values`` (1 <= k <= len(values)), as ``values``' dtype: what
    ``-np.partition(-values, k - 1)[k - 1]`` gives (the partition is taken from the top: numpy's is
    slow when its pivot sits high above a mass of tied values)."""
    idx = _passing(values, k)
    sub = values if idx is None else values[idx]
    kth: np.floating[Any] = -np.partition(-sub, k - 1)[k - 1]
    return kth


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values, in no order (ties at the cut taken as ``np.argpartition``
    takes them): what ``np.argpartition(-values, k - 1)[:k]`` gives. Every index when k >= len."""
    n = len(values)
    if k >= n:
        return np.arange(n)
    idx = _passing(values, k)
    if idx is None:
        return np.argpartition(-values, k - 1)[:k]
    return idx[np.argpartition(-values[idx], k - 1)[:k]]


def best_positive(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the scores above 0 that are at least the ``k``-th largest of them (every
    one tied with the cut kept, so ties never depend on row ids): a ranked list's candidates."""
    positive = np.flatnonzero(scores > 0)
    vals = scores[positive]
    if positive.size > k:
        keep = vals >= kth_largest(vals, k)
        positive, vals = positive[keep], vals[keep]
    return positive, vals
