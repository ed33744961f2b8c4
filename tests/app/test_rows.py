"""Issue 23 #3: rows give the symbol the room the terminal has (at 120 and 80 columns, with and
without the preview), qualified names are cut from the left only as far as needed, and a chunk that
packs several definitions is labelled by the one at its best line (where the preview lands)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from apphelpers import (
    indexed,
    make_app,
    preview,
    previewing_selection,
    results,
    screen_text,
    search,
    shown_query,
    wait_for,
)
from textual.pilot import Pilot

from aide_tui.tui.app import AideApp

POOL = "src/httpclient/transport/connection_pool/async_pool_manager.py"
POOL_CODE = '''"""Connection pools."""


class AsyncConnectionPoolManager:
    """Keeps connections per host."""

    def rebalance_keepalive_connections(self, hosts):
        """Move idle keepalive sockets to the busiest hosts."""
        for host in hosts:
            host.keepalive = max(1, host.keepalive - 1)
        return hosts
'''
HELPERS = "src/httpclient/small_helpers.py"
HELPERS_CODE = """def alpha_value():
    return 1


def beta_value():
    return 2


def gamma_deadline_seconds():
    return 30


def delta_value():
    return 4
"""
QUALIFIED = "AsyncConnectionPoolManager.rebalance_keepalive_connections"


@pytest.fixture
def rows_workspace(workspace: Path) -> Path:
    for rel, code in ((POOL, POOL_CODE), (HELPERS, HELPERS_CODE)):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(code)
    return workspace


def _row(lines: list[str], needle: str) -> str:
    return next(line for line in lines if needle in line)


def _list_row(app: AideApp, needle: str) -> str:
    """The row holding ``needle`` as the list draws it (the preview beside it cut off)."""
    return _row(screen_text(app), needle).split("││")[0].rstrip().rstrip("│") + "│"


def _cells(row: str) -> list[str]:
    """A row's cells: ``path:span``, the symbol (when shown), the ranks and the score."""
    return re.split(r"\s{2,}", row.strip(" │"))


async def _labelled(pilot: Pilot[Any], app: AideApp, query: str) -> None:
    """Wait until the rows of ``query``'s answer carry the labels worked out for them."""
    await wait_for(pilot, lambda: shown_query(app) == query and results(app).labelled,
                   f"the rows of {query!r} labelled")  # fmt: skip


@pytest.mark.parametrize(("size", "with_preview"), [((120, 40), True), ((120, 40), False), ((80, 24), True),
                                                   ((80, 24), False)])  # fmt: skip
async def test_the_symbol_gets_the_room_the_terminal_has(
    rows_workspace: Path, size: tuple[int, int], with_preview: bool
) -> None:
    app = make_app(rows_workspace)
    async with app.run_test(size=size) as pilot:
        await indexed(pilot, app)
        if not with_preview:
            await pilot.press("f3")
        await search(pilot, app, "rebalance keepalive")
        assert results(app).hits[0].path == POOL
        await _labelled(pilot, app, "rebalance keepalive")
        row = _list_row(app, "async_pool_manager.py:")
        location, shown, tags, score = _cells(row)
        assert location.endswith("async_pool_manager.py:1-11")  # the file name and its range stay whole
        assert tags.startswith("B1") and score == f"{results(app).hits[0].score:.3f}"  # the fused score
        if size[0] >= 120 and not with_preview:
            assert shown == QUALIFIED  # the whole qualified name: the path's folders gave way for it
            assert location.startswith("src/httpclient/") and "…/" in location
        else:
            # the class holds the method at the best line: the path's folders give way first, then the
            # qualified name is cut from the left only as far as the row needs (it reaches the ranks)
            assert location == "…/async_pool_manager.py:1-11"
            assert shown.startswith("…") and QUALIFIED.endswith(shown[1:])
            assert row.index(tags) == row.index(shown) + len(shown) + 2
            if size[0] < 100:  # the list is the full width: the method's whole name and more
                assert "rebalance_keepalive_connections" in shown


SHORT = "src/blackd/__init__.py"
SHORT_CODE = """async def handle(request, executor):
    '''Format the posted source and send the reply.'''
    return await executor.reply(request)
"""
LONG_NAME = "tests/data/cases/keep_newline_after_match_stmt.py"
LONG_CODE = """def check_request_handle_newlines():
    return "request handle"
"""


async def test_a_short_path_keeps_its_label_beside_a_long_file_name(workspace: Path) -> None:
    """Issue 33 #4: at 120×40 with the preview, rows under a short path showed no symbol because every
    location was padded to the widest file name; each row now shares the room between its own path and
    its symbol (folders give way first), and the symbols line up where the rows have the room."""
    for rel, code in ((SHORT, SHORT_CODE), (LONG_NAME, LONG_CODE)):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(code)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "handle request")
        await _labelled(pilot, app, "handle request")
        paths = [h.path for h in results(app).hits]
        assert SHORT in paths and LONG_NAME in paths
        short = _cells(_list_row(app, "__init__.py:"))
        assert short[0] == f"{SHORT}:1-3" and short[1] == "handle", short
        assert "…/keep_newline_after_match_stmt.py:1-2" in _list_row(app, "_stmt.py:")  # its name whole
        client = _cells(_list_row(app, "client.py:"))
        assert client[0].startswith("src/httpclient/client.py:") and client[1] == "Client.send"
        columns = {_list_row(app, n).index(c) for n, c in (("__init__.py:", "handle"),
                                                           ("client.py:", "Client.send"))}  # fmt: skip
        assert len(columns) == 1  # both symbols start at one column


async def test_a_packed_chunk_is_labelled_by_the_definition_at_its_best_line(rows_workspace: Path) -> None:
    """The row, and the preview's header, name the definition at the best line. Issue 30: this test read
    the screen twice and a repaint of the same answer between the reads showed the chunk's own symbol;
    it now waits for the labelled answer and reads once (and a repaint keeps the labels)."""
    app = make_app(rows_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "deadline seconds")
        hit = results(app).hits[0]
        assert hit.path == HELPERS and hit.symbol == "def alpha_value"  # one chunk packs the four
        await _labelled(pilot, app, "deadline seconds")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        row = _row(screen_text(app), "small_helpers.py")
        assert "deadline_seconds" in row.split("││")[0] and "alpha" not in row.split("││")[0]
        shown = preview(app).shown
        assert shown is not None
        assert "gamma_deadline_seconds" in shown.body.plain.splitlines()[shown.current_row]
        assert "def gamma_deadline_seconds" in shown.title.plain and "alpha" not in shown.title.plain


LONG = "src/httpclient/pool/manager_impl.py"


def _long_function() -> str:
    body = [f"    step_{i} = configure(step_{i - 1 if i else 0})" for i in range(80)]
    body[70] = "    return drain_keepalive_sockets(step_69)"
    return "def rebalance_connections(pool):\n" + '    """Rebalance."""\n' + "\n".join(body) + "\n"


@pytest.mark.parametrize(
    ("first", "then"), [((120, 40), (80, 24)), ((80, 24), (120, 40)), ((120, 40), (120, 16))]
)
async def test_a_resize_keeps_the_preview_on_the_hit_line(
    workspace: Path, first: tuple[int, int], then: tuple[int, int]
) -> None:
    """Issue 23 #5: after 120×40 → 80×24 the preview showed lines above the hit line."""
    (workspace / LONG).parent.mkdir(parents=True, exist_ok=True)
    (workspace / LONG).write_text(_long_function())
    best = 73
    assert "drain_keepalive_sockets" in (workspace / LONG).read_text().splitlines()[best - 1]
    app = make_app(workspace)
    async with app.run_test(size=first) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "drain_keepalive_sockets")
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")
        await wait_for(pilot, lambda: any(f"{best} ▶" in line for line in screen_text(app)), "the hit line")
        await pilot.resize_terminal(*then)
        await wait_for(pilot, lambda: app.size == then and len(screen_text(app)) == then[1], "the resize")
        await wait_for(
            pilot,
            lambda: any(f"{best} ▶" in line for line in screen_text(app)),
            "the hit line after the resize",
        )
        row = next(line for line in screen_text(app) if f"{best} ▶" in line)
        assert "drain_keepalive_sockets" in row


async def test_the_labels_of_earlier_rows_never_label_new_ones(rows_workspace: Path) -> None:
    app = make_app(rows_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "deadline seconds")
        await _labelled(pilot, app, "deadline seconds")
        await search(pilot, app, "backoff_delays")
        await _labelled(pilot, app, "backoff_delays")
        row = _row(screen_text(app), "retry.py")
        assert "backoff_delays" in row and "deadline" not in row


async def test_a_markdown_section_is_labelled_by_its_heading(workspace: Path) -> None:
    """A Markdown hit's row shows its section's heading whole, not each level's last word
    (``quality.23)`` for ``# Retrieval quality > ## Search as you type (issue 23)``)."""
    from aide_tui.tui.widgets.results import compact_symbol

    assert (
        compact_symbol("# Retrieval quality > ## Search as you type (issue 23)")
        == "Search as you type (issue 23)"
    )
    assert compact_symbol("class Console > def render") == "Console.render"  # code keeps its chain
    filler = "".join(f"Paragraph {i} about installing the client and its options.\n\n" for i in range(80))
    marmalade = "".join(f"Step {i}: how the marmalade is orchestrated.\n\n" for i in range(40))
    (workspace / "docs" / "guide.md").write_text(
        f"# Guide\n\n## Setup\n\n{filler}## Marmalade orchestration notes\n\n{marmalade}"
    )  # long enough for the section to be a chunk of its own: symbol "# Guide > ## Marmalade ..."
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press("f3")
        await search(pilot, app, "marmalade orchestrated")
        assert results(app).hits[0].path == "docs/guide.md"
        await _labelled(pilot, app, "marmalade orchestrated")
        row = _row(screen_text(app), "docs/guide.md:")
        assert "Marmalade orchestration notes" in row, row


async def test_rows_are_labelled_only_after_the_frame_that_draws_them(workspace: Path) -> None:
    """The search loop labels an answer's rows once they are on screen, not while the frame that shows
    them is being drawn (both want the interpreter, and the rows are what the person waits for). The
    screen used to say "painted" when its message queue went idle, which came before that frame: the
    labelling then ran beside the paint and doubled its time on the monorepo benchmark."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        events: list[tuple[str, int]] = []  # ("drawn" | "painted", the rows' identity then)
        rows = results(app)
        draw = rows.render_lines

        def drawn(crop: Any) -> Any:  # the real drawing, noted
            events.append(("drawn", id(rows.hits)))
            return draw(crop)

        rows.render_lines = drawn  # type: ignore[method-assign]
        loop = app.main_screen.loop
        told = loop.painted

        def painted(seq: int) -> None:
            events.append(("painted", id(rows.hits)))
            told(seq)

        loop.painted = painted  # type: ignore[method-assign]
        await search(pilot, app, "follow redirects")
        await wait_for(pilot, lambda: ("painted", id(rows.hits)) in events, "the answer painted")
        assert len(rows.hits) > 0
        for i, (what, hits) in enumerate(events):
            if what == "painted":  # the rows it says are painted were drawn before it said so
                assert ("drawn", hits) in events[:i], events
