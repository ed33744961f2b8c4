"""The query box, and the rule that a letter typed in a pane goes to it (as in fzf).

Keys reach a widget through its own message queue, and Textual runs a widget's bindings only once the
key has travelled up to the app, so in a burst of keys (a fast typist, keys coalesced over SSH) the
letters typed after a backspace would be inserted before it. :class:`QueryInput` therefore runs its own
editing bindings (backspace, ctrl+u, ctrl+w, arrows, home, end...) when the key reaches it, in the
order the keys arrive. A paste of several lines is searched whole (Textual's Input keeps its first
line). It also keeps the query history (the workspace's memory): shell-style recall (↑
on an empty query) and the queries it records.

Textual's Input sets its virtual size on every change of its value, and that reactive asks for a layout
of the whole screen: 15 ms at 120×40 on the monorepo benchmark, on every keystroke, competing with the
search for the interpreter. The box is one line of fixed height with no scrollbars, so its virtual size
only bounds its own horizontal scrolling: here it repaints the box alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Input

from aide_tui.tui.memory import WorkspaceMemory


class QueryInput(Input):
    """The query box: its editing keys act in arrival order; ↑/↓ recall previous queries (``memory``:
    the workspace's, None: no history)."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), repaint=True)  # no screen layout per keystroke

    def _watch_virtual_size(self) -> None:
        """What the layout did when the text shrank: keep the scroll within the text (ctrl+k after moving
        left would otherwise leave the box scrolled past its end until the next layout)."""
        self.scroll_x = self.validate_scroll_x(self.scroll_x)

    def __init__(self, memory: WorkspaceMemory | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memory = memory
        self._recall_pos: int | None = None  # index into the history while recalling
        self._recalled: str | None = None

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable and await self._own_binding(event.key):  # printable: Input inserts it
            event.stop()
            event.prevent_default()

    async def _own_binding(self, key: str) -> bool:
        """Run the box's own binding for ``key`` now, if it has one."""
        active = self.screen.active_bindings.get(key)
        if active is None or active.node is not self or not active.enabled:
            return False
        await self.run_action(active.binding.action)
        return True

    def _on_paste(self, event: events.Paste) -> None:
        """A paste of several lines (code, a traceback, an issue) is searched whole, its lines joined by
        spaces: Textual's Input keeps a paste's first line only."""
        super()._on_paste(events.Paste(" ".join(event.text.split())))
        event.prevent_default()  # Textual would run Input's own handler next (the first line again)
        event.stop()

    # -- history recall ------------------------------------------------------------------------------

    @property
    def recalling(self) -> bool:
        """Whether the box shows a recalled query that was not edited since."""
        return self._recall_pos is not None

    def watch_value(self, value: str) -> None:
        if self._recall_pos is not None and value != self._recalled:
            self._recall_pos = self._recalled = None  # an edit ends history recall

    def record(self) -> None:
        """The query joins the history (``[tui] history = false``: it does not)."""
        if self.memory is not None:
            self.memory.record(self.value)

    def remember(self) -> None:
        """On quitting: the query joins the history and is remembered as the last one."""
        if self.memory is not None:
            self.memory.remember(self.value)

    async def clear_or_quit(self) -> None:
        """ctrl+c, as fzf: clear a non-empty query, else quit."""
        if self.value:
            self.leave_recall()
            self.set_text("")
        else:
            await self.app.run_action("app.quit")

    def recall(self, delta: int) -> None:
        """Shell-style recall over the history: ``delta`` -1 = older, +1 = newer; past the newest: the
        empty query."""
        history = self.memory.history if self.memory is not None else []
        if not history or (self._recall_pos is None and delta > 0):
            return
        pos = len(history) - 1 if self._recall_pos is None else self._recall_pos + delta
        if pos >= len(history):
            self.leave_recall(clear=True)
            return
        pos = max(0, pos)
        self._recall_pos, self._recalled = pos, history[pos]
        self.set_text(history[pos])

    def leave_recall(self, *, clear: bool = False) -> None:
        """End recall; ``clear``: back to the empty query if a recalled query is shown."""
        shown = self._recall_pos is not None
        self._recall_pos = self._recalled = None
        if clear and shown:
            self.set_text("")

    def set_text(self, text: str) -> None:
        """Replace the query, cursor at the end."""
        self.value = text
        self.cursor_position = len(text)

    async def take_key(self, event: events.Key) -> None:
        """A key that reached another pane but belongs here (see :class:`TypesIntoQuery`): focus here
        and apply it now, as if it had been typed here."""
        self.screen.set_focus(self)
        if event.is_printable and event.character:
            if self.selection.is_empty:
                self.insert_text_at_cursor(event.character)
            else:
                self.replace(event.character, *self.selection)
        elif not await self._own_binding(event.key) and event.key == "ctrl+h":
            self.action_delete_left()


if TYPE_CHECKING:
    _Pane = Widget
else:
    _Pane = object  # a plain mixin: as a Widget base it would change the pane's default CSS


class TypesIntoQuery(_Pane):
    """Mixin for a focusable pane (results list, preview): a printable key (or backspace) that no
    binding takes is typed into the query box, and the focus moves there, in the order keys arrive.
    A key that was routed here before an earlier key moved the focus to the query box goes there too
    (a burst: "xy" types both letters; "y" does not copy)."""

    async def on_key(self, event: events.Key) -> None:
        boxes = self.screen.query(QueryInput)
        if not boxes:
            return
        box = boxes.first()
        if self.screen.focused is not box:
            if not (event.is_printable or event.key in ("backspace", "ctrl+h")):
                return
            active = self.screen.active_bindings.get(event.key)
            if active is not None and active.enabled:
                return  # a command: Textual runs it when the key reaches the app
        event.stop()
        event.prevent_default()
        await box.take_key(event)
