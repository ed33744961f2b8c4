import pytest

from aide_tui.core.fuse import rrf


def test_rrf_known_answer() -> None:
    fused = rrf({"bm25": [10, 20, 30], "dense": [30, 10]}, k=20)
    scores = {f.doc: f.score for f in fused}
    assert scores[10] == pytest.approx(1 / 21 + 1 / 22)
    assert scores[30] == pytest.approx(1 / 23 + 1 / 21)
    assert scores[20] == pytest.approx(1 / 22)
    assert [f.doc for f in fused] == [10, 30, 20]
    assert fused[1].ranks == {"bm25": 3, "dense": 1}


def test_rrf_weights_and_zero_weight() -> None:
    fused = rrf({"bm25": [1, 2], "dense": [2, 1]}, k=20, weights={"bm25": 1.0, "dense": 2.0})
    assert [f.doc for f in fused] == [2, 1]
    fused = rrf({"bm25": [1], "dense": [2]}, k=20, weights={"dense": 0.0})
    assert fused[0].doc == 1 and fused[1].score == 0.0 and fused[1].ranks == {"dense": 1}


def test_rrf_empty() -> None:
    assert rrf({"bm25": [], "dense": []}) == []
