"""Keys are Textual bindings with ids (tui/keys.py): a user's ``[keys]`` table remaps them, the help and
the palette show the keys in effect, a bad table is a config error, and keys typed in a burst act in
the order they were typed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from apphelpers import (
    indexed,
    make_app,
    previewing_selection,
    query_box,
    results,
    screen_text,
    search,
    shown_query,
    wait_for,
)
from textual import events

from aide_tui.core.config import load_settings, user_config_path
from aide_tui.core.errors import ConfigError
from aide_tui.tui.app import AideApp
from aide_tui.tui.keys import COMMAND_IDS
from aide_tui.tui.widgets import HelpScreen, PreviewBody


def _user_config(text: str) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _burst(app: AideApp, *keys: tuple[str, str | None]) -> None:
    """Keys delivered the way the terminal driver delivers a burst: no pause between them."""
    assert app._driver is not None
    for key, char in keys:
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


async def test_a_keymap_from_the_config_moves_help_to_f10(workspace: Path) -> None:
    _user_config('[embedding]\nbackend = "none"\n[keys]\nhelp = "f10"\n')
    app = make_app(workspace, load_settings(workspace))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert app.screen is app.main_screen  # F1 is no longer help
        assert "F10 help" in screen_text(app)[-1]  # the footer shows the key in effect
        await pilot.press("f10")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "help on F10")
        assert isinstance(app.screen, HelpScreen)
        rows = dict((what, keys) for keys, what in app.screen.rows)
        assert rows["this help"] == "F10 ?"
        assert any(line.strip("│ ").startswith("F10 ?") for line in screen_text(app))
        await pilot.press("f10")  # the help key closes it too
        await wait_for(pilot, lambda: app.screen is app.main_screen, "the help to close")
        palette = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert palette["Help: keys"] == "this help (F10)"


async def test_letters_can_be_remapped_for_the_list(workspace: Path) -> None:
    _user_config('[embedding]\nbackend = "none"\n[keys]\n"browse.down" = "J"\n')
    app = make_app(workspace, load_settings(workspace))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        await pilot.press("J")
        assert results(app).cursor == 1
        await pilot.press("j")  # no longer a command: a letter for the query
        assert query_box(app).value == "returnj" and app.focused is query_box(app)


def test_unknown_ids_and_bad_keys_are_config_errors(workspace: Path) -> None:
    cases = {
        "[keys]\nhepl = 'f10'\n": "did you mean help?",
        "[keys]\nhelp = 'h'\n": "types a letter",
        "[keys]\nhelp = 'f2'\n": "F2 is bound to both",
    }
    for text, needle in cases.items():
        _user_config('[embedding]\nbackend = "none"\n' + text)
        with pytest.raises(ConfigError) as err:
            AideApp(workspace, load_settings(workspace), watch=False)
        assert needle in str(err.value)
    assert all(i in str(err.value) or needle != "did you mean help?" for i in COMMAND_IDS)
    _user_config("[keys]\nhepl = 'f10'\n")
    with pytest.raises(ConfigError, match="valid ids: quit, clear, down, browse.down"):
        AideApp(workspace, load_settings(workspace), watch=False)


def test_the_app_command_reports_a_bad_keymap_and_exits_2(workspace: Path) -> None:
    _user_config("[keys]\nhepl = 'f10'\n")
    out = subprocess.run([sys.executable, "-m", "aide_tui", str(workspace)], capture_output=True, text=True,
                         env=dict(os.environ), timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert out.returncode == 2
    assert "unknown id 'hepl'" in out.stderr and "valid ids:" in out.stderr
    assert "Traceback" not in out.stderr


async def test_a_workspace_config_cannot_remap_keys(workspace: Path) -> None:
    (workspace / ".aide").mkdir(exist_ok=True)
    (workspace / ".aide" / "config.toml").write_text('[keys]\nquit = "ctrl+x"\n')
    notes: list[str] = []
    settings = load_settings(workspace, {"embedding": {"backend": "none"}}, notes=notes)
    assert settings.keys.as_dict() == {}
    assert notes and "keys.quit" in notes[0]


# -- arrival order: keys typed in one burst act in the order typed ----------------------------------


async def test_enter_then_letters_in_a_burst_act_on_the_preview(workspace: Path) -> None:
    """Typed faster than the app handles them: ``enter`` moves to the preview before ``y`` arrives,
    so ``y`` copies (it is not typed into the query), and it copies the results of the query typed."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        _burst(app, *((c, c) for c in "backoff_delays"), ("enter", None), ("y", "y"))
        await wait_for(pilot, lambda: app.clipboard.startswith("src/"), "the copied location")
        assert query_box(app).value == "backoff_delays" and isinstance(app.focused, PreviewBody)
        assert app.clipboard.startswith(results(app).hits[0].path + ":")


async def test_letters_typed_in_the_list_in_a_burst_all_go_to_the_query(workspace: Path) -> None:
    """``x`` moves the focus to the query; ``y`` right behind it is a letter there, not "copy"."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "return")
        results(app).focus()
        await pilot.pause()
        clipboard = app.clipboard
        _burst(app, ("space", " "), ("x", "x"), ("y", "y"), ("backspace", None), ("z", "z"))
        await wait_for(pilot, lambda: shown_query(app) == "return xz", "the results of the typed query")
        assert query_box(app).value == "return xz" and app.clipboard == clipboard


async def test_moves_in_a_burst_wait_for_the_results_they_were_typed_against(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        _burst(app, *((c, c) for c in "return"), ("down", None), ("down", None))
        await wait_for(pilot, lambda: shown_query(app) == "return", "the results")
        await pilot.pause(0.2)
        assert len(results(app).hits) >= 3 and results(app).cursor == 2
        await wait_for(pilot, lambda: previewing_selection(app), "the preview of the selection")


async def test_typing_repaints_the_query_box_without_a_screen_layout(workspace: Path) -> None:
    """Each keystroke changes the box's virtual size; Textual's Input asks for a layout of the whole
    screen for it (15 ms a key on a big workspace). The box repaints alone, and a query longer than the
    box still scrolls to show its end."""
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await indexed(pilot, app)
        box = query_box(app)
        layouts: list[bool] = []
        plain_refresh = box.refresh

        def counting_refresh(*regions: Any, layout: bool = False, **kwargs: Any) -> Any:
            layouts.append(layout)
            return plain_refresh(*regions, layout=layout, **kwargs)

        box.refresh = counting_refresh  # type: ignore[method-assign]
        long_query = (
            "return the value of the redirect location header when the client follows it to another host"
        )
        for ch in long_query:
            await pilot.press("space" if ch == " " else ch)
        await wait_for(pilot, lambda: shown_query(app) == long_query, "the long query's results")
        # typing asked for a layout on every key (90 here); a one-off restyle while typing (the app
        # settling its theme, once in a CI run under load) may still ask for one, and is not typing's
        assert layouts and sum(layouts) <= 1, f"{sum(layouts)} of {len(layouts)} refreshes asked for a layout"
        assert box.max_scroll_x > 0 and box.scroll_x == box.max_scroll_x
        assert "follows it" in screen_text(app)[0]
        for key in ["left"] * 30 + ["delete"] * 30:  # back into the text, then cut its end: the box
            await pilot.press(key)  # scrolls back with it
        await pilot.pause()
        assert box.value == long_query[:-30] and box.scroll_x == box.max_scroll_x
        assert long_query[:-30].rsplit(" ", 1)[-1] in screen_text(app)[0]


async def test_a_pasted_snippet_of_several_lines_is_searched_whole_and_finds_its_chunk(
    workspace: Path,
) -> None:
    """Textual's Input keeps the first line of a paste; the query box joins the lines with spaces, so a
    pasted piece of code finds the chunk that holds it (its row tagged ``V1``)."""
    snippet = (
        "hops = 0\n"
        "        while response.status in (301, 302, 307, 308) and hops < max_hops:\n"
        "            response = self.send(response.next_request())\n"
        "            hops += 1\n"
    )
    joined = " ".join(snippet.split())
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        box = query_box(app)
        box.focus()
        box.post_message(events.Paste(snippet))
        await wait_for(pilot, lambda: shown_query(app) == joined, "the results of the pasted lines")
        assert box.value == joined
        hit = results(app).hits[0]
        assert hit.path == "src/httpclient/client.py" and hit.ranks.get("verbatim") == 1
        assert any("client.py" in line and " V1" in line for line in screen_text(app))
