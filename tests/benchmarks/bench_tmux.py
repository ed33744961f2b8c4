"""Latency of the installed app in a real terminal: tmux types, ``capture-pane`` reads the screen.

Usage (from a fresh checkout, see docs/benchmarks.md for the corpus):

    python tests/benchmarks/bench_tmux.py CORPUS [--app aide-tui] [--embedder none|builtin]
        [--mode bm25|hybrid] [--while-embedding] [--size 120x40] [--queries rich|sqlalchemy]

CORPUS is copied to a temporary folder. Unless ``--while-embedding``, it is indexed first with the CLI
(an idle index); the app is then opened in a detached tmux session (its own server socket) and each
query is typed one character at a time with ``send-keys``. After each key the pane is polled
(``capture-pane``, about every 2 ms) for:

- **echo**: the query line shows the typed text;
- **paint**: the first result row shows the top hit that ``aide-tui search --format json`` gives for that
  exact text (file name and line range; rows keep both at any width). Keys whose top hit is the same as
  the previous key's are not counted for paint (nothing visible changes).

With ``--while-embedding`` the corpus is not indexed with vectors first: the app starts the cold index
with the builtin embedder and the keys are typed in bm25 mode while it embeds (the BM25 answers do not
change as vectors land, so the expected rows stay valid). Prints p50/p95 (ms) and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

QUERIES = [
    "console render",
    "Segment",
    "progress bar",
    "__rich_console__",
    "markdown table",
    "traceback frames",
    "live refresh rate",
    "highlighter regex",
    "syntax theme",
    "measure width",
]
# Queries about SQLAlchemy's own code, for the big-workspace figures (issue 23 #9: SQLAlchemy-2.0.30's sdist,
# ~25k chunks).
SQLALCHEMY_QUERIES = [
    "session query",
    "relationship",
    "declarative base",
    "engine connect",
    "column type",
    "select where",
    "joined load",
    "mapper registry",
    "dialect cursor",
    "commit rollback",
]
QUERY_SETS = {"rich": QUERIES, "sqlalchemy": SQLALCHEMY_QUERIES}
SOCKET = f"aide-bench-{os.getpid()}"


def tmux(*args: str) -> str:
    out = subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False)
    return out.stdout


class Control:
    """A tmux control-mode client: commands go through one pipe, so polling the pane does not start a
    process per look (which would steal the CPU the app is being measured on)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def open(self) -> None:
        self.proc = subprocess.Popen(
            ["tmux", "-L", SOCKET, "-C", "attach", "-t", "bench"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        self.command("refresh-client -f no-output")  # no copy of the pane's output through the pipe

    def command(self, line: str) -> list[str]:
        """Run one tmux command; its output lines."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out: list[str] = []
        inside = False
        for raw in self.proc.stdout:
            text = raw.rstrip("\n")
            if text.startswith("%begin"):
                inside, out = True, []
            elif text.startswith(("%end", "%error")) and inside:
                return out
            elif inside:
                out.append(text)
        return out

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


CONTROL = Control()


def screen() -> list[str]:
    if CONTROL.proc is not None:
        return CONTROL.command("capture-pane -p -t bench")
    return tmux("capture-pane", "-p", "-t", "bench").splitlines()


def send(*keys: str) -> None:
    if CONTROL.proc is not None:
        CONTROL.command("send-keys -t bench " + " ".join(shlex.quote(k) for k in keys))
    else:
        tmux("send-keys", "-t", "bench", *keys)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] if ordered else float("nan")


def completes_as_you_type(app: list[str]) -> bool:
    """Whether the app completes the word being typed (its CLI then has ``search --prefix``, which
    gives the rows the app shows; an older app searched whole words only)."""
    out = subprocess.run([*app, "search", "--help"], capture_output=True, text=True, check=False)
    return "--prefix" in out.stdout


def expected_rows(
    app: list[str], root: Path, query: str, mode: str, env: dict[str, str], prefix: bool = False
) -> str | None:
    """``name:start-end`` of the top hit for ``query`` (None: no results)."""
    embedder = "none" if mode == "bm25" else env.get("AIDE_EMBEDDER", "none")
    cmd = [*app, "search", "--path", str(root), "--json", "--no-update", "--limit", "1"]
    cmd += ["--mode", mode, "--embedder", embedder, *(["--prefix"] if prefix else []), query]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    try:
        results = json.loads(out.stdout.splitlines()[-1])["results"]
    except (IndexError, ValueError, KeyError):
        return None
    if not results:
        return None
    r = results[0]
    name = r["path"].rpartition("/")[2]
    span = f"{r['start_line']}" if r["start_line"] == r["end_line"] else f"{r['start_line']}-{r['end_line']}"
    return f"{name}:{span}"


def first_row(lines: list[str]) -> str:
    """The first results row (line 3: under the query line and the list's top border)."""
    return lines[2] if len(lines) > 2 else ""


def wait(cond: Callable[[list[str]], bool], timeout: float = 10.0) -> float | None:
    """Poll the pane until ``cond(lines)``; the time it took, or None."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if cond(screen()):
            return time.perf_counter() - t0
        time.sleep(0.002)
    return None


def run(args: argparse.Namespace) -> None:
    app = shlex.split(args.app)
    width, height = (int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="aide-bench-tmux-") as tmp:
        root = Path(tmp) / args.corpus.name
        shutil.copytree(args.corpus, root, ignore=shutil.ignore_patterns(".aide"))
        env = {**os.environ, "XDG_STATE_HOME": str(Path(tmp) / "state")}
        env.update(
            XDG_CACHE_HOME=str(Path(tmp) / "cache"), AIDE_SEARCH_MODE=args.mode, AIDE_EMBEDDER=args.embedder
        )
        if args.while_embedding:
            subprocess.run([*app, "index", str(root), "--embedder", "none"], env=env, check=True,
                           capture_output=True)  # fmt: skip
        else:
            subprocess.run([*app, "index", str(root), "--embedder", args.embedder], env=env, check=True,
                           capture_output=True)  # fmt: skip
        queries = QUERY_SETS[args.queries]
        expect = {}
        prefix = completes_as_you_type(app)
        for q in queries:
            for i in range(1, len(q) + 1):
                expect[q[:i]] = expected_rows(app, root, q[:i], args.mode, env, prefix)
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k.startswith(("XDG_", "AIDE_")))
        # cd first: `python -m` subprocesses of the app would import a checkout in the current folder
        cmd = f"cd {shlex.quote(tmp)} && env {envs} {shlex.join(app)} {shlex.quote(str(root))} --no-watch"
        cmd += f" --embedder {args.embedder}"
        tmux("kill-server")
        tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "bench", cmd)
        try:
            ready = wait(lambda lines: any("embedder" in line for line in lines[-3:]), timeout=60)
            if ready is None:
                raise SystemExit("the app did not start:\n" + "\n".join(screen()))
            if args.while_embedding:
                if wait(lambda lines: any("embedding" in line for line in lines[-4:]), timeout=120) is None:
                    raise SystemExit("no embedding seen:\n" + "\n".join(screen()))
            else:
                time.sleep(2.0)  # let the start-up reindex (a no-op) finish
            CONTROL.open()
            print(f"load average before: {os.getloadavg()[0]:.2f}")
            echo: list[float] = []
            paint: list[float] = []
            missed = 0
            for q in queries:
                send("Escape")  # focus the query box (alone: ESC + key would read as alt+key)
                time.sleep(0.1)
                send("C-u")  # clear it
                if wait(lambda lines: bool(lines) and lines[0].strip().startswith("Search code")) is None:
                    raise SystemExit("the query box did not clear:\n" + "\n".join(screen()))
                time.sleep(0.15)
                previous = None
                for i in range(1, len(q) + 1):
                    typed, want = q[:i], expect[q[:i]]
                    t0 = time.perf_counter()
                    send("-l", q[i - 1])
                    shown_at = None
                    painted_at = None
                    deadline = t0 + 5.0
                    counts = want != previous
                    while time.perf_counter() < deadline and (
                        shown_at is None or (counts and painted_at is None)
                    ):
                        lines = screen()
                        now = time.perf_counter() - t0
                        if (
                            shown_at is None
                            and lines
                            and lines[0].strip().startswith(typed.strip())
                            and (lines[0].rstrip().endswith(typed.rstrip()) or typed.endswith(" "))
                        ):
                            shown_at = now
                        row = first_row(lines)
                        if (
                            counts
                            and painted_at is None
                            and (
                                (want is None and "no results" in "\n".join(lines[2:5]))
                                or (want and want in row)
                            )
                        ):
                            painted_at = now
                        time.sleep(0.002)
                    if shown_at is not None:
                        echo.append(shown_at * 1000)
                    if counts:
                        if painted_at is None:
                            missed += 1
                            if args.verbose:
                                print(f"not seen: {typed!r} want {want!r}, row {first_row(screen())!r}")
                        else:
                            paint.append(painted_at * 1000)
                    previous = want
                    time.sleep(args.pause)
            state = screen()[-3].strip()
        finally:
            CONTROL.close()
            tmux("kill-server")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"echo  ({len(echo)} keys): p50 {pct(echo, 0.5):.0f} ms, p95 {pct(echo, 0.95):.0f} ms")
        print(f"paint ({len(paint)} keys, {missed} not seen): p50 {pct(paint, 0.5):.0f} ms, "
              f"p95 {pct(paint, 0.95):.0f} ms")  # fmt: skip
        print(f"index line at the end: {state}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", type=Path)
    p.add_argument("--app", default="aide-tui", help="command that runs the installed app")
    p.add_argument("--embedder", choices=["none", "builtin"], default="none")
    p.add_argument("--mode", choices=["bm25", "hybrid"], default="bm25")
    p.add_argument("--while-embedding", action="store_true")
    p.add_argument("--size", default="120x40")
    p.add_argument("--queries", choices=sorted(QUERY_SETS), default="rich",
                   help="the queries typed (sqlalchemy: for SQLAlchemy's sdist)")  # fmt: skip
    p.add_argument("--verbose", action="store_true", help="print the keys whose paint was not seen")
    p.add_argument(
        "--pause",
        type=float,
        default=0.05,
        help="seconds from a key's paint to the next key (0.2: a preview renders between keys)",
    )
    args = p.parse_args(argv)
    if shutil.which("tmux") is None:
        print("tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 2
    if not args.corpus.is_dir():
        print(f"{args.corpus}: not a folder", file=sys.stderr)
        return 2
    if args.while_embedding:
        args.embedder, args.mode = "builtin", "bm25"
    run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
