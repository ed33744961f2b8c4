"""The preview pane: the selected hit's file, syntax-highlighted, scrolled to the hit's best line.

:func:`lex_window` does the disk read and the lexing and :func:`compose_body` marks the chunk, the query
terms and the current line; the app calls both from a thread worker so the UI thread only installs the
finished :class:`~textual.content.Content`. Stepping between matches (``n``/``N``) re-composes the
lexed window without reading or lexing again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from aide_tui.core.hitlines import best_line, term_spans
from aide_tui.core.search import Hit
from aide_tui.tui.widgets.results import location

WINDOW = 60  # lines shown before and after the hit (bounds lexing and rendering cost)


@dataclass
class PreviewStyles:
    """Styles from the pane's component classes (read on the UI thread)."""

    hit: Style
    current: Style
    match: Style
    marker: Style
    theme: str = "ansi_dark"


@dataclass
class LexedWindow:
    """File lines ``lo``..``hi`` of a hit, highlighted, plus the plain text for matching."""

    path: str
    lo: int
    hi: int
    code: list[Text]
    plain: list[str]
    from_disk: bool


@dataclass
class PreviewData:
    """A rendered preview, ready to install on the UI thread."""

    hit: Hit
    window: LexedWindow
    current_line: int  # the line the preview lands on (best line, or the match stepped to)
    match_lines: list[int]
    title: Text
    body: Text
    content: Content  # ``body`` converted off the UI thread
    key: tuple[str, int, int, tuple[str, ...]] = field(default=("", 0, 0, ()))

    @property
    def path(self) -> str:
        return self.hit.path

    @property
    def start_line(self) -> int:
        return self.hit.start_line

    @property
    def end_line(self) -> int:
        return self.hit.end_line

    @property
    def from_disk(self) -> bool:
        return self.window.from_disk

    @property
    def current_row(self) -> int:
        """Row of the current line in the body."""
        return self.current_line - self.window.lo


def preview_key(hit: Hit) -> tuple[str, int, int, tuple[str, ...]]:
    """What makes two previews the same: location and query terms."""
    return (hit.path, hit.start_line, hit.end_line, tuple(hit.query_terms))


def why(hit: Hit) -> str:
    """Why the hit matched: terms, symbol/path hit and dense rank."""
    parts = []
    terms = hit.matched_terms()
    if terms:
        parts.append("matched " + ", ".join(terms[:8]))
    if hit.ranks.get("symbol"):
        parts.append("symbol hit")
    if hit.ranks.get("path"):
        parts.append("path match")
    if hit.ranks.get("dense"):
        parts.append(f"dense #{hit.ranks['dense']}")
    return " · ".join(parts)


def lex_window(root: Path, hit: Hit, theme: str) -> LexedWindow:
    """Read ``hit``'s file (or fall back to the indexed chunk text) and highlight the lines around it."""
    first_line = 1
    from_disk = True
    try:
        lines = (root / hit.path).read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < hit.end_line:
            raise OSError("file shorter than the indexed chunk")
    except OSError:
        lines, first_line, from_disk = hit.text.splitlines() or [""], hit.start_line, False
    lo = max(first_line, hit.start_line - WINDOW)
    hi = min(first_line + len(lines) - 1, hit.end_line + WINDOW)
    plain = [line.expandtabs(4) for line in lines[lo - first_line : hi - first_line + 1]]
    snippet = "\n".join(plain)
    lexer = Syntax.guess_lexer(hit.path, code=snippet)
    code = Syntax(snippet, lexer, theme=theme).highlight(snippet)
    code.rstrip()
    rows = code.split("\n", allow_blank=True)[: len(plain)]
    while len(rows) < len(plain):
        rows.append(Text(""))
    return LexedWindow(hit.path, lo, hi, list(rows), plain, from_disk)


def landing_line(hit: Hit, window: LexedWindow) -> int:
    """The hit's best line, from the lines on screen (falls back to the indexed text)."""
    a, b = hit.start_line - window.lo, hit.end_line - window.lo + 1
    if window.from_disk and 0 <= a < b <= len(window.plain):
        return best_line("\n".join(window.plain[a:b]), hit.start_line, hit.query_terms, hit.symbol).line
    return best_line(hit.text, hit.start_line, hit.query_terms, hit.symbol).line


def compose_body(
    hit: Hit, window: LexedWindow, styles: PreviewStyles, width: int, current: int
) -> tuple[Text, list[int]]:
    """The preview text: line numbers, the chunk's lines marked and padded to ``width``, query terms
    highlighted, ``current`` (the landing line) emphasised. Also returns the lines with matches."""
    gutter = len(str(window.hi))
    body = Text(no_wrap=True, overflow="crop", end="")
    matches: list[int] = []
    terms = hit.query_terms
    for i, (line, plain) in enumerate(zip(window.code, window.plain, strict=True)):
        n = window.lo + i
        in_hit = hit.start_line <= n <= hit.end_line
        spans = term_spans(plain, terms) if terms else []
        if spans:
            matches.append(n)
        marker = styles.marker if in_hit else Style(dim=True)
        body.append(f"{n:>{gutter}} ", marker)
        body.append("▶" if n == current else "▌" if in_hit else " ", marker)
        line = line.copy()
        for s, e, _ in spans:
            line.stylize(styles.match, s, e)
        if in_hit or n == current:
            line.pad_right(max(0, width - gutter - 2 - line.cell_len))
            line.stylize_before(styles.current if n == current else styles.hit)
        body.append_text(line)
        body.append("\n")
    body.rstrip()
    return body, matches


def render_preview(
    root: Path,
    hit: Hit,
    styles: PreviewStyles,
    width: int = 200,
    current: int | None = None,
    window: LexedWindow | None = None,
) -> PreviewData:
    """Build the preview of ``hit`` (worker thread): lex (unless ``window`` is given), land on the best
    line (or ``current``), mark terms. ``width`` is the pane width: hit lines are padded to it."""
    if window is None or window.path != hit.path:
        window = lex_window(root, hit, styles.theme)
    line = current if current is not None else landing_line(hit, window)
    body, matches = compose_body(hit, window, styles, width, line)
    title = Text(no_wrap=True, overflow="ellipsis")
    title.append(f"{hit.path}:{line}", "bold")
    title.append(f"  ({location(hit).rpartition(':')[2]})", "dim")
    if hit.symbol:
        title.append(f"  {hit.symbol}", "italic")
    reason = why(hit)
    if reason:
        title.append(f"  {reason}", "dim")
    if not window.from_disk:
        title.append("  (file gone: indexed text)", "dim")
    return PreviewData(
        hit, window, line, matches, title, body, Content.from_rich_text(body), key=preview_key(hit)
    )


class PreviewBody(VerticalScroll):
    """Scrollable code area (focused: ↑/↓ and j/k scroll it line by line, PgUp/PgDn by page)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "preview--hit",
        "preview--current",
        "preview--match",
        "preview--marker",
    }


class Preview(Vertical):
    """Header line (path:line, range, symbol, why it matched) above the code."""

    DEFAULT_CLASSES = "pane"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: PreviewData | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="preview-title")
        with PreviewBody(id="preview-body"):
            yield Static("Type to search; results update as you type.", id="preview-code")

    @property
    def body(self) -> PreviewBody:
        return self.query_one(PreviewBody)

    def styles_for_render(self, dark: bool) -> PreviewStyles:
        body = self.body
        return PreviewStyles(
            hit=body.get_component_rich_style("preview--hit"),
            current=body.get_component_rich_style("preview--current"),
            match=body.get_component_rich_style("preview--match"),
            marker=body.get_component_rich_style("preview--marker"),
            theme="ansi_dark" if dark else "ansi_light",
        )

    def show(self, data: PreviewData) -> None:
        """Install a rendered preview and scroll so the landing line sits a third down the pane."""
        self.shown = data
        self.query_one("#preview-title", Static).update(data.title, layout=False)
        self.query_one("#preview-code", Static).update(data.content)
        self.scroll_to_current()

    def scroll_to_current(self) -> None:
        data = self.shown
        if data is None:
            return
        body = self.body
        row = max(0, data.current_row - max(1, body.size.height // 3))
        body.call_after_refresh(body.scroll_to, y=row, animate=False)

    def clear(self, message: str = "") -> None:
        """Show a placeholder instead of code."""
        self.shown = None
        self.query_one("#preview-title", Static).update("")
        self.query_one("#preview-code", Static).update(message)
        self.body.scroll_home(animate=False)
