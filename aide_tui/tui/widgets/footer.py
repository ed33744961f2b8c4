"""The footer: Textual's, but a key that does not fit is left out whole, never cut in its label."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer


class FittingFooter(Footer):
    """Keys in binding order while they fit beside the palette key; the rest are left out (they are all
    in the help and the palette)."""

    def compose(self) -> ComposeResult:
        items = list(super().compose())
        width = self.size.width
        if not width:
            yield from items
            return
        palette = [w for w in items if w.has_class("-command-palette")]
        room = width - sum(_width(w) + 1 for w in palette)  # the palette key's border
        for item in items:
            if item in palette:
                continue
            need = _width(item)
            if need > room:
                break
            room -= need
            yield item
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        self.refresh(recompose=True)


def _width(item: object) -> int:
    """Cells a footer key takes: `` key description `` (a key without a description: `` key ``)."""
    key, description = str(getattr(item, "key_display", "")), str(getattr(item, "description", ""))
    return len(key) + 2 + (len(description) + 1 if description else 0)
