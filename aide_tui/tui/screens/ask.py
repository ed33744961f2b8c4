"""The ask screen (F7): a question about the code, answered by the user's own model server with
citations of the code it was shown.

The run is :func:`aide_tui.core.answer.ask.ask` in a thread worker (one at a time): it retrieves with
the workspace's search, streams the answer, and ends answered, failed or cancelled (escape, or asking
again). The excerpts sent are listed as they are numbered in the answer; the one highlighted is shown in
the preview at its lines. With no model server answering, the screen says in one line how to start one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static

from aide_tui.core.answer.ask import Answered, AskCancelled, AskEvent, AskFailed, Retrieved, ask, probe
from aide_tui.core.answer.chat import TokenText
from aide_tui.core.config import AnswerSettings
from aide_tui.core.textsafe import printable
from aide_tui.host.workspace import Workspace
from aide_tui.tui import keys
from aide_tui.tui.widgets.answer import AnswerView, CitationList, citation_hit, context_line, result_line
from aide_tui.tui.widgets.footer import FittingFooter
from aide_tui.tui.widgets.preview import Preview
from aide_tui.tui.widgets.query import QueryInput

HINT = "Ask a question about the code; enter asks, esc stops the answer, F7 goes back to the search."


class AskScreen(Screen[None]):
    """Question, answer above the cited excerpts, their preview, a line about the run, footer."""

    BINDINGS: ClassVar[list[BindingType]] = list(keys.ask_bindings())
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    @dataclass
    class Update(Message):
        """An event of ask run number ``run`` (from the worker thread)."""

        run: int
        event: AskEvent

    @dataclass
    class ServerChecked(Message):
        """The model server probe: None, or how to set one up (one line)."""

        hint: str | None

    streaming: reactive[bool] = reactive(False)

    def __init__(self, live: Workspace, settings: AnswerSettings, *, show_timing: bool = True) -> None:
        """``show_timing=False``: no rates or durations on the line about the run (screenshots)."""
        super().__init__()
        self.live = live
        self.settings = settings
        self.show_timing = show_timing
        self._run = 0
        self._cancel = threading.Event()
        self._pieces = 0
        self._first: float | None = None
        self._sent = ""
        self._question = ""  # from the search screen, put in the box when the screen shows
        self.setup_hint: str | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder="Ask about the code…  (enter asks; esc stops; F7: back)", id="question")
        with Horizontal(id="ask-main"):
            with Vertical(id="ask-left"):
                yield AnswerView(id="answer")
                yield CitationList(id="citations")
            yield Preview(self.live.root, id="ask-preview")
        yield Static(id="ask-status")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one(AnswerView).start(HINT)
        self.query_one(Preview).clear("The excerpts of the answer are previewed here.")
        self.set_focus(self.query_one(QueryInput))
        self._check_server()

    def on_unmount(self) -> None:
        self._cancel.set()

    def ask_about(self, question: str) -> None:
        """Show ``question`` (the search query) in the box when the screen opens; enter asks it."""
        self._question = question.strip()

    def on_screen_resume(self) -> None:
        box = self.query_one(QueryInput)
        if self._question and not self.streaming:
            box.set_text(self._question)
        self._question = ""
        self.set_focus(box)

    @property
    def _model(self) -> str:
        """The model as configured (the server names it when the answer is complete)."""
        return printable(self.settings.model) if self.settings.model else "(the server's)"

    def _status(self, text: str) -> None:
        self.query_one("#ask-status", Static).update(text)

    # -- the model server --------------------------------------------------------------------------

    @work(thread=True, group="ask-probe")
    def _check_server(self) -> None:
        self.post_message(self.ServerChecked(probe(self.settings)))

    @on(ServerChecked)
    def _server_checked(self, message: ServerChecked) -> None:
        self.setup_hint = message.hint
        if message.hint and not self.streaming and not self.query_one(AnswerView).answer:
            self.query_one(AnswerView).finish(message.hint, error=True)

    # -- asking ------------------------------------------------------------------------------------

    @on(Input.Submitted, "#question")
    def _submitted(self, message: Input.Submitted) -> None:
        question = message.value.strip()
        if not question:
            return
        self._cancel.set()  # a run still streaming stops; its late events are dropped
        self._cancel = threading.Event()
        self._run += 1
        self._pieces, self._first, self._sent = 0, None, ""
        self.streaming = True
        self.query_one(AnswerView).start("searching the code…")
        self.query_one(CitationList).show([])
        self._status(f"model {self._model} · searching the code…")
        self._ask(question, self._run, self._cancel)

    def _retrieve(self, question: str, limit: int) -> Any:
        """The workspace's own search (the worker thread calls it)."""
        return self.live.search(question, limit=limit)

    @work(thread=True, group="ask")
    def _ask(self, question: str, run: int, cancel: threading.Event) -> None:
        for event in ask(question, self._retrieve, self.settings, cancel=cancel):
            self.post_message(self.Update(run, event))

    @on(Update)
    def _update(self, message: Update) -> None:
        if message.run != self._run:
            return
        event = message.event
        answer = self.query_one(AnswerView)
        if isinstance(event, Retrieved):
            self._sent = context_line(event)
            self.query_one(CitationList).show(event.excerpts)
            answer.start("waiting for the model…")
            self._status(self._sent)
        elif isinstance(event, TokenText):
            self._pieces += 1
            now = time.monotonic()
            self._first = self._first or now
            answer.append(event.text)
            rate = self._pieces / (now - self._first) if now > self._first else 0.0
            speed = f"{rate:.1f} tok/s · " if self.show_timing else ""
            self._status(f"model {self._model} · {speed}{self._sent}")
        else:
            self._finished(event)

    def _finished(self, event: AskEvent) -> None:
        self.streaming = False
        answer = self.query_one(AnswerView)
        if isinstance(event, Answered):
            result = event.result
            self.query_one(CitationList).show(result.excerpts, {c.n for c in result.citations})
            answer.finish()
            self._status(result_line(result))
        elif isinstance(event, AskCancelled):
            answer.finish("stopped (esc)")
            self._status(f"stopped · {self._sent}" if self._sent else "stopped")
        elif isinstance(event, AskFailed):
            answer.finish(event.message, error=True)
            self._status("no answer" + (f" · {self._sent}" if self._sent else ""))

    # -- commands ----------------------------------------------------------------------------------

    def action_stop(self) -> None:
        """Stop the answer while it streams; otherwise back to the search."""
        if self.streaming:
            self._cancel.set()
        else:
            self.app.pop_screen()

    def action_ask(self) -> None:
        """F7 again: back to the search (a running answer goes on)."""
        self.app.pop_screen()

    def action_move(self, delta: int) -> None:
        """Next/previous citation."""
        self.query_one(CitationList).move(delta)

    @on(OptionList.OptionHighlighted, "#citations")
    def _cited(self) -> None:
        excerpt = self.query_one(CitationList).selected_excerpt
        if excerpt is not None:
            self.query_one(Preview).request(citation_hit(excerpt))
