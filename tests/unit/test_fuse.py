import pytest

from aide_tui.core.search.fuse import rrf


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


def test_rrf_default_k_is_the_search_default() -> None:
    from aide_tui.core.config import SearchSettings

    fused = rrf({"bm25": [7]})
    assert fused[0].score == pytest.approx(1 / (SearchSettings().rrf_k + 1))


def test_rrf_ties_break_by_order_not_by_id() -> None:
    # docs 5 and 9 tie on score and best rank; the caller's order (path, line) decides, not the row id
    lists = {"bm25": [5], "dense": [9]}
    assert [f.doc for f in rrf(lists)] == [5, 9]
    assert [f.doc for f in rrf(lists, order={5: 1, 9: 0}.__getitem__)] == [9, 5]
