"""The index line (what the indexer is doing, with a bar while it counts) and the status line below it.

Both are reactive: the screen sets fields, each widget renders itself once per refresh.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from aide_tui.core.events import Progress
from aide_tui.core.textsafe import printable  # states and details quote file names and server replies

BAR_MIN_WIDTH = 50  # narrower than this, the label keeps the whole line


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    return f"{seconds // 60}:{seconds % 60:02d}"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


class IndexBar(Widget):
    """``state detail`` on the left; while a phase counts (files or vectors), a bar on the right."""

    DEFAULT_CSS = """
    IndexBar { height: 1; }
    """

    state: reactive[str] = reactive("starting")
    detail: reactive[str] = reactive("")
    done: reactive[int] = reactive(0)
    total: reactive[int] = reactive(0)  # 0: no bar (a state without counts)
    error: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._phase_start: tuple[str, float, int] | None = None  # (state, time, done) for the rate

    @property
    def label(self) -> str:
        """The state text as drawn (without the bar)."""
        return f"{self.state} {self.detail}".strip()

    def progress(self, event: Progress, now: float | None) -> None:
        """Apply a progress event; ``now`` (seconds) enables rate and ETA, None hides them."""
        state = event.state or "indexing"
        if state == "ready":
            self.set_state("ready")
            return
        if state == "embedding" and event.vectors_total:
            done, total, unit = event.vectors_done, event.vectors_total, "vectors"  # one per dense piece
        elif event.files_total:
            done, total, unit = event.files_done, event.files_total, "files"
        else:
            done, total, unit = 0, 0, ""
        detail = ""
        if total:
            detail = f"{done}/{total} {unit}"
        elif event.message:
            # "scanning workspace" after the state "scanning" would read "scanning scanning workspace"
            msg = event.message
            detail = msg[len(state) :].strip() if msg.lower().startswith(state.lower()) else msg
        if now is not None and total:
            if self._phase_start is None or self._phase_start[0] != state:
                self._phase_start = (state, now, done)
            _, t0, d0 = self._phase_start
            if now - t0 > 0.5 and done > d0:
                rate = (done - d0) / (now - t0)
                detail += f" · {rate:.0f}/s · ETA {_duration((total - done) / rate)}"
        self.state, self.detail, self.error = state, detail, False
        self.done, self.total = done, total

    def set_state(self, state: str, detail: str = "", *, error: bool = False) -> None:
        """A state without counts (ready, reindexing N changed files, error, cancelled): no bar."""
        if state != self.state:
            self._phase_start = None
        self.state, self.detail, self.error = state, detail, error
        self.done = self.total = 0
        self.set_class(error, "-error")

    def render(self) -> Text:
        width = self.content_region.width or self.size.width
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        error_color = self.app.theme_variables.get("error", "red")
        text.append(printable(self.state), f"bold {error_color}" if self.error else "bold")
        if self.detail:
            text.append(f" {printable(self.detail)}", "" if self.error else "dim")
        if self.total and width >= BAR_MIN_WIDTH:
            bar_w = max(10, min(40, width // 3))
            room = width - bar_w - 1
            text.truncate(room, overflow="ellipsis", pad=True)
            filled = round(bar_w * min(1.0, self.done / self.total))
            text.append(" ")
            text.append("━" * filled, self.app.theme_variables.get("primary", "blue"))
            text.append("━" * (bar_w - filled), "dim")
        return text


class StatusLine(Widget):
    """Mode, result count, what the index holds, embedder, degraded reason, time of the last commit."""

    DEFAULT_CSS = """
    StatusLine { height: 1; }
    """

    mode: reactive[str] = reactive("hybrid")
    results: reactive[int | None] = reactive(None)
    took_ms: reactive[float | None] = reactive(None)
    files: reactive[int] = reactive(0)
    chunks: reactive[int] = reactive(0)
    embedded: reactive[int] = reactive(0)
    vectors_missing: reactive[int] = reactive(0)
    embedder: reactive[str] = reactive("none")
    degraded_reason: reactive[str | None] = reactive(None)
    query_error: reactive[str | None] = reactive(None)  # the query itself is wrong (an unknown lang:)
    last_indexed: reactive[str | None] = reactive(None)
    size_bytes: reactive[int] = reactive(0)
    show_timing: reactive[bool] = reactive(True)

    def watch_degraded_reason(self, reason: str | None) -> None:
        self.set_class(bool(reason), "-degraded")

    @property
    def plain(self) -> str:
        return self.render().plain

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(f" {self.mode} ", "reverse bold")
        error = self.app.theme_variables.get("error", "red")
        if self.query_error:
            text.append(f"  {printable(self.query_error)}", f"bold {error}")
        if self.degraded_reason:
            text.append(f"  degraded: {printable(self.degraded_reason)}", f"bold {error}")
        if self.results is not None:
            took = f" in {self.took_ms:.0f} ms" if self.took_ms is not None and self.show_timing else ""
            text.append(f"  {self.results} result{'' if self.results == 1 else 's'}{took}")
        text.append(f"  {self.files} files · {self.chunks} chunks")
        if self.embedder != "none":
            text.append(f" · {self.embedded} embedded")
            if self.vectors_missing:
                text.append(f" · {self.vectors_missing} vectors to go")
        if self.size_bytes and self.show_timing:
            text.append(f" · {human_size(self.size_bytes)}")
        text.append(f"  embedder {printable(self.embedder)}", "dim")
        if self.last_indexed and self.show_timing:
            text.append(f"  indexed {self.last_indexed}", "dim")
        return text
