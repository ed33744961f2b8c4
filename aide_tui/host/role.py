"""The roles a process plays for one workspace, and the moves allowed between them.

At most one process hosts a workspace (it holds the host lock: it indexes, watches and answers on the
socket); every other front end on it attaches, and a one-shot command (``search``, ``defs``, ``ask``)
holds the lock only for its quick update. docs/architecture.md draws this machine.

    STARTING ──► WARMING ──► HOSTING ──► LOCK_LOST ──► ATTACHED / WAITING / WARMING  (app, mcp)
        │           │           └──────► ROOT_LOST
        │           └──────────────────► LOCK_LOST, ROOT_LOST
        ├──► ATTACHED ──► TAKING_OVER ──► WARMING / ATTACHED / WAITING
        ├──► WAITING  ──► ATTACHED / WARMING / UPDATING / READ_ONLY
        ├──► UPDATING ──► HANDED_OVER                                  (one-shot commands)
        └──► READ_ONLY
    any role ──► CLOSED
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum


class Role(Enum):
    """What this process is for a workspace."""

    STARTING = "starting"  # not decided yet
    WARMING = "warming"  # holds the host lock; loading the index and the encoder, the socket not open yet
    HOSTING = "hosting"  # holds the host lock; indexes, watches and answers on the socket
    UPDATING = "updating"  # a one-shot command holds the host lock for its quick update
    HANDED_OVER = "handed over"  # the lock went to the background host this process started
    ATTACHED = "attached"  # another process hosts: this one follows its events and searches its commits
    WAITING = "waiting"  # a host holds the lock but does not answer (yet): searching what is on disk
    TAKING_OVER = "taking over"  # the host's event stream ended: host here, or attach to whoever does
    READ_ONLY = "read-only"  # never indexes: a read-only store, indexing off, or a lock file it cannot open
    LOCK_LOST = "lock lost"  # another process took the host lock: no longer hosting here
    ROOT_LOST = "root lost"  # the workspace folder was moved or deleted: no longer hosting it
    CLOSED = "closed"  # stopped; the lock, if held, released


HOLDS_LOCK = frozenset({Role.WARMING, Role.HOSTING, Role.UPDATING})

TRANSITIONS: dict[Role, frozenset[Role]] = {
    Role.STARTING: frozenset(
        {Role.WARMING, Role.UPDATING, Role.ATTACHED, Role.WAITING, Role.READ_ONLY, Role.CLOSED}
    ),
    Role.WARMING: frozenset({Role.HOSTING, Role.LOCK_LOST, Role.ROOT_LOST, Role.CLOSED}),
    Role.HOSTING: frozenset({Role.LOCK_LOST, Role.ROOT_LOST, Role.CLOSED}),
    Role.UPDATING: frozenset({Role.HANDED_OVER, Role.CLOSED}),
    Role.HANDED_OVER: frozenset({Role.CLOSED}),
    Role.ATTACHED: frozenset({Role.TAKING_OVER, Role.CLOSED}),
    Role.WAITING: frozenset({Role.ATTACHED, Role.WARMING, Role.UPDATING, Role.READ_ONLY, Role.CLOSED}),
    Role.TAKING_OVER: frozenset({Role.WARMING, Role.ATTACHED, Role.WAITING, Role.CLOSED}),
    Role.READ_ONLY: frozenset({Role.CLOSED}),
    Role.LOCK_LOST: frozenset({Role.WARMING, Role.ATTACHED, Role.WAITING, Role.CLOSED}),
    Role.ROOT_LOST: frozenset({Role.CLOSED}),
    Role.CLOSED: frozenset(),
}


class IllegalMove(RuntimeError):
    """A move the machine does not allow (a defect in the caller, never the user's doing)."""


class RoleMachine:
    """The current role, moved only along :data:`TRANSITIONS` (thread-safe); ``on_move(old, new)`` is
    called after each move, outside the machine's lock."""

    def __init__(self, on_move: Callable[[Role, Role], None] | None = None) -> None:
        self._role = Role.STARTING
        self._lock = threading.Lock()
        self._on_move = on_move

    @property
    def role(self) -> Role:
        return self._role

    def move(self, to: Role) -> Role:
        """Move to ``to`` and return the role left; IllegalMove when ``to`` cannot follow the role now."""
        with self._lock:
            old = self._role
            if to not in TRANSITIONS[old]:
                raise IllegalMove(f"{old.value} -> {to.value}")
            self._role = to
        if self._on_move is not None:
            self._on_move(old, to)
        return old

    def move_from(self, allowed: frozenset[Role] | set[Role], to: Role) -> bool:
        """Move to ``to`` only when the role now is one of ``allowed`` (atomically); whether it moved.
        A closed machine stays closed: a background thread that lost a race with close() does nothing."""
        with self._lock:
            old = self._role
            if old not in allowed:
                return False
            if to not in TRANSITIONS[old]:
                raise IllegalMove(f"{old.value} -> {to.value}")
            self._role = to
        if self._on_move is not None:
            self._on_move(old, to)
        return True
