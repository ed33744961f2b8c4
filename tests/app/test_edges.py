"""Issue 23 #8: ctrl+c clears a non-empty query, else quits (as fzf); ctrl+u with the list focused clears
the query; the F4 message never breaks its path inside a name; deleting files says how many were
removed."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest
from apphelpers import (
    index_bar,
    indexed,
    make_app,
    query_box,
    results,
    screen_text,
    search,
    shown_query,
    wait_for,
)

from aide_tui.core.appstate import AppState
from aide_tui.tui.widgets import indexbar


async def test_ctrl_c_clears_the_query_then_quits(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        await pilot.press("ctrl+c")  # from the list: the query is cleared, the focus goes back to it
        assert query_box(app).value == "" and app.focused is query_box(app)
        await wait_for(pilot, lambda: shown_query(app) == "", "the cleared results")
        assert app.is_running
        await pilot.press("ctrl+c")  # an empty query: quit
        await wait_for(pilot, lambda: not app.is_running, "the app to quit", steps=40)
    assert AppState(workspace).workspace.history == []  # as in a shell: a cleared query is not kept


async def test_ctrl_u_in_the_list_clears_the_query(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse header")
        results(app).focus()
        await pilot.pause()
        await pilot.press("ctrl+u", *"digest")
        assert query_box(app).value == "digest"  # not "parse headerdigest"
        await pilot.press("left", "ctrl+u")  # in the query box ctrl+u deletes up to the cursor, as before
        assert query_box(app).value == "t"


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_f4_message_breaks_its_path_only_between_names(
    workspace: Path, size: tuple[int, int]
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size, notifications=True) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "backoff")
        await pilot.press("f4")
        target = AppState(workspace).results_file()
        await wait_for(
            pilot, lambda: any("results.vimgrep" in line for line in screen_text(app)), "the message"
        )
        await pilot.pause(0.3)
        region = app.screen.query_one("Toast").region  # the message, as drawn
        lines = screen_text(app)[region.y : region.bottom]
        toast = [line[region.x + 1 : region.right].strip() for line in lines]
        text = "\n".join(toast)
        home = str(Path.home())
        shown = "~" + str(target)[len(home) :] if str(target).startswith(home + "/") else str(target)
        start = next(i for i, t in enumerate(toast) if t and shown.startswith(t))
        path_lines = [t for t in toast[start:] if t]
        assert "".join(path_lines) == shown, text  # the whole path, in order
        for piece in path_lines[:-1]:
            assert piece.endswith("/"), text  # each line ends between two names
        assert target.parent.name in text  # the workspace's folder (name and hash) on one line


async def test_deleting_files_says_how_many_were_removed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = workspace / "src" / "legacy"
    gone.mkdir(parents=True)
    for i in range(12):
        (gone / f"old_{i}.py").write_text(f"def old_{i}():\n    return {i}\n")
    app = make_app(workspace, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        for attempt in range(4):  # until the watcher is registered: a probe file gets indexed
            (workspace / "probe.py").write_text(f"def probe_{attempt}():\n    pass\n")
            try:
                await wait_for(pilot, lambda: index_bar(app).runs_done >= 2, "the probe indexed", steps=100)
                break
            except AssertionError:
                continue
        asked: list[object] = []
        # hold the run the watcher starts (the host's own live workspace runs it), to read the line
        monkeypatch.setattr(app.live.live, "reindex", lambda **kw: asked.append(kw))
        batches: list[set[str]] = []  # the paths of each watcher batch the line was made from
        counted = indexbar.changes

        def counting(root: Path, paths: Iterable[str]) -> tuple[int, int]:
            got = list(paths)
            batches.append(set(got))
            return counted(root, got)

        monkeypatch.setattr(indexbar, "changes", counting)
        (workspace / "src/httpclient/retry.py").write_text("def renamed():\n    return 1\n")
        shutil.rmtree(gone)
        await wait_for(pilot, lambda: "removed" in index_bar(app).label, "the watcher's batch", steps=400)
        label = index_bar(app).label
        assert re.search(r"\b12 removed\b", label), label  # the files, not their folder
        # the edit may come in this batch or the next; a probe written twice (a slow first round under
        # load) may ride along with it
        edited = {p for p in batches[-1] if (workspace / p).is_file()}
        assert edited <= {"src/httpclient/retry.py", "probe.py"}, edited
        if edited:
            assert re.search(rf"\b{len(edited)} changed\b", label), label
        else:
            assert "changed" not in label, label
