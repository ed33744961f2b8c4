"""The consoles the host's one-shot functions show their work on: stderr, or ``index --progress``'s JSON
event lines on stdout."""

from __future__ import annotations

import json
import sys

from aide_tui.cli.common import err
from aide_tui.core.events import Done, Event, Progress, event_to_json
from aide_tui.core.textsafe import printable


class StderrConsole:
    """The one-shot functions' lines on stderr: each message one ``aide-tui:`` line; on a terminal an
    indexing run's progress and a wait are one line kept up to date (file names in it escaped)."""

    @property
    def interactive(self) -> bool:
        return sys.stderr.isatty()

    def say(self, message: str) -> None:
        err(message)

    def progress(self, event: Event) -> None:
        if self.interactive and isinstance(event, Progress):
            self._line(_progress_line(event))

    def finished(self, report: Done) -> None:
        if self.interactive:
            print("\r\x1b[K", end="", file=sys.stderr)
        for msg in report.messages:
            err(msg)

    def waiting(self, line: str | None) -> None:
        if line is None:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
        else:
            self._line(line)

    @staticmethod
    def _line(line: str) -> None:
        print(f"\r\x1b[K{printable(line)}", end="", file=sys.stderr, flush=True)


class JsonProgress(StderrConsole):
    """``index --progress``: every event as a JSON line on stdout (the last one, the run's summary, carries
    its messages), nothing on stderr about the run."""

    @property
    def interactive(self) -> bool:
        return False

    def progress(self, event: Event) -> None:
        print(json.dumps(event_to_json(event)), flush=True)

    def finished(self, report: Done) -> None:
        pass


def _progress_line(p: Progress) -> str:
    """What a terminal shows of an indexing run's progress."""
    if p.state == "distilling":
        return p.message
    if p.state == "embedding" and p.vectors_total:
        return f"embedding {p.vectors_done}/{p.vectors_total} vectors"
    if p.state == "indexing" and p.files_total and p.files_done >= p.files_total:
        return f"writing the index of {p.files_total} files"  # the last phase, seconds on a big tree
    if p.files_total:
        return f"{p.state} {p.files_done}/{p.files_total} files"
    return f"{p.state} {p.message}".strip()
