"""Ask-the-code benchmark (not in the default test run): what the tool adds before the model's first
token, the prompt's size against its budget, and the cost of reranking the top 30.

    cp -r /tmp/aide-eval/rich-13.9.4 /tmp/askb && aide-tui index /tmp/askb --embedder builtin
    python tests/benchmarks/bench_ask.py /tmp/askb --embedder builtin [--rounds 3]

The model server is the tests' loopback fake (tests/unit/model_server.py), which answers at once, so
"Enter → first token" is all ours: retrieval, prompt building, the HTTP request and the first event's
parsing. The searcher is warm (as in the app: index loaded, encoder loaded). Figures print as Markdown.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit"))

from model_server import ModelServer  # noqa: E402

from aide_tui.core.answer.ask import Retrieved, ask  # noqa: E402
from aide_tui.core.answer.chat import TokenText  # noqa: E402
from aide_tui.core.config import load_settings  # noqa: E402
from aide_tui.core.embed.factory import make_embedder  # noqa: E402
from aide_tui.core.search import rerank  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402

QUESTIONS = [
    "how does the console measure the width of a renderable?",
    "where are markup tags parsed into styles?",
    "how is a table's column width computed when the terminal is narrow?",
    "what happens when a progress bar task finishes?",
    "how does the live display refresh without flicker?",
    "where is the syntax highlighting theme chosen?",
    "how are emoji codes replaced in text?",
    "how does traceback rendering show local variables?",
    "where is the color system of the terminal detected?",
    "how are segments split into lines with wrapping?",
    "how does the prompt validate a choice the user typed?",
    "where does the logging handler format the time column?",
    "how is a panel's title aligned?",
    "how does pretty printing decide to expand a container?",
    "how are spinners animated?",
    "where is a tree's guide style applied?",
    "how does Text.from_ansi decode escape sequences?",
    "what does the pager do with the console output?",
    "how is a layout split into rows and columns?",
    "how are hyperlinks written to the terminal?",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def first_token(searcher: Searcher, settings: Any, question: str) -> tuple[float, Retrieved]:
    """Milliseconds from the call to the first answer piece, and the context it used."""
    got: Retrieved | None = None
    t0 = time.perf_counter()
    for event in ask(question, lambda q, n: searcher.search(q, limit=n), settings.answer):
        if isinstance(event, Retrieved):
            got = event
        elif isinstance(event, TokenText):
            took = (time.perf_counter() - t0) * 1000
            break
    else:
        raise SystemExit(f"no answer for {question!r}: {event}")
    assert got is not None
    return took, got


def bench_first_token(root: Path, settings: Any, embedder: Any, rounds: int) -> None:
    with ModelServer() as srv:
        srv.reply = "Instant [1]."
        answer = replace(settings.answer, url=srv.url)
        settings = replace(settings, answer=answer)
        searcher = Searcher(root, settings, embedder)
        searcher.refresh()
        if embedder is not None and hasattr(embedder, "load"):
            embedder.load()
        first_token(searcher, settings, "warm up")
        totals: list[float] = []
        prep: list[float] = []
        ctx: list[int] = []
        prompt_chars: list[int] = []
        excerpts: list[int] = []
        trimmed = 0
        counter = getattr(embedder, "count_tokens", None)  # the builtin encoder's WordPiece: a proxy
        wordpiece: list[int] = []
        estimated: list[int] = []
        for _ in range(rounds):
            for q in QUESTIONS:
                searcher._qcache.clear()  # a question is asked once: its query vector is computed
                took, got = first_token(searcher, settings, q)
                totals.append(took)
                prep.append(got.took_ms)
                ctx.append(got.context_tokens)
                prompt_chars.append(sum(len(m["content"]) for m in got.messages))
                if counter is not None:
                    wordpiece.append(sum(counter(m["content"]) for m in got.messages))
                    estimated.append(got.prompt_tokens)
                excerpts.append(len(got.excerpts))
                trimmed += sum(e.trimmed for e in got.excerpts)
        n = len(totals)
        print(f"\n{n} asks ({len(QUESTIONS)} questions x {rounds}), mode {settings.search.mode}, "
              f"limit {answer.limit}, budget {answer.max_context_tokens} tokens\n")  # fmt: skip
        http = [t - p for t, p in zip(totals, prep, strict=True)]
        print("| measure | median | p95 | max |\n|---|---:|---:|---:|")
        for label, values, fmt in (
            ("Enter → first answer token (ms)", totals, ".1f"),
            ("of which retrieval + prompt (ms)", prep, ".1f"),
            ("of which request → first event (ms)", http, ".1f"),
            ("excerpts sent", excerpts, ".0f"),
            ("context, estimated tokens", ctx, ".0f"),
            ("whole prompt, characters", prompt_chars, ".0f"),
        ):
            med, p95, top = statistics.median(values), pct(values, 0.95), max(values)
            print(f"| {label} | {med:{fmt}} | {p95:{fmt}} | {top:{fmt}} |")
        print(f"\nhits trimmed to fit: {trimmed} of {sum(excerpts)}")
        if wordpiece:
            ratio = [w / e for w, e in zip(wordpiece, estimated, strict=True)]
            print("whole prompt, WordPiece tokens (BERT uncased, a proxy): median "
                  f"{statistics.median(wordpiece):.0f}, max {max(wordpiece)}; WordPiece / estimate: median "
                  f"{statistics.median(ratio):.2f}, max {max(ratio):.2f}")  # fmt: skip


def bench_rerank(root: Path, settings: Any, embedder: Any, rounds: int) -> None:
    with ModelServer() as srv:
        knobs = replace(settings.search, rerank="http", rerank_url=srv.url, rerank_top=30)
        on = replace(settings, search=knobs)
        plain = Searcher(root, settings, embedder)
        ranked = Searcher(root, on, embedder)
        plain.refresh()
        ranked.refresh()
        for s in (plain, ranked):
            s.search("warm up", limit=10)
        base: list[float] = []
        with_rr: list[float] = []
        sent: list[int] = []
        for _ in range(rounds):
            for q in QUESTIONS:
                plain._qcache.clear()
                t0 = time.perf_counter()
                plain.search(q, limit=10)
                base.append((time.perf_counter() - t0) * 1000)
                rerank.reset_cooldown()
                ranked._qcache.clear()
                t0 = time.perf_counter()
                resp = ranked.search(q, limit=10)
                with_rr.append((time.perf_counter() - t0) * 1000)
                assert resp.rerank == "ok", resp.rerank
                body = srv.requests[-1].body
                sent.append(sum(len(d) for d in body["documents"]))
        cost = [b - a for a, b in zip(base, with_rr, strict=True)]
        print(f"\nrerank at top 30, {len(cost)} searches (limit 10), loopback reranker answering at once\n")
        print("| measure | median | p95 |\n|---|---:|---:|")
        print(f"| search without rerank (ms) | {statistics.median(base):.1f} | {pct(base, 0.95):.1f} |")
        print(f"| search with rerank (ms) | {statistics.median(with_rr):.1f} | {pct(with_rr, 0.95):.1f} |")
        print(f"| rerank cost per query (ms) | {statistics.median(cost):.1f} | {pct(cost, 0.95):.1f} |")
        print(f"| characters sent per query | {statistics.median(sent):.0f} | {pct(sent, 0.95):.0f} |")


def bench_cli(root: Path, embedder_name: str) -> None:
    """Wall time of ``aide-tui ask`` from start to its first answer byte (process start, settings,
    index check, loading the index, retrieval), median of 5."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}, "PYTHONPATH": str(REPO)}
    with ModelServer() as srv:
        srv.reply = "Instant [1]."
        times = []
        for q in QUESTIONS[:5]:
            cmd = [sys.executable, "-m", "aide_tui", "ask", "--path", str(root), "--embedder", embedder_name,
                   "--url", srv.url, q]  # fmt: skip
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            assert proc.stdout is not None
            proc.stdout.read(1)
            times.append((time.perf_counter() - t0) * 1000)
            proc.communicate(timeout=120)
        print(f"\n`aide-tui ask` start → first answer byte (ms), median of 5: {statistics.median(times):.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--embedder", default="builtin")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    settings = load_settings(args.root, {"embedding": {"backend": args.embedder}})
    embedder = make_embedder(settings)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    bench_first_token(args.root, settings, embedder, args.rounds)
    bench_rerank(args.root, settings, embedder, args.rounds)
    bench_cli(args.root, args.embedder)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
