"""``aide-tui index ROOT``: build or incrementally update the index."""

from __future__ import annotations

import argparse
import json

from aide_tui.cli.common import err, printable, root_arg, setup
from aide_tui.cli.console import JsonProgress, StderrConsole
from aide_tui.core.errors import IndexProblem
from aide_tui.core.events import event_to_json
from aide_tui.core.priority import lower_priority
from aide_tui.host.oneshot import index_workspace

SHOW_SKIPPED = 20


def cmd_index(args: argparse.Namespace) -> int:
    """Index ROOT; ``--json`` ends with the contract's summary line, ``--progress`` streams events."""
    given = root_arg(args)
    ready = None if given is None else setup(given, args)
    if ready is None:
        return 2
    if args.background:
        lower_priority()
    root, settings = ready
    priority = tuple(json.loads(args.priority_json)) if args.priority_json else ()
    console = JsonProgress() if args.progress else StderrConsole()
    try:
        report = index_workspace(root, settings, console, rebuild=args.rebuild, priority=priority)
    except IndexProblem as exc:
        err(str(exc))
        return 1
    except OSError as exc:
        err(f"cannot write the index: {exc}")
        return 1
    warnings = report.warnings  # invalid ignore lines, chunker fallbacks, dropped cache blocks, ...
    if not args.progress:
        for warning in warnings:
            err(warning)
    if report.degraded:
        err(f"degraded (BM25 only): {report.degraded_reason}")
    summary = {
        "files": report.files,
        "chunks": report.chunks,
        "seconds": round(report.seconds, 3),
        "embedder": report.embedder,
        "degraded": report.degraded,
        "degraded_reason": report.degraded_reason,
    }
    skipped = sorted(report.skipped_files.items())
    if args.progress:
        print(json.dumps(event_to_json(report)), flush=True)
    elif args.json:
        summary["vectors_missing"] = report.vectors_missing
        summary["static_missing"] = report.static_missing
        summary["static"] = report.static or None
        summary["skipped"] = [{"path": p, "reason": why} for p, why in skipped]
        summary["warnings"] = warnings
        print(json.dumps(summary))
    else:
        missing = f", {report.vectors_missing} vectors still to compute" if report.vectors_missing else ""
        if report.static and report.static_missing:
            missing += f", {report.static_missing} chunks without static vectors"
        print(
            f"indexed {report.files} files, {report.chunks} chunks ({report.changed} changed, "
            f"{report.removed} removed, {report.newly_embedded} vectors computed{missing}) "
            f"in {report.seconds:.2f}s [{report.embedder}]"
        )
        if skipped:
            print(f"skipped {len(skipped)} files:")
            for path, why in skipped[:SHOW_SKIPPED]:
                print(f"  {printable(path)}: {printable(why)}")
            if len(skipped) > SHOW_SKIPPED:
                print(f"  … and {len(skipped) - SHOW_SKIPPED} more (aide-tui index --json lists them all)")
    return 0
