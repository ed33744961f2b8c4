"""The preview pane: the selected hit's file, syntax-highlighted, scrolled to the hit with its lines marked.

:func:`render_preview` does the disk read and the lexing; the app calls it from a thread worker so the
UI thread only installs the finished :class:`~rich.text.Text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from aide_tui.core.search import Hit
from aide_tui.tui.widgets.results import location

CONTEXT = 3  # lines shown above the hit when scrolled to it
WINDOW = 60  # lines shown before and after the hit (bounds lexing and rendering cost)


@dataclass
class PreviewData:
    """A rendered preview, ready to install on the UI thread."""

    path: str
    start_line: int
    end_line: int
    title: Text
    body: Text
    content: Content  # ``body`` converted off the UI thread
    scroll_row: int
    from_disk: bool


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


def render_preview(
    root: Path, hit: Hit, hit_style: Style, marker_style: Style, theme: str, width: int = 200
) -> PreviewData:
    """Read ``hit``'s file (or fall back to the chunk text) and build the highlighted preview.

    ``width`` is the pane width: hit lines are padded to it so their background spans the pane.
    """
    first_line = 1
    from_disk = True
    try:
        lines = (root / hit.path).read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < hit.end_line:
            raise OSError("file shorter than the indexed chunk")
    except OSError:
        lines, first_line, from_disk = hit.text.splitlines(), hit.start_line, False
    lo = max(first_line, hit.start_line - WINDOW)
    hi = min(first_line + len(lines) - 1, hit.end_line + WINDOW)
    snippet = "\n".join(lines[lo - first_line : hi - first_line + 1]).expandtabs(4)
    lexer = Syntax.guess_lexer(hit.path, code=snippet)
    code = Syntax(snippet, lexer, theme=theme).highlight(snippet)
    code.rstrip()
    width = len(str(hi))
    body = Text(no_wrap=True, overflow="crop", end="")
    for n, line in enumerate(code.split("\n", allow_blank=True), start=lo):
        if n > hi:
            break
        hit_line = hit.start_line <= n <= hit.end_line
        body.append(f"{n:>{width}} ", marker_style if hit_line else "dim")
        body.append("▌" if hit_line else " ", marker_style if hit_line else "")
        if hit_line:
            line = line.copy()
            line.pad_right(max(0, width - len(str(n)) - 2 - line.cell_len))
            line.stylize_before(hit_style)
        body.append_text(line)
        body.append("\n")
    body.rstrip()
    title = Text(no_wrap=True, overflow="ellipsis")
    title.append(location(hit), "bold")
    if hit.symbol:
        title.append(f"  {hit.symbol}", "italic")
    reason = why(hit)
    if reason:
        title.append(f"  {reason}", "dim")
    if not from_disk:
        title.append("  (file gone: indexed text)", "dim")
    content = Content.from_rich_text(body)
    return PreviewData(
        hit.path, hit.start_line, hit.end_line, title, body, content, hit.start_line - lo, from_disk
    )


class PreviewBody(VerticalScroll):
    """Scrollable code area; ↑/↓ still move the result selection (screen bindings), PgUp/PgDn scroll."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"preview--hit", "preview--marker"}


class Preview(Vertical):
    """Header line (path, symbol, why it matched) above the code."""

    DEFAULT_CLASSES = "pane"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: PreviewData | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="preview-title")
        with PreviewBody(id="preview-body"):
            yield Static("Type to search; results update as you type.", id="preview-code")

    def show(self, data: PreviewData) -> None:
        """Install a rendered preview and scroll so the hit has a few lines of context above it."""
        self.shown = data
        self.query_one("#preview-title", Static).update(data.title, layout=False)
        self.query_one("#preview-code", Static).update(data.content)
        body = self.query_one(PreviewBody)
        row = max(0, data.scroll_row - CONTEXT)
        body.call_after_refresh(body.scroll_to, y=row, animate=False)

    def clear(self, message: str = "") -> None:
        """Show a placeholder instead of code."""
        self.shown = None
        self.query_one("#preview-title", Static).update("")
        self.query_one("#preview-code", Static).update(message)
        self.query_one(PreviewBody).scroll_home(animate=False)
