"""``d`` and ``r`` in the app (issue 25): from the line the preview shows, the definition of the name meant
there and the list of its references, from the index's symbol graph; backspace (and ctrl+o) go back to
the list before, cursor and preview as they were. The sample workspace, really indexed; references are
checked against ripgrep's whole-word matches in the same files."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from apphelpers import indexed, make_app, preview, query_box, results, screen_text, search, status, wait_for
from conftest import write_workspace
from textual.pilot import Pilot

from aide_tui.core.config import load_settings, user_config_path
from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import HelpScreen
from aide_tui.tui.widgets.footer import LookupFooter

MOCK = '''
    """A client double for tests."""

    from httpclient.client import Client


    class MockClient(Client):
        """Records what it would deliver."""

        def __init__(self) -> None:
            self.sent = []

        def send(self, request):
            self.sent.append(request)
            return b""


    def send_all(client, requests):
        return [client.send(r) for r in requests]
'''


def _rows(app: AideApp) -> list[tuple[str, int]]:
    return [(h.path, h.start_line) for h in results(app).hits]


def _shown(app: AideApp) -> tuple[str, int] | None:
    data = preview(app).shown
    return (data.hit.path, data.current_line) if data is not None else None


async def _settled(pilot: Pilot[Any], app: AideApp) -> None:
    """Wait until the preview shows the selected row."""
    await wait_for(
        pilot,
        lambda: (
            (sel := results(app).selected_hit) is not None
            and preview(app).shown is not None
            and preview(app).shown.hit is sel
        ),  # type: ignore[union-attr]
        "the preview of the selected row",
    )


async def _press_and_wait(pilot: Pilot[Any], app: AideApp, key: str, cond: Any, what: str) -> None:
    await pilot.press(key)
    await wait_for(pilot, cond, what)
    await _settled(pilot, app)


def _rg_word(root: Path, name: str) -> set[tuple[str, int]]:
    """Every line holding ``name`` as a whole word, as ripgrep finds them (``rg -w``)."""
    rg = shutil.which("rg")
    if rg is None:  # the same test in Python: a word boundary that counts _ and $ as word characters
        found = set()
        for f in root.rglob("*"):
            if f.is_file() and ".aide" not in f.parts:
                for n, line in enumerate(f.read_text().splitlines(), 1):
                    if re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", line):
                        found.add((f.relative_to(root).as_posix(), n))
        return found
    out = subprocess.run([rg, "-w", "-n", "--no-heading", "-F", name, "."], cwd=root, capture_output=True,
                         text=True, check=False).stdout  # fmt: skip
    return {(p.removeprefix("./"), int(n)) for p, n, _ in (line.split(":", 2) for line in out.splitlines())}


async def test_d_jumps_from_a_call_to_its_definition_and_back_restores_the_list(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        before_rows, before_cursor = _rows(app), results(app).cursor
        # the preview lands on `response = self.send(response.next_request())`: next_request is the
        # query's term but defined nowhere, so d takes the called name the index defines: send
        assert _shown(app) == ("src/httpclient/client.py", 25)
        results(app).focus()
        await _press_and_wait(pilot, app, "d", lambda: results(app).places, "the definition")
        assert _rows(app) == [("src/httpclient/client.py", 15)]
        assert _shown(app) == ("src/httpclient/client.py", 15)
        text = "\n".join(screen_text(app))
        assert "src/httpclient/client.py:15  (15)  definition of send" in text  # the preview's title
        assert "def send(self, request):" in text
        assert "definition of send" in status(app).plain
        assert "method Client.send" in results(app).row_plain(0)

        await _press_and_wait(pilot, app, "backspace", lambda: not results(app).places, "the list before")
        assert _rows(app) == before_rows and results(app).cursor == before_cursor
        assert _shown(app) == ("src/httpclient/client.py", 25)
        assert query_box(app).value == "hops next_request"  # backspace went back, it deleted nothing
        assert "2 results" in status(app).plain


async def test_r_lists_exactly_the_lines_that_use_the_name(workspace: Path) -> None:
    (workspace / "src/httpclient/mock.py").write_text(textwrap.dedent(MOCK).lstrip("\n"))
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        results(app).focus()
        await _press_and_wait(pilot, app, "r", lambda: results(app).places, "the references")
        words = _rg_word(workspace, "send")
        definitions = {("src/httpclient/client.py", 15), ("src/httpclient/mock.py", 12)}
        assert definitions <= words
        assert set(_rows(app)) == words - definitions  # every use, and nothing but uses
        assert len(_rows(app)) == 2
        n = len(_rows(app))
        assert f"{n} references of send · ambiguous: 2 definitions" in status(app).plain
        for i, (path, line) in enumerate(_rows(app)):  # each row: path:line and the line's text
            row = results(app).row_plain(i)
            assert f"{Path(path).name}:{line}" in row
            assert (workspace / path).read_text().splitlines()[line - 1].strip()[:20] in row

        await _press_and_wait(pilot, app, "j", lambda: results(app).cursor == 1, "the second reference")
        assert _shown(app) == _rows(app)[1]
        assert "reference to send" in preview(app).query_one("#preview-title").render().plain  # type: ignore[attr-defined]


async def test_an_ambiguous_name_lists_its_definitions_and_back_goes_one_level_at_a_time(
    workspace: Path,
) -> None:
    (workspace / "src/httpclient/mock.py").write_text(textwrap.dedent(MOCK).lstrip("\n"))
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        results(app).focus()
        await _press_and_wait(pilot, app, "d", lambda: results(app).places, "the definitions")
        assert sorted(_rows(app)) == [("src/httpclient/client.py", 15), ("src/httpclient/mock.py", 12)]
        assert "2 definitions of send (ambiguous)" in status(app).plain
        labels = {results(app).row_plain(i).split()[-1] for i in range(2)}
        assert labels == {"Client.send", "MockClient.send"}
        await _press_and_wait(pilot, app, "j", lambda: results(app).cursor == 1, "the second definition")
        second = _rows(app)[1]
        assert _shown(app) == second

        # r on the definition's own line: the references of send (a second level), then back twice
        await _press_and_wait(
            pilot, app, "r", lambda: "references of send" in status(app).plain, "the references"
        )
        assert ("src/httpclient/mock.py", 18) in _rows(app)
        level1 = lambda: "definitions of" in status(app).plain  # noqa: E731
        await _press_and_wait(pilot, app, "backspace", level1, "level 1")
        assert results(app).cursor == 1 and _shown(app) == second
        await pilot.press("ctrl+o")  # vim's jump back does the same
        await wait_for(pilot, lambda: not results(app).places, "the search results")
        assert _rows(app)[0][0] == "src/httpclient/client.py" and query_box(app).value == "hops next_request"
        await pilot.press("backspace")  # nothing left to go back to: backspace edits the query again
        await wait_for(pilot, lambda: query_box(app).value == "hops next_reques", "the query edited")


async def test_d_on_a_line_without_a_known_name_says_so_and_changes_nothing(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "recv")
        await _settled(pilot, app)
        assert _shown(app) == ("src/httpclient/client.py", 19)  # return conn.recv(65536)
        rows, title = _rows(app), preview(app).shown.title.plain  # type: ignore[union-attr]
        results(app).focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: "no definition" in status(app).plain, "the reason")
        assert "no definition of recv, conn in the index" in status(app).plain
        assert _rows(app) == rows and preview(app).shown.title.plain == title  # type: ignore[union-attr]
        assert not results(app).places

        # the definition's own line: d says so (r lists its references), and nothing moves
        await search(pilot, app, "headers parse")
        await _settled(pilot, app)
        assert _shown(app) == ("src/httpclient/headers.py", 4)  # def parse_header(line: str) -> ...
        results(app).focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: "defined on this line" in status(app).plain, "the reason")
        assert "parse_header is defined on this line (r: its references)" in status(app).plain
        await pilot.press("r")
        why = "no references of parse_header in the index (defined at src/httpclient/headers.py:4)"
        await wait_for(pilot, lambda: why in status(app).plain, "the reason")
        assert not results(app).places


async def test_typing_a_new_query_forgets_the_looked_up_lists(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        results(app).focus()
        await _press_and_wait(pilot, app, "d", lambda: results(app).places, "the definition")
        await pilot.press("s")  # a letter in the list goes to the query: a new search
        await wait_for(pilot, lambda: results(app).shown_query == "hops next_requests", "the new results")
        assert not results(app).places and "definition" not in status(app).plain
        results(app).focus()
        await pilot.press("backspace")  # no list to go back to: the query loses its last letter
        await wait_for(pilot, lambda: query_box(app).value == "hops next_request", "the query edited")


async def test_the_keys_are_in_the_key_table_and_a_keymap_moves_them(workspace: Path) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[embedding]\nbackend = "none"\n[keys]\ndefinition = "g"\nreferences = "u"\n'
                    '"browse.back" = "h"\n')  # fmt: skip
    app = make_app(workspace, load_settings(workspace))
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        results(app).focus()
        await _press_and_wait(pilot, app, "g", lambda: results(app).places, "the definition on g")
        assert _rows(app) == [("src/httpclient/client.py", 15)]
        await _press_and_wait(pilot, app, "u", lambda: "reference of send" in status(app).plain, "refs on u")
        await _press_and_wait(pilot, app, "h", lambda: "definition of" in status(app).plain, "back on h")
        await _press_and_wait(pilot, app, "h", lambda: not results(app).places, "back on h")
        results(app).focus()
        await pilot.press("d")  # no longer a command: a letter for the query
        await wait_for(pilot, lambda: query_box(app).value == "hops next_requestd", "d typed")
        assert not results(app).places

        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        assert isinstance(app.screen, HelpScreen)
        rows = {what: keys for keys, what in app.screen.rows}
        assert rows["go to the definition of the name on the line the preview shows (several: listed)"] == "g"
        assert rows["list the references of that name (path:line rows; the preview shows each)"] == "u"
        assert rows["back to the list before d / r (its cursor and preview)"] == "^o h"
        await pilot.press("f1")
        await wait_for(pilot, lambda: app.screen is app.main_screen, "the help to close")
        palette = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert palette["Go to definition"].endswith("(g)") and palette["Find references"].endswith("(u)")


@pytest.mark.parametrize("size", [(80, 24)])
async def test_a_references_list_reads_in_a_narrow_terminal(workspace: Path, size: tuple[int, int]) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "hops next_request")
        await _settled(pilot, app)
        results(app).focus()
        await _press_and_wait(pilot, app, "r", lambda: results(app).places, "the references")
        text = screen_text(app)
        assert any("client.py:25" in line and "response = self.send(" in line for line in text)
        assert any("1 reference of send" in line for line in text)


SESSIONS = {
    "lib/orm/session.py": '''
        class Session:
            """Talks to the database."""

            def configure(self, bind):
                self.bind = bind
    ''',
    "lib/orm/scoping.py": """
        from lib.orm.session import Session


        def scoped_session(factory: Session) -> Session:
            return factory


        def sessionmaker():
            return Session()
    """,
    "lib/orm/nodes.py": '''
        def with_stmt(leaf):
            return leaf


        def is_with_stmt(leaf):
            """Is this a with_stmt line?"""
            return leaf.kind == 1
    ''',
    **{
        f"examples/demo_{i}/env.py": """
            from lib.orm.scoping import scoped_session, sessionmaker

            # the registry of sessions
            Session = scoped_session(sessionmaker(), registry=thread_registry)

            Session.configure(bind=None)
        """
        for i in range(3)
    },
}


def _footer(app: AideApp) -> str:
    return screen_text(app)[-1]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_footer_names_what_d_and_r_take_and_r_takes_the_name_the_line_defines(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Issue 33 #6: on ``Session = scoped_session(sessionmaker(), ...)`` r listed ``scoped_session``'s
    references, not ``Session``'s, and nothing said which name a key would take. The footer names it
    before the key is pressed (at 80 columns too: other keys give way), and r takes the name the line
    defines."""
    root = write_workspace(tmp_path / "ws", SESSIONS)
    app = make_app(root)
    async with app.run_test(size=size) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "thread_registry")
        await _settled(pilot, app)
        hit = results(app).selected_hit
        assert hit is not None and hit.path.startswith("examples/") and _shown(app) == (hit.path, 4)
        results(app).focus()
        named = lambda: "d def scoped_session" in _footer(app) and "r refs Session" in _footer(app)  # noqa: E731
        await wait_for(pilot, named, "the footer naming both names")
        await _press_and_wait(pilot, app, "r", lambda: results(app).places, "the references")
        assert "references of Session" in status(app).plain
        assert {(p, n) for p, n in _rows(app)} >= {(f"examples/demo_{i}/env.py", 6) for i in range(3)}
        assert set(_rows(app)) <= _rg_word(root, "Session")  # Session's uses, not scoped_session's:
        assert ("examples/demo_0/env.py", 1) not in _rows(app)  # its import names scoped_session only


async def test_the_footer_relabels_d_and_r_in_place_when_the_names_move(tmp_path: Path) -> None:
    """Typing and moving along the list change the names d and r take; the footer writes them into the
    keys it shows (a recompose, what it did before, is a layout pass and a repaint of the whole screen
    while the next key's search runs). When the same keys still fit they are the same widgets, with
    the new names on screen (at 160 columns every key fits whatever the names)."""
    root = write_workspace(tmp_path / "ws", SESSIONS)
    app = make_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "scoped_session factory")
        await _settled(pilot, app)
        results(app).focus()
        await wait_for(pilot, lambda: "d def Session" in _footer(app), "the footer naming Session")
        footer = app.main_screen.query_one(LookupFooter)
        keys = list(footer.children)
        first = footer.labels
        for _ in range(len(results(app).hits) - 1):
            await pilot.press("down")
            await _settled(pilot, app)
            await wait_for(pilot, lambda: footer.names is not None, "the names of the line shown")
            if footer.labels != first:
                break
        label = footer.labels[0]
        assert label is not None and label != first[0], "no hit of the list gave d another name"
        await wait_for(pilot, lambda: f"d {label}" in _footer(app), "the new name in the footer")
        assert "d def Session" not in _footer(app)
        assert list(footer.children) == keys  # relabelled, not composed again


async def test_d_takes_no_name_from_a_docstring(tmp_path: Path) -> None:
    """Issue 33 #6: d on the docstring "Is this a with_stmt line?" jumped to ``with_stmt``."""
    root = write_workspace(tmp_path / "ws", SESSIONS)
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "this line")
        await _settled(pilot, app)
        assert _shown(app) == ("lib/orm/nodes.py", 6)  # """Is this a with_stmt line?"""
        rows = _rows(app)
        results(app).focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: "no name to look up" in status(app).plain, "the reason")
        assert _rows(app) == rows and not results(app).places
        assert "d def  r refs " in _footer(app)  # the footer offers no name for d either


async def test_d_lists_the_library_class_before_the_examples_variables(tmp_path: Path) -> None:
    """Issue 33 #5: ``class Session`` came after every ``Session = ...`` of ``examples/``."""
    root = write_workspace(tmp_path / "ws", SESSIONS)
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await search(pilot, app, "scoped_session factory")
        await _settled(pilot, app)
        assert _shown(app) == ("lib/orm/scoping.py", 4)  # def scoped_session(factory: Session) -> Session:
        results(app).focus()
        await wait_for(pilot, lambda: "d def Session" in _footer(app), "the footer naming Session")
        await _press_and_wait(pilot, app, "d", lambda: results(app).places, "the definitions")
        assert _rows(app)[0] == ("lib/orm/session.py", 1) and _shown(app) == ("lib/orm/session.py", 1)
        assert sorted(_rows(app)[1:]) == [(f"examples/demo_{i}/env.py", 4) for i in range(3)]
        assert results(app).row_plain(0).rstrip().endswith("class Session")
        assert "4 definitions of Session (ambiguous)" in status(app).plain
