"""Issue 23 #4: the status line counts one unit per number, drops whole parts by priority when narrow
(never a value cut in the middle), says nothing of vectors when the app has no embedder; the footer
never cuts a key's label."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from apphelpers import indexed, make_app, results, screen_text, search, status, wait_for

from aide_tui.core.config import load_settings
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.status import IndexStatus

BUSY = IndexStatus("partial", files=1203, chunks=27324, embedded=69, embedder="builtin-minilm",
                   vectors_missing=80341, size_bytes=2_000_000,
                   last_indexed="2025-01-01T10:11:12")  # fmt: skip
LABELS = {"select", "quit", "mode", "layout", "history", "write", "reindex", "ask", "help", "preview", "edit",
          "copy", "match", "def", "refs"}  # fmt: skip


async def test_without_an_embedder_no_vectors_are_counted(workspace: Path) -> None:
    app = make_app(workspace, start_index=False)  # --embedder none; no run whose reload would repaint
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.ready, "the index opened")
        status(app).show_index(BUSY)  # an index built with an embedder, opened without one
        line = status(app).plain
        assert "27324 chunks" in line and "vector" not in line and "embedded" not in line


async def test_with_an_embedder_each_count_has_its_own_unit(workspace: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": "http://127.0.0.1:9"}})
    app = make_app(workspace, settings, start_index=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.ready, "the index opened")
        status(app).show_index(BUSY)
        await pilot.pause()
        line = status(app).plain
        assert "27324 chunks" in line and "80341 vectors to go" in line
        assert "69 embedded" not in line  # a count of chunks beside a count of vectors read as one sum
        counts = [p.strip() for p in re.split(r"\s{2,}|·", line.split("indexed")[0]) if re.search(r"\d", p)]
        assert counts and all(
            re.fullmatch(r"\d+ (files|chunks|vectors to go)|\d+\.\d [KMG]B", c) for c in counts
        )


@pytest.mark.parametrize(("backend", "named"), [("static", "static:minilm-256"), ("none", "none")])
async def test_the_embedder_named_is_the_one_this_app_searches_with(
    workspace: Path, backend: str, named: str
) -> None:
    """An index that also holds the transformer's vectors, opened with the static tier alone (or none):
    the line names what the queries use, not what the index was once embedded with."""
    settings = load_settings(workspace, {"embedding": {"backend": backend}})
    app = make_app(workspace, settings, start_index=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.ready, "the index opened")
        status(app).show_index(replace(BUSY, static="static:minilm-256", static_missing=0))
        await pilot.pause()
        line = status(app).plain
        assert f"embedder {named}" in line and "builtin-minilm" not in line, line


@pytest.mark.parametrize("width", [120, 80, 60, 40])
async def test_a_narrow_status_line_drops_whole_parts_by_priority(workspace: Path, width: int) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": "http://127.0.0.1:9"}})
    app = make_app(workspace, settings, start_index=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.ready, "the index opened")
        line = status(app)
        line.show_index(BUSY)
        line.show_response(SearchResponse("q", [], took_ms=12.0, mode="bm25"))
        line.degraded_reason = None
        await pilot.pause()
        shown = screen_text(app)[-2].rstrip()
        assert "…" not in shown and len(shown) <= width
        assert shown.lstrip().startswith(line.mode) and "0 results" in shown  # the first priorities stay
        parts = [p.strip() for p in re.split(r"\s{2,}|·", shown) if p.strip()]
        whole = {"0 results in 12 ms", "1203 files", "27324 chunks", "80341 vectors to go", "1.9 MB",
                 "embedder builtin-minilm", "indexed 10:11:12", line.mode}  # fmt: skip
        assert set(parts) <= whole, parts


@pytest.mark.parametrize("size", [(120, 40), (100, 30), (80, 24), (60, 20)])
async def test_the_footer_never_cuts_a_label(workspace: Path, size: tuple[int, int]) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await indexed(pilot, app)
        for focus in ("query", "list"):
            if focus == "list":
                await search(pilot, app, "return")
                await pilot.press("tab")
            want = " e edit " if focus == "list" else "^p palette"  # the footer of that focus, drawn
            await wait_for(pilot, lambda w=want: w in screen_text(app)[-1], f"the footer, {focus} focused")
            footer = screen_text(app)[-1]
            keys_part = footer.split("▏")[0].rstrip()
            last = keys_part.split()[-1]
            assert last in LABELS, footer
            assert "^p palette" in footer


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (60, 20)])
async def test_the_footer_keeps_the_help_key(workspace: Path, size: tuple[int, int]) -> None:
    """Issue 33 #14: at 80 columns the footer dropped F1 and a newcomer saw no way to the help."""
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await indexed(pilot, app)
        await wait_for(pilot, lambda: "F1 help" in screen_text(app)[-1], "the help key, query focused")
        await search(pilot, app, "return")
        await pilot.press("tab")
        await wait_for(pilot, lambda: " e edit " in screen_text(app)[-1], "the list's keys")
        footer = screen_text(app)[-1]
        assert "F1 help" in footer and "^p palette" in footer, footer


async def test_a_misspelt_name_says_what_was_searched_for(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "parse_haeder")
        await wait_for(pilot, lambda: "searched for parse_header" in status(app).plain, "the fixed query")
        assert results(app).hits[0].symbol == "def parse_header"
        await search(pilot, app, "parse_header")
        await wait_for(pilot, lambda: "result" in status(app).plain, "the count")
        assert "searched for" not in status(app).plain


async def test_a_question_about_one_name_says_what_it_was_read_as(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "who calls parse_header")
        await wait_for(pilot, lambda: "read as uses of parse_header" in status(app).plain, "the reading")
        await search(pilot, app, "where is parse_header defined")
        await wait_for(pilot, lambda: "read as the definition of parse_header" in status(app).plain, "it")
        assert results(app).hits[0].symbol == "def parse_header"
        await search(pilot, app, "parse_header")
        await wait_for(
            pilot,
            lambda: "result" in status(app).plain and "read as" not in status(app).plain,
            "a plain name read as itself",
        )
