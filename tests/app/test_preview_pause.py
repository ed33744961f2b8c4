"""The typing-driven preview waits for typing to pause: not while the query typed is newer than the
results shown (their first hit is about to change, and rendering it would make the next key's frame
wait; on SQLAlchemy that was the slow keys of the tmux benchmark), and a key typed while it waits
makes it wait on. It still lands once the answer is in and the keys stop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from apphelpers import indexed, make_app, preview, previewing_selection, query_box, results, search, wait_for
from conftest import write_workspace

from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets.preview import preview_key

FILES = {
    "pkg/alpha.py": "def alpha_deadline():\n    return 'deadline'\n",
    "pkg/beta.py": "def beta_timeout():\n    return 'timeout'\n",
}


@asynccontextmanager
async def previewing(tmp_path: Path, query: str) -> AsyncIterator[tuple[Any, AideApp]]:
    """The app on FILES with ``query`` searched and its first hit previewed: (pilot, app)."""
    app = make_app(write_workspace(tmp_path / "ws", FILES))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, query)
        await wait_for(pilot, lambda: previewing_selection(app), "the first preview")
        yield pilot, app


async def test_a_typed_query_newer_than_its_results_holds_the_preview(tmp_path: Path) -> None:
    async with previewing(tmp_path, "alpha_deadline") as (pilot, app):
        pv, box = preview(app), query_box(app)
        assert not pv.hold()  # the results shown answer the query in the box
        box.value = "beta_timeout"  # typed: its answer needs the event loop, which has not run yet
        assert pv.hold()
        await wait_for(pilot, lambda: results(app).shown_query == "beta_timeout", "the new answer")
        assert not pv.hold()
        await wait_for(pilot, lambda: previewing_selection(app), "the preview after the pause")
        assert pv.shown is not None and pv.shown.hit.path == "pkg/beta.py"


async def test_a_held_preview_renders_nothing_until_released_and_then_the_latest(tmp_path: Path) -> None:
    async with previewing(tmp_path, "deadline") as (pilot, app):
        pv = preview(app)
        first = pv.shown
        assert first is not None and first.hit.path == "pkg/alpha.py"
        await search(pilot, app, "timeout")
        await wait_for(pilot, lambda: previewing_selection(app), "the second preview")
        beta = results(app).selected_hit
        assert beta is not None and beta.path == "pkg/beta.py"
        asked: list[bool] = []
        held = True

        def hold() -> bool:
            asked.append(held)
            return held

        pv.hold = hold
        pv.request(first.hit, settle=True)  # a typing-driven request while the next answer is coming
        pv.postpone()  # a key typed meanwhile: still waiting, not dropped
        await wait_for(pilot, lambda: len(asked) >= 3, "the settle to come round three times")
        assert pv.shown is not None and preview_key(pv.shown.hit) == preview_key(beta)  # nothing rendered
        held = False
        await wait_for(pilot, lambda: pv.shown is not None and pv.shown.hit.path == "pkg/alpha.py",
                       "the waiting preview once released")  # fmt: skip
        assert asked[-1] is False


async def test_a_typed_query_without_results_clears_the_preview_after_the_pause(tmp_path: Path) -> None:
    """``q`` on the way to ``queuepool`` finds nothing: the pane keeps the hit it shows (the next key's
    results are coming) instead of saying "no results" beside them; once typing pauses it says so. An
    emptied query box clears it at once."""
    from aide_tui.core.search.response import SearchResponse
    from aide_tui.tui.search_loop import SearchAnswer, SearchRequest

    async with previewing(tmp_path, "alpha_deadline") as (pilot, app):
        pv, browser = preview(app), app.main_screen.browser
        shown = pv.shown
        nothing = SearchAnswer(SearchRequest(99, "zzqx", "bm25"), SearchResponse("zzqx", [], mode="bm25"))
        query_box(app).value = "zzqx"  # typed; its own (empty) answer comes later, through the loop
        browser.show_answer(nothing, "no results")  # what a typed query without results delivers
        assert results(app).hits == [] and pv.shown is shown  # the pane waits for the pause
        await wait_for(pilot, lambda: pv.shown is None, "the placeholder after the pause")
        assert "no results" in pv.body.plain
        await search(pilot, app, "alpha_deadline")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview again")
        empty = SearchAnswer(SearchRequest(100, "", "bm25"), SearchResponse("", [], mode="bm25"))
        browser.show_answer(empty, "")
        assert pv.shown is None  # an emptied box: at once


async def test_a_settle_that_fires_after_the_results_list_is_gone_does_not_raise(tmp_path: Path) -> None:
    """While the app closes, its widgets go one by one: a settle timer firing after the results list
    was removed (seen once under load, as a NoMatches at shutdown) must still find what it asks about."""
    async with previewing(tmp_path, "deadline") as (pilot, app):
        pv, listing = preview(app), results(app)
        await listing.remove()
        assert not pv.hold()  # the held list still answers: it showed the query in the box
        pv._settled()
        await pilot.pause()
