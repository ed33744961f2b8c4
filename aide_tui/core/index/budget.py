"""A machine-wide, fair budget of bulk embedding: at most ``index.max_bulk_jobs`` per user at once.

Each workspace's host embeds in its own processes; four fresh workspaces searched at once would start
eight CPU-bound encoders on two cores. A bulk embedding job (more than :data:`BULK_PIECES` missing
vectors) first takes one of N slots: flock-ed files in the user's private cache folder
(``$XDG_CACHE_HOME/aide-tui/slots``), shared by every workspace. Lexical indexing and an edit's handful
of vectors never queue. A dead process's slot and place in the queue free themselves (the kernel drops
its flocks).

**Fair queue: first come, first served, in turns.** A job that finds no free slot takes a ticket
(``queue/<arrival>-<pid>.wait``, flock-ed while it waits) and gets a slot only when no older ticket is
waiting. A job holding a slot gives it up after ``index.bulk_turn_seconds`` of embedding *when somebody
waits*, and queues again behind them; alone, it keeps the slot to the end. Turns, rather than
"smallest job first", because they need no estimate to be right and starve nobody: a small workspace
waits at most one turn per job ahead of it and then usually finishes in its first turn, a big one
still gets every other turn. A job that gives way to newer work of its own (an edit) while queued keeps
its place for its next run.

The wait has an ETA: each holder records in its slot file how many vectors it has left and its rate,
so a waiter adds up, for the holders and the tickets ahead, the smaller of a turn and their remaining
work at the holders' rate.

A budget we cannot keep must not stop indexing: a slot file planted by someone else (another user's
file, a symlink, a FIFO, a folder) is never followed nor opened blocking; the job uses the slot's
alternative file (``bulk-N.alt.lock``, the same for every job, so the budget still holds) or, when
that is unusable too, embeds without a slot, and says so in a warning.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aide_tui.core.paths import private_dir, trusted_dir, user_cache_dir

BULK_PIECES = 64  # missing vectors from which embedding is a bulk job
POLL = 0.5  # seconds between looks at the slots while queued
TELL_EVERY = 15.0  # seconds between two wait messages when nothing but the ETA changed
NOTE_EVERY = 2.0  # seconds between two updates of a holder's slot file
_TICKET = re.compile(r"(\d{20})-(\d+)\.wait")
_OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
_places: dict[str, int] = {}  # workspace -> arrival (ns) kept while it gave way to its own newer work


def slots_dir() -> Path:
    return user_cache_dir() / "slots"


class Unusable(OSError):
    """A slot or ticket file that is not a regular file of ours (planted, or a folder, FIFO, link)."""


def _describe(exc: OSError) -> str:
    if isinstance(exc, Unusable):
        return str(exc)
    return {
        errno.ELOOP: "a symlink, not followed",
        errno.EISDIR: "a folder",
        errno.EACCES: "not ours (permission denied)",
        errno.EPERM: "not ours (permission denied)",
        errno.ENXIO: "a FIFO or socket",
    }.get(exc.errno or 0, exc.strerror or str(exc))


def _open_own(path: Path, flags: int) -> int:
    """An fd of ``path`` if it is a regular file this user owns; never follows a final symlink nor
    blocks on a FIFO. Raises OSError (:class:`Unusable` for a file of the wrong kind or owner)."""
    fd = os.open(path, flags | _OPEN, 0o600)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unusable("not a regular file (a FIFO, socket or device)")
        if st.st_uid != os.geteuid():
            raise Unusable(f"owned by another user (uid {st.st_uid})")
        if st.st_nlink != 1:
            raise Unusable("a hard link")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_note(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_note(fd: int, note: dict[str, object]) -> None:
    data = json.dumps(note).encode()
    with contextlib.suppress(OSError):
        os.pwrite(fd, data.ljust(256), 0)  # padded: a reader never sees an old tail after a shorter note
        os.ftruncate(fd, max(len(data), 256))


def _num(note: dict[str, object], key: str) -> float:
    v = note.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


@dataclass
class BulkJob:
    """What a job asks the budget for: its workspace (shown to the others), its size, the settings."""

    workspace: str
    pieces: int
    jobs: int = 1
    turn_s: float = 60.0


@dataclass
class Wait:
    """What a queued job waits for: the workspaces embedding now, how many tickets are ahead of it,
    and roughly how long until its turn (None: no holder has a rate yet)."""

    holders: list[str] = field(default_factory=list)
    ahead: int = 0
    eta_s: float | None = None
    left: int = 0  # vectors the holders have left

    def message(self, jobs: int, turn_s: float) -> str:
        names = ", ".join(self.holders) or "another workspace"
        who = f"{names}: {self.left:,} vectors left" if self.holders and self.left else names
        queue = f", {self.ahead} more ahead in the queue" if self.ahead else ""
        when = "ETA unknown until it reports a rate" if self.eta_s is None else "your turn in about "
        when += "" if self.eta_s is None else _dur(self.eta_s)
        return (  # the ETA first: a narrow status line cuts the end
            f"{when}: waiting for another workspace's embedding ({who}){queue} "
            f"(index.max_bulk_jobs = {jobs}, turns of {turn_s:.0f} s)"
        )


def _dur(seconds: float) -> str:
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class _Board:
    """The slot folder as one job sees it: which slot files to use, the holders, the queue."""

    def __init__(self, folder: Path, job: BulkJob, warn: Callable[[str], None]) -> None:
        self.folder = folder
        self.queue = folder / "queue"
        self.job = job
        self.warn = warn
        self.told: set[str] = set()

    def _unusable(self, path: Path, exc: OSError, then: str) -> None:
        if str(path) not in self.told:
            self.told.add(str(path))
            self.warn(f"bulk embedding slot {path} is unusable ({_describe(exc)}): {then}")

    def slot_paths(self, n: int) -> list[Path]:
        return [self.folder / f"bulk-{n}.lock", self.folder / f"bulk-{n}.alt.lock"]

    def try_slot(self, n: int) -> int | None:
        """An fd holding slot ``n`` (its file or, when that is unusable, its alternative); None when
        another job holds it. Raises Unusable when neither file can be used."""
        primary, alt = self.slot_paths(n)
        for path in (primary, alt):
            try:
                fd = _open_own(path, os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                then = f"using {alt.name}" if path == primary else "embedding without this slot"
                self._unusable(path, exc, then)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return None
            return fd
        raise Unusable(f"slot {n} has no usable file")

    def holders(self) -> list[dict[str, object]]:
        """The notes of the jobs holding a slot now."""
        out: list[dict[str, object]] = []
        for n in range(max(1, self.job.jobs)):
            for path in self.slot_paths(n):
                try:
                    fd = _open_own(path, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    out.append(_read_note(fd))  # held
                finally:
                    os.close(fd)  # a shared lock we got goes with the fd
        return out

    def tickets(self) -> list[tuple[int, dict[str, object]]]:
        """Live tickets in arrival order, as (arrival, note); a dead waiter's ticket is removed."""
        try:
            names = os.listdir(self.queue)
        except OSError:
            return []
        out: list[tuple[int, dict[str, object]]] = []
        for name in sorted(names):
            m = _TICKET.fullmatch(name)
            if m is None:
                continue
            try:
                fd = _open_own(self.queue / name, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                out.append((int(m.group(1)), _read_note(fd)))  # its waiter holds it
            else:
                with contextlib.suppress(OSError):
                    os.unlink(self.queue / name)  # its waiter is gone
            finally:
                os.close(fd)
        return out


class Turn:
    """A job's hold on the budget: ``over()`` says when to give the slot up (a turn has passed and
    somebody waits); ``ended`` tells the caller the job stopped for that reason."""

    def __init__(self, board: _Board | None, fd: int | None) -> None:
        self.board = board
        self.fd = fd
        self.started = time.monotonic()
        self.ended = False
        self._noted = 0.0
        self._looked = 0.0
        self._rated = False  # the note has a rate (a waiter's ETA needs one)

    def over(self, done: int = 0, total: int = 0) -> bool:
        """Called between batches with the vectors done of ``total``: notes progress in the slot file,
        and True once the turn is over and another job waits."""
        if self.board is None or self.fd is None:
            return False
        now = time.monotonic()
        took = now - self.started
        if now - self._noted >= NOTE_EVERY or (done and not self._rated):
            self._noted, self._rated = now, bool(done)
            rate = done / took if took > 0 and done else 0.0
            _write_note(self.fd, {"pid": os.getpid(), "workspace": self.board.job.workspace,
                                  "left": max(total - done, 0), "rate": rate,
                                  "turn_left": max(self.board.job.turn_s - took, 0.0),
                                  "at": time.time()})  # fmt: skip
        if took < self.board.job.turn_s or now - self._looked < 1.0:
            return False
        self._looked = now
        if self.board.tickets():
            self.ended = True
        return self.ended


def eta(job: BulkJob, holders: list[dict[str, object]], ahead: list[dict[str, object]]) -> float | None:
    """Seconds until a job behind ``ahead`` (tickets, oldest first) gets a slot that ``holders`` hold."""
    rates = [_num(h, "rate") for h in holders if _num(h, "rate") > 0]
    if not rates:
        return None
    rate = sum(rates) / len(rates)
    now = time.time()
    total = 0.0
    for h in holders:
        left_s = _num(h, "left") / max(_num(h, "rate"), rate * 0.1)
        turn_left = _num(h, "turn_left") - max(now - _num(h, "at"), 0.0)
        total += min(left_s, max(turn_left, 0.0))
    for t in ahead:
        total += min(_num(t, "pieces") / rate, job.turn_s)
    return total / max(1, job.jobs)


def _ticket(board: _Board, arrival: int) -> int:
    """Take a place in the queue: an fd holding the ticket file (raises OSError when there is no queue)."""
    private_dir(board.queue)
    path = board.queue / f"{arrival:020d}-{os.getpid()}.wait"
    fd = _open_own(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _write_note(fd, {"pid": os.getpid(), "workspace": board.job.workspace, "pieces": board.job.pieces})
    return fd


_GAVE_WAY = -1  # _wait_turn: keep_waiting() said to stop


def _take_free_slot(board: _Board) -> int | None:
    """An fd holding a free slot, None when all are held; raises Unusable when no slot file is usable."""
    usable = 0
    for n in range(max(1, board.job.jobs)):
        try:
            fd = board.try_slot(n)
        except Unusable:
            continue
        usable += 1
        if fd is not None:
            return fd
    if not usable:
        raise Unusable("every slot file is unusable")
    return None


def _wait_turn(
    board: _Board, arrival: int, keep_waiting: Callable[[], bool], on_wait: Callable[[Wait], None]
) -> int | None:
    """Wait in the queue for a slot: its fd, :data:`_GAVE_WAY`, or None (no usable slot or queue:
    the job runs without one, warned)."""
    job = board.job
    ticket: int | None = None
    last: tuple[object, ...] = ()
    told_at = 0.0
    try:
        while True:
            ahead = [note for t, note in board.tickets() if ticket is None or t < arrival]
            if not ahead:  # first come, first served: only the oldest waiter may take a free slot
                try:
                    fd = _take_free_slot(board)
                except Unusable:
                    return None
                if fd is not None:
                    return fd
            if ticket is None:
                try:
                    ticket = _ticket(board, arrival)
                except OSError as exc:
                    board.warn(
                        f"bulk embedding queue {board.queue} is unusable ({_describe(exc)}): not queueing"
                    )
                    return None
                continue  # look again with a place in the queue
            holders = board.holders()
            left = int(sum(_num(h, "left") for h in holders))
            names = [os.path.basename(str(h.get("workspace") or "?")) for h in holders]
            wait = Wait(names, len(ahead), eta(job, holders, ahead), left)
            now = time.monotonic()
            seen = (wait.holders, wait.ahead, wait.eta_s is None)
            if seen != last or now - told_at >= TELL_EVERY:
                last, told_at = seen, now
                on_wait(wait)
            if not keep_waiting():
                return _GAVE_WAY
            time.sleep(POLL)
    finally:
        if ticket is not None:
            with contextlib.suppress(OSError):
                os.unlink(board.queue / f"{arrival:020d}-{os.getpid()}.wait")
            os.close(ticket)


@contextlib.contextmanager
def bulk_slot(
    job: BulkJob,
    keep_waiting: Callable[[], bool],
    on_wait: Callable[[Wait], None],
    warn: Callable[[str], None] = lambda _m: None,
) -> Iterator[Turn | None]:
    """Hold one of ``job.jobs`` slots for the ``with`` body; yields a :class:`Turn` once held, None when
    ``keep_waiting()`` said to stop waiting first (newer work, a cancel). ``on_wait`` gets what the job
    waits for when it starts waiting and when that changes. With no usable slot folder or slot file the
    job runs without a slot (``warn`` says why)."""
    folder = slots_dir()
    try:
        if not trusted_dir(folder):
            raise OSError(f"{folder} is a symlink or belongs to another user")
        private_dir(folder)
    except OSError as exc:
        warn(f"no bulk embedding budget ({exc}): embedding without a slot")
        yield Turn(None, None)  # a budget we cannot keep must not stop indexing
        return
    board = _Board(folder, job, warn)
    arrival = _places.pop(job.workspace, time.time_ns())
    fd = _wait_turn(board, arrival, keep_waiting, on_wait)
    if fd == _GAVE_WAY:
        _places[job.workspace] = arrival  # its next run keeps this place
        yield None
        return
    if fd is None:
        warn("no usable bulk embedding slot: embedding without the machine-wide budget")
        yield Turn(None, None)
        return
    turn = Turn(board, fd)
    try:
        turn.over(0, job.pieces)  # the note: who holds the slot, with how much to do
        yield turn
    finally:
        os.close(fd)
