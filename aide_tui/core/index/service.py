"""Background indexing for long-running front ends (the app, ``serve``): requests in, typed events out.

Runs happen in one long-lived, low-priority indexing process (:mod:`aide_tui.core.index.worker`), started
on the first request and restarted if it dies: pure-Python chunking holds the GIL, and on two cores a
thread would stall the interface. A request while a run is in progress schedules exactly one more
run (coalescing) and asks the current one to yield: it stops embedding at the next batch, after
committing its vectors, so the new change is searchable at once and embedding resumes right after.
A rebuild request interrupts the current run. Every write is atomic, so cancelling or killing the
process leaves the last committed version intact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import IO

from aide_tui.core.config import Settings
from aide_tui.core.events import Cancelled, Done, Event, Failed, event_from_json

SETTINGS_ENV = "AIDE_CHILD_SETTINGS"  # resolved settings handed to a child process (``env`` on its argv)


def settings_json(settings: Settings) -> str:
    """Serialise resolved settings without the store token (which travels as AIDE_STORE_TOKEN)."""
    data = asdict(settings)
    data.get("store", {}).pop("token", None)
    return json.dumps(data)


def child_env(settings: Settings) -> dict[str, str]:
    """The environment of a child aide-tui process: this package first on its path, the resolved
    settings in ``SETTINGS_ENV`` and the store token in ``AIDE_STORE_TOKEN``. Settings never go on a
    command line: every user of the machine can read those (``ps``), an environment only its owner,
    and a URI may carry credentials."""
    env = dict(os.environ)
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_parent, env.get("PYTHONPATH")]))
    env[SETTINGS_ENV] = settings_json(settings)
    if settings.store.token:
        env["AIDE_STORE_TOKEN"] = settings.store.token
    return env


def settings_from_child_env(arg: str) -> dict[str, object]:
    """The settings mapping a parent handed over: ``arg`` is ``env`` (read ``SETTINGS_ENV``) or JSON."""
    data = json.loads(os.environ.get(SETTINGS_ENV, "") if arg == "env" else arg)
    if not isinstance(data, dict):
        raise ValueError("settings are not a JSON object")
    token = os.environ.get("AIDE_STORE_TOKEN")
    if token and isinstance(data.get("store"), dict):
        data["store"]["token"] = token
    return data


class IndexService:
    """Sends runs to the indexing process one at a time and reports their events to ``on_event``.

    Events are the typed events of :mod:`aide_tui.core.events`: Progress, Committed, Done, Failed and
    Cancelled (``on_event`` is called from the service's reader thread).
    """

    def __init__(self, root: Path, settings: Settings, on_event: Callable[[Event], None]) -> None:
        self.root = Path(root)
        self.settings = settings
        self.on_event = on_event
        self._lock = threading.Lock()
        self._pending = False
        self._pending_rebuild = False
        self._pending_priority: set[str] = set()
        self._pending_paths: set[str] | None = set()  # None: walk the whole tree
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._run_over = threading.Event()
        self._closed = False
        self.runs = 0  # finished runs, for tests and the status line
        self._asked = 0  # requests so far
        self._answered = 0  # requests whose run has ended (runs cover every request made before they start)
        self._ended = threading.Condition(self._lock)
        self._outcome: Event | None = None
        # asked before each run, in the service's thread: False skips it (a host that lost its lock)
        self.may_run: Callable[[], bool] | None = None

    @property
    def running(self) -> bool:
        """Whether a run is in progress or queued."""
        with self._lock:
            return self._thread is not None

    def request(
        self, rebuild: bool = False, priority: Iterable[str] = (), paths: Iterable[str] | None = None
    ) -> int:
        """Ask for a reindex; coalesces with a run in progress into at most one more.

        ``priority``: workspace-relative files whose missing vectors are computed first (what the
        user is looking at, what just changed), accumulated across coalesced requests. ``paths``:
        the files a watcher saw change (the run then looks at just those); None walks the tree.
        Returns the request's number (see :meth:`wait_for`).
        """
        with self._lock:
            if self._closed:
                return self._asked
            self._asked += 1
            asked = self._asked
            self._pending = True
            self._pending_rebuild |= rebuild
            self._pending_priority.update(priority)
            if paths is None or self._pending_paths is None:
                self._pending_paths = None
            else:
                self._pending_paths.update(paths)
            busy = self._thread is not None
            if not busy:
                self._thread = threading.Thread(target=self._loop, name="aide-index", daemon=True)
                self._thread.start()
        if busy:
            self._send({"op": "cancel" if rebuild else "yield"})
        return asked

    def wait_for(self, asked: int, timeout: float | None = None) -> Event | None:
        """Block until the run that covers request ``asked`` has ended; its outcome (Done, Failed,
        Cancelled), or None on timeout or close."""
        with self._ended:
            if not self._ended.wait_for(lambda: self._answered >= asked or self._closed, timeout):
                return None
            return self._outcome if self._answered >= asked else None

    def cancel(self) -> None:
        """Stop the current run (if any) and drop a queued one."""
        with self._lock:
            self._pending = False
            self._pending_rebuild = False
        self._send({"op": "cancel"})

    def close(self, timeout: float = 5.0) -> None:
        """Cancel, stop the indexing process and wait for the service thread."""
        with self._lock:
            self._closed = True
            self._pending = False
            thread, proc = self._thread, self._proc
            self._ended.notify_all()
        self._send({"op": "cancel"})
        self._send({"op": "exit"})
        self._run_over.set()
        if thread is not None:
            thread.join(timeout)
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:  # a long commit or cache save: ask it to end cleanly, so
                proc.terminate()  # its encoder pool's semaphores are released, before killing it
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no run is in progress or queued; True if idle."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    # -- the run loop ------------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._pending or self._closed:
                    self._thread = None
                    return
                self._pending = False
                covers = self._asked
                rebuild, self._pending_rebuild = self._pending_rebuild, False
                priority, self._pending_priority = sorted(self._pending_priority), set()
                paths, self._pending_paths = self._pending_paths, set()
            if self._run_once(rebuild, priority, None if paths is None or rebuild else sorted(paths)):
                self.runs += 1
            with self._ended:
                self._answered = covers
                self._ended.notify_all()

    def _run_once(self, rebuild: bool, priority: list[str], paths: list[str] | None = None) -> bool:
        """One run in the indexing process; True when it finished (Done)."""
        if self.may_run is not None and not self.may_run():
            self._outcome = Cancelled("not indexing: this process no longer hosts the workspace")
            return False
        proc = self._ensure_process()
        if proc is None:
            return False
        self._run_over.clear()
        self._outcome = None
        request = {"op": "run", "rebuild": rebuild, "priority": priority[:2000], "paths": paths}
        if not self._send(request):
            self._run_over.set()
        self._run_over.wait()
        return isinstance(self._outcome, Done)

    def _ensure_process(self) -> subprocess.Popen[str] | None:
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        if not self.root.is_dir():
            self.on_event(Failed(f"cannot index {self.root}: not a directory"))
            return None
        env = child_env(self.settings)
        # -P: the current folder must not shadow the installed package (it may be another checkout)
        cmd = [sys.executable, "-P", "-m", "aide_tui.core.index.worker", str(self.root), "env"]
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        except OSError as exc:
            self.on_event(Failed(f"cannot start the indexer: {exc}"))
            return None
        with self._lock:
            self._proc = proc
        threading.Thread(
            target=self._read_events, args=(proc,), name="aide-index-events", daemon=True
        ).start()
        return proc

    def _send(self, request: dict[str, object]) -> bool:
        with self._lock:
            proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return False
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def _read_events(self, proc: subprocess.Popen[str]) -> None:
        """Forward the indexing process's events; a run ends with Done, Failed or Cancelled."""
        assert proc.stdout is not None and proc.stderr is not None
        errors: list[str] = []
        threading.Thread(target=_drain, args=(proc.stderr, errors), daemon=True).start()
        for line in proc.stdout:
            try:
                event = event_from_json(json.loads(line))
            except ValueError:
                continue
            if event is None:
                continue
            self.on_event(event)
            if isinstance(event, Done | Failed | Cancelled):
                self._outcome = event
                self._run_over.set()
        code = proc.wait()
        if not self._run_over.is_set() and not self._closed:
            last = errors[-1] if errors else f"exit code {code}"
            self._outcome = Failed(f"indexing stopped: {last.removeprefix('aide-tui: ')}")
            self.on_event(self._outcome)
        self._run_over.set()


def _drain(stream: IO[str], into: list[str]) -> None:
    """Keep the last lines of the indexing process's stderr (for the error message)."""
    for line in stream:
        if line.strip():
            into.append(line.strip())
            del into[:-20]
