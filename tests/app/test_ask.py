"""The app's ask mode (F7) against a real loopback model server speaking OpenAI SSE and Ollama NDJSON:
the answer streams in, the cited excerpts are listed and previewed at their lines, model, tokens/s
and context are shown, escape stops an answer mid-stream, a failing or missing server is one line, and
the model's text never drives the terminal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apphelpers import indexed, make_app, query_box, screen_text, wait_for
from model_server import ModelServer
from textual.pilot import Pilot

from aide_tui.core.config import load_settings
from aide_tui.tui.app import AideApp
from aide_tui.tui.screens.ask import AskScreen
from aide_tui.tui.widgets import Preview
from aide_tui.tui.widgets.answer import AnswerView, CitationList

QUESTION = "how are redirects followed?"
DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


def _app(workspace: Path, backend: str = "openai", url: str = "", model: str = "") -> AideApp:
    answer: dict[str, Any] = {"backend": backend, "url": url, "timeout": 20.0}
    if model:
        answer["model"] = model
    return make_app(workspace, load_settings(workspace, {"embedding": {"backend": "none"}, "answer": answer}))


def _ask_screen(app: AideApp) -> AskScreen:
    screen = app.screen
    assert isinstance(screen, AskScreen)
    return screen


def _answer(app: AideApp) -> AnswerView:
    return _ask_screen(app).query_one(AnswerView)


def _status(app: AideApp) -> str:
    return str(_ask_screen(app).query_one("#ask-status").render())


async def _open_and_ask(pilot: Pilot[Any], app: AideApp, question: str = QUESTION) -> None:
    await indexed(pilot, app)
    await pilot.press("f7")
    await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen")
    await pilot.press(*question, "enter")


@pytest.mark.parametrize("backend", ["openai", "ollama"])
async def test_an_answer_streams_with_its_citations(
    workspace: Path, server: ModelServer, backend: str
) -> None:
    app = _app(workspace, backend, server.url, model="m1" if backend == "ollama" else "")
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_and_ask(pilot, app)
        await wait_for(
            pilot, lambda: not _ask_screen(app).streaming and bool(_answer(app).answer), "the answer"
        )
        answer = _answer(app).answer
        assert answer.startswith("The answer is in the excerpts [1]")
        citations = _ask_screen(app).query_one(CitationList)
        assert len(citations.excerpts) >= 2 and citations.cited == {e.n for e in citations.excerpts}
        for e in citations.excerpts:  # each listed excerpt is what the server was sent, by its number
            assert f"[{e.n}] {e.path}:{e.start_line}-{e.end_line}" in server.prompt()
        status = _status(app)
        model = "fake-coder-1b" if backend == "openai" else "m1"
        assert f"model {model}" in status and "tok/s" in status and "/3000 tokens" in status
        text = "\n".join(screen_text(app))
        assert "The answer is in the excerpts [1]" in text and f"[1] {citations.excerpts[0].path}" in text

        await pilot.press("down")  # the second citation: the preview shows its lines
        second = citations.excerpts[1]
        preview = _ask_screen(app).query_one(Preview)
        await wait_for(
            pilot,
            lambda: (
                preview.shown is not None
                and (preview.shown.path, preview.shown.start_line) == (second.path, second.start_line)
            ),
            "the second citation's preview",
        )
        assert (
            preview.shown is not None and second.start_line <= preview.shown.current_line <= second.end_line
        )
        await pilot.press("escape")  # done: back to the search, the question stays in the ask box
        await wait_for(pilot, lambda: app.screen is app.main_screen, "back to the search")


async def test_escape_stops_an_answer_mid_stream(workspace: Path, server: ModelServer) -> None:
    server.reply = " ".join(f"word{i}" for i in range(200)) + " [1]"
    server.set_mode("drip", delay=0.05)
    app = _app(workspace, "openai", server.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_and_ask(pilot, app)
        await wait_for(pilot, lambda: "word3" in _answer(app).answer, "the first pieces")
        assert "tok/s" in _status(app) and "model (the server's)" in _status(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not _ask_screen(app).streaming, "the stop")
        stopped = _answer(app).answer
        assert stopped.startswith("word0 word1") and "word199" not in stopped
        await pilot.pause(0.3)
        assert _answer(app).answer == stopped  # nothing arrives after the stop
        assert "stopped" in _answer(app).plain and "stopped" in _status(app)
        assert isinstance(app.screen, AskScreen)  # the first escape stops, it does not leave


async def test_a_server_error_is_one_line_and_asking_again_works(
    workspace: Path, server: ModelServer
) -> None:
    server.set_mode("error")
    app = _app(workspace, "openai", server.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_and_ask(pilot, app)
        await wait_for(
            pilot, lambda: not _ask_screen(app).streaming and bool(_answer(app).note), "the failure"
        )
        view = _answer(app)
        assert view.note_is_error and "500" in view.note and "fake failure" in view.note
        assert "\n" not in view.note
        server.set_mode("normal")
        await pilot.press("enter")  # the question is still in the box: ask again
        await wait_for(pilot, lambda: _answer(app).answer.startswith("The answer"), "the second answer")


async def test_no_model_server_says_how_to_start_one(workspace: Path) -> None:
    app = _app(workspace, "openai", DEAD_URL)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen")
        await wait_for(pilot, lambda: _ask_screen(app).setup_hint is not None, "the probe")
        hint = _ask_screen(app).setup_hint or ""
        assert "no model server answers at http://127.0.0.1:9" in hint and "llama-server" in hint
        assert "\n" not in hint
        await pilot.pause(0.2)
        text = "\n".join(screen_text(app))
        assert "no model server answers" in text


async def test_the_answer_is_text_never_markup_or_terminal_control(
    workspace: Path, server: ModelServer
) -> None:
    server.reply = "[bold red]not bold[/] \x1b]52;c;cHduZWQ=\x07 done [1]"
    app = _app(workspace, "openai", server.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_and_ask(pilot, app)
        await wait_for(
            pilot, lambda: not _ask_screen(app).streaming and bool(_answer(app).answer), "the answer"
        )
        await pilot.pause(0.2)
        shown = _answer(app).plain
        assert "[bold red]not bold[/]" in shown  # markup shown as typed
        assert "\x1b" not in shown and "\\x1b]52;c;cHduZWQ=\\x07" in shown
        lines = screen_text(app)
        assert any("[bold red]not bold[/]" in line for line in lines)


async def test_f7_opens_with_the_search_query_and_f7_goes_back(workspace: Path, server: ModelServer) -> None:
    app = _app(workspace, "openai", server.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await indexed(pilot, app)
        await pilot.press(*"redirects")
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen")
        assert _ask_screen(app).query_one("#question", expect_type=type(query_box(app))).value == "redirects"
        await pilot.press("f7")
        await wait_for(pilot, lambda: app.screen is app.main_screen, "back to the search")
        assert query_box(app).value == "redirects"
        palette = {c.title: c for c in app.get_system_commands(app.screen)}
        assert palette["Ask the code (cited answer)"].help.endswith("(F7)")
        palette["Ask the code (cited answer)"].callback()
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), "the ask screen from the palette")
