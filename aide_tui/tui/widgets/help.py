"""The help screen (F1, ``?``, palette "Help: keys"): every key, from the one command table."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from aide_tui.tui.keys import help_rows


def help_text() -> Text:
    """The key table as text: keys, what they do, where they act."""
    rows = help_rows()
    key_w = max(len(k) for k, _, _ in rows)
    text = Text(end="")
    for keys, what, where in rows:
        text.append(f"{keys:<{key_w}}  ", "bold")
        text.append(what)
        if where:
            text.append(f"  ({where})", "dim")
        text.append("\n")
    text.rstrip()
    return text


class HelpScreen(ModalScreen[None]):
    """A modal, scrollable list of keys; escape, q, ? or F1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > #help {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
        border-title-style: bold;
    }
    HelpScreen #help-keys { width: 100%; height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss(None)", "close", key_display="esc"),
    ]

    @property
    def plain(self) -> str:
        """The key list as plain text."""
        return help_text().plain

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as box:
            box.border_title = "aide-tui keys"
            box.border_subtitle = "esc closes"
            yield Static(help_text(), id="help-keys")
