"""Background indexing for long-running front ends (the TUI).

Each run is an ``aide-tui index --progress`` subprocess: pure-Python chunking holds the GIL, and on
two cores a thread would stall the UI. Progress arrives as JSON lines. A reindex requested while
one runs schedules exactly one more run (coalescing); cancelling terminates the subprocess, which
leaves the previous index intact because every write is atomic.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from pathlib import Path

from aide_tui.core.config import Settings
from aide_tui.core.events import Cancelled, Done, Event, Failed, event_from_json


def settings_json(settings: Settings) -> str:
    """Serialise resolved settings for the indexing subprocess."""
    return json.dumps(asdict(settings))


class IndexService:
    """Runs indexing subprocesses one at a time and reports their events to ``on_event``.

    Events are the typed events of :mod:`aide_tui.core.events`: Progress, Committed, Done, Failed and
    Cancelled.
    """

    def __init__(self, root: Path, settings: Settings, on_event: Callable[[Event], None]) -> None:
        self.root = Path(root)
        self.settings = settings
        self.on_event = on_event
        self._lock = threading.Lock()
        self._pending = False
        self._pending_rebuild = False
        self._pending_priority: set[str] = set()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._closed = False
        self.runs = 0  # completed subprocess runs, for tests and the status line

    @property
    def running(self) -> bool:
        """Whether a run is in progress or queued."""
        with self._lock:
            return self._thread is not None

    def request(self, rebuild: bool = False, priority: Iterable[str] = ()) -> None:
        """Ask for a reindex; coalesces with a run in progress into at most one more.

        ``priority``: workspace-relative files whose missing vectors are computed first (what the
        user is looking at), accumulated across coalesced requests.
        """
        with self._lock:
            if self._closed:
                return
            self._pending = True
            self._pending_rebuild |= rebuild
            self._pending_priority.update(priority)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="aide-index", daemon=True)
                self._thread.start()

    def cancel(self) -> None:
        """Stop the current run (if any) and drop a queued one."""
        with self._lock:
            self._pending = False
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    def close(self, timeout: float = 5.0) -> None:
        """Cancel and wait for the worker thread."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self.cancel()
        if thread is not None:
            thread.join(timeout)
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no run is in progress or queued; True if idle."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._pending or self._closed:
                    self._thread = None
                    return
                self._pending = False
                rebuild, self._pending_rebuild = self._pending_rebuild, False
                priority, self._pending_priority = sorted(self._pending_priority), set()
            self._run_once(rebuild, priority)
            self.runs += 1

    def _command(self, rebuild: bool, priority: list[str] | None = None) -> list[str]:
        cmd = [sys.executable, "-m", "aide_tui", "index", str(self.root), "--progress"]
        # one embedding process unless configured: the UI process needs the other core
        emb = replace(self.settings.embedding, workers=self.settings.embedding.workers or 1)
        settings = replace(self.settings, embedding=emb)
        cmd += ["--settings-json", settings_json(settings)]
        if priority:
            cmd += ["--priority-json", json.dumps(priority[:500])]
        return cmd + (["--rebuild"] if rebuild else [])

    def _run_once(self, rebuild: bool, priority: list[str] | None = None) -> None:
        env = dict(os.environ)
        pkg_parent = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_parent, env.get("PYTHONPATH")]))
        try:
            proc = subprocess.Popen(
                self._command(rebuild, priority),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                env=env,
            )
        except OSError as exc:
            self.on_event(Failed(f"cannot start the indexer: {exc}"))
            return
        with self._lock:
            self._proc = proc
        got_done = False
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            try:
                event = event_from_json(json.loads(line))
            except ValueError:
                continue
            if event is None:
                continue
            got_done |= isinstance(event, Done)
            self.on_event(event)
        err = proc.stderr.read().strip()
        code = proc.wait()
        with self._lock:
            self._proc = None
        if code in (-signal.SIGTERM, 130, 143):
            self.on_event(Cancelled())
        elif code != 0 or not got_done:
            last = err.splitlines()[-1] if err else f"exit code {code}"
            self.on_event(Failed(f"indexing failed: {last.removeprefix('aide-tui: ')}"))
