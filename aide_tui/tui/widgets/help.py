"""The ``?`` help screen listing every key."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from aide_tui.tui.widgets.keys import KEY_HELP


class HelpScreen(ModalScreen[None]):
    """A modal table of keys; any of escape, q, ? or F1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: auto; max-width: 90%; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: list[BindingType] = [
        Binding("escape,q,question_mark,f1", "dismiss(None)", "Close", key_display="esc"),
    ]

    @property
    def plain(self) -> str:
        """The key list as plain text."""
        return "\n".join(f"{keys}  {what}" for keys, what in KEY_HELP)

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for keys, what in KEY_HELP:
            table.add_row(keys, what)
        with Vertical():
            yield Static("aide-tui keys", id="help-title")
            yield Static(table, id="help-keys")
