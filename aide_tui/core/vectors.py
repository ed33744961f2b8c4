"""Dense side: dot-product top-k over L2-normalised float32 rows."""

from __future__ import annotations

import numpy as np

from aide_tui.core.bm25 import top_positive


def top_k(
    matrix: np.ndarray, present: np.ndarray, query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``matrix`` most similar to ``query`` among those marked ``present``, best first.

    Only positive similarities are returned, so unrelated chunks never enter fusion.
    """
    if matrix.shape[0] == 0 or not present.any():
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    sims = matrix @ np.asarray(query, dtype=np.float32)
    sims = np.where(present, sims, -1.0).astype(np.float32)
    return top_positive(sims, k)
