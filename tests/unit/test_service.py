"""IndexService (subprocess indexing with coalescing) and the watcher's change filter, on real files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from watchfiles import Change

from aide_tui.core.config import load_settings
from aide_tui.core.events import Done, Event, Failed, Progress
from aide_tui.core.index.service import IndexService
from aide_tui.core.index.watch import MAX_GROUP_MS, QUIET_MS, ChangeFilter, changed_paths
from aide_tui.core.store.status import read_status


def test_requests_during_a_run_coalesce_into_one_more(workspace: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "none"}})
    events: list[Event] = []
    first_event = threading.Event()

    def on_event(e: dict) -> None:
        events.append(e)
        first_event.set()

    svc = IndexService(workspace, settings, on_event)
    svc.request()
    assert first_event.wait(60)  # the first run is under way
    for _ in range(5):
        svc.request()
    assert svc.wait(120)
    assert svc.runs == 2
    done = [e for e in events if isinstance(e, Done)]
    assert len(done) == 2 and done[0].files == 5 and done[1].changed == 0
    assert any(isinstance(e, Progress) and e.state == "scanning" for e in events)
    assert read_status(workspace).files == 5
    svc.close()


def test_rebuild_request_and_error_event(workspace: Path, tmp_path: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "none"}})
    events: list[Event] = []
    svc = IndexService(workspace, settings, events.append)
    svc.request(rebuild=True)
    assert svc.wait(120)
    assert [e for e in events if isinstance(e, Done)][0].changed == 5
    gone = IndexService(tmp_path / "missing", settings, events.append)
    gone.request()
    assert gone.wait(120)
    assert isinstance(events[-1], Failed) and "not a directory" in events[-1].message


def test_change_filter_applies_ignore_rules(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("generated/\n*.log\n")
    filt = ChangeFilter(workspace, load_settings(workspace, {"embedding": {"backend": "none"}}))
    root = str(workspace)
    changes = {
        (Change.modified, f"{root}/src/httpclient/client.py"),
        (Change.added, f"{root}/generated/x.py"),
        (Change.added, f"{root}/debug.log"),
        (Change.modified, f"{root}/.aide/index/manifest.json"),
        (Change.modified, f"{root}/node_modules/a/index.js"),
        (Change.deleted, f"{root}/src/httpclient/retry.py"),
        (Change.added, "/elsewhere/file.py"),
    }
    assert changed_paths(filt, changes) == {"src/httpclient/client.py", "src/httpclient/retry.py"}


def test_watcher_storm_coalesces_into_one_or_two_reindexes(workspace: Path) -> None:
    """5,000 files created at once (a checkout) → the watcher's batches cause at most two index runs."""
    import time

    import watchfiles

    settings = load_settings(workspace, {"embedding": {"backend": "none"}})
    svc = IndexService(workspace, settings, lambda e: None)
    svc.request()
    assert svc.wait(120)
    filt = ChangeFilter(workspace, settings)
    stop = threading.Event()
    batches: list[set[str]] = []

    def watch() -> None:
        opts = {"debounce": MAX_GROUP_MS, "step": QUIET_MS, "rust_timeout": 200, "yield_on_timeout": True}
        for changes in watchfiles.watch(workspace, watch_filter=None, stop_event=stop, **opts):
            paths = changed_paths(filt, changes)
            if paths:
                batches.append(paths)
                svc.request()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        sentinel = workspace / "sentinel.py"
        for _ in range(100):  # the watcher is live once it reports the sentinel
            sentinel.write_text(f"X = {time.time()}\n")
            time.sleep(0.2)
            if batches:
                break
        assert batches, "watcher never reported a change"
        assert svc.wait(120)
        batches.clear()
        runs_before = svc.runs
        storm = workspace / "generated_pkg"
        storm.mkdir()
        for i in range(5000):
            (storm / f"m{i}.py").write_text(f"def storm_{i}():\n    return {i}\n")
        # inotify can miss files created right after their new folder (the watch is added late); the
        # indexer rescans the tree anyway, so wait for quiet: idle service and no batch for 3 s
        deadline = time.monotonic() + 120
        last = (-1, time.monotonic())
        while time.monotonic() < deadline:
            if len(batches) != last[0]:
                last = (len(batches), time.monotonic())
            elif not svc.running and time.monotonic() - last[1] > 3:
                break
            time.sleep(0.2)
        assert len(set().union(*batches)) > 4000 and svc.wait(120)
        assert 1 <= svc.runs - runs_before <= 2, (svc.runs - runs_before, [len(b) for b in batches])
    finally:
        stop.set()
        thread.join(10)
        svc.close()
    from aide_tui.core.store.status import read_status as status

    assert status(workspace).files == 5 + 1 + 5000


def test_priority_files_are_embedded_first(workspace: Path) -> None:
    """The TUI passes the files the user is looking at; their vectors are computed before the rest."""
    from loopback_server import LoopbackServer

    with LoopbackServer(dim=8) as srv:
        settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": srv.url}})
        svc = IndexService(workspace, settings, lambda e: None)
        # retry.py is neither the smallest file nor first by path: only the priority puts it first
        svc.request(priority=["src/httpclient/retry.py"])
        assert svc.wait(120)
        svc.close()
        inputs = [text for batch in srv.inputs for text in batch if "dim probe" not in text]
    assert inputs and "file: src/httpclient/retry.py" in inputs[0]
    first_other = next(i for i, t in enumerate(inputs) if "retry.py" not in t)
    assert all("retry.py" not in t for t in inputs[first_other:])


def test_new_change_preempts_embedding_and_no_vector_is_lost(tmp_path: Path) -> None:
    """While a long embedding run goes on, an edit is committed (searchable) at once; the run resumes
    afterwards and every vector computed before the interruption is kept."""
    from loopback_server import LoopbackServer
    from test_faults import generate_repo

    from aide_tui.core.search.searcher import Searcher

    root = tmp_path / "repo"
    generate_repo(root, 60, seed=3)
    events: list[Event] = []
    with LoopbackServer(dim=8, mode="slow") as srv:
        srv.delay = 0.15  # per request of at most 16 texts: the whole run takes many seconds
        settings = load_settings(root, {"embedding": {"backend": "openai", "url": srv.url}})
        svc = IndexService(root, settings, events.append)
        try:
            svc.request()
            deadline = time.monotonic() + 120
            while not any(
                isinstance(e, Progress) and e.state == "embedding" and e.vectors_done for e in events
            ):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            (root / "pkg0" / "fresh.py").write_text("def quokka_zanzibar():\n    return 1\n")
            t0 = time.monotonic()
            svc.request(priority=["pkg0/fresh.py"])
            searcher = Searcher(root, load_settings(root, {"embedding": {"backend": "none"}}))
            while True:
                searcher.refresh()
                if searcher.search("quokka_zanzibar").results:
                    break
                assert time.monotonic() - t0 < 60
                time.sleep(0.05)
            first = [e for e in events if isinstance(e, Done)][0]
            assert first.preempted and first.newly_embedded > 0
            assert svc.wait(300)
        finally:
            svc.close()
        sent = [t for r in srv.requests if isinstance(r.body, dict) for t in r.body.get("input", [])]
    dones = [e for e in events if isinstance(e, Done)]
    assert len(dones) == 2 and dones[-1].vectors_missing == 0
    # every piece was embedded exactly once: the interrupted run's vectors were kept, not redone
    from aide_tui.core.paths import index_dir_for
    from aide_tui.core.store.segments import read_manifest

    pieces = read_manifest(index_dir_for(root)).counts.pieces
    assert len([t for t in sent if t != "dim probe"]) == pieces
    assert dones[0].newly_embedded + dones[1].newly_embedded == pieces


def test_bulk_batches_shrink_to_a_slow_embedders_pace(tmp_path: Path) -> None:
    """A bulk embed sizes its batches to take about BATCH_SECONDS (the most an edit waits for the
    embedder): a slow embedder gets small batches, a fast one gets up to EMBED_BATCH."""
    from loopback_server import LoopbackServer
    from test_faults import generate_repo

    from aide_tui.core.index.indexer import BATCH_SECONDS, EMBED_BATCH, MIN_EMBED_BATCH, batch_size

    assert batch_size(8, 8 * BATCH_SECONDS / 5) == 5  # five pieces take BATCH_SECONDS at this pace
    assert batch_size(8, 100.0) == MIN_EMBED_BATCH and batch_size(8, 0.0) == EMBED_BATCH
    root = tmp_path / "repo"
    generate_repo(root, 40, seed=5)

    def bulk_sizes(srv: LoopbackServer) -> list[int]:
        bodies = [r.body for r in srv.requests if isinstance(r.body, dict)]
        return [len(b["input"]) for b in bodies if b.get("input") != ["dim probe"]]

    with LoopbackServer(dim=8, mode="slow") as srv:
        srv.delay = 0.5  # per request: 8 texts in 0.5 s is slower than BATCH_SECONDS allows
        settings = load_settings(root, {"embedding": {"backend": "openai", "url": srv.url}})
        svc = IndexService(root, settings, lambda e: None)
        try:
            svc.request()
            deadline = time.monotonic() + 120
            while len(bulk_sizes(srv)) < 4:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            svc.close()
        sizes = bulk_sizes(srv)
    assert sizes[0] == 2 * MIN_EMBED_BATCH and set(sizes[1:4]) == {MIN_EMBED_BATCH}


COLD_LOAD = """
import sys, threading
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from test_faults import generate_repo
from aide_tui.core.config import load_settings
from aide_tui.core.embed.builtin import BuiltinEmbedder
from aide_tui.core.index.indexer import Indexer

root = Path(sys.argv[1])
generate_repo(root, 12, seed=2)
# the transformer alone: the static tier's table (distilled from the same model) would load it first
settings = load_settings(root, {"embedding": {"backend": "builtin", "static": False}})
Indexer(root, settings, None).run()  # the lexical index; every vector missing
report = Indexer(root, settings, BuiltinEmbedder()).run(should_yield=lambda: True)
loading = any(t.name == "aide-embedder-load" for t in threading.enumerate())
print(report.preempted, report.newly_embedded, loading)
"""


def test_newer_work_preempts_the_embedders_model_load(tmp_path: Path) -> None:
    """Loading the model (seconds of reading and verifying weights on a busy machine) does not hold
    newer work back: a run asked to yield while the model loads ends at once, having embedded
    nothing, and the load goes on for the next run. A cold process, so the model is really loaded."""
    import subprocess
    import sys

    tests = str(Path(__file__).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    out = subprocess.run([sys.executable, "-c", COLD_LOAD, str(tmp_path / "repo"), tests], env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "0", "True"]


def test_own_index_writes_do_not_hold_back_a_lone_edit(workspace: Path, monkeypatch) -> None:  # noqa: ANN001
    """Writes under .aide/ (commits, merges, cache saves) are not user activity: an edit made while
    they go on is reported as a lone edit, not held in a storm's coalescing window."""
    import queue

    from aide_tui.core.index import watch as watch_mod

    monkeypatch.setattr(watch_mod, "QUIET_MS", 5_000)  # coalesced batches wait for 5 s of quiet
    monkeypatch.setattr(watch_mod, "MAX_GROUP_MS", 600_000)
    settings = load_settings(workspace, {"embedding": {"backend": "none"}})
    stop, writing = threading.Event(), threading.Event()
    got: queue.Queue[set[str]] = queue.Queue()

    def watch() -> None:
        for batch in watch_mod.watch_batches(workspace, settings, stop):
            got.put(batch)

    own = workspace / ".aide" / "index"
    own.mkdir(parents=True, exist_ok=True)

    def index_writes() -> None:  # our own folder changing every 50 ms, as a long run's commits do
        i = 0
        while writing.is_set():
            (own / "scratch.tmp").write_text(str(i))
            i += 1
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()
    writing.set()
    threading.Thread(target=index_writes, daemon=True).start()
    try:
        sentinel, first = workspace / "sentinel.py", None
        for i in range(40):  # the watcher is live once it reports the sentinel
            sentinel.write_text(f"X = {i}\n")
            try:
                first = got.get(timeout=1.5)
                break
            except queue.Empty:
                continue
        assert first is not None, "watcher never reported a change"
        time.sleep(1.5)  # the user pauses; only the index folder changes meanwhile
        target = next(workspace.rglob("*.py"))
        target.write_text(target.read_text() + "\n# edited\n")
        rel = target.relative_to(workspace).as_posix()
        deadline = time.monotonic() + 30
        seen: set[str] = set()
        while rel not in seen and time.monotonic() < deadline:
            try:
                seen |= got.get(timeout=1)
            except queue.Empty:
                pass
        assert rel in seen, "the edit was held back while the index folder kept changing"
    finally:
        writing.clear()
        stop.set()
