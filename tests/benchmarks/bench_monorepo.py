#!/usr/bin/env python3
"""Every front end on one big workspace (issue 29): a script, not a test.

    python tests/benchmarks/monorepo/assemble.py /work/mono/ws          # the ~6M-line workspace
    python tests/benchmarks/bench_monorepo.py /work/mono/ws [--embedders none,static] [--runs 3]
    python tests/benchmarks/bench_monorepo.py /work/corpora/SQLAlchemy-2.0.30 --copy-to /tmp/sqla

Sections (``--only``/``--skip`` take their names), in this order, each on real processes started with
the app's own CLI (``python -m aide_tui`` from this checkout, or ``--app``), with a timeout on each:

- ``cold``: for each of ``--embedders`` (``none``, ``static``, ``builtin``, ... or ``default``: no
  ``--embedder`` flag), ``.aide`` removed, then ``aide-tui index --progress``: wall, CPU, peak RSS, the
  seconds until the first commit (lexical searchable) and until done; past ``--cold-cap`` seconds the
  run is stopped and said to be. The later sections use the index of the last one, with its embedder.
- ``size``: the index on disk against the tree's bytes and the bytes of the files the scanner takes.
- ``noop``: ``aide-tui index`` with nothing changed (median of ``--runs``).
- ``edit``: one file edited (a new function appended), then ``aide-tui index`` (wall), and, edited
  again, ``aide-tui search`` (updating) until it returns the new name (wall): medians; the file is put
  back.
- ``oneshot``: ``aide-tui search --no-update --no-server --json`` for each query of the list, per mode
  (``--modes``, default bm25,hybrid), ``--oneshot-rounds`` times: per query the median wall; p50, p95 and
  max over the queries, the peak RSS, and the search's own ``took_ms``.
- ``symbols``: ``aide-tui defs``/``refs --no-update`` for a few names: wall, RSS, locations found.
- ``serve``: ``aide-tui serve`` (watcher on): seconds until its socket, warm ``POST /search`` p50/p95
  per mode over ``--serve-rounds`` passes of the list (after ``--serve-warmup`` untimed ones), one-file
  edit → searchable through it (write to the first search that returns the new name), RSS after
  ``--idle`` seconds idle, peak RSS; it also records the top hit of every prefix typed in ``app`` (as
  ``bench_tmux.py`` does with the CLI).
- ``app``: the app in tmux (its own server socket), hosting the workspace: keystroke → first result row
  painted (p50/p95, ``bench_tmux.py``'s method), one-file edit → searchable through its host socket,
  RSS while idle, peak RSS; then ctrl+q. ``--app-runs`` fresh starts (default 3): the keystroke figures
  are the medians of the runs' p50 and p95 (and the p95 of every key of every run).

The load average (/proc/loadavg) is read before and after each section. Figures go to a Markdown
table on stdout and to ``--json`` (rewritten after each section, so a stopped run keeps what it had).
Peak RSS of a one-shot process is its ``ru_maxrss`` from wait4 (the largest of it and the children it
waited for); of ``serve`` and the app, the largest VmHWM of their processes, read before they stop.
Query sets: ``monorepo`` (the assembled workspace: MONOREPO.json at its root) and ``sqlalchemy``
(SQLAlchemy's sdist); ``--queries`` picks one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(REPO))  # host_pid and the scanner, when this interpreter has no aide_tui installed

import bench_tmux  # noqa: E402  (tmux helpers: control-mode client, screen, send, wait)

SECTIONS = ("cold", "size", "noop", "edit", "oneshot", "symbols", "serve", "app")
TRACEBACK_DJANGO = """Traceback (most recent call last):
  File "manage.py", line 22, in <module>
    main()
  File "django/core/management/__init__.py", line 442, in execute_from_command_line
    utility.execute()
  File "django/conf/__init__.py", line 81, in __getattr__
    self._setup(name)
django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not \
configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call \
settings.configure() before accessing settings."""
TRACEBACK_SQLA = """Traceback (most recent call last):
  File "app.py", line 12, in <module>
    print(user.addresses)
  File "lib/sqlalchemy/orm/attributes.py", line 566, in __get__
    return self.impl.get(state, dict_)
  File "lib/sqlalchemy/orm/strategies.py", line 862, in _load_for_state
    raise orm_exc.DetachedInstanceError(
sqlalchemy.orm.exc.DetachedInstanceError: Parent instance <User at 0x7f> is not bound to a Session; lazy \
load operation of attribute 'addresses' cannot proceed"""


@dataclass(frozen=True)
class QuerySet:
    """What a workspace is asked: one-shot/serve queries, names for defs/refs, the file edited, the
    queries typed in the app."""

    queries: tuple[str, ...]
    defs: tuple[str, ...]
    refs: tuple[str, ...]
    edit: str  # a Python file, relative to the root
    typed: tuple[str, ...]


QUERY_SETS = {
    "monorepo": QuerySet(
        queries=(
            # identifiers
            "parse_datetime",
            "QuerySet.select_related",
            "deferToThread",
            "BufferGeometry",
            "ServeHTTP",
            "Vec::with_capacity",
            "NormalModuleFactory",
            "switchMap",
            "Effect.gen",
            "ComputeManager",
            # prose questions
            "timezone aware datetime parsing",
            "how are database migrations applied",
            "retry a failed request with exponential backoff",
            "where is the TLS handshake performed",
            "compute the determinant of a matrix",
            "render a scene with shadows",
            "live migration of an instance to another host",
            "parse command line arguments",
            # a pasted traceback and a compiler error
            TRACEBACK_DJANGO,
            "error[E0382]: borrow of moved value: `v` value used here after move",
        ),
        defs=("parse_datetime", "Deferred", "BufferGeometry", "ServeHTTP"),
        refs=("parse_datetime", "deferToThread"),
        edit="django-5.1.3/django/utils/dateparse.py",
        typed=(
            "parse_datetime",
            "timezone aware",
            "BufferGeometry",
            "deferToThread",
            "http handler",
            "matrix determinant",
        ),
    ),
    "sqlalchemy": QuerySet(
        queries=(
            "create_engine",
            "Session.execute",
            "relationship",
            "declarative_base",
            "selectinload",
            "sessionmaker",
            "hybrid_property",
            "TypeDecorator.process_bind_param",
            "timezone aware datetime parsing",
            "how does the connection pool recycle stale connections",
            "eager loading of related objects",
            "compile a select statement to SQL",
            "reflect table columns from the database",
            "two phase commit",
            "bulk insert many rows",
            "reconnect after the database disconnects",
            "coerce values of a JSON column",
            "where are identity map conflicts detected",
            TRACEBACK_SQLA,
            "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such table: users",
        ),
        defs=("create_engine", "Session.execute", "selectinload"),
        refs=("create_engine", "selectinload"),
        edit="lib/sqlalchemy/orm/session.py",
        typed=(
            "session query",
            "relationship",
            "engine connect",
            "joined load",
            "mapper registry",
            "commit rollback",
        ),
    ),
}


# -- processes -----------------------------------------------------------------------------------------


@dataclass
class Proc:
    """A finished (or stopped) process: exit code, seconds, CPU seconds, peak RSS (MB), output."""

    rc: int | None
    wall: float
    cpu: float
    peak_mb: float
    stdout: str
    stderr: str
    timed_out: bool = False
    lines: list[tuple[float, str]] = field(default_factory=list)  # (seconds since start, stdout line)


def _read(pipe: Any, sink: list[tuple[float, str]], t0: float) -> None:
    for line in iter(pipe.readline, ""):
        sink.append((time.perf_counter() - t0, line))
    pipe.close()


def run(
    cmd: list[str],
    env: dict[str, str],
    timeout: float,
    cwd: str | None = None,
    stop_when: Callable[[list[tuple[float, str]]], bool] | None = None,
) -> Proc:
    """Run ``cmd`` to its end (or ``timeout``, or until ``stop_when(stdout lines)``: then SIGTERM, SIGKILL
    after 20 s); wall, CPU and ru_maxrss come from wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=_read, args=(proc.stdout, out, t0), daemon=True),
        threading.Thread(target=_read, args=(proc.stderr, err, t0), daemon=True),
    ]
    for r in readers:
        r.start()
    timed_out = False
    stopping_since: float | None = None
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter() - t0
            if stopping_since is None and (now > timeout or (stop_when is not None and stop_when(out))):
                timed_out = now > timeout
                stopping_since = now
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            elif stopping_since is not None and now - stopping_since > 20:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.005 if now < 1 else 0.02)
    except BaseException:  # the benchmark is stopped (ctrl+c, SIGTERM): so is the command
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        raise
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join(10)
    with suppress(ProcessLookupError):  # anything of its group left behind
        os.killpg(proc.pid, signal.SIGKILL)
    return Proc(
        rc=proc.returncode,
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak_mb=usage.ru_maxrss / 1024,
        stdout="".join(line for _, line in out),
        stderr="".join(line for _, line in err),
        timed_out=timed_out,
        lines=out,
    )


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (kB) of ``pid`` (empty when it is gone)."""
    out: dict[str, int] = {}
    with suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with suppress(OSError, ValueError, IndexError):
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_memory(pid: int) -> dict[str, float]:
    """RSS now (sum over the tree), the largest process's RSS and VmHWM (peak), in MB."""
    stats = [proc_status(p) for p in descendants(pid)]
    return {
        "rss_mb": round(sum(s.get("VmRSS", 0) for s in stats) / 1024, 1),
        "largest_rss_mb": round(max((s.get("VmRSS", 0) for s in stats), default=0) / 1024, 1),
        "peak_mb": round(max((s.get("VmHWM", 0) for s in stats), default=0) / 1024, 1),
        "processes": len([s for s in stats if s]),
    }


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


# -- the benchmark -------------------------------------------------------------------------------------


class Bench:
    """One run over one workspace; results accumulate in ``self.out`` (JSON) and ``self.rows``."""

    def __init__(self, args: argparse.Namespace, root: Path, qs: QuerySet, home: Path) -> None:
        self.args = args
        self.root = root
        self.qs = qs
        self.home = home
        self.cmd = shlex.split(args.app) if args.app else [sys.executable, "-m", "aide_tui"]
        self.embedder = "none"
        self.out: dict[str, Any] = {
            "root": str(root),
            "queries": args.queries,
            "app": self.cmd,
            "runs": args.runs,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cores": os.cpu_count(),
            "commit": _git_head(),
            "sections": {},
        }
        self.rows: list[tuple[str, str]] = []
        self.cleanups: list[Callable[[], None]] = []
        self.original: bytes | None = None
        self.chosen = [s for s in SECTIONS if (not args.only or s in args.only) and s not in args.skip]

    # -- plumbing

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
        env["XDG_CONFIG_HOME"] = str(self.home / "config")  # no user config
        env["XDG_STATE_HOME"] = str(self.home / "state")  # no app history
        if self.args.isolate_cache:
            env["XDG_CACHE_HOME"] = str(self.home / "cache")
        if not self.args.app:
            env["PYTHONPATH"] = str(REPO)
        if self.args.milvus_lite:
            env["AIDE_STORE_BACKEND"] = "milvus"  # a Milvus Lite folder, .aide/milvus.db
        return env

    def eflag(self, embedder: str | None = None) -> list[str]:
        e = self.embedder if embedder is None else embedder
        return [] if e == "default" else ["--embedder", e]

    def cli(self, *args: str, timeout: float | None = None, **kw: Any) -> Proc:
        return run([*self.cmd, *args], self.env(), timeout or self.args.timeout, cwd=str(self.home), **kw)

    def row(self, name: str, value: str) -> None:
        self.rows.append((name, value))
        print(f"  {name}: {value}", flush=True)

    def save(self) -> None:
        path = Path(self.args.json)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.out, indent=1) + "\n")
        os.replace(tmp, path)

    @contextmanager
    def section(self, name: str) -> Iterator[dict[str, Any]]:
        data: dict[str, Any] = {"load_before": loadavg()}
        self.out["sections"][name] = data
        print(f"== {name} (load {data['load_before']})", flush=True)
        t0 = time.perf_counter()
        try:
            yield data
        except Exception as exc:  # noqa: BLE001 - a failed section is reported, the others still run
            data["error"] = f"{type(exc).__name__}: {exc}"
            self.row(f"{name}: FAILED", data["error"])
        finally:
            data["load_after"] = loadavg()
            data["seconds"] = round(time.perf_counter() - t0, 1)
            self.stop_host()
            self.save()

    def stop_host(self) -> None:
        """No process may host the workspace between sections (a background host a search left)."""
        pid = host_pid(self.root)
        if not pid:
            return
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while host_pid(self.root) and time.monotonic() < deadline:
            time.sleep(0.1)
        if host_pid(self.root):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        print(f"  (stopped a host left on the workspace: pid {pid})", flush=True)

    def embedders_offered(self) -> set[str]:
        text = self.cli("index", "--help", timeout=60).stdout
        start = text.find("--embedder {")
        return set(text[start + 12 : text.find("}", start)].split(",")) if start >= 0 else set()

    def search_json(self, p: Proc) -> dict[str, Any] | None:
        for line in reversed(p.stdout.splitlines()):
            with suppress(ValueError):
                obj = json.loads(line)
                if isinstance(obj, dict):
                    return obj
        return None

    # -- edits

    def edit_path(self) -> Path:
        return self.root / self.qs.edit

    def write_edit(self) -> str:
        """Append a new function with a unique name to the edited file; the name."""
        path = self.edit_path()
        if self.original is None:
            self.original = path.read_bytes()
            self.cleanups.append(self.restore)
        # letters only: one term that shares no part with an earlier edit's name (digits would split off)
        token = "zqbench" + "".join(chr(ord("a") + int(c)) for c in str(time.time_ns()))
        tmp = path.with_name(path.name + ".benchtmp")
        tmp.write_bytes(self.original + f"\n\ndef {token}(value):\n    return value\n".encode())
        os.replace(tmp, path)  # one event for a watcher, as an editor's atomic save
        return token

    def restore(self) -> None:
        if self.original is not None:
            self.edit_path().write_bytes(self.original)

    # -- sections

    def cold(self, d: dict[str, Any]) -> None:
        offered = self.embedders_offered()
        runs = d["runs"] = {}
        for e in self.args.embedders.split(","):
            if e != "default" and e not in offered:
                runs[e] = {"skipped": f"this build offers --embedder {sorted(offered)}"}
                self.row(
                    f"cold index ({e})",
                    f"skipped: --embedder {e} is not offered ({', '.join(sorted(offered))})",
                )
                continue
            shutil.rmtree(self.root / ".aide", ignore_errors=True)
            stop = FirstCommit()
            load0 = loadavg()
            p = self.cli(
                "index",
                str(self.root),
                "--progress",
                *self.eflag(e),
                timeout=self.args.cold_cap,
                stop_when=stop,
            )
            stop(p.lines)
            first_commit = [stop.at] if stop.at is not None else []
            done = next(
                (json.loads(line) for _, line in reversed(p.lines) if line.startswith('{"event": "done"')),
                None,
            )
            res = {
                "rc": p.rc,
                "wall_s": r(p.wall, 1),
                "cpu_s": r(p.cpu, 1),
                "peak_rss_mb": r(p.peak_mb, 0),
                "first_commit_s": r(first_commit[0] if first_commit else None, 1),
                "stopped_at_cap": p.timed_out,
                "load": [load0, loadavg()],
            }
            if done:
                res.update(
                    {
                        k: done.get(k)
                        for k in (
                            "files",
                            "chunks",
                            "embedder",
                            "vectors_missing",
                            "newly_embedded",
                            "skipped",
                            "degraded",
                        )
                    }
                )
            else:
                res["stderr"] = p.stderr[-800:]
            runs[e] = res
            self.embedder = e
            note = " STOPPED at the cap" if p.timed_out else ("" if p.rc == 0 else f" rc={p.rc}")
            self.row(
                f"cold index ({e})",
                f"{res['wall_s']} s wall, {res['cpu_s']} CPU-s, peak {res['peak_rss_mb']} MB, first commit "
                f"{res['first_commit_s']} s, {res.get('files')} files, {res.get('chunks')} chunks, "
                f"{res.get('vectors_missing')} vectors missing{note} (load {load0} -> {loadavg()})",
            )
        d["embedder_used_after"] = self.embedder

    def size(self, d: dict[str, Any]) -> None:
        index = tree_bytes(self.root / ".aide")
        tree = tree_bytes(self.root, skip=".aide")
        taken = scanned_bytes(self.root)
        d.update(index_bytes=index, tree_bytes=tree, indexed_source_bytes=taken)
        d["index_per_tree"] = r(index / tree if tree else None)
        d["index_per_indexed_source"] = r(index / taken if taken else None)
        self.row(
            "index on disk",
            f"{index / 1e6:.0f} MB = {d['index_per_tree']}x the tree ({tree / 1e6:.0f} MB), "
            f"{d['index_per_indexed_source']}x the indexed files ({(taken or 0) / 1e6:.0f} MB)",
        )

    def noop(self, d: dict[str, Any]) -> None:
        ps = [self.cli("index", str(self.root), "--json", *self.eflag()) for _ in range(self.args.runs)]
        d["wall_s"] = [r(p.wall) for p in ps]
        d["peak_rss_mb"] = [r(p.peak_mb, 0) for p in ps]
        d["rc"] = [p.rc for p in ps]
        self.row(
            "no-op index",
            f"median {r(med([p.wall for p in ps]), 2)} s, peak {r(max(p.peak_mb for p in ps), 0)} MB "
            f"(runs {d['wall_s']})",
        )

    def edit(self, d: dict[str, Any]) -> None:
        index_runs, search_runs, found = [], [], []
        for _ in range(self.args.runs):
            self.write_edit()
            p = self.cli("index", str(self.root), "--json", *self.eflag())
            index_runs.append(p)
            token = self.write_edit()
            s = self.cli(
                "search",
                "--path",
                str(self.root),
                "--json",
                "--no-server",
                "--mode",
                "bm25",
                "--limit",
                "5",
                *self.eflag(),
                token,
            )
            search_runs.append(s)
            obj = self.search_json(s) or {}
            found.append(any(x.get("path") == self.qs.edit for x in obj.get("results", [])))
        self.restore()
        self.cli("index", str(self.root), *self.eflag())
        d["index_wall_s"] = [r(p.wall) for p in index_runs]
        d["index_peak_rss_mb"] = [r(p.peak_mb, 0) for p in index_runs]
        d["search_wall_s"] = [r(p.wall) for p in search_runs]
        d["search_peak_rss_mb"] = [r(p.peak_mb, 0) for p in search_runs]
        d["search_found_new_name"] = found
        self.row(
            "edit -> index (CLI)",
            f"median {r(med([p.wall for p in index_runs]), 2)} s, "
            f"peak {r(max(p.peak_mb for p in index_runs), 0)} MB",
        )
        self.row(
            "edit -> search finds it (CLI, updating)",
            f"median {r(med([p.wall for p in search_runs]), 2)} s, "
            f"peak {r(max(p.peak_mb for p in search_runs), 0)} MB, found {sum(found)}/{len(found)}",
        )

    def oneshot(self, d: dict[str, Any]) -> None:
        for mode in self.args.modes.split(","):
            per_query: dict[str, dict[str, Any]] = {}
            for rnd in range(self.args.oneshot_rounds):
                for q in self.qs.queries:
                    p = self.cli(
                        "search",
                        "--path",
                        str(self.root),
                        "--json",
                        "--no-update",
                        "--no-server",
                        "--mode",
                        mode,
                        "--limit",
                        "20",
                        *self.eflag(),
                        q,
                    )
                    obj = self.search_json(p) or {}
                    e = per_query.setdefault(q, {"wall_s": [], "peak_rss_mb": [], "took_ms": []})
                    e["wall_s"].append(r(p.wall))
                    e["peak_rss_mb"].append(r(p.peak_mb, 0))
                    e["took_ms"].append(obj.get("took_ms"))
                    e["results"] = len(obj.get("results", []))
                    e["degraded"] = obj.get("degraded")
                    if p.wall > 5:  # a long run says where it is
                        print(f"    {mode}: {p.wall:.1f} s for {q[:50]!r}", flush=True)
                    if p.rc != 0 or p.timed_out:
                        e.setdefault("errors", []).append(
                            f"rc={p.rc} timeout={p.timed_out} {p.stderr[-300:]}"
                        )
                print(f"    {mode} round {rnd + 1}: done (load {loadavg()})", flush=True)
            walls = [med(v["wall_s"]) for v in per_query.values()]
            peaks = [max(v["peak_rss_mb"]) for v in per_query.values()]
            took = [med([t for t in v["took_ms"] if t is not None] or [0.0]) for v in per_query.values()]
            slowest = max(per_query, key=lambda q: med(per_query[q]["wall_s"]) or 0)
            d[mode] = {
                "per_query": per_query,
                "wall_p50_s": r(pct(walls, 0.5)),
                "wall_p95_s": r(pct(walls, 0.95)),
                "wall_max_s": r(max(walls)),
                "slowest": slowest[:80],
                "peak_rss_mb": max(peaks),
                "took_ms_p50": r(pct(took, 0.5), 1),
                "degraded": any(v["degraded"] for v in per_query.values()),
            }
            self.row(
                f"one-shot search --no-update ({mode}, {len(walls)} queries)",
                f"p50 {d[mode]['wall_p50_s']} s, p95 {d[mode]['wall_p95_s']} s, "
                f"max {d[mode]['wall_max_s']} s "
                f"({slowest[:40]!r}), peak {d[mode]['peak_rss_mb']} MB, took_ms p50 {d[mode]['took_ms_p50']}"
                f"{', degraded' if d[mode]['degraded'] else ''}",
            )

    def symbols(self, d: dict[str, Any]) -> None:
        for cmd, names in (("defs", self.qs.defs), ("refs", self.qs.refs)):
            for name in names:
                ps = [
                    self.cli(cmd, "--path", str(self.root), "--json", "--no-update", *self.eflag(), name)
                    for _ in range(self.args.runs)
                ]
                obj = self.search_json(ps[-1]) or {}
                n = obj.get("total", 0)
                d[f"{cmd} {name}"] = {
                    "wall_s": [r(p.wall) for p in ps],
                    "peak_rss_mb": [r(p.peak_mb, 0) for p in ps],
                    "found": n,
                    "rc": [p.rc for p in ps],
                }
                self.row(
                    f"{cmd} {name}",
                    f"median {r(med([p.wall for p in ps]), 2)} s, "
                    f"peak {r(max(p.peak_mb for p in ps), 0)} MB, {n} locations",
                )

    def serve(self, d: dict[str, Any]) -> None:
        import httpx

        sock = self.root / ".aide" / "serve.sock"
        log_out, log_err = self.home / "serve.out", self.home / "serve.err"
        t0 = time.perf_counter()
        with log_out.open("w") as out, log_err.open("w") as err:  # files: a full pipe would stall the server
            proc = subprocess.Popen(
                [*self.cmd, "serve", str(self.root), *self.eflag()],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=self.env(),
                cwd=str(self.home),
                start_new_session=True,
            )
        stopper = lambda: stop_process(proc)  # noqa: E731
        self.cleanups.append(stopper)
        try:
            listening = wait_for(
                lambda: "listening unix:" in log_out.read_text() or proc.poll() is not None, self.args.timeout
            )
            d["socket_s"] = r(time.perf_counter() - t0, 2)
            if not listening or proc.poll() is not None:
                raise RuntimeError(f"serve did not listen (rc {proc.poll()}): {log_err.read_text()[-500:]}")
            http = httpx.Client(
                transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://a", timeout=600
            )
            d["rss_after_start_mb"] = tree_memory(proc.pid)["rss_mb"]
            self.row("serve: socket after", f"{d['socket_s']} s, RSS {d['rss_after_start_mb']} MB")
            queries, left_out = self.serve_queries()
            if left_out:
                d["left_out"] = left_out
                self.row("serve: queries left out", f"{len(left_out)}, one-shot search time over "
                         f"{self.args.serve_skip_over_ms:.0f} ms in {self.args.serve_skip_from}")  # fmt: skip
            for mode in self.args.modes.split(","):
                for _ in range(self.args.serve_warmup):  # warm: caches filled, the encoder loaded
                    for q in queries:
                        http.post("/search", json={"query": q, "mode": mode, "limit": 20})
                times, took = [], []
                for _ in range(self.args.serve_rounds):
                    for q in queries:
                        t1 = time.perf_counter()
                        resp = http.post("/search", json={"query": q, "mode": mode, "limit": 20})
                        times.append((time.perf_counter() - t1) * 1000)
                        if resp.status_code == 200:
                            took.append(resp.json().get("took_ms") or 0.0)
                d[mode] = {
                    "p50_ms": r(pct(times, 0.5), 1),
                    "p95_ms": r(pct(times, 0.95), 1),
                    "max_ms": r(max(times, default=None), 1),
                    "took_ms_p50": r(pct(took, 0.5), 1),
                    "n": len(times),
                }
                self.row(
                    f"serve warm search ({mode}, {len(times)} requests)",
                    f"p50 {d[mode]['p50_ms']} ms, p95 {d[mode]['p95_ms']} ms, max {d[mode]['max_ms']} ms",
                )
            if "app" in self.chosen:  # the rows the app must paint, from the same index, before the edits
                d["expected_rows"] = self.expected_rows(http)  # (after them it still holds the edited file)
            d["edit_visible_s"] = self.edit_visible(http)
            self.row(
                "serve: edit -> searchable",
                f"{d['edit_visible_s']} s (median {r(med(d['edit_visible_s']), 2)})",
            )
            time.sleep(self.args.idle)
            d["idle"] = tree_memory(proc.pid)
            self.row(
                "serve: idle",
                f"RSS {d['idle']['rss_mb']} MB over {d['idle']['processes']} processes, "
                f"peak (VmHWM) {d['idle']['peak_mb']} MB",
            )
            http.close()
        finally:
            d["stop"] = stopper()
            self.cleanups.remove(stopper)
            self.restore()

    def serve_queries(self) -> tuple[list[str], dict[str, float]]:
        """The queries sent to ``serve``: all, or with ``--serve-skip-from`` (an earlier run's JSON) those
        whose one-shot ``took_ms`` (in any mode) was at most ``--serve-skip-over-ms``; and those left out."""
        if not self.args.serve_skip_from:
            return list(self.qs.queries), {}
        oneshot = json.loads(Path(self.args.serve_skip_from).read_text())["sections"]["oneshot"]
        slow: dict[str, float] = {}
        for mode in ("bm25", "hybrid", "dense"):
            for q, v in oneshot.get(mode, {}).get("per_query", {}).items():
                took = max((t for t in v["took_ms"] if t is not None), default=0.0)
                if took > self.args.serve_skip_over_ms:
                    slow[q] = max(slow.get(q, 0.0), took)
        return [q for q in self.qs.queries if q not in slow], {q[:80]: t for q, t in slow.items()}

    def edit_visible(self, http: Any) -> list[float | None]:
        """Seconds from writing the edited file to the first search (through ``http``) that finds it."""
        out: list[float | None] = []
        for _ in range(self.args.runs):
            token = self.write_edit()
            t0 = time.perf_counter()
            seen = None
            while time.perf_counter() - t0 < self.args.edit_timeout:
                resp = http.post("/search", json={"query": token, "mode": "bm25", "limit": 5})
                if resp.status_code == 200 and any(x["path"] == self.qs.edit for x in resp.json()["results"]):
                    seen = time.perf_counter() - t0
                    break
                time.sleep(0.02)
            out.append(r(seen))
            time.sleep(1.0)  # the watcher's next batch starts from a quiet tree
        self.restore()
        return out

    def expected_rows(self, http: Any) -> dict[str, str | None]:
        """``name:start-end`` of the top hit of every prefix typed in the app (None: no results)."""
        out: dict[str, str | None] = {}
        for q in self.qs.typed:
            for i in range(1, len(q) + 1):
                body = {"query": q[:i], "mode": self.args.app_mode, "limit": 1, "prefix": True}
                resp = http.post("/search", json=body)
                res = resp.json().get("results", []) if resp.status_code == 200 else []
                if not res:
                    out[q[:i]] = None
                    continue
                x = res[0]
                span = (
                    f"{x['start_line']}"
                    if x["start_line"] == x["end_line"]
                    else f"{x['start_line']}-{x['end_line']}"
                )
                out[q[:i]] = f"{x['path'].rpartition('/')[2]}:{span}"
        return out

    def app(self, d: dict[str, Any]) -> None:
        """``--app-runs`` fresh starts of the app; the keystroke figures are the medians of the runs'."""
        expect = self.out["sections"].get("serve", {}).get("expected_rows")
        if not expect:
            raise RuntimeError("the serve section did not run: no expected rows for the typed queries")
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not installed (apt-get install tmux)")
        runs: list[dict[str, Any]] = []
        d["runs"] = runs
        for _ in range(max(1, self.args.app_runs)):
            one: dict[str, Any] = {}
            runs.append(one)
            self.app_once(one, expect)
        for key in ("status_line_s", "host_socket_s", "paint_p50_ms", "paint_p95_ms", "echo_p95_ms"):
            d[key] = r(med([x[key] for x in runs if x.get(key) is not None]), 2)
        pooled = [ms for x in runs for ms in x.get("paint_ms", [])]
        d["paint_pooled_p95_ms"] = r(pct(pooled, 0.95), 0)
        d["paint_keys"] = len(pooled)
        d["edit_visible_s"] = [s for x in runs for s in x.get("edit_visible_s", [])]
        d["idle"] = runs[-1].get("idle")
        if len(runs) > 1:
            self.row(
                f"app: keystroke -> results painted, median of {len(runs)} runs",
                f"p50 {d['paint_p50_ms']} ms, p95 {d['paint_p95_ms']} ms (runs' p95: "
                f"{', '.join(str(x.get('paint_p95_ms')) for x in runs)}; all {len(pooled)} keys: p95 "
                f"{d['paint_pooled_p95_ms']} ms); echo p95 {d['echo_p95_ms']} ms",
            )
            self.row(
                "app host: edit -> searchable, all runs",
                f"median {r(med(d['edit_visible_s']), 2)} s of {len(d['edit_visible_s'])}",
            )

    def app_once(self, d: dict[str, Any], expect: dict[str, str | None]) -> None:
        """One start of the app in tmux: status line, host socket, typing, an edit, idle, quit."""
        import httpx

        width, height = (int(x) for x in self.args.size.split("x"))
        env = self.env()
        env["AIDE_SEARCH_MODE"] = self.args.app_mode
        envs = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in env.items() if k.startswith(("XDG_", "AIDE_", "PYTHONPATH"))
        )
        cmd = f"cd {shlex.quote(str(self.home))} && exec env {envs} {shlex.join(self.cmd)}"
        cmd += f" {shlex.quote(str(self.root))}"
        cmd += "".join(f" {shlex.quote(a)}" for a in self.eflag())
        kill_tmux()
        t0 = time.perf_counter()
        # the tmux server starts with the benchmark's environment (no AIDE_* of the caller's)
        subprocess.run(
            [
                "tmux",
                "-L",
                bench_tmux.SOCKET,
                "new-session",
                "-d",
                "-x",
                str(width),
                "-y",
                str(height),
                "-s",
                "bench",
                cmd,
            ],
            env=env,
            check=True,
            timeout=30,
            capture_output=True,
        )
        self.cleanups.append(kill_tmux)
        try:
            pane_pid = int(
                bench_tmux.tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").strip() or 0
            )
            ready = bench_tmux.wait(
                lambda lines: any("embedder" in x for x in lines[-3:]), timeout=self.args.timeout
            )
            if ready is None:
                raise RuntimeError("the app did not start:\n" + "\n".join(bench_tmux.screen()))
            d["status_line_s"] = r(time.perf_counter() - t0, 2)
            sock = self.root / ".aide" / "serve.sock"
            deadline = time.monotonic() + self.args.timeout
            http = None
            while time.monotonic() < deadline:  # the app hosts: its socket answers once it is warm
                if sock.exists():
                    with suppress(httpx.HTTPError):
                        http = httpx.Client(
                            transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://a", timeout=600
                        )
                        if (
                            http.get("/host").json().get("role") == "app"
                            and http.get("/status").status_code == 200
                        ):
                            break
                        http.close()
                        http = None
                time.sleep(0.2)
            d["host_socket_s"] = r(time.perf_counter() - t0, 2)
            time.sleep(3.0)  # let the start-up reindex (a no-op) finish
            d["rss_after_start_mb"] = tree_memory(pane_pid)["rss_mb"]
            self.row(
                "app: status line / host socket after",
                f"{d['status_line_s']} s / {d['host_socket_s']} s, RSS {d['rss_after_start_mb']} MB",
            )
            d.update(self.type_queries(expect))
            self.row(
                "app: keystroke -> results painted",
                f"p50 {d['paint_p50_ms']} ms, p95 {d['paint_p95_ms']} ms "
                f"({d['paint_keys']} keys, {d['paint_missed']} not seen); echo p95 {d['echo_p95_ms']} ms",
            )
            if http is not None:
                d["edit_visible_s"] = self.edit_visible(http)
                self.row(
                    "app host: edit -> searchable",
                    f"{d['edit_visible_s']} s (median {r(med(d['edit_visible_s']), 2)})",
                )
                http.close()
            time.sleep(self.args.idle)
            d["idle"] = tree_memory(pane_pid)
            self.row(
                "app: idle",
                f"RSS {d['idle']['rss_mb']} MB over {d['idle']['processes']} processes, "
                f"peak (VmHWM) {d['idle']['peak_mb']} MB",
            )
            bench_tmux.send("C-q")
            gone = wait_gone(pane_pid, 30)
            d["quit_clean"] = gone
        finally:
            kill_tmux()
            self.cleanups.remove(kill_tmux)
            self.restore()

    def type_queries(self, expect: dict[str, str | None]) -> dict[str, Any]:
        """bench_tmux's keystroke loop: echo and paint times per key (a key whose top hit is the previous
        key's is not counted for paint)."""
        ctl = bench_tmux.CONTROL
        ctl.open()
        echo: list[float] = []
        paint: list[float] = []
        missed: list[str] = []
        try:
            for q in self.qs.typed:
                bench_tmux.send("Escape")
                time.sleep(0.1)
                bench_tmux.send("C-u")
                if (
                    bench_tmux.wait(
                        lambda lines: bool(lines) and lines[0].strip().startswith("Search code"), 30
                    )
                    is None
                ):
                    raise RuntimeError("the query box did not clear:\n" + "\n".join(bench_tmux.screen()))
                time.sleep(0.3)
                previous = None
                for i in range(1, len(q) + 1):
                    typed, want = q[:i], expect.get(q[:i])
                    counts = want != previous
                    t0 = time.perf_counter()
                    bench_tmux.send("-l", q[i - 1])
                    shown = painted = None
                    while time.perf_counter() - t0 < self.args.key_timeout and (
                        shown is None or (counts and painted is None)
                    ):
                        lines = bench_tmux.screen()
                        now = time.perf_counter() - t0
                        if (
                            shown is None
                            and lines
                            and lines[0].strip().startswith(typed.strip())
                            and (lines[0].rstrip().endswith(typed.rstrip()) or typed.endswith(" "))
                        ):
                            shown = now
                        row = bench_tmux.first_row(lines)
                        if (
                            counts
                            and painted is None
                            and (
                                (want is None and "no results" in "\n".join(lines[2:5]))
                                or (want and want in row)
                            )
                        ):
                            painted = now
                        time.sleep(0.002)
                    if shown is not None:
                        echo.append(shown * 1000)
                    if counts:
                        if painted is None:
                            missed.append(typed)
                        else:
                            paint.append(painted * 1000)
                    previous = want
                    time.sleep(self.args.pause)
        finally:
            ctl.close()
            ctl.proc = None
        return {
            "paint_p50_ms": r(pct(paint, 0.5), 0),
            "paint_p95_ms": r(pct(paint, 0.95), 0),
            "paint_keys": len(paint),
            "paint_missed": len(missed),
            "missed": missed[:20],
            "echo_p50_ms": r(pct(echo, 0.5), 0),
            "echo_p95_ms": r(pct(echo, 0.95), 0),
            "paint_ms": [round(x) for x in paint],
        }

    # -- driver

    def run(self) -> None:
        chosen = self.chosen
        if "cold" not in chosen:
            self.embedder = self.args.embedders.split(",")[-1]
        if not (self.root / ".aide").exists() and "cold" not in chosen:
            raise SystemExit(f"{self.root} has no index: run the cold section first")
        print(f"# bench_monorepo on {self.root} ({self.args.queries} queries), load {loadavg()}", flush=True)
        self.out["load_before"] = loadavg()
        try:
            for name in chosen:
                with self.section(name) as d:
                    getattr(self, name)(d)
        finally:
            for fn in reversed(self.cleanups):
                with suppress(Exception):
                    fn()
            self.stop_host()
            self.out["load_after"] = loadavg()
            self.save()
        print()
        print(f"| measure ({self.root.name}, {self.args.queries} queries) | figure |")
        print("|---|---|")
        for name, value in self.rows:
            print(f"| {name} | {value} |")
        print(f"\nload before/after: {self.out['load_before']} / {self.out['load_after']}")
        print(f"JSON: {self.args.json}")


class FirstCommit:
    """A ``stop_when`` for ``index --progress`` that notes when the first commit event came (the lexical
    index is searchable) and never stops the run."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.seen = 0

    def __call__(self, lines: list[tuple[float, str]]) -> bool:
        for t, line in lines[self.seen :]:
            if self.at is None and line.startswith('{"event": "commit"'):
                self.at = t
        self.seen = len(lines)
        return False


def stop_process(proc: subprocess.Popen[Any]) -> dict[str, Any]:
    """SIGTERM, then SIGKILL after 60 s; the exit code, how long it took, and what was left of its group."""
    t0 = time.perf_counter()
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    left = [p for p in descendants(proc.pid) if p != proc.pid]
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with suppress(OSError):
                pipe.close()
    return {"rc": proc.returncode, "seconds": round(time.perf_counter() - t0, 2), "left_running": left}


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    """Poll ``cond`` every 20 ms until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.1)
    return False


def kill_tmux() -> None:
    bench_tmux.CONTROL.close()
    bench_tmux.CONTROL.proc = None
    with suppress(subprocess.SubprocessError, OSError):
        subprocess.run(
            ["tmux", "-L", bench_tmux.SOCKET, "kill-server"], capture_output=True, timeout=30, check=False
        )


def host_pid(root: Path) -> int | None:
    """The PID hosting ``root`` (its .aide/serve.lock), None when nobody does."""
    try:
        from aide_tui.host.lock import host_pid as holder

        return holder(root / ".aide")
    except ImportError:
        return None


def tree_bytes(folder: Path, skip: str | None = None) -> int:
    total = 0
    for dirpath, dirs, files in os.walk(folder):
        if skip is not None and skip in dirs:
            dirs.remove(skip)
        for fn in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(dirpath, fn)).st_size
    return total


def scanned_bytes(root: Path) -> int | None:
    """Bytes of the files aide-tui's scanner takes with the default settings (MONOREPO.json's count when
    the workspace was assembled, else a scan)."""
    with suppress(OSError, ValueError, KeyError):
        return int(json.loads((root / "MONOREPO.json").read_text())["languages"]["total"]["indexed_bytes"])
    try:
        from aide_tui.core.index.scan import Scanner
    except ImportError:
        return None
    return sum(e.size for e in Scanner(root).scan().files)


def _git_head() -> str:
    with suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["git", "-C", str(REPO), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return out.stdout.strip()[:120]
    return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path, help="the workspace (indexed in place unless --copy-to)")
    p.add_argument(
        "--copy-to", type=Path, help="copy ROOT (without .aide) to this folder first and work there"
    )
    p.add_argument("--queries", choices=sorted(QUERY_SETS), help="query set (default: from the workspace)")
    p.add_argument(
        "--embedders",
        default="none,static",
        help="cold index runs, in order (none, static, builtin, ..., default = no flag); the last "
        "one's index and embedder serve the other sections",
    )
    p.add_argument("--modes", default="bm25,hybrid", help="search modes for one-shot and serve")
    p.add_argument("--only", type=lambda s: s.split(","), default=[], help=f"sections: {','.join(SECTIONS)}")
    p.add_argument("--skip", type=lambda s: s.split(","), default=[], help="sections left out")
    p.add_argument("--runs", type=int, default=3, help="repetitions for the medians (no-op, edit, defs/refs)")
    p.add_argument("--oneshot-rounds", type=int, default=3, help="passes over the query list, one-shot")
    p.add_argument("--serve-rounds", type=int, default=5, help="passes over the query list, serve")
    p.add_argument("--serve-warmup", type=int, default=1, help="untimed passes first, serve")
    p.add_argument(
        "--serve-skip-from", help="an earlier run's JSON: serve leaves out its slow one-shot queries"
    )
    p.add_argument("--serve-skip-over-ms", type=float, default=10_000, help="what slow means there (took_ms)")
    p.add_argument("--cold-cap", type=float, default=3600, help="seconds a cold index may take")
    p.add_argument("--timeout", type=float, default=900, help="seconds any other command may take")
    p.add_argument("--edit-timeout", type=float, default=120, help="seconds an edit may take to show")
    p.add_argument("--key-timeout", type=float, default=10, help="seconds a key's paint is waited for")
    p.add_argument("--idle", type=float, default=10, help="seconds idle before the idle RSS is read")
    p.add_argument("--app", help="command that runs the app (default: python -m aide_tui of this checkout)")
    p.add_argument("--app-mode", default="bm25", choices=["bm25", "hybrid"], help="the app's search mode")
    p.add_argument("--app-runs", type=int, default=3, help="fresh starts of the app (its figures: medians)")
    p.add_argument("--size", default="120x40", help="the tmux window")
    p.add_argument("--typed", help="queries typed in the app, comma-separated (default: the query set's)")
    p.add_argument("--pause", type=float, default=0.05, help="seconds between a key's paint and the next key")
    p.add_argument("--milvus-lite", action="store_true", help="the index in Milvus Lite (.aide/milvus.db)")
    p.add_argument("--isolate-cache", action="store_true", help="a fresh XDG_CACHE_HOME (models built again)")
    p.add_argument("--json", help="where the figures go (default ./bench_monorepo-ROOTNAME.json)")
    args = p.parse_args(argv)
    root = args.root.resolve()
    if not root.is_dir():
        print(f"{root}: not a folder", file=sys.stderr)
        return 2
    if args.queries is None:
        if (root / "MONOREPO.json").exists():
            args.queries = "monorepo"
        elif (root / "lib" / "sqlalchemy").is_dir():
            args.queries = "sqlalchemy"
        else:
            print(
                "--queries is needed: the workspace is neither the assembled monorepo nor SQLAlchemy",
                file=sys.stderr,
            )
            return 2
    if args.copy_to:
        dest = args.copy_to.resolve()
        if not dest.exists():
            print(f"copying {root} -> {dest}", flush=True)
            shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".aide"), symlinks=True)
        root = dest
    qs = QUERY_SETS[args.queries]
    if args.typed:
        qs = dataclasses.replace(qs, typed=tuple(t for t in args.typed.split(",") if t))
    if not (root / qs.edit).is_file():
        print(f"{root / qs.edit}: the file the edit sections change is missing", file=sys.stderr)
        return 2
    args.json = args.json or f"bench_monorepo-{root.name}.json"

    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    with tempfile.TemporaryDirectory(prefix="aide-bench-mono-") as tmp:
        home = Path(tmp)
        for sub in ("config", "state", "cache"):
            (home / sub).mkdir()
        Bench(args, root, qs, home).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
