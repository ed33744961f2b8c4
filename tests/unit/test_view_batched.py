"""A query's postings are read a segment at a time (all its terms at once) and its ties are ordered by
the few rows in question: both must answer exactly as one term at a time and the whole index's row
order did, on an index of several segments with dead rows."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from conftest import write_workspace

from aide_tui.core.bm25 import idf_of
from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.view import IndexView

NO_EMBED = {"embedding": {"backend": "none"}}
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def _source(i: int, extra: str = "") -> str:
    picked = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(1 + i % 4)]
    return "".join(
        f"def f{i}_{k}(x):\n    return {' + '.join(picked[: k + 1])}{extra}\n\n\n" for k in range(len(picked))
    )


def _view_with_dead_rows(tmp_path: Path) -> IndexView:
    root = tmp_path / "ws"
    write_workspace(root, {f"pkg/m{i}.py": _source(i) for i in range(24)})
    settings = load_settings(root, NO_EMBED)
    Indexer(root, settings).run()
    for i in (2, 5, 11):  # edited: their old rows stay in the base segment, dead
        (root / f"pkg/m{i}.py").write_text(_source(i, " + alpha + golf"))
        os.utime(root / f"pkg/m{i}.py", ns=(1, 1))
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    view = s.retriever.view  # type: ignore[attr-defined]
    assert isinstance(view, IndexView)
    assert len(view.parts) >= 2 and any(a is not None and not a.all() for a in view.alive)
    return view


def test_a_many_term_query_scores_as_its_terms_one_at_a_time(tmp_path: Path) -> None:
    view = _view_with_dead_rows(tmp_path)
    terms = ["golf", "alpha", "nothere", "delta", "x", "hotel"]
    weights = {"golf": 2.0, "delta": 0.5}
    for scores in (view.bm25_scores, view.piece_scores):
        together = scores(terms, weights)
        one_by_one = np.zeros_like(together)
        for t in terms:
            one_by_one += scores([t], weights)
        assert np.array_equal(together, one_by_one)  # the same float32 sums, in the same order
        assert together.max() > 0
    dead = ~view.alive_mask
    assert dead.any() and not view.bm25_scores(terms, weights)[dead].any()


def test_idf_counts_live_chunks_only(tmp_path: Path) -> None:
    view = _view_with_dead_rows(tmp_path)
    live = int(view.alive_mask.sum())
    got = view.idfs(["alpha", "golf", "nothere"])
    for term, idf in zip(["alpha", "golf"], got[:2], strict=True):
        holding = int((view.bm25_scores([term]) > 0).sum())  # live chunks with the term
        assert idf == float(idf_of(live, np.asarray([holding]))[0])
    assert got[2] is None


def test_ties_among_a_few_rows_order_as_the_whole_index_does(tmp_path: Path) -> None:
    view = _view_with_dead_rows(tmp_path)
    rng = np.random.default_rng(3)
    rows = rng.permutation(view.n_rows)[:40]
    own = view.order_of(rows)  # a few rows: their own keys, the whole order not built
    assert "row_order" not in view.__dict__
    whole = view.row_order[rows]
    assert np.array_equal(np.argsort(own), np.argsort(whole))
    assert sorted(rows.tolist(), key=view.order_key) == rows[np.argsort(whole)].tolist()


def test_scores_over_dead_rows_equal_a_rebuilt_indexs(tmp_path: Path) -> None:
    """Dead rows count nowhere: not in a term's document frequency, not in the scores."""
    view = _view_with_dead_rows(tmp_path)
    root = tmp_path / "ws"
    fresh = tmp_path / "fresh"
    write_workspace(fresh, {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*.py")})
    settings = load_settings(fresh, NO_EMBED)
    Indexer(fresh, settings).run()
    s = Searcher(fresh, settings)
    s.refresh()
    rebuilt = s.retriever.view  # type: ignore[attr-defined]
    assert len(rebuilt.parts) == 1 and rebuilt.alive == [None]
    terms, weights = ["golf", "alpha", "delta", "hotel"], {"golf": 2.0}

    def by_place(v: IndexView) -> dict[tuple[str, int], float]:
        scores = v.bm25_scores(terms, weights)
        return {v.order_key(r)[:2]: float(scores[r]) for r in np.flatnonzero(v.alive_mask).tolist()}

    got, want = by_place(view), by_place(rebuilt)
    assert got.keys() == want.keys()
    assert np.allclose([got[k] for k in want], list(want.values()), rtol=1e-5, atol=0)


def test_after_warming_the_first_queries_open_no_file_and_build_no_table(tmp_path: Path, monkeypatch) -> None:
    """A long-lived reader warms a loaded version off the query path; the first typed prefix, the first
    words and the first prose question (graph hops) then find every file open and every table built:
    on the monorepo the first typed query had paid 25-30 ms for them."""
    import functools

    from aide_tui.core.store.mapped import MappedFile

    root = tmp_path / "ws"
    write_workspace(root)
    settings = load_settings(root, NO_EMBED)
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    s.warm()
    opened: list[str] = []
    built: list[str] = []
    real_init, real_get = MappedFile.__init__, functools.cached_property.__get__

    def init(self, path, expect, where):  # the real open, counted
        opened.append(where)
        real_init(self, path, expect, where)

    def get(self, inst, owner=None):  # the real property, counted when it builds
        if inst is not None and self.attrname not in inst.__dict__:
            built.append(f"{type(inst).__name__}.{self.attrname}")
        return real_get(self, inst, owner)

    monkeypatch.setattr(MappedFile, "__init__", init)
    monkeypatch.setattr(functools.cached_property, "__get__", get)
    for query in ("retr", "retry backoff", "how are failed requests retried"):
        assert s.search(query, limit=20, mode="bm25", prefix=True, hints=False).results, query
        assert (opened, built) == ([], []), query
