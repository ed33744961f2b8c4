"""``aide-tui search``: refresh the index, then answer one query or a batch (one JSON line each).

The refresh never waits for the encoder on a large backlog: the lexical side is brought up to date
(seconds at most), a handful of missing vectors (an edit) are computed inline, and a bigger backlog
(a fresh checkout) goes to a detached, low-priority ``aide-tui index`` that later searches pick up.
Each JSON line says how many dense pieces still lack a vector (``vectors_missing``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any

from aide_tui.cli.common import err, make_embedder, path_from_cwd, printable, run_index, setup
from aide_tui.core.storekind import SHARED_STORE, NeedsSharedStore, store_kind

INLINE_VECTORS = 64  # missing vectors computed inline before answering (about a second or two)
FILES_DEPTH = 20  # --format paths: hits ranked per file asked for (--limit counts files there)


def _read_batch(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def _write_locations(out: Any, root: Path, resp: Any, fmt: str, limit: int) -> None:
    """``vimgrep``: ``path:line:col:text`` at each best line; ``paths``: the first ``limit`` distinct
    files in rank order.
    A hit of another workspace (``--all-workspaces``) is shown under the root it was indexed from.
    Control characters in names are escaped and in line text shown (␛), as the text format does."""
    from aide_tui.core.search.hitlines import vimgrep_line
    from aide_tui.core.textsafe import visible

    def base(h: Any) -> Path:
        return Path(h.root) if h.workspace and h.root else root

    if resp.degraded:
        err(f"degraded (BM25 only): {resp.degraded_reason}")
    if resp.no_results:
        err(resp.no_results)
    if fmt == "paths":
        files = dict.fromkeys(printable(path_from_cwd(base(h), h.path)) for h in resp.results)
        for shown in list(files)[:limit]:
            out.write(shown + "\n")
        return
    for h in resp.results:
        out.write(visible(vimgrep_line(printable(path_from_cwd(base(h), h.path)), h)) + "\n")


def _queries(args: argparse.Namespace) -> list[str] | None:
    """The query, or the batch file's lines (None after saying why there are none)."""
    if args.batch is None and not args.query:
        err("search needs a QUERY or --batch FILE")
        return None
    if args.batch is None and not " ".join(args.query).strip():
        err("search needs a QUERY: the one given is empty")
        return None
    try:
        return _read_batch(args.batch) if args.batch is not None else [" ".join(args.query)]
    except OSError as exc:
        err(f"cannot read batch file: {exc}")
        return None


def cmd_search(args: argparse.Namespace) -> int:
    """``aide-tui search --path ROOT [--json] QUERY | --batch FILE``."""
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings = ready
    mode = settings.search.mode
    queries = _queries(args)
    if queries is None:
        return 2
    fmt = args.format or ("json" if args.json else "text")
    if getattr(args, "max_tokens", None) and fmt != "json":
        err("--max-tokens needs --json (or --format json)")
        return 2
    failed = False

    def emit(answer: dict[str, Any]) -> bool:
        """Write one answer. A query error (an unknown lang:) is one line on stderr: a single query then
        stops (exit 2); in a batch its JSON object carries "error" and the run exits 2 at the end."""
        nonlocal failed
        if answer.get("error"):
            err(str(answer["error"]))
            failed = True
            if args.batch is None or fmt != "json":
                return args.batch is not None
        _write(answer, fmt == "json")
        return True

    everywhere = bool(getattr(args, "all_workspaces", False))
    if everywhere:
        try:
            store_kind(settings).require_all_workspaces(
                "--all-workspaces", f"set {SHARED_STORE} (see the README)"
            )
        except NeedsSharedStore as exc:
            err(str(exc))
            return 2
    # a running `aide-tui serve` answers from its warm index (vimgrep/paths need the chunk text: local);
    # with a Milvus Lite store it is the only way in while the server holds the store
    done = _served(args, root, settings, queries, fmt, mode, emit, everywhere)
    if done == len(queries) or (failed and args.batch is None):
        return 2 if failed else 0
    opened = open_searcher(args, root, settings, mode)
    if isinstance(opened, int):
        return opened
    searcher, close = opened
    try:
        code = _answer_all(searcher, args, root, settings, queries[done:], fmt, emit)
    finally:
        close()
    return code or (2 if failed else 0)


def _answer_all(
    searcher: Any,
    args: argparse.Namespace,
    root: Path,
    settings: Any,
    queries: list[str],
    fmt: str,
    emit: Callable[[dict[str, Any]], bool],
) -> int:
    """Answer each query (one output each); an exit code when one cannot be answered, else 0.

    A damaged index file is found when a query first reads it: without ``--no-update`` the index is
    rebuilt once and the query answered; with it, the command says what to run."""
    from aide_tui.core.errors import IndexCorrupt, IndexProblem
    from aide_tui.core.search.response import SearchResponse

    mode = settings.search.mode
    depth = args.limit * FILES_DEPTH if fmt == "paths" else args.limit
    prefix = getattr(args, "prefix", False)
    repaired = False
    try:
        for q in queries:
            q = q.rstrip("\r")
            if not q.strip():
                resp = SearchResponse(query=q, results=[], mode=mode)
            else:
                try:
                    resp = searcher.search(q, limit=depth, mode=mode, prefix=prefix)
                except IndexCorrupt as exc:
                    if repaired or args.no_update or store_kind(settings).shared:
                        raise
                    repaired = True
                    err(str(exc))
                    code = _refresh(root, settings, searcher.embedder, wait=args.wait, rebuild=True)
                    if code:
                        return code
                    searcher.refresh()
                    resp = searcher.search(q, limit=depth, mode=mode, prefix=prefix)
            if fmt in ("vimgrep", "paths") and resp.error is None:
                _write_locations(sys.stdout, root, resp, fmt, args.limit)
                sys.stdout.flush()
            elif not emit(_answer_json(resp, args)):
                return 2
    except IndexCorrupt as exc:
        err(f"{exc.args[0].removesuffix('; rebuilding')}: run `aide-tui index {root} --rebuild`")
        return 1
    except IndexProblem as exc:
        err(str(exc))
        return 1
    return 0


def _answer_json(resp: Any, args: argparse.Namespace) -> dict[str, Any]:
    """A query's JSON answer; with ``--max-tokens``, its hits fitted to that budget (see budget.py)."""
    if not getattr(args, "max_tokens", None) or resp.error is not None:
        return dict(resp.to_json())
    from aide_tui.core.search.budget import budgeted_json

    return budgeted_json(resp, args.max_tokens)


def _served(args: argparse.Namespace, root: Path, settings: Any, queries: list[str], fmt: str, mode: str,
            emit: Any, everywhere: bool) -> int:  # fmt: skip
    """How many of ``queries`` a running server answered (0: none runs, or it cannot give this format)."""
    if args.no_server or args.rerank or args.max_tokens or fmt not in ("text", "json"):  # answered here
        return 0
    from aide_tui.cli.served import served_search

    return served_search(
        root, settings, queries, max(args.limit, 0), mode, emit, everywhere, getattr(args, "prefix", False)
    )


def open_searcher(
    args: argparse.Namespace, root: Path, settings: Any, mode: str
) -> tuple[Any, Callable[[], None]] | int:
    """The searcher ``search`` answers from, after its usual refresh, and how to release it; or an exit
    code after saying why. ``ask`` retrieves through it too."""
    embedder, emb_err = (
        (None, None) if mode == "bm25" else make_embedder(settings, root=root, for_queries=True)
    )
    everywhere = bool(getattr(args, "all_workspaces", False))
    searcher = _open_searcher(root, settings, args, embedder, emb_err, everywhere)
    if isinstance(searcher, int):
        return searcher
    code = _ready_for_mode(searcher, mode, embedder, emb_err)
    if code:
        searcher.retriever.close()
        return code
    return searcher, searcher.retriever.close


def _open_searcher(
    root: Path, settings: Any, args: argparse.Namespace, embedder: Any, emb_err: str | None, everywhere: bool
) -> Any:
    """A loaded Searcher after the refresh (rebuilds a corrupt local index unless --no-update), or an
    exit code."""
    from aide_tui.core.errors import IndexCorrupt, IndexProblem
    from aide_tui.core.search.searcher import Searcher

    searcher = Searcher(root, settings, embedder, emb_err, all_workspaces=everywhere)
    shared = store_kind(settings).shared
    try:
        if shared:
            if store_kind(settings).writable and (
                not args.no_update or searcher.retriever.version_key() is None
            ):
                _refresh_shared(root, settings, settings.search.mode)
        elif not args.no_update or not _readable_index(root):
            code = _refresh(root, settings, embedder, wait=args.wait)
            if code:
                return code
        searcher.refresh()
    except IndexCorrupt as exc:
        if args.no_update or shared:
            err(f"{exc.args[0].removesuffix('; rebuilding')}: run `aide-tui index {root} --rebuild`")
            return 1
        err(str(exc))
        code = _refresh(root, settings, embedder, wait=args.wait, rebuild=True)
        if code:
            return code
        try:
            searcher.refresh()
        except IndexProblem as again:
            err(str(again))
            return 1
    except IndexProblem as exc:
        err(str(exc))
        return 1
    return searcher


def _ready_for_mode(searcher: Any, mode: str, embedder: Any, emb_err: str | None) -> int:
    """``--mode dense`` needs a working embedder (exit 1 otherwise); hybrid loads the model up front."""
    if mode == "dense":
        probe = searcher.search("probe", limit=1, mode="dense")
        if probe.degraded or embedder is None:
            err(
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


def _refresh_shared(root: Path, settings: Any, mode: str) -> None:
    """Bring this workspace's rows in the Milvus store up to date (vectors computed inline)."""
    from aide_tui.core.errors import LockTimeout

    idx_embedder, idx_err = make_embedder(settings, for_indexing=True, root=root)
    try:
        report = run_index(root, settings, idx_embedder, idx_err)
        if report.degraded and mode != "bm25":
            err(f"degraded (BM25 only): {report.degraded_reason}")
    except LockTimeout as exc:
        err(f"{exc}; searching the store as it is")


def _write(answer: dict[str, Any], as_json: bool) -> None:
    """One query's answer (its ``search --json`` object) on stdout: that JSON line, or
    ``path:start-end  symbol  score`` rows. The same for in-process and served answers."""
    out = sys.stdout
    if as_json:
        out.write(json.dumps(answer) + "\n")
    else:
        if answer["degraded"]:
            err(f"degraded (BM25 only): {answer['degraded_reason']}")
        if str(answer.get("rerank", "")).startswith("degraded"):
            err(f"rerank {answer['rerank']} (fused order kept)")
        for h in answer["results"]:
            path, symbol = printable(h["path"]), printable(h["symbol"] or "")
            if "workspace" in h:
                path = f"[{printable(str(h['workspace']))}] {path}"
            out.write(f"{path}:{h['start_line']}-{h['end_line']}  {symbol}  {h['score']:.4f}\n")
        if not answer["results"]:
            out.write("no results\n")
            if answer.get("no_results"):
                err(str(answer["no_results"]))
    out.flush()


def _readable_index(root: Path) -> bool:
    """Whether the local store has a manifest that reads (a damaged one counts as none: it is rebuilt)."""
    from aide_tui.core.errors import IndexProblem
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.store.segments import read_manifest

    try:
        read_manifest(index_dir_for(root, create=False))
    except IndexProblem:
        return False
    return True


def _refresh(root: Path, settings: Any, query_embedder: Any, wait: bool, rebuild: bool = False) -> int:
    """Bring the index up to date before answering; returns an exit code (0 = go on).

    A workspace with a host (an app, ``serve``, ``mcp``, a background host) is kept fresh by it: nothing
    to do but, for a new workspace, wait for its first version. Otherwise this process takes the host
    lock for its quick update (so of many searches at once one updates and the others search what it
    commits) and hands the lock to a background host when many vectors are missing."""
    from aide_tui.core.paths import state_dir
    from aide_tui.host.lock import HostLockUnusable, host_pid, release, try_host_lock

    state = state_dir(root)
    while True:
        if not rebuild and host_pid(state) is not None and _readable_index(root):
            return 0  # a host keeps it fresh
        try:
            fd = try_host_lock(state, root=root)
        except HostLockUnusable as exc:  # nobody of ours can update it: answer from what is on disk
            have = _readable_index(root)
            err(f"{exc.strerror}: {'searching the index on disk' if have else 'no index to search'}")
            return 0 if have else 1
        if fd is not None:
            break
        if _readable_index(root) and not rebuild:
            return 0
        if _wait_for_first_version(root, state):
            return 0
        # the process that held the lock went away before a first version: update it here
    handed = False
    try:
        code, handed = _refresh_here(root, settings, query_embedder, wait, rebuild, fd)
        return code
    finally:
        if handed:
            os.close(fd)  # the background host holds the lock now
        else:
            release(fd, state)


def _wait_for_first_version(root: Path, state: Path) -> bool:
    """Wait while another process builds the workspace's first version; False when it stopped first."""
    import time

    from aide_tui.host.lock import host_pid

    show = sys.stderr.isatty()
    start = time.monotonic()
    try:
        while not _readable_index(root):
            pid = host_pid(state)
            if pid is None:
                return False
            if show:  # one line, kept up to date
                waited = time.monotonic() - start
                line = f"waiting for PID {pid} (another aide-tui) to index {root}: {waited:.0f} s"
                print(f"\r\x1b[K{printable(line)}", end="", file=sys.stderr, flush=True)
            time.sleep(0.2)
        return True
    finally:
        if show:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)


def _refresh_here(
    root: Path, settings: Any, query_embedder: Any, wait: bool, rebuild: bool, fd: int
) -> tuple[int, bool]:
    """The quick update, holding the host lock ``fd``: (exit code, whether the lock went to a background
    host, which computes the bulk of the missing vectors)."""
    from aide_tui.core.errors import LockTimeout

    have = _readable_index(root) and not rebuild
    # the configured embedder even in bm25 mode: the index records whose vectors it holds
    idx_embedder, idx_err = make_embedder(settings, for_indexing=wait, root=root)
    quick = replace(settings, index=replace(settings.index, lock_timeout=0.0)) if have else settings
    try:
        report = run_index(root, quick, idx_embedder, idx_err, rebuild=rebuild, embed=wait)
        missing = report.vectors_missing if idx_embedder is not None and not report.degraded else 0
        if missing and missing <= INLINE_VECTORS:
            emb = query_embedder if query_embedder is not None else idx_embedder
            run_index(root, quick, emb, None, embed=True)
        elif missing:
            started = _start_background_host(root, settings, fd)
            if started and sys.stderr.isatty():
                err(f"{missing} vectors to compute: a background indexer does it (log: .aide/index.log); "
                    "until then results come from keywords")  # fmt: skip
            return 0, started
    except LockTimeout as exc:
        if not have:
            err(str(exc))
            return 1, False
        _say_locked_once(root, exc)
    except OSError as exc:
        err(f"cannot update the index: {exc}")
        if not have:
            return 1, False
    return 0, False


def _say_locked_once(root: Path, exc: Any) -> None:
    """Say that another process is indexing and the existing index answers, once per such process (the
    searches that follow while it runs stay quiet: ``.aide/locked-notice`` holds whom it was said of)."""
    from aide_tui.core.paths import state_dir
    from aide_tui.core.store.segments import atomic_write_bytes

    marker = state_dir(root) / "locked-notice"
    holder = str(exc.pid or "")
    try:
        if holder and marker.read_text() == holder:
            return
    except (OSError, UnicodeDecodeError):
        pass
    who = f"PID {exc.pid}" if exc.pid else "another process"
    err(f"{who} (another aide-tui) is indexing {root}: searching the index as it was before")
    try:
        atomic_write_bytes(marker, holder.encode())
    except OSError:
        pass


def _start_background_host(root: Path, settings: Any, fd: int) -> bool:
    """Compute the missing vectors in a detached, low-priority host, which takes over the host lock this
    process holds (so exactly one starts); True when it started. Its messages go to ``index.log``."""
    from datetime import datetime

    from aide_tui.core.index.service import child_env
    from aide_tui.core.paths import state_dir
    from aide_tui.host.lock import LOCK_FD_ENV, claim

    state = state_dir(root)
    env = child_env(settings)  # the settings travel in the environment, not on the command line
    env[LOCK_FD_ENV] = str(fd)
    cmd = [sys.executable, "-P", "-m", "aide_tui", "host", str(root), "--settings-json", "env"]
    try:
        log = os.open(state / "index.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.write(log, f"--- {stamp} background host for {root}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        log = subprocess.DEVNULL
    try:
        host = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
                                start_new_session=True, close_fds=True, pass_fds=(fd,))  # fmt: skip
        claim(fd, host.pid)  # the lock names its holder from now on, not this process about to exit
        return True
    except OSError as exc:
        err(f"cannot start the background indexer: {exc}")
        return False
    finally:
        if isinstance(log, int) and log >= 0 and log != subprocess.DEVNULL:
            os.close(log)
