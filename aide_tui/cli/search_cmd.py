"""``aide-tui search``: answer one query or a batch (one JSON line each), through the workspace's running
host when it can, else in-process after the refresh (:mod:`aide_tui.host.oneshot`: the lexical side is
brought up to date, a bulk of missing vectors goes to a background host; each JSON line says how many
dense pieces still lack a vector, ``vectors_missing``).

The search side is imported inside the functions that use it: a served answer loads none of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aide_tui.cli.common import err, path_from_cwd, printable, setup
from aide_tui.core.storekind import SHARED_STORE, NeedsSharedStore, store_kind
from aide_tui.host.scope import Within, enclosing_workspace
from aide_tui.host.served import served_search

if TYPE_CHECKING:
    from aide_tui.core.config import Settings
    from aide_tui.core.search.response import Hit, SearchResponse

FILES_DEPTH = 20  # --format paths: hits ranked per file asked for (--limit counts files there)


def cmd_search(args: argparse.Namespace) -> int:
    """``aide-tui search --path ROOT [--json] QUERY | --batch FILE`` (or ``QUERY... ROOT``)."""
    if args.path is None:
        args.path = _trailing_root(args.query) or "."
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings, within = _scope(args, *ready)
    mode = settings.search.mode
    queries = _queries(args, within)
    if queries is None:
        return 2
    fmt = args.format or ("json" if args.json else "text")
    if args.max_tokens and fmt != "json":
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
        _write(within.answer(answer) if within is not None else answer, fmt == "json")
        return True

    if args.all_workspaces:
        try:
            store_kind(settings).require_all_workspaces(
                "--all-workspaces", f"set {SHARED_STORE} (see the README)"
            )
        except NeedsSharedStore as exc:
            err(str(exc))
            return 2
    # a running host answers from its warm index (vimgrep/paths need the chunk text: in-process); with a
    # Milvus Lite store it is the only way in while it holds the store
    done = 0
    if not (args.no_server or args.rerank or args.max_tokens or fmt not in ("text", "json")):
        done = served_search(root, settings, queries, max(args.limit, 0), mode, emit, args.all_workspaces,
                             args.prefix)  # fmt: skip
    if done == len(queries) or (failed and args.batch is None):
        return 2 if failed else 0
    code = _answer_here(args, root, settings, queries[done:], fmt, emit, within)
    return code or (2 if failed else 0)


def _answer_here(
    args: argparse.Namespace,
    root: Path,
    settings: Settings,
    queries: list[str],
    fmt: str,
    emit: Callable[[dict[str, Any]], bool],
    within: Within | None = None,
) -> int:
    """Answer each query in-process (one output each); an exit code when one cannot be answered, else 0
    (``within``: the part of ``root`` asked for, see :func:`_within_parent`)."""
    from aide_tui.cli.console import StderrConsole
    from aide_tui.core.search.response import SearchResponse
    from aide_tui.host.oneshot import CannotAnswer, open_workspace

    mode = settings.search.mode
    depth = args.limit * FILES_DEPTH if fmt == "paths" else args.limit
    try:
        shot = open_workspace(root, settings, StderrConsole(), mode=mode, update=not args.no_update,
                              wait=args.wait, all_workspaces=args.all_workspaces)  # fmt: skip
    except CannotAnswer as exc:
        return exc.code
    try:
        for q in queries:
            q = q.rstrip("\r")
            if q.strip():
                resp = shot.search(q, depth, mode, args.prefix)
            else:
                resp = SearchResponse(query=q, results=[], mode=mode)
            if fmt in ("vimgrep", "paths") and resp.error is None:
                _write_locations(sys.stdout, root, resp, fmt, args.limit, within)
                sys.stdout.flush()
            elif not emit(_answer_json(resp, args.max_tokens)):
                return 2
    except CannotAnswer as exc:
        return exc.code
    finally:
        shot.close()
    return 0


def _within_parent(args: argparse.Namespace, root: Path) -> tuple[Path, Settings, Within] | None:
    """``search --path ROOT`` where ROOT is inside an indexed workspace and has no index of its own: that
    workspace's index answers, kept to ROOT's files (no second index of the same files, no second
    background host), and stderr says so once. None: ROOT is searched as it is."""
    if args.all_workspaces or args.store == "milvus":
        return None
    found = enclosing_workspace(root)
    if found is None:
        return None
    outer, rel = found
    ready = setup(str(outer), args)
    if ready is None or store_kind(ready[1]).shared:
        return None
    shown = printable(str(root))
    err(f"note: {shown} is inside {printable(str(outer))}, which is indexed: searching its index, "
        f"{printable(rel)}/ only (`aide-tui index {shown}` indexes it on its own)")  # fmt: skip
    return ready[0], ready[1], Within(rel)


def _scope(args: argparse.Namespace, root: Path, settings: Settings) -> tuple[Path, Settings, Within | None]:
    """The root and settings to search, and the part of that root asked for (see :func:`_within_parent`)."""
    if not store_kind(settings).shared and (inside := _within_parent(args, root)) is not None:
        return inside
    return root, settings, None


def _read_batch(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def _trailing_root(words: list[str]) -> str | None:
    """``search QUERY... DIR`` without ``--path``: the last word, taken off the query, when it names a
    folder written as a path (``./src``, ``src/``, ``../proj``, ``/abs/x``, ``~/x``) and words are left to
    search for; None otherwise. A bare word (``src``), a filter (``path:src/``) and a word that names no
    folder of its own (``/``, ``//``, ``..``, ``~``, ``~name``: operators in code queries) stay in the query.
    Without this, ``aide-tui search needle ~/proj`` indexed and searched the current folder."""
    if len(words) < 2:
        return None
    last = words[-1]
    if ":" in last or "/" not in last or (last.startswith("~") and not last.startswith("~/")):
        return None
    if all(part in ("", ".", "..", "~") for part in last.split("/")):
        return None
    try:
        if not Path(last).expanduser().is_dir():
            return None
    except (OSError, RuntimeError, ValueError):  # too long, unreadable, no home, a NUL: query text
        return None
    words.pop()
    return last


def _queries(args: argparse.Namespace, within: Within | None = None) -> list[str] | None:
    """The query, or the batch file's lines (None after saying why there are none); ``within``: kept to
    that part of the root."""
    if args.batch is None and not args.query:
        err("search needs a QUERY or --batch FILE")
        return None
    if args.batch is None and not " ".join(args.query).strip():
        err("search needs a QUERY: the one given is empty")
        return None
    try:
        queries = _read_batch(args.batch) if args.batch is not None else [" ".join(args.query)]
        return [within.query(q) for q in queries] if within is not None else queries
    except OSError as exc:
        err(f"cannot read batch file: {exc}")
        return None


def _answer_json(resp: SearchResponse, max_tokens: int | None) -> dict[str, Any]:
    """A query's JSON answer; with ``--max-tokens``, its hits fitted to that budget (see budget.py)."""
    if not max_tokens or resp.error is not None:
        return dict(resp.to_json())
    from aide_tui.core.search.budget import budgeted_json

    return budgeted_json(resp, max_tokens)


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


def _write_locations(
    out: TextIO, root: Path, resp: SearchResponse, fmt: str, limit: int, within: Within | None = None
) -> None:
    """``vimgrep``: ``path:line:col:text`` at each best line; ``paths``: the first ``limit`` distinct
    files in rank order (``within``: only its files; paths are shown from the current folder anyway).
    A hit of another workspace (``--all-workspaces``) is shown under the root it was indexed from.
    Control characters in names are escaped and in line text shown (␛), as the text format does."""
    from aide_tui.core.search.hitlines import vimgrep_line
    from aide_tui.core.textsafe import visible

    def shown(h: Hit) -> str:
        return printable(path_from_cwd(Path(h.root) if h.workspace and h.root else root, h.path))

    if resp.degraded:
        err(f"degraded (BM25 only): {resp.degraded_reason}")
    if resp.no_results:
        err(resp.no_results)
    if within is not None:
        resp = replace(resp, results=[h for h in resp.results if within.inside(h.path)])
    if fmt == "paths":
        for path in list(dict.fromkeys(shown(h) for h in resp.results))[:limit]:
            out.write(path + "\n")
        return
    for h in resp.results:
        out.write(visible(vimgrep_line(shown(h), h)) + "\n")
