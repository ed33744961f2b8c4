"""The index line: what the indexer is doing, with a bar while it counts.

The app posts the live workspace's index events here (progress, committed, done, failed, cancelled,
opened, reloaded, reload failures, changed files, watch errors); the bar presents them and lets them
bubble on to the screen, which searches again when a version was opened or reloaded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from aide_tui.core.events import Progress
from aide_tui.core.textsafe import printable  # states and details quote file names and server replies
from aide_tui.tui.messages import (
    IndexCancelled,
    IndexCommitted,
    IndexDone,
    IndexFailed,
    IndexOpened,
    IndexProgress,
    IndexReloaded,
    IndexReloadFailed,
    WatchStopped,
    WorkspaceChanged,
)

BAR_MIN_WIDTH = 50  # narrower than this, the label keeps the whole line
RATE_WINDOW = 30.0  # seconds of progress an ETA is worked out from (a recent rate, not the run's)
RATE_MIN_SPAN = 0.5  # seconds of progress before a rate is shown at all
WRITING = "writing the index"  # what the indexer does once every file is read, until the commit


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    return f"{seconds // 60}:{seconds % 60:02d}"


def changes(root: Path, paths: Iterable[str]) -> tuple[int, int]:
    """(changed, removed) files among the watcher's ``paths``: a path that is gone was removed, except a
    folder (gone with the files in it, which are counted instead)."""
    paths = set(paths)
    folders = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    changed = removed = 0
    for p in paths:
        if (root / p).is_dir() or p in folders:
            continue
        if (root / p).exists():
            changed += 1
        else:
            removed += 1
    return changed, removed


class IndexBar(Widget):
    """``state detail`` on the left; while a phase counts (files or vectors), a bar on the right.

    ``shared``: the store is a shared (Milvus) collection, whose unreadable rows are not ours to
    rebuild; ``index_enabled``: this app indexes (a rebuild can be asked for); ``clock``: seconds, for
    rates and ETAs (None hides times)."""

    DEFAULT_CSS = """
    IndexBar { height: 1; }
    """

    @dataclass
    class RebuildWanted(Message):
        """The index on disk cannot be read: rebuild it (asked once per session)."""

        reason: str

    state: reactive[str] = reactive("starting")
    detail: reactive[str] = reactive("")
    done: reactive[int] = reactive(0)
    total: reactive[int] = reactive(0)  # 0: no bar (a state without counts)
    error: reactive[bool] = reactive(False)

    def __init__(
        self,
        root: Path,
        *,
        shared: bool = False,
        index_enabled: bool = True,
        clock: Callable[[], float] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.root = root
        self.shared = shared
        self.index_enabled = index_enabled
        self.clock = clock
        self.runs_done = 0  # indexing runs finished and loaded this session
        self._runs_finished = 0
        self._rebuilt_unreadable = False
        self._samples: deque[tuple[float, int]] = deque()  # (time, done): this phase, last RATE_WINDOW s
        self._phase = ""  # the phase the samples belong to
        self._since: float | None = None  # when the phase without counts (writing the index) began
        self._ticker: Timer | None = None  # redraws its elapsed time every second
        self._files = 0

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
        if state == "indexing" and total and done >= total:  # every file read: the commit runs
            self._writing(total, now)
            return
        detail = ""
        if total:
            detail = f"{done}/{total} {unit}"
        elif event.message:
            # "scanning workspace" after the state "scanning" would read "scanning scanning workspace"
            msg = event.message
            detail = msg[len(state) :].strip() if msg.lower().startswith(state.lower()) else msg
        if now is not None and total:
            detail += self._rate(state, now, done, total)
        self._stop_ticker()
        self.state, self.detail, self.error = state, detail, False
        self.done, self.total = done, total

    def _rate(self, phase: str, now: float, done: int, total: int) -> str:
        """`` · 27/s · ETA 1:05`` from the progress of the last :data:`RATE_WINDOW` seconds of this phase
        (a rate that changed, a machine that got busy, shows within that window); '' until it is known."""
        samples = self._samples
        if phase != self._phase or (samples and done < samples[-1][1]):
            samples.clear()
            self._phase = phase
        samples.append((now, done))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW:
            samples.popleft()
        t0, d0 = samples[0]
        if now - t0 < RATE_MIN_SPAN or done <= d0:
            return ""
        rate = (done - d0) / (now - t0)
        return f" · {rate:.0f}/s · ETA {_duration((total - done) / rate)}"

    def _writing(self, files: int, now: float | None) -> None:
        """Every file is read and chunked: the index is written (BM25 rows, the symbol graph, the
        segment) before any result; say so, with the time it has taken, instead of "ETA 0:00"."""
        if self.state != WRITING:
            self._since = now
            self._samples.clear()
            self._phase = WRITING
        self.state, self.error = WRITING, False
        self.done = self.total = 0
        self._files = files
        self._show_writing()
        if now is not None and self._ticker is None and self.clock is not None:
            self._ticker = self.set_interval(1.0, self._show_writing)

    def _show_writing(self) -> None:
        if self.state != WRITING:
            self._stop_ticker()
            return
        took = ""
        if self._since is not None and self.clock is not None:
            took = f" · {_duration(self.clock() - self._since)}"
        self.detail = f"of {self._files} files: chunks, BM25 rows, symbol graph{took}"

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def set_state(self, state: str, detail: str = "", *, error: bool = False) -> None:
        """A state without counts (ready, reindexing N changed files, error, cancelled): no bar."""
        if state != self.state:
            self._samples.clear()
            self._phase = ""
        self._stop_ticker()
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

    # -- the live workspace's events -----------------------------------------------------------------

    @on(IndexOpened)
    def _opened(self, message: IndexOpened) -> None:
        ev = message.event
        if ev.missing:
            self.set_state("no index yet", "building…" if self.index_enabled else "")
        elif ev.error and self.shared and not ev.corrupt:  # unreachable or busy: a rebuild would not help
            self.set_state("error", ev.error, error=True)
        elif ev.error:
            self._rebuild_unreadable(ev.error)
        elif self.total == 0 and self.state.startswith("opening"):
            self.set_state("ready")

    @on(IndexProgress)
    def _progress(self, message: IndexProgress) -> None:
        self.progress(message.event, self.clock() if self.clock is not None else None)

    @on(IndexCommitted)
    def _committed(self, message: IndexCommitted) -> None:
        """The index written after every file was read: searchable now (vectors may follow)."""
        if self.state == WRITING:
            ev = message.event
            self.set_state("indexed", f"{ev.files} files, {ev.chunks} chunks: searchable")

    @on(IndexDone)
    def _done(self, message: IndexDone) -> None:
        self._runs_finished += 1
        self.set_state("ready", f"in {message.event.seconds:.1f}s" if self.clock is not None else "")

    @on(IndexFailed)
    def _failed(self, message: IndexFailed) -> None:
        self.set_state("error", message.event.message, error=True)

    @on(IndexCancelled)
    def _cancelled(self, message: IndexCancelled) -> None:
        self.set_state("cancelled", message.event.message)

    @on(IndexReloaded)
    def _reloaded(self, message: IndexReloaded) -> None:
        if self.state in ("no index yet", "opening index…"):
            self.set_state("ready")
        self.runs_done = self._runs_finished

    @on(IndexReloadFailed)
    def _reload_failed(self, message: IndexReloadFailed) -> None:
        reason = f"cannot load the new index: {message.event.message}"
        if self.shared:  # a shared store's rows are not ours to drop on a failed read
            self.set_state("error", reason, error=True)
        else:
            self._rebuild_unreadable(reason)

    @on(WorkspaceChanged)
    def _changed(self, message: WorkspaceChanged) -> None:
        changed, removed = changes(self.root, message.event.paths)
        said = [f"{changed} changed"] if changed else []
        said += [f"{removed} removed"] if removed else []
        self.set_state("reindexing", ", ".join(said) or "changed files")

    @on(WatchStopped)
    def _watch_stopped(self, message: WatchStopped) -> None:
        self.set_state("watch error", message.event.message, error=True)

    def _rebuild_unreadable(self, reason: str) -> None:
        """An index on disk that cannot be read is rebuilt once per session (the reader's message
        promises it); after that, or without indexing, the error stays on screen."""
        if self.index_enabled and not self._rebuilt_unreadable:
            self._rebuilt_unreadable = True
            self.set_state("rebuilding", reason.removesuffix("; rebuilding"))
            self.post_message(self.RebuildWanted(reason))
            return
        self.set_state("error", reason, error=True)
