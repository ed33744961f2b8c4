"""Small modal screens: the searchable query history (ctrl+r) and a yes/no confirmation."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


class HistoryScreen(ModalScreen[str | None]):
    """Previous queries of this workspace, newest first, filtered as you type; enter picks one."""

    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical {
        width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface;
    }
    HistoryScreen #history-filter { border: none; height: 1; padding: 0 1; background: $boost; }
    HistoryScreen #history-list { height: auto; max-height: 20; border: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "close", key_display="esc"),
        Binding("down,ctrl+n,ctrl+r", "move(1)", "older", show=False, priority=True),
        Binding("up,ctrl+k", "move(-1)", "newer", show=False, priority=True),
        Binding("enter", "pick", "use", priority=True),
    ]

    def __init__(self, history: list[str]) -> None:
        """``history``: oldest first."""
        super().__init__()
        self.entries = list(reversed(history))

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "history"
            box.border_subtitle = "enter uses · esc closes"
            yield Input(placeholder="filter previous queries…", id="history-filter")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    @property
    def shown(self) -> list[str]:
        """The entries listed now, top first."""
        ol = self.query_one(OptionList)
        return [str(ol.get_option_at_index(i).id) for i in range(ol.option_count)]

    def _fill(self, needle: str) -> None:
        low = needle.lower()
        ol = self.query_one(OptionList)
        ol.clear_options()
        matches = [q for q in self.entries if low in q.lower()]
        ol.add_options(Option(q, id=q) for q in matches)
        if matches:
            ol.highlighted = 0
        elif not self.entries:
            ol.add_option(Option("no history yet", disabled=True))

    @on(Input.Changed, "#history-filter")
    def _filter(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def action_move(self, delta: int) -> None:
        ol = self.query_one(OptionList)
        if ol.option_count:
            ol.highlighted = max(0, min(ol.option_count - 1, (ol.highlighted or 0) + delta))

    def action_pick(self) -> None:
        ol = self.query_one(OptionList)
        if ol.highlighted is not None:
            option = ol.get_option_at_index(ol.highlighted)
            if option.id is not None:
                self.dismiss(str(option.id))
                return
        self.dismiss(None)

    @on(OptionList.OptionSelected, "#history-list")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.dismiss(str(event.option.id))


class ConfirmScreen(ModalScreen[bool]):
    """A question answered with y/enter (yes) or n/escape (no)."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static {
        width: auto; max-width: 100%; height: auto; padding: 1 2;
        border: round $warning; background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "dismiss(True)", "yes"),
        Binding("n,escape", "dismiss(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(f"{self.question}\n\n[b]y[/b]/enter: yes    [b]n[/b]/esc: no")
