"""The preview pane: the selected hit's file, syntax-highlighted, scrolled to the hit's best line.

:func:`lex_window` does the disk read and the lexing and :func:`compose_body` marks the chunk, the query
terms and the current line; :class:`Preview` runs both in a thread worker (one render at a time, the
latest request wins, a typing-driven request waits for a pause) so the UI thread only installs the
finished lines. Stepping between matches (``n``/``N``) re-composes the lexed window without reading or
lexing again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from aide_tui.core.notebook import cells_view, is_notebook
from aide_tui.core.search.hitlines import (
    hit_best_line,
    hit_file,
    shown_path,
    symbol_at_line,
    term_spans,
)
from aide_tui.core.search.hitlines import line_text as hit_line_text
from aide_tui.core.search.response import Hit
from aide_tui.core.textsafe import printable, visible
from aide_tui.tui.codelines import code_only
from aide_tui.tui.keys import browse_bindings
from aide_tui.tui.lookup import Line
from aide_tui.tui.widgets.query import TypesIntoQuery
from aide_tui.tui.widgets.results import location

WINDOW = 60  # lines shown before and after the hit (bounds lexing and rendering cost)
SETTLE = 0.12  # seconds without new results before a typing-driven preview is rendered
_CONSOLE = Console(width=10_000, color_system="truecolor", force_terminal=True, legacy_windows=False)


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
    names: list[str] = field(default_factory=list)  # ``plain`` as code only (what d / r read names from)


@dataclass
class PreviewData:
    """A rendered preview, ready to install on the UI thread."""

    hit: Hit
    window: LexedWindow
    current_line: int  # the line the preview lands on (best line, or the match stepped to)
    match_lines: list[int]
    title: Text
    body: Text
    lines: list[list[Segment]]  # ``body`` as segments per line, converted off the UI thread
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
    return (shown_path(hit), hit.start_line, hit.end_line, tuple(hit.query_terms))


def why(hit: Hit) -> str:
    """Why the hit matched: terms, symbol/path hit, a quoted phrase or a pasted error message, dense rank."""
    parts = []
    terms = hit.matched_terms()
    if terms:
        parts.append("matched " + ", ".join(terms[:8]))
    if hit.ranks.get("symbol"):
        parts.append("symbol hit")
    if hit.ranks.get("path"):
        parts.append("path match")
    if hit.ranks.get("phrase"):
        parts.append("quoted phrase")
    if hit.ranks.get("line"):
        parts.append("the line named")
    if hit.ranks.get("uses"):
        parts.append(f"uses the name #{hit.ranks['uses']}")
    if hit.ranks.get("message"):
        parts.append(f"error message #{hit.ranks['message']}")
    if hit.ranks.get("verbatim"):
        parts.append(f"pasted passage #{hit.ranks['verbatim']}")
    if hit.ranks.get("dense"):
        parts.append(f"dense #{hit.ranks['dense']}")
    return " · ".join(parts)


_LEX_CACHE: OrderedDict[tuple[str, int, int, str, float], LexedWindow] = OrderedDict()
_LEX_LOCK = threading.Lock()
LEX_CACHE_SIZE = 16


def lex_window(root: Path, hit: Hit, theme: str) -> LexedWindow:
    """:func:`read_and_lex`, cached per file, window, theme and modification time: refining a query
    usually keeps the same hits, and their previews then skip the lexer."""
    file = hit_file(hit, root)
    try:
        mtime = file.stat().st_mtime if file is not None else -1.0
    except OSError:
        mtime = -1.0
    key = (f"{file}|{shown_path(hit)}", hit.start_line, hit.end_line, theme, mtime)
    with _LEX_LOCK:
        cached = _LEX_CACHE.get(key)
        if cached is not None:
            _LEX_CACHE.move_to_end(key)
            return cached
    window = read_and_lex(file, hit, theme)
    with _LEX_LOCK:
        _LEX_CACHE[key] = window
        while len(_LEX_CACHE) > LEX_CACHE_SIZE:
            _LEX_CACHE.popitem(last=False)
    return window


def read_and_lex(file: Path | None, hit: Hit, theme: str) -> LexedWindow:
    """Read ``file`` (from :func:`~aide_tui.core.search.hitlines.hit_file`), or fall back to the indexed chunk
    text (the file is gone, unsafe to read, or in another workspace not on this machine), and
    highlight the lines around the hit. Control characters are shown, never sent to the terminal
    (:func:`~aide_tui.core.textsafe.visible`: a file can hold ``ESC ] 52`` and write the clipboard)."""
    first_line = 1
    from_disk = True
    language = None  # a notebook's kernel language: its cells are shown, not its JSON
    try:
        if file is None:
            raise OSError("no readable file for this hit")
        text = file.read_text(encoding="utf-8", errors="replace")
        view = cells_view(text) if is_notebook(hit.path) else None
        if view is not None:  # line for line with the file, as the chunk was read
            language, text = view
        lines = text.splitlines()
        if len(lines) < hit.end_line:
            raise OSError("file shorter than the indexed chunk")
    except (OSError, ValueError):
        lines, first_line, from_disk = hit.text.splitlines() or [""], hit.start_line, False
        language = hit.language if is_notebook(hit.path) else None
    lo = max(first_line, hit.start_line - WINDOW)
    hi = min(first_line + len(lines) - 1, hit.end_line + WINDOW)
    plain = [visible(line.expandtabs(4)) for line in lines[lo - first_line : hi - first_line + 1]]
    snippet = "\n".join(plain)
    lexer = language or Syntax.guess_lexer(hit.path, code=snippet)
    code = Syntax(snippet, lexer, theme=theme).highlight(snippet)
    code.rstrip()
    rows = code.split("\n", allow_blank=True)[: len(plain)]
    while len(rows) < len(plain):
        rows.append(Text(""))
    a = max(0, min(len(plain), hit.start_line - lo))  # the chunk starts in plain code: lexed from there
    names = code_only(hit.path, plain[:a], language) + code_only(hit.path, plain[a:], language)
    return LexedWindow(shown_path(hit), lo, hi, list(rows), plain, from_disk, names)


def landing_line(hit: Hit, window: LexedWindow) -> int:
    """The hit's best line (as its row's label and ``--format vimgrep`` find it: the piece that ranked
    it first), from the lines on screen (falls back to the indexed text)."""
    a, b = hit.start_line - window.lo, hit.end_line - window.lo + 1
    if window.from_disk and 0 <= a < b <= len(window.plain):
        return hit_best_line(replace(hit, text="\n".join(window.plain[a:b]))).line
    return hit_best_line(hit).line


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
    if window is None or window.path != shown_path(hit):
        window = lex_window(root, hit, styles.theme)
    line = current if current is not None else landing_line(hit, window)
    body, matches = compose_body(hit, window, styles, width, line)
    title = Text(no_wrap=True, overflow="ellipsis")
    title.append(f"{shown_path(hit)}:{line}", "bold")
    title.append(f"  ({location(hit).rpartition(':')[2]})", "dim")
    symbol = symbol_at_line(hit, line)  # the definition the line shown sits in (the row's label there)
    if symbol:
        title.append(f"  {printable(symbol)}", "italic")
    reason = printable(why(hit))  # the query's terms: typed or pasted text
    if reason:
        title.append(f"  {reason}", "dim")
    if not window.from_disk:
        title.append("  (indexed text: file gone or elsewhere)", "dim")
    return PreviewData(hit, window, line, matches, title, body, to_lines(body), key=preview_key(hit))


def code_line_of(hit: Hit, line: int) -> str:
    """File line ``line`` of ``hit``'s indexed chunk as code only ('' outside the chunk)."""
    lines = hit.text.split("\n")
    i = line - hit.start_line
    return code_only(hit.path, lines)[i] if 0 <= i < len(lines) else ""


def to_lines(body: Text) -> list[list[Segment]]:
    """``body`` as one list of segments per line (the pane draws only the visible ones)."""
    return [list(line.render(_CONSOLE, end="")) for line in body.split("\n", allow_blank=True)]


class PreviewBody(TypesIntoQuery, ScrollView, can_focus=True):
    """The code, drawn line by line (only visible lines are rendered; scrolling never re-lays out).

    Focused: ↑/↓ and j/k scroll it line by line, PgUp/PgDn by page; the other list letters act too."""

    BINDINGS: ClassVar[list[BindingType]] = list(browse_bindings())

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "preview--hit",
        "preview--current",
        "preview--match",
        "preview--marker",
    }
    DEFAULT_CSS = """
    PreviewBody { overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[list[Segment]] = []
        self._message = ""
        self._cache: dict[int, Strip] = {}

    def set_lines(self, lines: list[list[Segment]]) -> None:
        """Show ``lines`` (from :func:`to_lines`)."""
        self._lines, self._message = lines, ""
        self._cache.clear()
        self.virtual_size = Size(0, len(lines))  # long lines are cropped, as in a pager
        self.refresh()

    def set_message(self, message: str) -> None:
        """A placeholder instead of code."""
        self._lines, self._message = [], message
        self._cache.clear()
        self.virtual_size = Size(0, 1)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    @property
    def plain(self) -> str:
        """The text shown (or the placeholder)."""
        if not self._lines:
            return self._message
        return "\n".join("".join(seg.text for seg in line) for line in self._lines)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        row = int(self.scroll_offset.y) + y
        if not self._lines:
            text = self._message if row == 0 else ""
            return Strip([Segment(text[:width], base)]).extend_cell_length(width, base)
        if row >= len(self._lines):
            return Strip.blank(width, base)
        strip = self._cache.get(row)
        if strip is None:
            strip = Strip(self._lines[row])
            self._cache[row] = strip
        x = int(self.scroll_offset.x)
        return strip.crop_extend(x, x + width, None).apply_style(base)


class PreviewTitle(Widget):
    """The header line: one line whatever it says, so a new title never re-lays out the screen."""

    text: reactive[Text] = reactive(Text(""), layout=False, always_update=True)

    def render(self) -> Text:
        return self.text


Job = tuple[Hit, int | None]  # a hit and the line to land on (None: its best line)


class Preview(Vertical):
    """Header line (path:line, range, symbol, why it matched) above the code. It schedules its own
    renders: :meth:`request` asks for a hit's preview; one render runs at a time in a thread worker and
    only the latest request is shown."""

    DEFAULT_CLASSES = "pane"

    @dataclass
    class Rendered(Message):
        """A preview rendered by the worker (handled by the pane itself)."""

        data: PreviewData

    @dataclass
    class Landed(Message):
        """A preview was installed: it shows ``data.hit`` at ``data.current_line``."""

        data: PreviewData

    def __init__(self, root: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.root = root
        self.shown: PreviewData | None = None
        self._timer: Timer | None = None  # waiting for typing to pause
        # while this says so, a typing-driven preview waits on (the query typed is newer than the
        # results shown: their hit is about to change, and the next key's frame must not wait for it)
        self.hold: Callable[[], bool] = lambda: False
        self._settling: Job | str | None = None  # rendered (a str: the placeholder) when the timer fires
        self._job: tuple[Hit, int | None, LexedWindow | None] | None = None  # next render
        self._in_flight = False
        self._latest: tuple[str, int, int, tuple[str, ...]] | None = None  # key of the latest request
        self._width = 0  # the pane width the shown preview was rendered for (hit lines are padded to it)

    def compose(self) -> ComposeResult:
        yield PreviewTitle(id="preview-title")
        yield PreviewBody(id="preview-body")

    def on_mount(self) -> None:
        self.body.set_message("Type to search; results update as you type.")

    @property
    def body(self) -> PreviewBody:
        return self.query_one(PreviewBody)

    # -- scheduling --------------------------------------------------------------------------------

    def request(self, hit: Hit | None, *, settle: bool = False, current: int | None = None) -> None:
        """Show ``hit`` (landing on ``current``, else its best line) unless it is shown already.
        ``settle``: the hit comes from typing; render once keys pause for :data:`SETTLE` seconds (the
        lexer would otherwise compete with the next keystroke's frame for the interpreter)."""
        if hit is None:
            return
        if settle or self._timer is not None:
            self._settling = (hit, current)
            if settle:
                self._wait_for_pause()
            return
        self._queue(hit, current)

    def postpone(self) -> None:
        """A key was typed: a typing-driven preview still waiting waits :data:`SETTLE` from now (it
        would otherwise land between two keys whenever one answer takes longer than the settle)."""
        if self._timer is not None:
            self._wait_for_pause()

    def _wait_for_pause(self) -> None:
        """(Re)start the settle: :meth:`_settled` runs :data:`SETTLE` seconds from now."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(SETTLE, self._settled)

    def _settled(self) -> None:
        if self.hold():  # a newer query's answer is on its way: wait for it (it restarts the settle)
            self._wait_for_pause()
            return
        self._timer = None
        job, self._settling = self._settling, None
        if isinstance(job, str):
            self.clear(job)
        elif job is not None:
            self._queue(*job)

    def _queue(self, hit: Hit, current: int | None) -> None:
        shown = self.shown
        self._latest = preview_key(hit)
        if current is None and shown is not None and shown.key == self._latest:
            self._job = None
            return
        # stepping within the shown hit re-composes its lexed window; another hit is lexed afresh
        same = shown is not None and shown.key == self._latest
        window = shown.window if shown is not None and current is not None and same else None
        self._job = (hit, current, window)
        if not self._in_flight:
            self._next()

    def _next(self) -> None:
        job, self._job = self._job, None
        if job is None:
            return
        styles = self.styles_for_render(self.app.current_theme.dark)
        width = max(self.body.size.width, 40)
        self._width = self.body.size.width
        self._in_flight = True
        self._render_in_thread(job[0], styles, width, job[1], job[2])

    @work(thread=True, group="preview")
    def _render_in_thread(self, hit: Hit, styles: PreviewStyles, width: int, current: int | None,
                window: LexedWindow | None) -> None:  # fmt: skip
        self.post_message(self.Rendered(render_preview(self.root, hit, styles, width, current, window)))

    @on(Rendered)
    def _rendered(self, message: Rendered) -> None:
        message.stop()
        self._in_flight = False
        if self._job is None and message.data.key == self._latest:
            self.show(message.data)
        self._next()

    def on_resize(self) -> None:
        """The terminal was resized: the landing line stays in view (a new width: hit lines re-padded)."""
        shown = self.shown
        if shown is None:
            return
        if self.body.size.width != self._width and self._job is None:
            self._queue(shown.hit, shown.current_line)
        self.call_after_refresh(self.scroll_to_current)

    # -- what is shown -----------------------------------------------------------------------------

    def line_for(self, hit: Hit) -> int:
        """The line ``e``/``y`` use: where the preview landed (or stepped to), else the best line."""
        shown = self.shown
        if shown is not None and shown.key == preview_key(hit):
            return shown.current_line
        return hit_best_line(hit).line

    def line_text(self, hit: Hit, line: int) -> str:
        """The text of file line ``line`` of ``hit``: from the lines on screen, else the indexed chunk."""
        shown = self.shown
        if shown is not None and shown.key == preview_key(hit) and shown.from_disk:
            window = shown.window
            if window.lo <= line <= window.hi:
                return window.plain[line - window.lo]
        return hit_line_text(hit, line)

    def code_line(self, hit: Hit, line: int) -> str | None:
        """File line ``line`` of ``hit`` as code only (strings and comments blanked), from the lines on
        screen; None when they are not ``hit``'s (:func:`code_line_of` reads the indexed chunk)."""
        shown = self.shown
        if shown is not None and shown.key == preview_key(hit) and shown.from_disk:
            window = shown.window
            if window.lo <= line <= window.hi and window.names:
                return window.names[line - window.lo]
        return None

    def lookup_line(self, hit: Hit) -> Line:
        """The line ``d``/``r`` read for ``hit``: the one shown (its code only: the names of its strings
        and comments are not candidates; '' when the lines on screen are not ``hit``'s)."""
        number = self.line_for(hit)
        code = self.code_line(hit, number)
        return Line(hit.path, number, code if code is not None else "", tuple(hit.query_terms))

    def step_match(self, direction: int) -> bool:
        """Land on the next (``n``) or previous (``N``) line with a query term; False: none."""
        shown = self.shown
        if shown is None or not shown.match_lines:
            return False
        lines, cur = shown.match_lines, shown.current_line
        if direction > 0:
            nxt = next((n for n in lines if n > cur), lines[0])
        else:
            nxt = next((n for n in reversed(lines) if n < cur), lines[-1])
        self._queue(shown.hit, nxt)
        return True

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
        self.query_one(PreviewTitle).text = data.title
        self.body.set_lines(data.lines)
        self.scroll_to_current()
        self.post_message(self.Landed(data))

    def scroll_to_current(self) -> None:
        data = self.shown
        if data is None:
            return
        body = self.body
        row = max(0, data.current_row - max(1, body.size.height // 3))
        body.scroll_to(0, row, animate=False, immediate=True)
        if int(body.scroll_y) != min(row, max(0, len(data.lines) - body.size.height)):
            body.call_after_refresh(body.scroll_to, 0, row, animate=False)  # sizes not settled yet

    def clear(self, message: str = "", *, settle: bool = False) -> None:
        """Show a placeholder instead of code (a render on its way is dropped). ``settle``: the empty
        answer comes from typing (``q`` on the way to ``queuepool``); the placeholder waits for the
        pause as a typed hit's preview does, so the pane does not say "no results" beside the list
        of the next key's results."""
        if settle:
            self._settling = message
            self._wait_for_pause()
            return
        self.shown = None
        self._latest, self._job, self._settling = None, None, None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.query_one(PreviewTitle).text = Text("")
        self.body.set_message(message)
