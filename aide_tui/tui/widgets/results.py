"""The results list: one row per hit, drawn line by line (Textual's line API).

A new answer replaces the rows in place (no widget per row is built or torn down); only the visible
rows are drawn. Each row keeps what matters at any width: the path is shortened in the middle so the
file name and line range stay, then the symbol, then the retriever ranks and the fused score.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip

from aide_tui.core.search.hitlines import workspace_label
from aide_tui.core.search.response import Hit
from aide_tui.core.textsafe import printable
from aide_tui.tui.keys import browse_bindings
from aide_tui.tui.widgets.query import TypesIntoQuery

RANK_TAGS = (
    ("bm25", "B"), ("dense", "D"), ("static", "T"), ("symbol", "S"), ("path", "P"),
    ("message", "M"), ("verbatim", "V"), ("line", "L"), ("uses", "U"),
)  # fmt: skip
SCORE_W = 5
SYMBOL_MIN = 6  # narrower, a symbol says nothing: the location keeps the room


def span(hit: Hit) -> str:
    """``start-end`` (or ``line`` for a one-line chunk)."""
    return f"{hit.start_line}" if hit.start_line == hit.end_line else f"{hit.start_line}-{hit.end_line}"


def location(hit: Hit) -> str:
    """``path:start-end``."""
    return f"{_label(hit)}{printable(hit.path)}:{span(hit)}"


def _label(hit: Hit) -> str:
    """``[workspace] `` before the path of a hit from a search over several workspaces."""
    label = workspace_label(hit)
    return f"[{label}] " if label else ""


def rank_tags(hit: Hit) -> str:
    """Which retrievers found the hit, e.g. ``B3 D1 S1``."""
    return " ".join(f"{tag}{hit.ranks[key]}" for key, tag in RANK_TAGS if hit.ranks.get(key))


def middle_path(path: str, width: int) -> str:
    """``path`` in at most ``width`` cells, cut in the middle so the file name stays whole if it can."""
    if len(path) <= width:
        return path
    head, sep, name = path.rpartition("/")
    if not sep or len(name) + 2 > width:
        return "…" + path[-(width - 1) :] if width > 1 else "…"
    room = width - len(name) - 2  # "…/"
    return f"{head[:room]}…/{name}"


def compact_symbol(symbol: str | None) -> str:
    """``class Console > def render`` → ``Console.render`` (the chain without its keywords); a
    Markdown section, ``# Guide > ## Search as you type``, is its own heading: ``Search as you type``."""
    if not symbol:
        return ""
    parts = [p.strip() for p in printable(symbol).split(" > ") if p.strip()]
    if parts and parts[-1].startswith("#"):
        return parts[-1].lstrip("#").strip()
    names = [p.split()[-1] if len(p.split()) > 1 else p for p in parts]
    return ".".join(names)


def short_symbol(symbol: str | None, width: int) -> str:
    """The compact symbol chain, cut from the left (the innermost name stays) to ``width``."""
    text = compact_symbol(symbol)
    if not text or width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1) :] if width > 1 else "…"


@dataclass(frozen=True)
class Columns:
    """Widths for a list: ``left`` cells for each row's ``path:start-end`` and its symbol (every row
    shares them out on its own), the symbols lined up at cell ``aligned`` of them where a row has the
    room (:func:`aligned_column`); ``tags`` for the ranks (the score follows them). ``places``: rows of a
    definitions or references list (no ranks, no score; the label is the line's text or the qualified
    name, shown as it is and cut at the right)."""

    left: int
    tags: int
    aligned: int = 0
    places: bool = False


@dataclass(frozen=True)
class RowFit:
    """One row's share of ``left``: cells for its location and for its symbol (0: no symbol shown)."""

    loc: int
    symbol: int


def _shown_symbol(symbol: str | None, places: bool) -> str:
    return printable(symbol or "") if places else compact_symbol(symbol)


def fit_row(hit: Hit, symbol: str | None, left: int, places: bool = False) -> RowFit:
    """How one row shares ``left`` cells between its location and its symbol: both whole when they fit;
    else the path's folders give way first, then the symbol is cut (a qualified name from the left,
    its innermost name last); a row too narrow for :data:`SYMBOL_MIN` cells of symbol shows none (the
    file name and its range keep the room)."""
    loc_want = len(location(hit))
    sym_want = len(_shown_symbol(symbol, places))
    if not sym_want:
        return RowFit(min(loc_want, left), 0)
    if loc_want + 2 + sym_want <= left:
        return RowFit(loc_want, sym_want)
    name = hit.path.rpartition("/")[2]
    name_want = min(loc_want, len(_label(hit)) + len(name) + len(span(hit)) + 3)  # "…/name:span"
    if name_want + 2 + sym_want <= left:  # the folders give way
        return RowFit(left - 2 - sym_want, sym_want)
    room = left - 2 - name_want
    if room < min(SYMBOL_MIN, sym_want):
        return RowFit(min(loc_want, left), 0)
    return RowFit(name_want, room)


def columns(
    hits: list[Hit], width: int, labels: list[str | None] | None = None, places: bool = False
) -> Columns:
    """Widths for a list ``width`` cells wide: ranks and score always, aligned (not for ``places``);
    the rest is each row's to share between its location and its symbol (:func:`fit_row`); the symbols
    start at one column wherever that costs no row a cell of its own."""
    symbols = labels if labels is not None and len(labels) == len(hits) else [h.symbol for h in hits]
    tags = 0 if places else max((len(rank_tags(h)) for h in hits), default=0)
    left = max(0, width - 2 - (0 if places else 2 + tags + 2 + SCORE_W))  # a cell of margin each side
    fits = [fit_row(h, s, left, places) for h, s in zip(hits, symbols, strict=True)]
    return Columns(left, tags, aligned_column(fits, left), places)


def aligned_column(fits: list[RowFit], left: int) -> int:
    """Where the symbols start (after the location's cells): the column that lines up the most rows
    without cutting any row's symbol (a row whose location is longer starts its symbol after it; one
    whose symbol would not fit starts it right after its location)."""
    shown = [f for f in fits if f.symbol]

    def lined_up(x: int) -> int:
        return sum(1 for f in shown if f.loc <= x and x + 2 + f.symbol <= left)

    return max(sorted({f.loc for f in shown}), key=lined_up, default=0)


def row_parts(hit: Hit, cols: Columns, symbol: str | None = None) -> list[tuple[str, str]]:
    """The cells of one row as (text, role) pairs; roles name component classes. ``symbol``: the row's
    label (the definition at the hit's best line), else the hit's own symbol."""
    symbol = symbol if symbol is not None else (None if cols.places else hit.symbol)
    fit = fit_row(hit, symbol, cols.left, cols.places)
    rng = ":" + span(hit)
    label = _label(hit)[: max(0, fit.loc - len(rng) - 8)]  # the file name keeps at least 8 cells
    path = label + middle_path(printable(hit.path), max(1, fit.loc - len(rng) - len(label)))
    parts = [(" ", ""), (path, "path"), (rng, "span")]
    used = len(path) + len(rng)
    if fit.symbol:
        pad = max(0, cols.aligned - used) + 2
        if used + pad + fit.symbol > cols.left:  # lined up, it would not fit: right after the location
            pad = 2
        # a definition or reference: its line's text (or qualified name), cut at the right
        shown = printable(symbol or "")[: fit.symbol] if cols.places else short_symbol(symbol, fit.symbol)
        parts.append((" " * pad, ""))
        parts.append((shown, "symbol"))
        used += pad + len(shown)
    if cols.places:
        return parts
    parts.append((" " * max(0, cols.left - used), ""))
    parts.append(("  " + rank_tags(hit).ljust(cols.tags), "tags"))
    parts.append((f"  {hit.score:.3f}"[: SCORE_W + 2].ljust(SCORE_W + 2), "score"))
    return parts


def row_text(hit: Hit, cols: Columns, symbol: str | None = None) -> str:
    """One row as plain text (tests, screen reading)."""
    return "".join(text for text, _ in row_parts(hit, cols, symbol))


def carried_labels(
    old: list[Hit], labels: list[str | None] | None, new: list[Hit]
) -> list[str | None] | None:
    """The labels of ``old`` rows for the same hits among ``new`` (a newer index answering the same query:
    its rows keep their labels instead of showing their chunks' symbols until they are labelled again);
    None when nothing carries over."""
    if labels is None:
        return None
    known = {_label_key(h): label for h, label in zip(old, labels, strict=False)}
    carried = [known.get(_label_key(h), h.symbol) for h in new]
    return carried if any(k in known for k in map(_label_key, new)) else None


def _label_key(hit: Hit) -> tuple[object, ...]:
    """What a row's label depends on (the definition at the hit's best line)."""
    return (hit.path, hit.start_line, hit.end_line, hit.symbol, hit.text, tuple(hit.query_terms),
            hit.best_piece, hit.workspace)  # fmt: skip


@dataclass(eq=False)
class SavedList:
    """A list as the back key restores it: rows, labels, cursor, query, note, and what the screen around
    it showed (the status line's words about it, the preview's line; None: the hit's best line)."""

    hits: list[Hit]
    labels: list[str | None] | None
    places: bool
    cursor: int | None
    query: str | None
    message: str
    status: tuple[int | None, float | None, str | None] = (None, None, None)
    line: int | None = None
    labelled: bool = False


class ResultsList(TypesIntoQuery, ScrollView, can_focus=True):
    """Search results; the cursor row is the selection shown in the preview. The query whose answer
    the rows show is ``shown_query`` (None: none yet, or the mode or scope changed since). ``places``:
    the rows are definitions or references of a name (``d``/``r``), labelled by ``labels``; ``back``
    holds the lists they replaced (the latest last), ``lookup`` numbers the latest ``d``/``r`` request
    (the list takes only its answer), and ``waiting`` the commands typed against a query whose answer
    is not shown yet (they run on it)."""

    BINDINGS: ClassVar[list[BindingType]] = list(browse_bindings())

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "results--cursor",
        "results--path",
        "results--span",
        "results--tags",
        "results--score",
        "results--symbol",
    }
    DEFAULT_CSS = """
    ResultsList { overflow-x: hidden; }
    ResultsList > .results--path { text-style: bold; }
    ResultsList > .results--span { color: $text-muted; }
    ResultsList > .results--tags { color: $text-secondary; }
    ResultsList > .results--score { color: $text-muted; }
    ResultsList > .results--symbol { text-style: italic; color: $text-accent; }
    ResultsList > .results--cursor { background: $block-cursor-blurred-background; }
    ResultsList:focus > .results--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
    }
    """

    @dataclass
    class Moved(Message):
        """The cursor moved to ``index`` (None: no rows)."""

        index: int | None

    shown_query: var[str | None] = var(None)
    back: var[tuple[SavedList, ...]] = var((), bindings=True)  # the back key is a command while it holds one
    lookup: var[int] = var(0)
    waiting: var[tuple[tuple[str, Callable[[], Any]], ...]] = var(())  # (typed against, command)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hits: list[Hit] = []
        self.labels: list[str | None] | None = None  # the rows' symbols (None: the hits' own)
        self.labelled = False  # the labels worked out for these rows arrived (or they need none)
        self.places = False
        self.cursor: int | None = None
        self.chosen = False  # the user moved the cursor since these rows' query was first shown
        self.message = ""
        self._note: list[str] = []  # the message wrapped to the list's width (shown when no hits)
        self._cols = Columns(0, 0)
        self._cols_width = -1
        self._cache: dict[tuple[int, bool], Strip] = {}
        self._styles: dict[str, Style] | None = None
        self._base: Style | None = None
        self._after_paint: list[Callable[[], Any]] = []

    # -- content -----------------------------------------------------------------------------------

    def set_hits(
        self,
        hits: list[Hit],
        cursor: int | None = 0,
        message: str = "",
        query: str | None = None,
        *,
        labels: list[str | None] | None = None,
        places: bool = False,
    ) -> None:
        """Show ``hits`` (the answer to ``query``) with the cursor on row ``cursor`` (clamped);
        ``message`` when there are none; ``labels``/``places``: see the class. Rows of another query
        than the shown one start unchosen (see :attr:`chosen`)."""
        if query is None or query != self.shown_query:
            self.chosen = False
        self.hits = hits
        self.labels = labels
        self.labelled = places or not hits
        self.places = places
        self.shown_query = query
        self.message = printable(message)  # may quote a query, a file name or a server's reply
        self._relayout()
        self._set_cursor(None if not hits or cursor is None else max(0, min(len(hits) - 1, cursor)))
        self.refresh()

    def set_labels(self, hits: list[Hit], labels: list[str | None]) -> None:
        """Label the rows of ``hits`` (if they are still the ones shown) by the definitions at their best
        lines (worked out after the rows were painted: see the search loop)."""
        if hits is not self.hits:
            return
        self.labelled = True
        if labels != (self.labels if self.labels is not None else [h.symbol for h in hits]):
            self.labels = labels
            self._relayout()
            self.refresh()

    def show_answer(self, hits: list[Hit], query: str, note: str, *, keep_choice: bool) -> None:
        """Show the answer ``hits`` to ``query``. The same query answered again (a newer index version:
        vectors arrived, an edit re-ranked the list) keeps the rows' labels, and a row the user chose
        (``keep_choice``: moved to, or browsed from the list or the preview) stays selected where it
        moved, so what they look at and what ``e``/``d`` act on do not change under them; a selection
        left where the answer put it follows the new first row, as a fresh search would show it."""
        same_query = query == self.shown_query
        cursor, labels = 0, None
        if same_query:
            labels = carried_labels(self.hits, self.labels, hits)
            selected = self.selected_hit
            if selected is not None and (self.chosen or keep_choice):
                at = (selected.path, selected.start_line)
                where = [i for i, h in enumerate(hits) if (h.path, h.start_line) == at]
                cursor = where[0] if where else min(self.cursor or 0, max(0, len(hits) - 1))
        self.set_hits(hits, cursor, note, query=query, labels=labels)

    def when_showing(self, query: str, command: Callable[[], Any]) -> None:
        """Run ``command`` now, or once the answer to ``query`` (the query in the box) is shown."""
        if query.strip() and query != self.shown_query:
            self.waiting = (*self.waiting, (query, command))
        else:
            command()

    def run_waiting(self) -> None:
        """The answer to :attr:`shown_query` is shown: the commands typed against it run, the others
        (typed against a query since replaced) are dropped."""
        waiting, self.waiting = self.waiting, ()
        for typed_against, command in waiting:
            if typed_against == self.shown_query:
                command()

    def saved(self, status: tuple[int | None, float | None, str | None], line: int | None) -> SavedList:
        """This list as the back key would restore it (``status``, ``line``: see :class:`SavedList`)."""
        return SavedList(self.hits, self.labels, self.places, self.cursor, self.shown_query, self.message,
                         status, line, self.labelled)  # fmt: skip

    def show_places(self, hits: list[Hit], labels: list[str | None], query: str, saved: SavedList) -> None:
        """Replace the rows by the places ``d``/``r`` found; ``saved`` (this list) goes on :attr:`back`."""
        self.back = (*self.back, saved)
        self.set_hits(hits, 0, query=query, labels=labels, places=True)

    def go_back(self) -> SavedList | None:
        """Restore the list the latest places replaced and return it (None: nothing to go back to); a
        lookup on its way is dropped."""
        if not self.back:
            return None
        *rest, saved = self.back
        self.back = tuple(rest)
        self.lookup += 1
        self.set_hits(saved.hits, saved.cursor, saved.message, query=saved.query, labels=saved.labels,
                      places=saved.places)  # fmt: skip
        self.labelled = saved.labelled
        return saved

    def forget_places(self) -> None:
        """A new query, mode or scope: the lists to go back to are gone, a lookup on its way dropped."""
        self.back = ()
        self.lookup += 1

    def _symbol(self, row: int) -> str | None:
        labels = self.labels
        return labels[row] if labels is not None and row < len(labels) else self.hits[row].symbol

    @property
    def selected_hit(self) -> Hit | None:
        """The hit under the cursor, if any."""
        i = self.cursor
        return self.hits[i] if i is not None and 0 <= i < len(self.hits) else None

    @property
    def option_count(self) -> int:
        return len(self.hits)

    def row_plain(self, index: int) -> str:
        """Row ``index`` as it is drawn, as plain text."""
        return row_text(self.hits[index], self._cols, self._symbol(index))

    def move(self, delta: int) -> None:
        """Move the cursor by ``delta`` rows, clamped to the list (the user chose a row)."""
        if not self.hits:
            return
        self.chosen = True
        i = self.cursor if self.cursor is not None else (-1 if delta > 0 else 0)
        self._set_cursor(max(0, min(len(self.hits) - 1, i + delta)))

    def page(self, direction: int) -> None:
        """Move the cursor by a page."""
        self.move(direction * max(1, self.scrollable_content_region.height - 1))

    def select(self, index: int) -> None:
        """Put the cursor on row ``index`` (the user chose it)."""
        if 0 <= index < len(self.hits):
            self.chosen = True
            self._set_cursor(index)

    def _set_cursor(self, index: int | None) -> None:
        old = self.cursor
        self.cursor = index
        if index is not None:
            self._keep_visible(index)
        if old != index:
            self._cache = {k: v for k, v in self._cache.items() if k[0] not in (old, index)}
            self.refresh()
            self.post_message(self.Moved(index))

    def _keep_visible(self, index: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_offset.y)
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)

    # -- drawing -----------------------------------------------------------------------------------

    def after_paint(self, callback: Callable[[], Any]) -> None:
        """Call ``callback`` once the rows now set are drawn for the terminal (right after the frame that
        holds them is written); at once, after the next refresh, when the list is not on screen."""
        top = self.app.screen
        covered = top is not self.screen and not isinstance(top, ModalScreen)  # F7's ask: never drawn
        if self.back or covered or not self.is_on_screen:
            self.call_after_refresh(callback)
            return
        self._after_paint.append(callback)
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = super().render_lines(crop)
        if self._after_paint:  # the frame being composed holds these rows: the callbacks run after it
            callbacks, self._after_paint = self._after_paint, []
            for callback in callbacks:
                self.call_later(callback)
        return strips

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        self._cols = columns(self.hits, width, self.labels, self.places)
        self._cols_width = width
        self._cache.clear()
        self._note = textwrap.wrap(self.message, max(8, width - 2)) if self.message and not self.hits else []
        size = Size(width, len(self.hits) or (1 if self.message else 0))
        if size != self.virtual_size:
            self.virtual_size = size

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._base = None
        self._cache.clear()

    def _style(self, role: str) -> Style:
        if self._styles is None:
            self._styles = {
                name: self.get_component_rich_style(f"results--{name}", partial=True)
                for name in ("path", "span", "tags", "score", "symbol")
            }
            self._styles["cursor"] = self.get_component_rich_style("results--cursor", partial=True)
        return self._styles.get(role, Style())

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if width != self._cols_width:  # a scrollbar came or went
            self._relayout()
        row = int(self.scroll_offset.y) + y
        if self._base is None:
            self._base = self.rich_style
        base = self._base
        if row >= len(self.hits):
            if row < len(self._note):  # the note, wrapped: a reason with its hint is read whole
                note = Segment(f" {self._note[row]}"[:width], base + Style(dim=True))
                return Strip([note]).extend_cell_length(width, base)
            return Strip.blank(width, base)
        on_cursor = row == self.cursor
        key = (row, on_cursor)
        strip = self._cache.get(key)
        if strip is None or strip.cell_length != width:
            bg = base + self._style("cursor") if on_cursor else base
            # the cursor row is written in the cursor's colours (its cells keep bold, italic, dim): a
            # cell's own colour can be the cursor's background (TERM=linux: cyan ranks on cyan)
            segments = [
                Segment(text, bg + (self._style(role).without_color if on_cursor else self._style(role)))
                if role
                else Segment(text, bg)
                for text, role in row_parts(self.hits[row], self._cols, self._symbol(row))
            ]
            strip = Strip(segments).crop_extend(0, width, bg)
            self._cache[key] = strip
        return strip

    # -- mouse -------------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = int(self.scroll_offset.y) + offset.y
        if 0 <= row < len(self.hits):
            self.select(row)
