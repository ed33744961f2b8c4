"""The help screen (F1, ``?``, palette "Help: keys"): every key in effect, from the one command table."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from aide_tui.tui.keys import BY_ID


def help_table(rows: list[tuple[str, str]]) -> Table:
    """The key table: keys, what they do (the second column wraps)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for keys, what in rows:
        table.add_row(keys, what)
    return table


class HelpScreen(ModalScreen[None]):
    """A modal, scrollable list of keys (``rows``: keys, what); escape, q or the help keys close it."""

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
        Binding("escape,q", "dismiss(None)", "close", key_display="esc"),
        # the help keys close it too, remapped with them (same binding ids)
        *(
            Binding(BY_ID[i].keys, "dismiss(None)", "close", show=False, id=i)
            for i in ("help", "browse.help")
        ),
    ]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    @property
    def plain(self) -> str:
        """The key list as plain text."""
        return "\n".join(f"{keys}  {what}" for keys, what in self.rows)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as box:
            box.border_title = "aide-tui keys"
            box.border_subtitle = "esc closes"
            yield Static(help_table(self.rows), id="help-keys")
