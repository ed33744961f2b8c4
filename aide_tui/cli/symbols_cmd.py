"""``aide-tui defs`` and ``aide-tui refs``: where a name is defined or used, from the symbol graph.

A running host of the workspace (``serve``, the app, ``mcp``) answers from its warm index, as for
``search`` (``--no-server`` reads the index here); otherwise the index is refreshed first
(``--no-update`` skips it), so the lines listed are the files' current lines. Text output is
``path:line:col:text`` per location (vim's errorformat), with a note on stderr when the name is
ambiguous; ``--json`` prints the answer's object. Exit 1 when nothing is found (as grep), 2 on a usage
or store problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aide_tui.cli.common import err, path_from_cwd, printable, setup
from aide_tui.core.errors import IndexProblem
from aide_tui.core.search.symbols import NO_GRAPH, split_name
from aide_tui.core.storekind import store_kind
from aide_tui.core.textsafe import visible
from aide_tui.host.served import served_symbols


def cmd_defs(args: argparse.Namespace) -> int:
    """``aide-tui defs --path ROOT NAME``."""
    return _answer(args, "definitions")


def cmd_refs(args: argparse.Namespace) -> int:
    """``aide-tui refs --path ROOT NAME``."""
    return _answer(args, "references")


def _answer(args: argparse.Namespace, what: str) -> int:
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings = ready
    if split_name(args.name) is None:
        err(f"not an identifier: {args.name!r}")
        return 2
    if not store_kind(settings).symbol_graph:
        err(NO_GRAPH)
        return 2
    served = None if args.no_server else served_symbols(root, settings, what, args.name, args.limit)
    if served is not None:
        _write(served, what, root, args.json)
        return 0 if served.get("total") else 1
    from aide_tui.cli.console import StderrConsole
    from aide_tui.host.oneshot import CannotAnswer, open_workspace  # the search side: not for a served answer

    try:
        shot = open_workspace(root, settings, StderrConsole(), mode="bm25", update=not args.no_update,
                              wait=args.wait)  # fmt: skip
    except CannotAnswer as exc:
        return exc.code
    try:
        find = shot.searcher.definitions if what == "definitions" else shot.searcher.references
        answer = find(args.name, args.limit)
    except IndexProblem as exc:
        err(str(exc))
        return 1
    finally:
        shot.close()
    if answer.error:
        err(answer.error)
        return 2
    _write(answer.to_json(), what, root, args.json)
    return 0 if answer.total else 1


def _write(answer: dict[str, Any], what: str, root: Path, as_json: bool) -> None:
    """The answer's object (``SymbolAnswer.to_json``, from here or from a host) as JSON or as lines."""
    out = sys.stdout
    if as_json:
        out.write(json.dumps(answer) + "\n")
        out.flush()
        return
    note = answer.get("note")
    if note and (answer.get("ambiguous") or not answer.get("total")):
        err(f"note: {note}")
    for loc in answer.get(what, []):
        shown = printable(path_from_cwd(root, str(loc["path"])))
        out.write(visible(f"{shown}:{loc['line']}:{loc['col']}:{str(loc['text']).strip()}") + "\n")
    if answer.get("left_out"):
        err(f"{answer['left_out']} more not listed (--limit)")
    out.flush()
