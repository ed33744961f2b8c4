"""This process's tenure as a workspace's host: the role it plays and the host lock behind it.

:class:`Tenure` is the one owner of the host lock (:mod:`aide_tui.host.lock`'s file): every take, the
lock a parent handed over (``aide-tui host``), a take-over from a background host asked to let go
(``serve``), the hand-over to a background host this process spawns (a one-shot ``search`` with a bulk of
vectors to compute), the check a host makes every few seconds, and the release. Its
:class:`~aide_tui.host.role.RoleMachine` says what the process is for the workspace meanwhile.

:class:`EngineHost` is the other half of hosting a shared store: the engine the indexing process
reaches (a Milvus Lite file's engine runs in the host, which gives the indexing process its address),
resolved once before the first run; reindex requests wait for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aide_tui.core.errors import IndexProblem
from aide_tui.core.paths import state_dir
from aide_tui.host.locations import LOCK_NAME
from aide_tui.host.lock import (
    LOCK_FD_ENV,
    AlreadyHosted,
    HostLockUnusable,
    acquire_host_lock,
    claim,
    host_pid,
    inherited_lock,
    keep_host_lock,
    release,
    try_host_lock,
)
from aide_tui.host.role import Role, RoleMachine

if TYPE_CHECKING:  # a one-shot command takes the lock without loading the live workspace or a client
    from aide_tui.core.config import Settings
    from aide_tui.core.live import LiveWorkspace

HANDOVER_WAIT = 15.0  # seconds serve waits for a background host to finish its batch and let go


class Tenure:
    """One workspace's host lock as this process holds it (or not), and the role it plays."""

    def __init__(self, root: Path, on_move: Callable[[Role, Role], None] | None = None) -> None:
        self.root = Path(root)
        self.roles = RoleMachine(on_move)
        self._fd: int | None = None
        self._state: Path | None = None  # the state folder whose lock file ``_fd`` holds
        self._lost: str | None = None  # why the lock went to another process
        self._handed = False  # the lock went to a background host this process started
        self._mutex = threading.Lock()  # the fields above
        self._check = threading.Lock()  # one check or release of the lock at a time

    @property
    def role(self) -> Role:
        return self.roles.role

    @property
    def holds(self) -> bool:
        """Whether this process holds the host lock now."""
        with self._mutex:
            return self._fd is not None and self._lost is None and not self._handed

    @property
    def state(self) -> Path | None:
        """The state folder of the lock this process took (None before)."""
        return self._state

    def holder(self) -> int | None:
        """The PID of the process hosting the workspace (0: held, unreadable), None when nobody does."""
        return host_pid(state_dir(self.root))

    # -- taking --------------------------------------------------------------------------------------

    def _took(self, fd: int | None, state: Path) -> bool:
        if fd is None:
            return False
        with self._mutex:
            self._fd, self._state, self._lost, self._handed = fd, state, None, False
        return True

    def take(self) -> bool:
        """Take the host lock when nobody holds it (and no host still answers on the socket); whether
        this process holds it now. HostLockUnusable when its file cannot be opened."""
        state = state_dir(self.root)
        return self._took(try_host_lock(state, root=self.root), state)

    def inherit(self) -> bool:
        """The lock a parent took for this process and handed over (``aide-tui host``), when it did."""
        return self._took(inherited_lock(), state_dir(self.root))

    def take_from_background(self, settings: Settings, state: Path) -> None:
        """The host lock for ``serve``: free, or given over by a background host asked to let go
        (``/release``); AlreadyHosted naming the process when another front end hosts the workspace."""
        from aide_tui.host.client import ServeUnavailable, connect

        try:
            self._took(acquire_host_lock(state, root=self.root), state)
            return
        except AlreadyHosted as exc:
            client = connect(self.root, settings, any_settings=True)
            if client is None:
                raise
            try:
                client.release()
            except ServeUnavailable:
                raise AlreadyHosted(host_pid(state) or exc.pid) from None
            finally:
                client.close()
        self._took(acquire_host_lock(state, wait=HANDOVER_WAIT, root=self.root), state)

    # -- holding -------------------------------------------------------------------------------------

    def keep(self) -> str | None:
        """Check the lock against its file: None while this process still holds it (a removed or
        replaced file nobody else holds is taken back), else why it went to another process (said once
        and kept; the descriptor stays open until :meth:`release`)."""
        with self._check:
            with self._mutex:
                fd, state, lost = self._fd, self._state, self._lost
            if lost is not None:
                return lost
            if fd is None or state is None or self._handed:
                return None
            try:
                kept = keep_host_lock(fd, state, self.root)
                pid = host_pid(state) if kept is None else None
                why = (
                    f"was removed or replaced, and {f'PID {pid}' if pid else 'another process'} holds it now"
                )
            except HostLockUnusable as exc:
                kept, why = None, f"was removed or replaced, and cannot be taken back ({exc.strerror})"
            with self._mutex:
                if kept is None:
                    self._lost = (
                        f"the host lock {state / LOCK_NAME} {why}: no longer hosting this workspace here"
                    )
                    return self._lost
                if self._fd == fd:
                    self._fd = kept
            return None

    def hand_to_background_host(self, settings: Settings) -> None:
        """Start a detached, low-priority ``aide-tui host`` that takes over the lock this process holds
        (so exactly one starts: the child inherits the locked file) and computes the bulk of the missing
        vectors; its messages go to ``index.log``. OSError when it cannot start (the lock stays here)."""
        from aide_tui.core.index.service import child_env

        with self._mutex:
            fd, state = self._fd, self._state
        if fd is None or state is None:
            raise OSError("the host lock is not held here")
        env = child_env(settings)  # the settings travel in the environment, not on the command line
        env[LOCK_FD_ENV] = str(fd)
        cmd = [sys.executable, "-P", "-m", "aide_tui", "host", str(self.root), "--settings-json", "env"]
        try:
            log = os.open(state / "index.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            os.write(log, f"--- {stamp} background host for {self.root}\n".encode("utf-8", "surrogateescape"))
        except OSError:
            log = subprocess.DEVNULL
        try:
            host = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                    env=env, start_new_session=True, close_fds=True,
                                    pass_fds=(fd,))  # fmt: skip
            claim(fd, host.pid)  # the lock names its holder from now on, not this process about to exit
        finally:
            if log >= 0 and log != subprocess.DEVNULL:
                os.close(log)
        with self._mutex:
            self._handed = True
        self.roles.move(Role.HANDED_OVER)

    # -- letting go ----------------------------------------------------------------------------------

    def release(self) -> None:
        """Let the lock go: its file is removed while still held (the next front end to try takes over),
        unless it went to another process or to the background host this process started (then only
        this process's descriptor is closed)."""
        with self._check:
            with self._mutex:
                fd, state, theirs = self._fd, self._state, self._lost is not None or self._handed
                self._fd = None
            if fd is None:
                return
            if theirs or state is None:
                os.close(fd)
            else:
                release(fd, state)


class EngineHost:
    """A shared store's engine, hosted for the workspace's indexing process: the store's settings for
    that process (for a Lite file, the address of the engine this process starts) are resolved once,
    before the first run, which then carries whatever was asked meanwhile (a rebuild). The indexing
    process never starts before: it would open the Lite file itself and keep it. After a failed attempt
    the next request tries again (another process may have let the store go)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosted = False
        self._hosting = False
        self._tried = False
        self._queued_rebuild = False

    @property
    def ready(self) -> bool:
        """Whether the engine is hosted (reindex requests go to the indexing process)."""
        return self._hosted

    def open(self, live: LiveWorkspace) -> IndexProblem | None:
        """Host the engine for ``live``'s indexing process and send the first run; why the store cannot
        be opened, else None (also when it is hosted already, being hosted, or not to be indexed)."""
        with self._lock:
            if self._hosted or self._hosting or not live.index_enabled or live.closed:
                return None
            self._hosting = True
        try:
            settings = live.searcher.retriever.child_settings()
        except IndexProblem as exc:
            return exc
        finally:
            with self._lock:
                self._hosting, self._tried = False, True
        with self._lock:
            live.service.settings = settings
            self._hosted = True
            rebuild, self._queued_rebuild = self._queued_rebuild, False
        live.service.request(rebuild=rebuild, priority=live.priority())
        return None

    def hold(self, rebuild: bool) -> tuple[bool, bool]:
        """A reindex request before the engine is hosted is held (a rebuild remembered for the first
        run): (whether it is held, whether to try hosting again now: an attempt failed before)."""
        with self._lock:
            if self._hosted:
                return False, False
            self._queued_rebuild |= rebuild
            return True, self._tried and not self._hosting
