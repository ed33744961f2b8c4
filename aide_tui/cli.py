"""Command line: ``aide-tui index|search|status`` over the core, and ``aide-tui [PATH]`` for the TUI.

The JSON shapes are fixed by the shared CONTRACT.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aide_tui import __version__

SUBCOMMANDS = ("index", "search", "status")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", choices=["builtin", "openai", "ollama", "none"], help="embedding backend")
    p.add_argument("--embedding-url", help="embedding server URL (openai/ollama)")
    p.add_argument("--embedding-model", help="model name sent to the embedding server")
    p.add_argument(
        "--allow-remote-embedder",
        action="store_true",
        default=None,
        help="allow a non-loopback embedding URL (your code is sent there)",
    )
    p.add_argument("--lock-timeout", type=float, help="seconds to wait for another indexer (default 30)")
    p.add_argument("--max-file-kb", type=int, help="skip files larger than this (default 512)")


def build_parser() -> argparse.ArgumentParser:
    """The subcommand parser (the TUI has its own, see ``_tui_parser``)."""
    parser = argparse.ArgumentParser(
        prog="aide-tui",
        description="Offline code search for the terminal.",
        epilog="Without a subcommand, `aide-tui [PATH] [--no-watch] [--embedder ...]` opens the TUI on PATH "
        "(default .); write ./index for a folder named like a subcommand.",
    )
    parser.add_argument("--version", action="version", version=f"aide-tui {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build or incrementally update ROOT's index")
    p.add_argument("root", nargs="?", default=".")
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    p.add_argument("--rebuild", action="store_true", help="ignore the existing index (config is kept)")
    p.add_argument(
        "--progress", action="store_true", help="print progress events as JSON lines (for the TUI)"
    )
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("--priority-json", help=argparse.SUPPRESS)  # files to embed first (from the TUI)
    _common(p)

    p = sub.add_parser("search", help="search ROOT's index")
    p.add_argument("query", nargs="*", help="query text")
    p.add_argument("--path", default=".", help="workspace root (default .)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--batch", help="file with one query per line ('-' = stdin)")
    p.add_argument("--no-update", action="store_true", help="do not refresh the index before searching")
    p.add_argument("--rrf-k", type=int, help="RRF constant (default 20)")
    _common(p)

    p = sub.add_parser("status", help="show the state of ROOT's index")
    p.add_argument("root", nargs="?", default=".")
    p.add_argument("--json", action="store_true")
    _common(p)
    return parser


def _tui_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aide-tui", description="Offline code search for the terminal.")
    p.add_argument("--version", action="version", version=f"aide-tui {__version__}")
    p.add_argument(
        "path", nargs="?", default=".", help="workspace (default .); subcommands: index, search, status"
    )
    p.add_argument("--no-watch", action="store_true", help="do not watch the workspace for changes")
    _common(p)
    return p


def _flags(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Map parsed flags onto config sections (only the ones given)."""
    out: dict[str, dict[str, Any]] = {"embedding": {}, "index": {}, "search": {}}
    pairs = [
        ("embedder", "embedding", "backend"),
        ("embedding_url", "embedding", "url"),
        ("embedding_model", "embedding", "model"),
        ("allow_remote_embedder", "embedding", "allow_remote"),
        ("lock_timeout", "index", "lock_timeout"),
        ("max_file_kb", "index", "max_file_kb"),
        ("mode", "search", "mode"),
        ("rrf_k", "search", "rrf_k"),
    ]
    for attr, section, key in pairs:
        value = getattr(args, attr, None)
        if value is not None:
            out[section][key] = value
    return {k: v for k, v in out.items() if v}


def _err(message: str) -> None:
    print(f"aide-tui: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aide-tui`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS or argv[:1] in (["-h"], ["--help"]):
        args = build_parser().parse_args(argv)
        handler = {"index": cmd_index, "search": cmd_search, "status": cmd_status}[args.command]
    else:
        args = _tui_parser().parse_args(argv)
        handler = cmd_tui
    try:
        return handler(args)
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return 0


def _setup(root_arg: str, args: argparse.Namespace) -> tuple[Path, Any] | None:
    from aide_tui.core.config import ConfigError, Settings, apply_mapping, load_settings

    root = Path(root_arg).expanduser()
    if not root.is_dir():
        _err(f"{root_arg}: not a directory")
        return None
    try:
        if getattr(args, "settings_json", None):  # already resolved by the parent process (TUI)
            return root.resolve(), apply_mapping(Settings(), json.loads(args.settings_json), "settings")
        return root.resolve(), load_settings(root.resolve(), _flags(args))
    except ConfigError as exc:
        _err(f"config error: {exc}")
        return None


def _embedder(settings: Any, for_indexing: bool = False) -> tuple[Any, str | None]:
    from aide_tui.core.embed.base import EmbedderError
    from aide_tui.core.embed.factory import make_embedder

    try:
        return make_embedder(settings, for_indexing=for_indexing), None
    except EmbedderError as exc:
        return None, str(exc)


def _run_index(
    root: Path,
    settings: Any,
    embedder: Any,
    emb_err: str | None,
    rebuild: bool = False,
    as_json: bool = False,
    priority: tuple[str, ...] = (),
) -> Any:
    from dataclasses import asdict

    from aide_tui.core.indexer import Indexer, Progress

    show = sys.stderr.isatty() and not as_json

    def progress(p: Progress) -> None:
        if as_json:
            print(json.dumps({"event": "progress", **asdict(p)}), flush=True)
            return
        if not show:
            return
        if p.state == "embedding" and p.chunks_to_embed:
            line = f"embedding {p.chunks_embedded}/{p.chunks_to_embed} chunks"
        elif p.files_total:
            line = f"{p.state} {p.files_done}/{p.files_total} files"
        else:
            line = p.message or p.state
        print(f"\r\x1b[K{line}", end="", file=sys.stderr, flush=True)

    try:
        report = Indexer(root, settings, embedder, emb_err).run(
            on_progress=progress, rebuild=rebuild, priority=priority
        )
    finally:
        if hasattr(embedder, "close"):
            embedder.close()
    if show:
        print("\r\x1b[K", end="", file=sys.stderr)
    if not as_json:
        for msg in report.messages:
            _err(msg)
    return report


def cmd_index(args: argparse.Namespace) -> int:
    """``aide-tui index ROOT``."""
    from aide_tui.core.store import IndexError_

    setup = _setup(args.root, args)
    if setup is None:
        return 2
    root, settings = setup
    embedder, emb_err = _embedder(settings, for_indexing=True)
    try:
        priority = tuple(json.loads(args.priority_json)) if args.priority_json else ()
        report = _run_index(
            root, settings, embedder, emb_err, rebuild=args.rebuild, as_json=args.progress, priority=priority
        )
    except IndexError_ as exc:
        _err(str(exc))
        return 1
    except OSError as exc:
        _err(f"cannot write the index: {exc}")
        return 1
    if report.degraded:
        _err(f"degraded (BM25 only): {report.degraded_reason}")
    summary = {
        "files": report.files,
        "chunks": report.chunks,
        "seconds": round(report.seconds, 3),
        "embedder": report.embedder,
        "degraded": report.degraded,
        "degraded_reason": report.degraded_reason,
    }
    if args.progress:
        extra = {
            "changed": report.changed,
            "removed": report.removed,
            "embedded": report.embedded,
            "skipped": len(report.skipped),
            "messages": report.messages,
            "cancelled": report.cancelled,
        }
        print(json.dumps({"event": "done", **summary, **extra}), flush=True)
    elif args.json:
        print(json.dumps(summary))
    else:
        print(
            f"indexed {report.files} files, {report.chunks} chunks ({report.changed} changed, "
            f"{report.removed} removed, {report.newly_embedded} vectors computed) in {report.seconds:.2f}s"
            f" [{report.embedder}]"
        )
    return 0


def _read_batch(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def cmd_search(args: argparse.Namespace) -> int:
    """``aide-tui search --path ROOT [--json] QUERY | --batch FILE``."""
    from aide_tui.core.indexer import index_dir_for
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


def cmd_status(args: argparse.Namespace) -> int:
    """``aide-tui status [ROOT] [--json]``."""
    from aide_tui.core.indexer import read_status, status_degraded_reason

    setup = _setup(args.root, args)
    if setup is None:
        return 2
    root, settings = setup
    st = read_status(root)
    reason = status_degraded_reason(st, settings.embedding.backend)
    out = {
        "state": st["state"],
        "files": st["files"],
        "chunks": st["chunks"],
        "embedded": st["embedded"],
        "embedder": st["embedder"],
        "degraded": reason is not None,
        "degraded_reason": reason,
        "last_indexed": st["last_indexed"],
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{root}: {out['state']}, {out['files']} files, {out['chunks']} chunks, "
            f"{out['embedded']} embedded [{out['embedder']}], last indexed {out['last_indexed'] or 'never'}"
        )
        if "error" in st:
            print(st["error"])
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    """Open the Textual app on PATH."""
    setup = _setup(args.path, args)
    if setup is None:
        return 2
    root, settings = setup
    try:
        from aide_tui.tui.app import AideApp
    except ImportError as exc:
        _err(f"the TUI is unavailable: {exc}")
        return 1
    os.environ.setdefault("TEXTUAL_FPS", "30")
    AideApp(root, settings, watch=not args.no_watch).run()
    return 0
