"""The status line: search mode and scope, result count, what the index holds, the embedder, and why
results are degraded.

The screen hands it each answer and index status; the app posts the query embedder's readiness here.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.reactive import reactive
from textual.widget import Widget

from aide_tui.core.search.response import SearchResponse
from aide_tui.core.status import IndexStatus
from aide_tui.core.textsafe import printable
from aide_tui.tui.messages import EmbedderLoaded


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


KEEP = 2  # parts of this priority or more important are never dropped


class StatusLine(Widget):
    """Mode, result count, what the index holds, embedder, degraded reason, time of the last commit."""

    DEFAULT_CSS = """
    StatusLine { height: 1; }
    """

    mode: reactive[str] = reactive("hybrid")  # the search mode (bound to the screen's)
    everywhere: reactive[bool] = reactive(False)  # every workspace of a shared collection (the screen's)
    results: reactive[int | None] = reactive(None)
    took_ms: reactive[float | None] = reactive(None)
    files: reactive[int] = reactive(0)
    chunks: reactive[int] = reactive(0)
    embedded: reactive[int] = reactive(0)
    vectors_missing: reactive[int] = reactive(0)
    static_missing: reactive[int] = reactive(0)  # chunks without a static-tier vector
    static: reactive[str] = reactive("")  # the index's static tier ("" when it has none)
    embedder: reactive[str] = reactive("none")
    degraded_reason: reactive[str | None] = reactive(None)  # the first of the three below
    query_error: reactive[str | None] = reactive(None)  # the query itself is wrong (an unknown lang:)
    places: reactive[str | None] = reactive(None)  # the list shows places, not results ("3 definitions of x")
    said: reactive[str | None] = reactive(None)  # why the last command did nothing (until the next answer)
    corrected: reactive[str | None] = reactive(None)  # the query with its typos fixed, as searched
    read_as: reactive[str | None] = reactive(None)  # what a question about one name was answered as
    last_indexed: reactive[str | None] = reactive(None)
    size_bytes: reactive[int] = reactive(0)
    show_timing: reactive[bool] = reactive(True)

    def __init__(
        self, configured_embedder: str = "none", *, show_timing: bool = True, id: str | None = None
    ) -> None:
        """``configured_embedder``: the ``[embedding] backend`` (shown until the index or the loaded
        encoder names it)."""
        super().__init__(id=id)
        self.configured_embedder = configured_embedder
        self.set_reactive(StatusLine.embedder, configured_embedder)
        self.set_reactive(StatusLine.show_timing, show_timing)
        self.embedder_ready = False  # the query encoder loaded
        self.embedder_error: str | None = None  # why it did not
        self._embedder_id: str | None = None
        self._answer_degraded: str | None = None
        self._index_degraded: str | None = None

    def watch_degraded_reason(self, reason: str | None) -> None:
        self.set_class(bool(reason), "-degraded")

    def _update_degraded(self) -> None:
        self.degraded_reason = self.embedder_error or self._answer_degraded or self._index_degraded

    def show_index(self, st: IndexStatus) -> None:
        """What the loaded index version holds."""
        self.files, self.chunks, self.embedded = st.files, st.chunks, st.embedded
        self.vectors_missing = st.vectors_missing
        self.static_missing, self.static = st.static_missing, st.static
        self.size_bytes = st.size_bytes
        self.last_indexed = str(st.last_indexed)[11:19] if st.last_indexed else None
        if self._embedder_id is None:
            self.embedder = self._embedder_of(st)
        self._index_degraded = st.degraded_reason
        self._update_degraded()

    def _embedder_of(self, st: IndexStatus) -> str:
        """The encoder this app's queries use: the configured one when it is ``none`` or the static
        tier (an index may also hold another encoder's vectors, which this app leaves unread),
        otherwise the one the index was embedded with."""
        if self.configured_embedder == "static":
            return st.static or "static"
        if self.configured_embedder == "none" or st.embedder == "none":
            return self.configured_embedder
        return st.embedder

    def show_response(self, resp: SearchResponse | None) -> None:
        """The answer on screen (None: the query is empty)."""
        self.query_error = resp.error if resp is not None else None
        self.places = self.said = None
        self.results = len(resp.results) if resp is not None else None
        self.took_ms = resp.took_ms if resp is not None else None
        self.corrected = resp.corrected if resp is not None else None
        self.read_as = resp.read_as if resp is not None else None
        self._answer_degraded = resp.degraded_reason if resp is not None and resp.degraded else None
        self._update_degraded()

    def show_places(self, summary: str) -> None:
        """The list shows definitions or references: ``summary`` says which, in place of the count."""
        self.places, self.said = summary, None

    def say(self, reason: str | None) -> None:
        """Why a command did nothing (no name on the line, no definition...); None: nothing to say."""
        self.said = reason

    def snapshot(self) -> tuple[int | None, float | None, str | None]:
        """What the line says about the list (restored by :meth:`restore` when going back)."""
        return (self.results, self.took_ms, self.places)

    def restore(self, saved: tuple[int | None, float | None, str | None]) -> None:
        self.results, self.took_ms, self.places = saved
        self.said = None

    @on(EmbedderLoaded)
    def _embedder_loaded(self, message: EmbedderLoaded) -> None:
        ev = message.event
        self.embedder_ready = ev.error is None and ev.embedder_id is not None
        self.embedder_error = ev.error
        self._embedder_id = ev.embedder_id
        if ev.embedder_id:
            self.embedder = ev.embedder_id
        self._update_degraded()

    @property
    def plain(self) -> str:
        return self.render().plain

    def parts(self) -> list[tuple[int, str, str]]:
        """The line's parts in order, as (priority, text, style); 0 is kept longest. Each count has its
        own unit; vectors are counted only when this app embeds."""
        error = self.app.theme_variables.get("error", "red")
        out: list[tuple[int, str, str]] = []
        warning = self.app.theme_variables.get("warning", "yellow")
        if self.said:
            out.append((1, printable(self.said), f"bold {warning}"))
        if self.query_error:
            out.append((1, printable(self.query_error), f"bold {error}"))
        if self.degraded_reason:
            out.append((2, f"degraded: {printable(self.degraded_reason)}", f"bold {error}"))
        if self.places:
            out.append((0, printable(self.places), "bold"))
        elif self.results is not None:
            took = f" in {self.took_ms:.0f} ms" if self.took_ms is not None and self.show_timing else ""
            out.append((0, f"{self.results} result{'' if self.results == 1 else 's'}{took}", ""))
            if self.corrected:
                out.append((1, f"searched for {printable(self.corrected)}", f"italic {warning}"))
            elif self.read_as:
                out.append((1, f"read as {printable(self.read_as)}", "italic"))
        out.append((5, f"{self.files} files", ""))
        out.append((3, f"{self.chunks} chunks", ""))
        if self.static and self.static_missing:
            out.append((4, f"{self.static_missing} chunks to go (static tier)", ""))
        elif self.static and self.vectors_missing and self.configured_embedder not in ("none", "static"):
            out.append((5, "static tier done", ""))  # every chunk is searchable by meaning already
        if self.configured_embedder not in ("none", "static") and self.vectors_missing:
            out.append((4, f"{self.vectors_missing} vectors to go", ""))
        if self.size_bytes and self.show_timing:
            out.append((7, human_size(self.size_bytes), ""))
        out.append((6, f"embedder {printable(self.embedder)}", "dim"))
        if self.last_indexed and self.show_timing:
            out.append((8, f"indexed {self.last_indexed}", "dim"))
        return out

    def render(self) -> Text:
        """Mode first, then the parts that fit, whole: the least important go first when narrow. What
        the index holds reads as one group (``5 files · 962 chunks · 1.6 MB``)."""
        width = self.content_region.width or self.size.width or 10_000
        mode = f" {self.mode} · all workspaces " if self.everywhere else f" {self.mode} "
        parts = self.parts()

        def seps() -> list[str]:
            return ["  " if i == 0 or not (_counts(t) and _counts(parts[i - 1][1])) else " · "
                    for i, (_, t, _) in enumerate(parts)]  # fmt: skip

        while (
            len(mode) + sum(len(t) + len(sep) for (_, t, _), sep in zip(parts, seps(), strict=True)) > width
        ):
            least = max(parts, key=lambda p: p[0], default=None)
            if least is None or least[0] <= KEEP:
                break  # the query's error, why results are degraded and the count stay (the end is cut)
            parts.remove(least)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(mode, "reverse bold")
        for (_, part, style), sep in zip(parts, seps(), strict=True):
            text.append(f"{sep}{part}", style)
        return text


def _counts(part: str) -> bool:
    """Whether a part says what the index holds (files, chunks, vectors, size)."""
    units = (" files", " chunks", " vectors to go", " (static tier)", "tier done", "B")
    return part.endswith(units) and (part[:1].isdigit() or part == "static tier done")
