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


class StatusLine(Widget):
    """Mode, result count, what the index holds, embedder, degraded reason, time of the last commit."""

    DEFAULT_CSS = """
    StatusLine { height: 1; }
    """

    mode: reactive[str] = reactive("hybrid")  # the mode as shown, with the scope
    results: reactive[int | None] = reactive(None)
    took_ms: reactive[float | None] = reactive(None)
    files: reactive[int] = reactive(0)
    chunks: reactive[int] = reactive(0)
    embedded: reactive[int] = reactive(0)
    vectors_missing: reactive[int] = reactive(0)
    embedder: reactive[str] = reactive("none")
    degraded_reason: reactive[str | None] = reactive(None)  # the first of the three below
    query_error: reactive[str | None] = reactive(None)  # the query itself is wrong (an unknown lang:)
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
        self.size_bytes = st.size_bytes
        self.last_indexed = str(st.last_indexed)[11:19] if st.last_indexed else None
        if self._embedder_id is None:
            self.embedder = st.embedder if st.embedder != "none" else self.configured_embedder
        self._index_degraded = st.degraded_reason
        self._update_degraded()

    def show_response(self, resp: SearchResponse | None) -> None:
        """The answer on screen (None: the query is empty)."""
        self.query_error = resp.error if resp is not None else None
        self.results = len(resp.results) if resp is not None else None
        self.took_ms = resp.took_ms if resp is not None else None
        self._answer_degraded = resp.degraded_reason if resp is not None and resp.degraded else None
        self._update_degraded()

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
