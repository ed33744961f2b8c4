"""Index progress bar and the status line below it."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from aide_tui.core.events import Progress


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    return f"{seconds // 60}:{seconds % 60:02d}"


class IndexBar(Horizontal):
    """State text (scanning / embedding / ready / error, counts, rate, ETA) and a progress bar."""

    DEFAULT_CSS = """
    IndexBar { height: 1; }
    IndexBar #index-state { width: 1fr; height: 1; }
    IndexBar ProgressBar { width: auto; height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = "starting"
        self.message = ""
        self._phase_start: tuple[str, float, int] | None = None  # (state, time, done) for the rate

    def compose(self) -> ComposeResult:
        yield Static("starting…", id="index-state")
        yield ProgressBar(total=None, show_eta=False, id="index-progress")

    @property
    def bar(self) -> ProgressBar:
        """The progress bar widget."""
        return self.query_one(ProgressBar)

    def progress(self, event: Progress, now: float | None) -> None:
        """Apply an indexer progress event; ``now`` (seconds) enables rate and ETA, None hides them."""
        state = event.state or "indexing"
        if state == "embedding" and event.vectors_total:
            done, total, unit = event.vectors_done, event.vectors_total, "vectors"  # one per dense piece
        elif event.files_total:
            done, total, unit = event.files_done, event.files_total, "files"
        else:
            done, total, unit = 0, 0, ""
        if state == "ready":
            self.done_state()
            return
        self.state = state
        label = Text(state, "bold")
        if total:
            label.append(f" {done}/{total} {unit}")
            self.bar.update(total=total, progress=done)
        elif event.message:
            label.append(f" {event.message}", "dim")
        if now is not None and total:
            if self._phase_start is None or self._phase_start[0] != state:
                self._phase_start = (state, now, done)
            _, t0, d0 = self._phase_start
            if now - t0 > 0.5 and done > d0:
                rate = (done - d0) / (now - t0)
                label.append(f" · {rate:.0f} {unit}/s · ETA {_duration((total - done) / rate)}", "dim")
        self.query_one("#index-state", Static).update(label)

    def done_state(self, summary: str = "") -> None:
        """Indexing finished: full bar, state ``ready``."""
        self.state = "ready"
        self._phase_start = None
        bar = self.bar
        total = bar.total or 1
        bar.update(total=total, progress=total)
        label = Text("ready", "bold")
        if summary:
            label.append(f" {summary}", "dim")
        self.query_one("#index-state", Static).update(label)

    def _error_style(self) -> str:
        return f"bold {self.app.theme_variables.get('error', 'red')}"

    def show_state(self, state: str, message: str = "", *, error: bool = False) -> None:
        """A state without counts (error, cancelled, reindexing N changed files, no index yet)."""
        self.state = state
        self.message = message
        label = Text(state, self._error_style() if error else "bold")
        if error:
            self.add_class("-error")
        else:
            self.remove_class("-error")
        if message:
            label.append(f" {message}")
        self.query_one("#index-state", Static).update(label)


@dataclass
class StatusInfo:
    """What the status line shows."""

    mode: str = "hybrid"
    files: int = 0
    chunks: int = 0
    embedded: int = 0
    embedder: str = "none"
    degraded_reason: str | None = None
    last_indexed: str | None = None
    size: str | None = None
    took_ms: float | None = None
    results: int | None = None


class StatusLine(Static):
    """Mode, index size, embedder, degraded reason and time of the last reindex."""

    DEFAULT_CSS = """
    StatusLine { height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.info = StatusInfo()
        self.plain = ""

    def show(self, info: StatusInfo) -> None:
        """Re-render from ``info``."""
        self.info = info
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {info.mode} ", "reverse bold")
        if info.degraded_reason:
            error = self.app.theme_variables.get("error", "red")
            text.append(f"  degraded: {info.degraded_reason}", f"bold {error}")
        if info.results is not None:
            took = f" in {info.took_ms:.0f} ms" if info.took_ms is not None else ""
            text.append(f"  {info.results} result{'' if info.results == 1 else 's'}{took}")
        text.append(f"  {info.files} files · {info.chunks} chunks")
        if info.embedded:
            text.append(f" · {info.embedded} embedded")
        if info.size:
            text.append(f" · {info.size}")
        text.append(f"  embedder {info.embedder}", "dim")
        if info.last_indexed:
            text.append(f"  indexed {info.last_indexed}", "dim")
        self.plain = text.plain
        self.set_class(bool(info.degraded_reason), "-degraded")
        self.update(text)
