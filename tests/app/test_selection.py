"""Issue 33 #8: when the same query is answered again by a newer index (vectors arrived, an edit made a
new #1), a selection the user left where the answer put it follows the new first row (the preview
shows it, as a fresh search would), while a row the user chose stays selected where it moved (what
they look at and what e/d act on do not change under them)."""

from __future__ import annotations

from pathlib import Path

from apphelpers import (
    indexed,
    make_app,
    preview,
    previewing_selection,
    results,
    search,
    shown_query,
    wait_for,
)
from conftest import write_workspace

from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets.preview import preview_key

FILES = {
    "pkg/alpha.py": "def alpha_deadline():\n    return 'deadline'\n",
    "pkg/beta.py": "def beta_deadline():\n    return 'deadline'\n\n\ndef beta_other():\n    return 2\n",
}
NEW_FIRST = "pkg/gamma.py"
NEW_FIRST_CODE = "def deadline(deadline):\n    '''The deadline of a deadline.'''\n    return deadline\n"


async def _reranked(pilot, app, query: str) -> None:  # type: ignore[no-untyped-def]
    """Write a file that outranks every row, reindex (F5) and wait for the same query's new answer."""
    (app.root / NEW_FIRST).write_text(NEW_FIRST_CODE)
    await pilot.press("f5")
    await indexed(pilot, app, runs=2)
    answered = lambda: shown_query(app) == query and any(h.path == NEW_FIRST for h in results(app).hits)  # noqa: E731
    await wait_for(pilot, answered, "the same query answered by the new index")
    assert results(app).hits[0].path == NEW_FIRST
    await wait_for(pilot, lambda: previewing_place(app), "the preview of the selected place")


def previewing_place(app: AideApp) -> bool:
    """The preview shows the selected row's place (a re-ranked hit keeps its preview: same place)."""
    shown, hit = preview(app).shown, results(app).selected_hit
    return shown is not None and hit is not None and shown.key == preview_key(hit)


async def test_an_untouched_selection_follows_the_new_first_row(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", FILES)
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "deadline")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the first row")
        old_first = results(app).selected_hit
        assert old_first is not None and old_first.path != NEW_FIRST
        await _reranked(pilot, app, "deadline")
        assert results(app).cursor == 0
        shown = preview(app).shown
        assert shown is not None and shown.hit.path == NEW_FIRST  # not the old first row, now lower


async def test_a_chosen_row_stays_selected_where_it_moved(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", FILES)
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "deadline")
        await pilot.press("down")
        second = lambda: results(app).cursor == 1 and previewing_selection(app)  # noqa: E731
        await wait_for(pilot, second, "the second row")
        chosen = results(app).selected_hit
        assert chosen is not None
        await _reranked(pilot, app, "deadline")
        hit = results(app).selected_hit
        assert hit is not None and (hit.path, hit.start_line) == (chosen.path, chosen.start_line)
        assert results(app).cursor == 2  # it moved down one: the new file came first
        shown = preview(app).shown
        assert shown is not None and shown.hit.path == chosen.path
