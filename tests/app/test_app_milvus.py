"""The app on a shared Milvus store (Milvus Lite, the real engine): it indexes its workspace through its
indexing process, searches it, and one key widens the search to every workspace of the collection, each
row and preview saying which workspace a hit comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pymilvus", reason="the milvus extra is not installed (pip install 'aide-tui[milvus]')")
pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (pip install 'aide-tui[milvus]')")

from apphelpers import (
    # noqa: E402
    index_bar,
    indexed,
    make_app,
    preview,
    previewing_selection,
    query_box,
    results,
    screen_text,
    search,
    status,
    wait_for,
)
from conftest import write_workspace  # noqa: E402
from milvus_helpers import OTHER, free_port, index_and_release, milvus_settings  # noqa: E402

from aide_tui.core.milvus.connection import workspace_id  # noqa: E402


async def test_the_app_searches_its_workspace_then_all_of_the_collection(tmp_path: Path) -> None:
    alpha = write_workspace(tmp_path / "alpha")
    beta = write_workspace(tmp_path / "beta", OTHER)
    db = tmp_path / "team.db"
    index_and_release(beta, milvus_settings(db))
    beta_id = workspace_id(beta, milvus_settings(db))
    (beta / "lib" / "render.py").unlink()  # not on this machine any more: the preview shows the indexed text

    app = make_app(alpha, milvus_settings(db))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_header")
        assert results(app).hits[0].path == "src/httpclient/headers.py"
        await search(pilot, app, "render_template")
        assert "lib/render.py" not in {h.path for h in results(app).hits}

        await pilot.press("f6")
        await wait_for(
            pilot,
            lambda: bool(results(app).hits) and results(app).hits[0].path == "lib/render.py",
            "results from every workspace",
        )
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        await pilot.pause(0.3)
        text = "\n".join(screen_text(app))
        assert "[beta] lib/render.py:1-3" in text and "[alpha] web/app.ts" in text  # rows: short labels
        assert (
            f"[{beta_id}] lib/render.py:1" in text
        )  # the preview title: the workspace's id, the definition line
        assert "bm25 · all workspaces" in text  # the status line says the scope
        assert "def render_template(name: str, context: dict)" in text
        shown = preview(app).shown
        assert shown is not None and not shown.window.from_disk  # beta's file is gone: the indexed text

        results(app).focus()
        await pilot.pause()
        await pilot.press("a")  # the same switch from the list
        await wait_for(pilot, lambda: "lib/render.py" not in {h.path for h in results(app).hits},
                       "back to this workspace")  # fmt: skip
        assert query_box(app).value == "render_template" and "all workspaces" not in status(app).plain


async def test_an_unreachable_server_is_shown_not_rebuilt(tmp_path: Path) -> None:
    """A connection error is not a damaged index: the app says it and keeps the rows of the collection
    (a rebuild would drop this workspace's rows once the server answers)."""
    root = write_workspace(tmp_path / "ws")
    settings = milvus_settings(f"http://127.0.0.1:{free_port()}")
    app = make_app(root, settings)
    rebuilds: list[bool] = []
    reindex = app.live.reindex

    def recorded(rebuild: bool = False, paths: object = None) -> None:
        rebuilds.append(rebuild)
        reindex(rebuild, paths)  # type: ignore[arg-type]

    app.live.reindex = recorded  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: index_bar(app).state == "error", "the error on the index line")
        assert "cannot connect" in index_bar(app).label
        await pilot.pause(0.3)
        assert True not in rebuilds and index_bar(app).state == "error"


async def test_d_and_r_say_that_definitions_need_the_local_store(tmp_path: Path) -> None:
    alpha = write_workspace(tmp_path / "alpha")
    app = make_app(alpha, milvus_settings(tmp_path / "team.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        rows = [(h.path, h.start_line) for h in results(app).hits]
        assert rows
        results(app).focus()
        await pilot.pause()
        for key in ("d", "r"):
            status(app).say(None)
            await pilot.press(key)
            await wait_for(pilot, lambda: "need the local store" in status(app).plain, f"{key}: the reason")
            assert [(h.path, h.start_line) for h in results(app).hits] == rows and not results(app).places
        assert query_box(app).value == "hops next_request"
