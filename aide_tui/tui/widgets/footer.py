"""The footer: Textual's, but a key that does not fit is left out whole, never cut in its label, the help
key is never left out, and a screen may say more about a key than its binding does (``d def Session``:
the name ``d`` takes on the line the preview shows)."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

ALWAYS_SHOWN = frozenset({"help"})  # the way to every other key: kept at any width


class FittingFooter(Footer):
    """Keys in binding order while they fit beside the palette key, the help key and the keys the screen
    labelled; the rest are left out (they are all in the help and the palette). A screen with a
    ``footer_description(action)`` method gives keys their label (None: the binding's)."""

    def compose(self) -> ComposeResult:
        items = list(super().compose())
        described = []  # keys the screen labelled (d def Session): what they do now, shown before others
        describe = getattr(self.screen, "footer_description", None)
        if callable(describe):
            for item in items:
                action = getattr(item, "action", None)  # a FooterKey (a group's label has none)
                if isinstance(action, str) and hasattr(item, "description") and (label := describe(action)):
                    item.description = label
                    described.append(item)
        width = self.size.width
        if not width:
            yield from items
            return
        palette = [w for w in items if w.has_class("-command-palette")]
        kept = [w for w in items if getattr(w, "action", "") in ALWAYS_SHOWN and w not in palette]
        room = width - sum(_width(w) + 1 for w in palette) - sum(_width(w) for w in kept)
        for item in described:
            if _width(item) <= room:
                kept.append(item)
                room -= _width(item)
        full = False
        for item in items:
            if item in palette:
                continue
            if item in kept:
                yield item
                continue
            need = _width(item)
            if full or need > room:
                full = True
                continue
            room -= need
            yield item
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        self.refresh(recompose=True)


def _width(item: object) -> int:
    """Cells a footer key takes: `` key description `` (a key without a description: `` key ``)."""
    key, description = str(getattr(item, "key_display", "")), str(getattr(item, "description", ""))
    return len(key) + 2 + (len(description) + 1 if description else 0)
