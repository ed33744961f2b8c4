"""The results list: one row per chunk with location, symbol, fused score and retriever ranks."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from aide_tui.core.search import Hit

RANK_TAGS = (("bm25", "B"), ("dense", "D"), ("symbol", "S"), ("path", "P"))
PATH_MAX = 56
SYMBOL_MAX = 32


def location(hit: Hit) -> str:
    """``path:start-end`` (or ``path:line`` for a one-line chunk)."""
    span = f"{hit.start_line}" if hit.start_line == hit.end_line else f"{hit.start_line}-{hit.end_line}"
    return f"{hit.path}:{span}"


def rank_tags(hit: Hit) -> str:
    """Which retrievers found the hit, e.g. ``B3 D1 S1``."""
    return " ".join(f"{tag}{hit.ranks[key]}" for key, tag in RANK_TAGS if hit.ranks.get(key))


def short_symbol(symbol: str | None, width: int = SYMBOL_MAX) -> str:
    """The innermost part of a symbol chain, cut from the left to ``width``."""
    if not symbol:
        return ""
    if len(symbol) <= width:
        return symbol
    return "…" + symbol[-(width - 1) :]


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def format_rows(hits: list[Hit]) -> list[Text]:
    """Column-aligned rows for ``hits``: location, retriever ranks, fused score, then the symbol.

    The symbol comes last so a narrow list cuts it first, never the location or the ranks.
    """
    locs = [_fit(location(h), PATH_MAX) for h in hits]
    tags = [rank_tags(h) for h in hits]
    loc_w = max((len(s) for s in locs), default=0)
    tag_w = max((len(s) for s in tags), default=0)
    rows = []
    for hit, loc, tag in zip(hits, locs, tags, strict=True):
        row = Text(no_wrap=True, overflow="ellipsis")
        path, _, span = loc.rpartition(":")
        row.append(path, "bold")
        row.append(f":{span}", "dim")
        row.append(" " * (loc_w - len(loc) + 2))
        row.append(tag.ljust(tag_w + 2))
        row.append(f"{hit.score:.3f}", "dim")
        if hit.symbol:
            row.append(f"  {short_symbol(hit.symbol)}", "italic")
        rows.append(row)
    return rows


class ResultsList(OptionList):
    """Search results; the highlighted option is the selection shown in the preview."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hits: list[Hit] = []

    def show_hits(self, hits: list[Hit]) -> None:
        """Replace the rows, keeping the first row selected."""
        self.hits = list(hits)
        self.set_options(Option(row) for row in format_rows(self.hits))
        self.highlighted = 0 if self.hits else None

    @property
    def selected_hit(self) -> Hit | None:
        """The highlighted hit, if any."""
        i = self.highlighted
        return self.hits[i] if i is not None and 0 <= i < len(self.hits) else None

    def move(self, delta: int) -> None:
        """Move the selection by ``delta`` rows, clamped to the list."""
        if not self.hits:
            return
        i = self.highlighted if self.highlighted is not None else -delta if delta > 0 else 0
        self.highlighted = max(0, min(len(self.hits) - 1, i + delta))
