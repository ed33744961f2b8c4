"""The footer: Textual's, but a key that does not fit is left out whole, never cut in its label, the help
key is never left out, and a footer may say more about a key than its binding does: the search screen's
(:class:`LookupFooter`) names what ``d`` and ``r`` take on the line the preview shows (``d def Session``)."""

from __future__ import annotations

from dataclasses import replace

from rich.cells import cell_len
from textual import events, on, work
from textual.app import ComposeResult
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Footer

from aide_tui.core.search.response import Hit
from aide_tui.core.textsafe import printable
from aide_tui.tui.lookup import Line, OnLine, choices
from aide_tui.tui.messages import NamesChosen
from aide_tui.tui.widgets.preview import code_line_of

ALWAYS_SHOWN = frozenset({"help"})  # the way to every other key: kept at any width
FOOTER_NAME = 24  # a longer name is cut in the d / r labels


class FittingFooter(Footer):
    """Keys in binding order while they fit beside the palette key, the help key and the keys this footer
    labelled (:meth:`description`); the rest are left out (they are all in the help and the palette)."""

    def description(self, action: str) -> str | None:
        """The label of the key bound to ``action``; None: the binding's own."""
        return None

    def compose(self) -> ComposeResult:
        items = list(super().compose())
        own = {id(w): getattr(w, "description", "") for w in items}
        self._composed = (items, own)  # every key and its binding's own label: what a relabel starts from
        yield from self._fitting(items, own)

    def _fitting(self, items: list[Widget], own: dict[int, str]) -> list[Widget]:
        """The ``items`` shown, in order, each key labelled by :meth:`description` or its binding."""
        described = []  # keys labelled here (d def Session): what they do now, shown before the others
        for item in items:
            action = getattr(item, "action", None)  # a FooterKey (a group's label has none)
            if isinstance(action, str) and hasattr(item, "description"):
                label = self.description(action)
                item.description = label or own[id(item)]
                if label:
                    described.append(item)
        width = self.size.width
        if not width:
            return items
        palette = [w for w in items if w.has_class("-command-palette")]
        kept = [w for w in items if getattr(w, "action", "") in ALWAYS_SHOWN and w not in palette]
        room = width - sum(_width(w) + 1 for w in palette) - sum(_width(w) for w in kept)
        for item in described:
            if _width(item) <= room:
                kept.append(item)
                room -= _width(item)
        shown: list[Widget] = []
        full = False
        for item in items:
            if item in palette:
                continue
            if item in kept:
                shown.append(item)
                continue
            need = _width(item)
            if full or need > room:
                full = True
                continue
            room -= need
            shown.append(item)
        return shown + palette

    def relabel(self) -> None:
        """:meth:`description` changed: when the same keys still fit, their labels are written in place
        (a recompose is a layout pass and a repaint of the whole screen: typing moves the names on every
        key, and each recompose took 5-40 ms of the interpreter the next key's search wants); otherwise
        the footer is composed again."""
        composed = getattr(self, "_composed", None)
        if composed is None or not self.is_mounted:
            return
        items, own = composed
        now = {id(w): getattr(w, "description", None) for w in items}
        fits = self._fitting(items, own)
        current = list(self.children)
        if [id(w) for w in fits] != [id(w) for w in current]:
            self.refresh(recompose=True)
            return
        for item in current:
            if getattr(item, "description", None) != now[id(item)]:
                item.refresh(layout=True)

    def on_resize(self, event: events.Resize) -> None:
        self.refresh(recompose=True)


class LookupFooter(FittingFooter):
    """The search screen's footer: ``names`` are the names ``d`` and ``r`` take on the line the preview
    shows (None: not worked out for it yet), and their keys are labelled with them (``def Session``,
    ``refs Session``). :meth:`work_out` finds them in a thread; an answer for a line left since is
    dropped."""

    # what d and r are labelled with (written into the footer's keys: see relabel)
    labels: var[tuple[str | None, str | None]] = var((None, None))

    def __init__(self) -> None:
        super().__init__()
        self._asked = 0  # the latest request (an older answer is dropped)
        self._names: NamesChosen | None = None

    @property
    def names(self) -> NamesChosen | None:
        """The names worked out for the line the preview shows (None: not yet, or stale)."""
        return self._names

    def watch_labels(self) -> None:
        self.relabel()

    def description(self, action: str) -> str | None:
        if action == "screen.definition":
            return self.labels[0]
        return self.labels[1] if action == "screen.references" else None

    def names_for(self, line: Line) -> NamesChosen | None:
        """The names worked out for ``line``, if they were."""
        names = self._names
        return names if names is not None and names.line == line else None

    def forget(self, clear: bool = False) -> None:
        """The selection or the line shown changed: the names are stale (one on its way is dropped). The
        labels stay until the next names arrive, as the preview stays on its line until typing pauses
        (``d`` and ``r`` never act on stale names: see :meth:`names_for`); ``clear``: drop them now."""
        self._asked += 1
        self._names = None
        if clear:
            self.labels = (None, None)

    def work_out(self, hit: Hit, line: Line, on_line: OnLine) -> None:
        """Find the names ``d`` and ``r`` take on ``line`` of ``hit`` (``on_line``: the symbol graph)."""
        self.forget()
        self._work_out(self._asked, hit, line, on_line)

    @work(thread=True, group="peek")
    def _work_out(self, asked: int, hit: Hit, line: Line, on_line: OnLine) -> None:
        if not line.code:
            line = replace(line, code=code_line_of(hit, line.number))
        d, r = choices(line, on_line)
        self.post_message(NamesChosen(asked, line, d, r))

    @on(NamesChosen)
    def _chosen(self, message: NamesChosen) -> None:
        message.stop()
        if message.seq == self._asked:
            self._names = message
            self.labels = (_label("def", message.definition.name), _label("refs", message.references.name))


def _label(what: str, name: str | None) -> str | None:
    """``def Session`` / ``refs Session`` (a long name cut), None without a name."""
    if name is None:
        return None
    name = printable(name)
    return f"{what} {name if len(name) <= FOOTER_NAME else name[: FOOTER_NAME - 1] + '…'}"


def _width(item: object) -> int:
    """Cells a footer key takes: `` key description `` (a key without a description: `` key ``)."""
    key, description = str(getattr(item, "key_display", "")), str(getattr(item, "description", ""))
    return cell_len(key) + 2 + (cell_len(description) + 1 if description else 0)  # CJK: 2 cells a letter
