"""The ask screen's panes: the answer as it streams, the excerpts it may cite, and one line about the run.

A model's answer is someone else's text: it is shown as plain text (Textual markup is not interpreted,
control characters are escaped by :func:`~aide_tui.core.textsafe.printable_lines`), with the ``[n]``
citations highlighted.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from aide_tui.core.answer.ask import AskResult, Retrieved
from aide_tui.core.answer.prompt import Excerpt
from aide_tui.core.search.response import Hit
from aide_tui.core.textsafe import printable, printable_lines

CITATION = re.compile(r"\[\d{1,4}(?:\s*[,\-–]\s*\d{1,4})*\]")


class AnswerView(VerticalScroll):
    """The answer text; it follows the stream while scrolled to the end."""

    DEFAULT_CSS = """
    AnswerView #answer-text { width: 100%; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.answer = ""  # the answer as received (before escaping)
        self.note = ""  # under the answer: why it stopped, or how to set up a model server
        self.note_is_error = False

    def compose(self) -> ComposeResult:
        yield Static(id="answer-text")

    @property
    def plain(self) -> str:
        """What the pane shows, as plain text."""
        return self._text().plain

    def _text(self) -> Text:
        text = Text(printable_lines(self.answer), no_wrap=False)
        text.highlight_regex(CITATION, "bold " + self.app.theme_variables.get("accent", "cyan"))
        if self.note:
            style = f"bold {self.app.theme_variables.get('error', 'red')}" if self.note_is_error else "dim"
            text.append(("\n\n" if self.answer else "") + printable(self.note), style)
        return text

    def _show(self) -> None:
        follow = self.scroll_y >= self.max_scroll_y - 1
        self.query_one("#answer-text", Static).update(self._text())
        if follow:
            self.call_after_refresh(self.scroll_end, animate=False)

    def start(self, note: str = "") -> None:
        """A new answer (empty), with ``note`` meanwhile."""
        self.answer, self.note, self.note_is_error = "", note, False
        self._show()

    def append(self, piece: str) -> None:
        self.answer += piece
        self.note = ""
        self._show()

    def finish(self, note: str = "", *, error: bool = False) -> None:
        """The answer is complete, stopped or failed: ``note`` says which."""
        self.note, self.note_is_error = note, error
        self._show()


def citation_hit(excerpt: Excerpt) -> Hit:
    """The search hit an excerpt came from, cut to the lines that were sent (for the preview)."""
    hit: Hit = excerpt.hit
    return replace(hit, start_line=excerpt.start_line, end_line=excerpt.end_line, text=excerpt.text)


class CitationList(OptionList):
    """The excerpts sent with the question, numbered as the answer cites them; ● marks the cited ones."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.excerpts: list[Excerpt] = []
        self.cited: set[int] = set()

    def show(self, excerpts: list[Excerpt], cited: set[int] | None = None) -> None:
        highlighted = self.highlighted
        self.excerpts, self.cited = excerpts, cited or set()
        self.clear_options()
        self.add_options(Option(self._row(e), id=str(e.n)) for e in excerpts)
        if excerpts:
            self.highlighted = highlighted if highlighted is not None and highlighted < len(excerpts) else 0

    def _row(self, e: Excerpt) -> Text:
        mark = "●" if e.n in self.cited else "○" if self.cited else " "
        row = Text(f"{mark} [{e.n}] ", "bold")
        row.append(f"{printable(e.path)}:{e.start_line}-{e.end_line}")
        symbol = printable(e.hit.symbol or "")
        if symbol:
            row.append(f"  {symbol}", "italic")
        return row

    @property
    def selected_excerpt(self) -> Excerpt | None:
        i = self.highlighted
        return self.excerpts[i] if i is not None and 0 <= i < len(self.excerpts) else None

    def move(self, delta: int) -> None:
        if self.excerpts:
            i = self.highlighted if self.highlighted is not None else (-1 if delta > 0 else 0)
            self.highlighted = max(0, min(len(self.excerpts) - 1, i + delta))


def context_line(got: Retrieved) -> str:
    """What was sent: the excerpts and the context they use of the budget."""
    left = f", {got.left_out} left out" if got.left_out else ""
    return f"context {got.context_tokens}/{got.budget} tokens · {len(got.excerpts)} excerpts{left}"


def result_line(result: AskResult) -> str:
    """The finished run: model, tokens per second, context used, time to the first token."""
    parts = [f"model {printable(result.model or 'the server default')}"]
    if result.tokens_per_s is not None:
        parts.append(f"{result.tokens_per_s:.1f} tok/s")
    parts.append(f"context {result.context_tokens}/{result.budget} tokens · {len(result.excerpts)} excerpts")
    if result.first_token_ms is not None:
        parts.append(f"first token {result.first_token_ms / 1000:.1f} s")
    if result.unknown_citations:
        parts.append("no such excerpt: " + " ".join(f"[{n}]" for n in result.unknown_citations))
    return " · ".join(parts)
