"""What a one-shot command (``search``, ``defs``/``refs``, ``ask``, ``index``) does to a workspace that may
have a host: bring the index up to date before answering, then search it in-process.

The refresh never waits for the encoder on a large backlog: the lexical side is brought up to date
(seconds at most), a handful of missing vectors (an edit) are computed inline, and a bigger backlog (a
fresh checkout) goes to a detached, low-priority background host that later searches pick up. A
workspace with a host (an app, ``serve``, ``mcp``, a background host) is kept fresh by it. Otherwise
this process takes the host lock for its quick update (:class:`~aide_tui.host.tenure.Tenure`), so of
many searches at once one updates and the others search what it commits.

What the command shows goes through a :class:`Console` (the CLI's is stderr); a step that cannot go on
raises :class:`CannotAnswer` with the exit code, after saying why.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder
from aide_tui.core.errors import IndexCorrupt, IndexProblem, LockTimeout
from aide_tui.core.events import Done, Event
from aide_tui.core.gcpause import freeze_loaded, gc_paused
from aide_tui.core.index.stores import embedder_for
from aide_tui.core.paths import state_dir
from aide_tui.core.search.response import SearchResponse
from aide_tui.core.store.status import has_readable_index
from aide_tui.core.storekind import store_kind
from aide_tui.host.lock import HostLockUnusable, host_pid
from aide_tui.host.role import Role
from aide_tui.host.served import served_index

if TYPE_CHECKING:
    from aide_tui.core.search.searcher import Searcher
    from aide_tui.host.tenure import Tenure

INLINE_VECTORS = 64  # missing vectors computed inline before answering (about a second or two)
QUICK_MERGE_CHUNKS = 5_000  # live chunks a search's own update may merge (a second or so; more waits)
WAIT_POLL = 0.2  # seconds between looks at another process building a workspace's first version


class Console(Protocol):
    """Where a one-shot command says what its refresh does."""

    @property
    def interactive(self) -> bool:
        """Whether a person watches (waits and bulk work are shown as they go)."""

    def say(self, message: str) -> None:
        """One line."""

    def progress(self, event: Event) -> None:
        """An indexing run's progress."""

    def finished(self, report: Done) -> None:
        """An indexing run ended: its progress line goes, its messages are said."""

    def waiting(self, line: str | None) -> None:
        """A wait, on one line kept up to date (None: the wait is over)."""


class CannotAnswer(Exception):
    """The command cannot go on; it said why (``code``: its exit code)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def index_once(
    root: Path,
    settings: Settings,
    embedder: Embedder | None,
    emb_err: str | None,
    console: Console,
    *,
    rebuild: bool = False,
    priority: tuple[str, ...] = (),
    embed: bool = True,
    merge_cap: int | None = None,
) -> Done:
    """Run the indexer here, its progress on ``console`` (the embedder is closed after; ``merge_cap``: see
    Indexer.run)."""
    from aide_tui.core.index.indexer import Indexer

    try:
        report = Indexer(root, settings, embedder, emb_err).run(
            on_progress=console.progress, rebuild=rebuild, priority=priority, embed=embed, merge_cap=merge_cap
        )
    finally:
        close = getattr(embedder, "close", None)
        if close is not None:
            close()
    console.finished(report)
    return report


def index_workspace(
    root: Path, settings: Settings, console: Console, *, rebuild: bool = False, priority: tuple[str, ...] = ()
) -> Done:
    """``aide-tui index``: the workspace's host indexes it when one runs (the command waits for its run),
    else it is indexed here. IndexProblem, OSError when it cannot be."""
    report = served_index(root, settings, rebuild)
    if report is None:
        embedder, emb_err = embedder_for(settings, root=root, for_indexing=True)
        report = index_once(root, settings, embedder, emb_err, console, rebuild=rebuild, priority=priority)
    return report


# -- the refresh before answering -----------------------------------------------------------------


def refresh(
    root: Path,
    settings: Settings,
    query_embedder: Embedder | None,
    console: Console,
    *,
    wait: bool,
    rebuild: bool = False,
) -> int:
    """Bring the local index up to date before answering; the exit code (0: go on).

    A workspace with a host is kept fresh by it: nothing to do but, for a new workspace, wait for its
    first version. Otherwise this process takes the host lock for its quick update and hands the lock to
    a background host when many vectors are missing (``wait``: compute them all here)."""
    from aide_tui.host.tenure import Tenure  # the update's machinery: not imported by --no-update

    tenure = Tenure(root)
    state = state_dir(root)
    while True:
        if not rebuild and host_pid(state) is not None and has_readable_index(root):
            return 0  # a host keeps it fresh
        try:
            took = tenure.take()
        except HostLockUnusable as exc:  # nobody of ours can update it: answer from what is on disk
            have = has_readable_index(root)
            console.say(f"{exc.strerror}: {'searching the index on disk' if have else 'no index to search'}")
            tenure.roles.move(Role.READ_ONLY)
            return 0 if have else 1
        if took:
            break
        if has_readable_index(root) and not rebuild:
            return 0
        tenure.roles.move_from({Role.STARTING}, Role.WAITING)
        if _wait_for_first_version(root, state, console):
            return 0
        # the process that held the lock went away before a first version: update it here
    tenure.roles.move(Role.UPDATING)
    try:
        return _update_here(tenure, settings, query_embedder, console, wait=wait, rebuild=rebuild)
    finally:
        tenure.release()  # after a hand-over only this process's descriptor: the background host holds it
        tenure.roles.move(Role.CLOSED)


def _wait_for_first_version(root: Path, state: Path, console: Console) -> bool:
    """Wait while another process builds the workspace's first version; False when it stopped first."""
    import time

    start = time.monotonic()
    try:
        while not has_readable_index(root):
            pid = host_pid(state)
            if pid is None:
                return False
            if console.interactive:
                waited = time.monotonic() - start
                console.waiting(f"waiting for PID {pid} (another aide-tui) to index {root}: {waited:.0f} s")
            time.sleep(WAIT_POLL)
        return True
    finally:
        if console.interactive:
            console.waiting(None)


def _update_here(
    tenure: Tenure,
    settings: Settings,
    query_embedder: Embedder | None,
    console: Console,
    *,
    wait: bool,
    rebuild: bool,
) -> int:
    """The quick update, holding the host lock; the exit code. A bulk of missing vectors goes to a
    background host, which takes the lock over."""
    root = tenure.root
    have = has_readable_index(root) and not rebuild
    # the configured embedder even in bm25 mode: the index records whose vectors it holds
    idx_embedder, idx_err = embedder_for(settings, for_indexing=wait, root=root)
    quick = replace(settings, index=replace(settings.index, lock_timeout=0.0)) if have else settings
    try:
        report = index_once(root, quick, idx_embedder, idx_err, console, rebuild=rebuild, embed=wait,
                            merge_cap=QUICK_MERGE_CHUNKS)  # fmt: skip
        missing = report.vectors_missing if idx_embedder is not None and not report.degraded else 0
        if missing and missing <= INLINE_VECTORS:
            emb = query_embedder if query_embedder is not None else idx_embedder
            index_once(root, quick, emb, None, console, embed=True, merge_cap=QUICK_MERGE_CHUNKS)
        elif missing:
            try:
                tenure.hand_to_background_host(settings)
            except OSError as exc:
                console.say(f"cannot start the background indexer: {exc}")
            else:
                if console.interactive:
                    console.say(f"{missing} vectors to compute: a background indexer does it (log: "
                                ".aide/index.log); until then results come from keywords")  # fmt: skip
    except LockTimeout as exc:
        if not have:
            console.say(str(exc))
            return 1
        _say_locked_once(root, exc, console)
    except OSError as exc:
        console.say(f"cannot update the index: {exc}")
        if not have:
            return 1
    return 0


def _say_locked_once(root: Path, exc: LockTimeout, console: Console) -> None:
    """Say that another process is indexing and the existing index answers, once per such process (the
    searches that follow while it runs stay quiet: ``.aide/locked-notice`` holds whom it was said of)."""
    from aide_tui.core.store.segments import atomic_write_bytes

    marker = state_dir(root) / "locked-notice"
    holder = str(exc.pid or "")
    try:
        if holder and marker.read_text() == holder:
            return
    except (OSError, UnicodeDecodeError):
        pass
    who = f"PID {exc.pid}" if exc.pid else "another process"
    console.say(f"{who} (another aide-tui) is indexing {root}: searching the index as it was before")
    try:
        atomic_write_bytes(marker, holder.encode())
    except OSError:
        pass


def refresh_shared(root: Path, settings: Settings, mode: str, console: Console) -> None:
    """Bring this workspace's rows in a shared (Milvus) store up to date (vectors computed inline)."""
    idx_embedder, idx_err = embedder_for(settings, for_indexing=True, root=root)
    try:
        report = index_once(root, settings, idx_embedder, idx_err, console)
        if report.degraded and mode != "bm25":
            console.say(f"degraded (BM25 only): {report.degraded_reason}")
    except LockTimeout as exc:
        console.say(f"{exc}; searching the store as it is")


# -- searching what the refresh left ---------------------------------------------------------------


class OneShot:
    """A workspace opened by a one-shot command after its refresh (:func:`open_workspace`): its searcher,
    and a search that rebuilds a damaged local index file a query finds (once, unless ``update`` is off)
    and answers the query again."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        searcher: Searcher,
        console: Console,
        *,
        update: bool,
        wait: bool,
    ) -> None:
        self.root = root
        self.settings = settings
        self.searcher = searcher
        self.console = console
        self.update = update
        self.wait = wait
        self._repaired = False

    def search(self, query: str, limit: int, mode: str, prefix: bool = False) -> SearchResponse:
        """The searcher's answer; CannotAnswer (after saying why) when the index cannot be read."""
        try:
            try:
                with gc_paused():  # a query's garbage holds no cycles; reference counting frees it
                    return self.searcher.search(query, limit=limit, mode=mode, prefix=prefix)
            except IndexCorrupt as exc:
                if self._repaired or not self.update or store_kind(self.settings).shared:
                    raise
                self._repaired = True
                self.console.say(str(exc))
                code = refresh(self.root, self.settings, self.searcher.embedder, self.console, wait=self.wait,
                               rebuild=True)  # fmt: skip
                if code:
                    raise CannotAnswer(code) from None
                self.searcher.refresh()
                return self.searcher.search(query, limit=limit, mode=mode, prefix=prefix)
        except IndexCorrupt as exc:
            self.console.say(_run_rebuild(exc, self.root))
            raise CannotAnswer(1) from None
        except IndexProblem as exc:
            self.console.say(str(exc))
            raise CannotAnswer(1) from None

    def close(self) -> None:
        self.searcher.retriever.close()


def _run_rebuild(exc: IndexCorrupt, root: Path) -> str:
    """What to say of a damaged index this command may not rebuild: what to run."""
    return f"{exc.args[0].removesuffix('; rebuilding')}: run `aide-tui index {root} --rebuild`"


def open_workspace(
    root: Path,
    settings: Settings,
    console: Console,
    *,
    mode: str,
    update: bool = True,
    wait: bool = False,
    all_workspaces: bool = False,
) -> OneShot:
    """The workspace as a one-shot command answers from: refreshed (unless ``update`` is off and an
    index reads; a damaged local index is rebuilt unless it is off), loaded, and ready for ``mode``
    (``dense`` needs a working embedder; ``hybrid`` loads the model up front). CannotAnswer after saying
    why it cannot be."""
    embedder, emb_err = (
        (None, None) if mode == "bm25" else embedder_for(settings, root=root, for_queries=True)
    )
    from aide_tui.core.search.searcher import Searcher  # ``index`` never searches: it skips the import

    searcher = Searcher(root, settings, embedder, emb_err, all_workspaces=all_workspaces)
    _load(root, settings, searcher, console, update=update, wait=wait)
    code = _ready_for_mode(searcher, mode, embedder, emb_err, console)
    if code:
        searcher.retriever.close()
        raise CannotAnswer(code)
    return OneShot(root, settings, searcher, console, update=update, wait=wait)


def _load(
    root: Path, settings: Settings, searcher: Searcher, console: Console, *, update: bool, wait: bool
) -> None:
    """The refresh, then the searcher's first load (a corrupt local index rebuilt unless ``update`` is
    off); CannotAnswer when it cannot be."""
    shared = store_kind(settings).shared
    try:
        if shared:
            if store_kind(settings).writable and (update or searcher.retriever.version_key() is None):
                refresh_shared(root, settings, settings.search.mode, console)
        elif update or not has_readable_index(root):
            code = refresh(root, settings, searcher.embedder, console, wait=wait)
            if code:
                raise CannotAnswer(code)
        with gc_paused():
            searcher.refresh()
        freeze_loaded()  # the loaded version lives until exit: later collections skip it
    except IndexCorrupt as exc:
        if not update or shared:
            console.say(_run_rebuild(exc, root))
            raise CannotAnswer(1) from None
        console.say(str(exc))
        code = refresh(root, settings, searcher.embedder, console, wait=wait, rebuild=True)
        if code:
            raise CannotAnswer(code) from None
        try:
            searcher.refresh()
        except IndexProblem as again:
            console.say(str(again))
            raise CannotAnswer(1) from None
    except IndexProblem as exc:
        console.say(str(exc))
        raise CannotAnswer(1) from None


def _ready_for_mode(
    searcher: Searcher, mode: str, embedder: Embedder | None, emb_err: str | None, console: Console
) -> int:
    """``--mode dense`` needs a working embedder (exit 1 otherwise); hybrid loads the model up front."""
    if mode == "dense":
        probe = searcher.search("probe", limit=1, mode="dense")
        if probe.degraded or embedder is None:
            console.say(
                "--mode dense needs a working embedder: "
                + (probe.degraded_reason or emb_err or "none configured")
            )
            return 1
    elif embedder is not None and hasattr(embedder, "load"):
        try:
            embedder.load()  # one-time model load, kept out of took_ms
        except Exception:  # noqa: BLE001 - reported as degraded by the search itself
            pass
    return 0
