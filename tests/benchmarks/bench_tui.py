"""Benchmark of the Textual app, headless (a script; not collected by pytest).

Usage: python tests/benchmarks/bench_tui.py [CORPUS] [--embedder none|builtin] [--while-embedding]
       [--store local|milvus] [--screenshot FILE]

CORPUS defaults to the largest eval corpus, /tmp/aide-eval/rich-13.9.4. It is copied to a temporary
folder (without its ``.aide``) so the index is cold. Reports:

- the longest UI stall while the cold index runs (an asyncio ticker on the app's loop, every 10 ms),
  plus the cold index time as the app sees it;
- keystroke latency p50/p95: queries are typed one character at a time (a key event every ~30 ms, sent
  the way the terminal driver sends it), each measured from the key to (echo) the first frame the
  headless driver writes after it and (results painted) the frame that follows the results list
  holding the results for that exact query string.

``--while-embedding`` (builtin embedder) types the queries as soon as the lexical index is searchable,
while the indexer embeds in the background, instead of after the cold index finished.
"""

from __future__ import annotations

import argparse
import asyncio
import os

os.environ.setdefault("TEXTUAL_FPS", "120")  # as `aide-tui` runs the app (before Textual is imported)
import shutil
import sys
import tempfile
import time
from pathlib import Path

from textual import events

from aide_tui.core.config import load_settings
from aide_tui.tui.app import AideApp
from aide_tui.tui.widgets import IndexBar, Preview, QueryInput, ResultsList, StatusLine

CALM_GC = "calm_gc" in AideApp.__init__.__code__.co_varnames  # the app as `aide-tui` runs it
DEFAULT_CORPUS = Path("/tmp/aide-eval/rich-13.9.4")
QUERIES = [
    "console render",
    "Segment",
    "progress bar",
    "__rich_console__",
    "markdown table",
    "traceback frames",
    "live refresh rate",
    "highlighter regex",
    "path:rich/*.py lang:python measure",
    "syntax theme",
]


class Ticker:
    """Records the longest gap between 10 ms ticks of the event loop (= the longest UI stall)."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.max_gap = 0.0
        self.max_gap_cpu = 0.0  # CPU time the UI thread itself used during that gap
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(self.period)
            now, cpu = time.perf_counter(), time.thread_time()
            gap = now - last - self.period
            if gap > self.max_gap:
                self.max_gap, self.max_gap_cpu = gap, cpu - last_cpu
            self.ticks += 1
            last, last_cpu = now, cpu

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class FrameClock:
    """Times at which the app finished composing a frame (headless: what a terminal would receive)."""

    def __init__(self, app: AideApp) -> None:
        self.app = app
        self.times: list[float] = [time.perf_counter()]
        self._display = app._display
        app._display = self._record  # type: ignore[method-assign]

    def _record(self, screen: object, renderable: object) -> None:
        if renderable is not None:
            self.times.append(time.perf_counter())
        self._display(screen, renderable)  # type: ignore[arg-type]

    @property
    def last(self) -> float:
        return self.times[-1]

    def first_after(self, t: float) -> float:
        return next((x for x in self.times if x > t), t)

    def stop(self) -> None:
        self.app._display = self._display  # type: ignore[method-assign]


def send_key(app: AideApp, ch: str) -> None:
    """Deliver one key event the way the terminal driver does."""
    key = events.Key("space" if ch == " " else ch, ch)
    key.set_sender(app)
    assert app._driver is not None
    app._driver.send_message(key)


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def bench(corpus: Path, embedder: str, screenshot: Path | None, while_embedding: bool = False,
                store: str = "local") -> None:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="aide-bench-tui-") as tmp:
        root = Path(tmp) / corpus.name
        shutil.copytree(corpus, root, ignore=shutil.ignore_patterns(".aide"))
        settings = load_settings(root, {"embedding": {"backend": embedder}, "store": {"backend": store}})
        os.environ.setdefault("XDG_STATE_HOME", str(Path(tmp) / "state"))
        app = AideApp(root, settings, watch=False, **({"calm_gc": True} if CALM_GC else {}))
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.main_screen  # its widgets, as the user sees them
            box, results = screen.query_one(QueryInput), screen.query_one(ResultsList)
            bar, status, preview = (
                screen.query_one(IndexBar),
                screen.query_one(StatusLine),
                screen.query_one(Preview),
            )
            ticker = Ticker()
            ticker.start()
            t0 = time.perf_counter()
            typed_during_index = 0

            def indexed() -> bool:
                if while_embedding:
                    return status.chunks > 0 and bar.state == "embedding"
                return bar.runs_done >= 1

            while not indexed():  # type while the cold index runs: the UI must stay live
                await pilot.press("a" if typed_during_index % 2 == 0 else "backspace")
                typed_during_index += 1
                await asyncio.sleep(0.05)
                if time.perf_counter() - t0 > 1800:
                    raise SystemExit("cold index did not finish within 30 minutes")
            index_s = time.perf_counter() - t0
            ticker.stop()
            print(f"corpus {corpus.name}: {status.files} files, {status.chunks} chunks, embedder {embedder}")
            print(f"load average at start: {os.getloadavg()[0]:.2f}")
            what = "lexical index searchable" if while_embedding else "cold index (as seen by the app)"
            print(f"{what}: {index_s:.1f} s; {typed_during_index} keys typed meanwhile")
            stall_ms = ticker.max_gap * 1000
            print(f"longest UI stall during the cold index: {stall_ms:.1f} ms over {ticker.ticks} ticks "
                  f"(UI thread on CPU for {ticker.max_gap_cpu * 1000:.1f} ms of it)")  # fmt: skip

            if embedder != "none":  # let the query embedder finish loading before timing queries
                while not status.embedder_ready and status.embedder_error is None:
                    await asyncio.sleep(0.05)
            latencies: list[float] = []
            echo: list[float] = []
            took: list[float] = []
            stall = Ticker()
            stall.start()
            frames = FrameClock(app)
            for query in QUERIES:
                box.value = ""
                await pilot.pause(0.1)
                typed = ""
                for ch in query:
                    typed += ch
                    start = time.perf_counter()
                    send_key(app, ch)  # as a terminal would: no pilot waits for idle in between
                    while results.shown_query != typed:
                        await asyncio.sleep(0.0005)
                    seen = time.perf_counter()
                    while frames.last <= seen and time.perf_counter() - seen < 0.5:
                        await asyncio.sleep(0.0005)  # the frame that draws them reached the terminal
                    latencies.append((frames.last if frames.last > seen else seen) - start)
                    echo.append(frames.first_after(start) - start)
                    if status.took_ms is not None:
                        took.append(status.took_ms)
                    await asyncio.sleep(0.03)  # about a typist's pace between keys
            stall.stop()
            frames.stop()
            ms = [x * 1000 for x in latencies]
            ems = [x * 1000 for x in echo]
            print(f"keystroke → first frame (echo) ({len(ems)} keys): p50 {pct(ems, 0.5):.1f} ms, "
                  f"p95 {pct(ems, 0.95):.1f} ms")  # fmt: skip
            print(f"keystroke → results painted ({len(ms)} keys): p50 {pct(ms, 0.5):.1f} ms, "
                  f"p95 {pct(ms, 0.95):.1f} ms, max {max(ms):.1f} ms")  # fmt: skip
            if while_embedding:
                print(f"  index line at the end: {bar.label}")
            print(f"  search itself (took_ms): p50 {pct(took, 0.5):.1f} ms, p95 {pct(took, 0.95):.1f} ms")
            print(f"longest UI stall while typing: {stall.max_gap * 1000:.1f} ms "
                  f"(UI thread on CPU for {stall.max_gap_cpu * 1000:.1f} ms of it)")  # fmt: skip
            print(f"load average at the end: {os.getloadavg()[0]:.2f}")
            if screenshot is not None:
                box.value = ""
                await pilot.press(*"console render")
                while results.shown_query != "console render" or preview.shown is None:
                    await asyncio.sleep(0.01)
                await pilot.pause(0.2)
                app.save_screenshot(str(screenshot))
                print(f"screenshot saved to {screenshot}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    p.add_argument("--embedder", choices=["none", "builtin"], default="none")
    p.add_argument("--screenshot", type=Path, help="save an SVG of the main screen with results")
    p.add_argument("--while-embedding", action="store_true", help="type while the indexer embeds")
    p.add_argument("--store", choices=["local", "milvus"], default="local",
                   help="milvus: a Milvus Lite store in the copy's .aide (hosted by the app)")  # fmt: skip
    args = p.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"{args.corpus}: not found (generate /tmp/aide-eval first or pass a folder)", file=sys.stderr)
        return 2
    asyncio.run(bench(args.corpus, args.embedder, args.screenshot, args.while_embedding, args.store))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
