"""``aide-tui search``: refresh the index, then answer one query or a batch (one JSON line each)."""

from __future__ import annotations

import argparse
import json
import sys

from aide_tui.cli.common import err as _err
from aide_tui.cli.common import make_embedder as _embedder
from aide_tui.cli.common import run_index as _run_index
from aide_tui.cli.common import setup as _setup


def _read_batch(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def cmd_search(args: argparse.Namespace) -> int:
    """``aide-tui search --path ROOT [--json] QUERY | --batch FILE``."""
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.search import Searcher, SearchResponse
    from aide_tui.core.store import IndexError_, LockTimeout, read_manifest

    setup = _setup(args.path, args)
    if setup is None:
        return 2
    root, settings = setup
    mode = settings.search.mode
    if args.batch is None and not args.query:
        _err("search needs a QUERY or --batch FILE")
        return 2
    try:
        queries = _read_batch(args.batch) if args.batch is not None else [" ".join(args.query)]
    except OSError as exc:
        _err(f"cannot read batch file: {exc}")
        return 2
    embedder, emb_err = (None, None) if mode == "bm25" else _embedder(settings)
    have_index = True
    try:
        read_manifest(index_dir_for(root, create=False))
    except IndexError_:
        have_index = False
    if not args.no_update or not have_index:
        # the configured embedder even in bm25 mode, so an update never drops existing vectors
        idx_embedder, idx_err = _embedder(settings, for_indexing=True)
        try:
            if have_index:
                from dataclasses import replace

                quick = replace(settings, index=replace(settings.index, lock_timeout=0.0))
                _run_index(root, quick, idx_embedder, idx_err)
            else:
                _run_index(root, settings, idx_embedder, idx_err)
        except LockTimeout as exc:
            if not have_index:
                _err(str(exc))
                return 1
            _err(f"{exc}; searching the existing index")
        except OSError as exc:
            _err(f"cannot update the index: {exc}")
            if not have_index:
                return 1
    searcher = Searcher(root, settings, embedder, emb_err)
    try:
        searcher.refresh()
    except IndexError_ as exc:
        _err(str(exc))
        return 1
    if mode == "dense":
        probe = searcher.search("probe", limit=1, mode="dense")
        if probe.degraded or embedder is None:
            _err(
                "--mode dense needs a working embedder: "
                + (probe.degraded_reason or emb_err or "none configured")
            )
            return 1
    elif embedder is not None and hasattr(embedder, "load"):
        try:
            embedder.load()  # one-time model load, kept out of took_ms
        except Exception:  # noqa: BLE001 - reported as degraded by the search itself
            pass
    out = sys.stdout
    for q in queries:
        q = q.rstrip("\r")
        if not q.strip():
            resp = SearchResponse(query=q, results=[], mode=mode)
        else:
            resp = searcher.search(q, limit=max(args.limit, 0), mode=mode)
        if args.json:
            out.write(json.dumps(resp.to_json()) + "\n")
        else:
            if resp.degraded:
                _err(f"degraded (BM25 only): {resp.degraded_reason}")
            for h in resp.results:
                out.write(f"{h.path}:{h.start_line}-{h.end_line}  {h.symbol or ''}  {h.score:.4f}\n")
            if not resp.results:
                out.write("no results\n")
        out.flush()
    return 0
