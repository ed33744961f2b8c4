"""``aide-tui ask``: a cited answer to a question about the code, from a local model server.

Retrieval is ``search``'s own (the same refresh, the same Searcher); the model's answer streams to
stdout as it comes (control characters escaped), then the citations. ``--json`` prints one object when
the answer is complete. Problems are one line on stderr: exit 2 for bad input or config, 1 when the
index or the model server fails (with how to start a server when none answers).
"""

from __future__ import annotations

import argparse
import json
import sys

from aide_tui.cli.common import err, printable, setup
from aide_tui.cli.console import StderrConsole
from aide_tui.core.answer.ask import (
    MAX_QUESTION,
    Answered,
    AskCancelled,
    AskFailed,
    AskResult,
    Retrieved,
    ask,
    chat_for,
    probe,
)
from aide_tui.core.answer.chat import ChatError, TokenText
from aide_tui.core.config import Settings
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.textsafe import printable_lines
from aide_tui.host.oneshot import CannotAnswer, open_workspace


def cmd_ask(args: argparse.Namespace) -> int:
    """``aide-tui ask --path ROOT [--json] [--backend ...] [--url ...] [--model ...] QUESTION``."""
    question = " ".join(args.question).strip()
    if not question:
        err("ask needs a QUESTION")
        return 2
    if len(question) > MAX_QUESTION:
        err(f"the question is longer than {MAX_QUESTION} characters")
        return 2
    ready = setup(args.path, args)
    if ready is None:
        return 2
    root, settings = ready
    try:
        chat_for(settings.answer).close()  # a refused URL or a missing model name: before any work
    except ChatError as exc:
        err(str(exc))
        return 2
    hint = probe(settings.answer)  # no server listening: say how to start one, before indexing
    if hint is not None:
        err(hint)
        return 1
    mode = settings.search.mode
    try:
        shot = open_workspace(root, settings, StderrConsole(), mode=mode, update=not args.no_update,
                              wait=args.wait)  # fmt: skip
    except CannotAnswer as exc:
        return exc.code
    try:
        return _answer(question, shot.searcher, settings, mode, args.json)
    finally:
        shot.close()


def _answer(question: str, searcher: Searcher, settings: Settings, mode: str, as_json: bool) -> int:
    """Run the ask and print its events; the exit code."""
    out = sys.stdout
    streamed = False
    for event in ask(question, lambda q, n: searcher.search(q, limit=n, mode=mode), settings.answer):
        if isinstance(event, Retrieved):
            if event.degraded_reason:
                err(f"degraded (BM25 only): {event.degraded_reason}")
            if event.rerank and event.rerank.startswith("degraded"):
                err(f"rerank {event.rerank} (fused order kept)")
        elif isinstance(event, TokenText) and not as_json:
            out.write(_safe(event.text))
            out.flush()
            streamed = True
        elif isinstance(event, Answered):
            _print_result(event.result, as_json, streamed)
            return 0
        elif isinstance(event, AskFailed | AskCancelled):
            if streamed:
                out.write("\n")
                out.flush()
            err(event.message if isinstance(event, AskFailed) else "cancelled")
            return 1
    return 1  # pragma: no cover - ask always ends with one of the events above


def _safe(text: str) -> str:
    return printable_lines(text)


def _print_result(result: AskResult, as_json: bool, streamed: bool) -> None:
    """The JSON object, or the citations after the streamed answer (unknown numbers on stderr)."""
    out = sys.stdout
    if as_json:
        out.write(json.dumps(result.to_json()) + "\n")
        out.flush()
        return
    if streamed and not result.answer.endswith("\n"):
        out.write("\n")
    if not result.answer.strip():
        err("the model returned an empty answer")
    symbols = {e.n: e.hit.symbol for e in result.excerpts}
    out.write("\nCitations:\n" if result.citations else "\nNo citations.\n")
    for c in result.citations:
        symbol = f"  {printable(symbols[c.n])}" if symbols.get(c.n) else ""
        out.write(f"  [{c.n}] {printable(c.path)}:{c.start_line}-{c.end_line}{symbol}\n")
    out.flush()
    if result.unknown_citations:
        numbers = ", ".join(f"[{n}]" for n in result.unknown_citations)
        err(f"the answer cites {numbers}, which no excerpt has (dropped; {len(result.excerpts)} were sent)")
