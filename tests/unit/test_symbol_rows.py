"""The chunks defining a query's names, looked up for all the names at once in each segment
(store/view.py: symbols_rows): the live rows that define each name, any case, across segments and
after an edit left dead rows behind."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.config import load_settings
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.searcher import Searcher


def _write(root: Path) -> None:
    for i in range(6):
        p = root / "pkg" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        funcs = "\n\n".join(
            f"def handler_{j}(request):\n    return request.get({j})\n" for j in range(i, i + 3)
        )
        p.write_text(f"class Shared{i % 2}:\n    def Resolve(self):\n        return {i}\n\n\n{funcs}\n")


def test_every_name_gets_the_live_rows_that_define_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write(root)
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    # an edit: mod_0's rows in the first segment die, its new rows are a second segment's
    (root / "pkg" / "mod_0.py").write_text(
        "def handler_0(request):\n    return None\n\ndef only_here():\n    pass\n"
    )
    Indexer(root, settings).run()
    retriever = Searcher(root, settings).retriever
    retriever.refresh()
    view = retriever.view  # type: ignore[attr-defined]
    assert view is not None and len(view.parts) == 2

    live = view.alive_mask
    expected: dict[str, list[int]] = {}
    for row in range(view.n_rows):
        for name in view.defines(row):
            if live[row]:
                expected.setdefault(name.lower(), []).append(row)
    names = [
        "handler_0",
        "HANDLER_2",
        "Resolve",
        "resolve",
        "shared1",
        "only_here",
        "no_such_name",
        "handler_7",
    ]
    got = view.symbols_rows(names)

    assert list(got) == [
        "handler_0",
        "handler_2",
        "resolve",
        "shared1",
        "only_here",
        "no_such_name",
        "handler_7",
    ]
    for key, rows in got.items():
        assert sorted(rows) == sorted(expected.get(key, [])), key
    assert got["no_such_name"] == [] and len(got["handler_0"]) == 1  # the dead row of the old mod_0 is gone
    assert len(got["resolve"]) == 5 and len(got["handler_2"]) == 2  # mod_0 defined both before the edit
    assert all(view.symbol_rows(n) == got[n.lower()] for n in names)  # one name at a time: the same rows
