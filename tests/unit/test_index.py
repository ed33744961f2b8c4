"""Indexer + store + search on real files: incremental updates, crash safety, corruption, lock, embedders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from loopback_server import LoopbackServer

from aide_tui.core.config import Settings, load_settings
from aide_tui.core.embed.http import OpenAIEmbedder
from aide_tui.core.errors import LockTimeout
from aide_tui.core.events import Committed, Event, Progress
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.records import writer_lock
from aide_tui.core.store.segments import read_index
from aide_tui.core.store.status import read_status

REPO = Path(__file__).resolve().parents[2]


def bm25_settings(root: Path) -> Settings:
    return load_settings(root, {"embedding": {"backend": "none"}})


def index(root: Path, embedder=None, **kw):
    return Indexer(root, bm25_settings(root), embedder).run(**kw)


def paths_and_texts(root: Path) -> dict[str, str]:
    data = read_index(index_dir_for(root))
    out: dict[str, list[str]] = {}
    for c in data.chunks:
        out.setdefault(c.path, []).append(c.text)
    return {p: "\n".join(t) for p, t in out.items()}


def top_paths(root: Path, query: str, **kw) -> list[str]:
    s = Searcher(root, bm25_settings(root), **kw)
    s.refresh()
    return [h.path for h in s.search(query, limit=10).results]


def test_cold_index_then_search_finds_definition(workspace: Path) -> None:
    rep = index(workspace)
    assert rep.files == 5 and rep.chunks >= 5 and rep.changed == 5
    assert top_paths(workspace, "parse_header")[0] == "src/httpclient/headers.py"
    assert top_paths(workspace, "exponential backoff sleep")[0] == "src/httpclient/retry.py"


def test_noop_reindex_writes_nothing(workspace: Path) -> None:
    index(workspace)
    manifest = index_dir_for(workspace) / "manifest.json"
    before = manifest.stat().st_mtime_ns
    rep = index(workspace)
    assert rep.changed == 0 and rep.removed == 0 and not rep.wrote
    assert manifest.stat().st_mtime_ns == before


def test_touch_without_change_is_not_reindexed(workspace: Path) -> None:
    index(workspace)
    f = workspace / "src/httpclient/retry.py"
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    rep = index(workspace)
    assert rep.changed == 0


def test_changed_replaced_deleted_purged_no_ghosts(workspace: Path) -> None:
    index(workspace)
    (workspace / "src/httpclient/headers.py").write_text("def brand_new_function():\n    return 42\n")
    (workspace / "src/httpclient/retry.py").unlink()
    (workspace / "src/httpclient/extra.py").write_text("def zebra_crossing():\n    pass\n")
    rep = index(workspace)
    assert rep.changed == 2 and rep.removed == 1
    texts = paths_and_texts(workspace)
    assert "src/httpclient/retry.py" not in texts
    assert "parse_header" not in texts["src/httpclient/headers.py"]
    assert top_paths(workspace, "partition") == []  # only the old parse_header body had it
    assert top_paths(workspace, "backoff_delays") == []
    assert top_paths(workspace, "brand_new_function")[0] == "src/httpclient/headers.py"
    assert top_paths(workspace, "zebra_crossing")[0] == "src/httpclient/extra.py"
    data = read_index(index_dir_for(workspace))
    assert len({c.id for c in data.chunks}) == len(data.chunks) == data.docs.n_docs


def test_index_files_are_user_only(workspace: Path) -> None:
    index(workspace)
    idx = index_dir_for(workspace)
    assert (idx.stat().st_mode & 0o777) == 0o700
    for p in idx.rglob("*"):
        if p.is_file():
            assert (p.stat().st_mode & 0o077) == 0, p


def test_interrupted_write_leaves_previous_index(workspace: Path) -> None:
    """A real SIGKILL just before the manifest switch: the old index must stay valid and complete."""
    index(workspace)
    before = paths_and_texts(workspace)
    (workspace / "src/httpclient/headers.py").write_text("def replaced():\n    pass\n")
    code = (
        "import os, signal\n"
        "from aide_tui.core.store import segments as store\n"
        "real = store.atomic_write_bytes\n"
        "def die(path, data):\n"
        "    if path.name == 'manifest.json':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(path, data)\n"
        "store.atomic_write_bytes = die\n"
        "from aide_tui.cli import main\n"
        f"main(['index', {str(workspace)!r}, '--embedder', 'none'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120
    )
    assert proc.returncode == -9
    assert paths_and_texts(workspace) == before
    rep = index(workspace)
    assert rep.changed == 1
    assert "def replaced" in paths_and_texts(workspace)["src/httpclient/headers.py"]


@pytest.mark.parametrize(
    "target",
    [
        "manifest.json",
        "c_meta.bin",
        "texts.bin",
        "p_meta.bin",
        "b0.vec.npy",
        "c_ptr.npy",
        "terms.bin",
        "g_meta.json",
        "g_refs.npy",
    ],  # fmt: skip
)
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_index_is_rebuilt_with_message(workspace: Path, target: str, damage: str) -> None:
    with LoopbackServer(dim=8) as srv:
        index(workspace, OpenAIEmbedder(srv.url))
        idx = index_dir_for(workspace)
        seg = json.loads((idx / "manifest.json").read_text())["segments"][0]["name"]
        path = idx / target if target == "manifest.json" else idx / seg / target
        raw = path.read_bytes()
        path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else b"\x00garbage" * 10)
        assert read_status(workspace).state == "corrupt"
        rep = index(workspace, OpenAIEmbedder(srv.url))
    assert any("rebuild" in m for m in rep.messages)
    assert rep.files == 5
    assert top_paths(workspace, "parse_header")[0] == "src/httpclient/headers.py"


def test_flipped_bit_in_vectors_is_detected_not_searched(workspace: Path) -> None:
    """Bit rot in a memory-mapped vector block: same size, so only the checksum can tell."""
    from aide_tui.core.errors import IndexCorrupt

    with LoopbackServer(dim=8) as srv:
        index(workspace, OpenAIEmbedder(srv.url))
        idx = index_dir_for(workspace)
        seg = json.loads((idx / "manifest.json").read_text())["segments"][0]["name"]
        path = idx / seg / "b0.vec.npy"
        raw = bytearray(path.read_bytes())
        raw[-5] ^= 0x10
        path.write_bytes(bytes(raw))
        dense = load_settings(workspace, {"embedding": {"backend": "openai", "url": srv.url}})
        s = Searcher(workspace, dense, OpenAIEmbedder(srv.url))
        s.refresh()  # files are checked when a query first reads them: this one reads every vector
        with pytest.raises(IndexCorrupt, match="checksum"):
            s.search("parse header", mode="dense")
        rep = index(workspace, OpenAIEmbedder(srv.url), rebuild=True)
        assert rep.files == 5
        s.refresh()
        assert s.search("parse_header").results[0].path == "src/httpclient/headers.py"


def test_old_format_version_is_rebuilt(workspace: Path) -> None:
    index(workspace)
    m = index_dir_for(workspace) / "manifest.json"
    data = json.loads(m.read_text())
    data["format"] = 0
    m.write_text(json.dumps(data))
    rep = index(workspace)
    assert any("format" in msg for msg in rep.messages) and rep.changed == 5


def test_lock_timeout_names_holder_and_stale_lock_is_taken(workspace: Path) -> None:
    idx = index_dir_for(workspace)
    with writer_lock(idx):
        with pytest.raises(LockTimeout) as exc:
            Indexer(workspace, load_settings(workspace, {"embedding": {"backend": "none"},
                                                        "index": {"lock_timeout": 0.2}})).run()  # fmt: skip
        assert exc.value.pid == os.getpid() and str(os.getpid()) in str(exc.value)
    # a holder that died (SIGKILL) leaves the file behind; the kernel dropped its flock
    code = (
        "import os, signal; from pathlib import Path; from aide_tui.core.store.records import writer_lock\n"
        f"with writer_lock(Path({str(idx)!r})):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert (idx / "lock").read_text().strip() != str(os.getpid())
    assert index(workspace).files == 5


def test_read_only_workspace_falls_back_to_cache_dir(workspace: Path, tmp_path: Path) -> None:
    code = (
        "import json; from pathlib import Path\n"
        "from aide_tui.core.config import load_settings\n"
        "from aide_tui.core.index.indexer import Indexer\nfrom aide_tui.core.paths import index_dir_for\n"
        f"root = Path({str(workspace)!r})\n"
        "rep = Indexer(root, load_settings(root, {'embedding': {'backend': 'none'}})).run()\n"
        "print(json.dumps({'files': rep.files, 'dir': str(index_dir_for(root, create=False))}))\n"
    )
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    os.chmod(tmp_path, 0o755)
    for p in [workspace, *workspace.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    if os.geteuid() == 0:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code]
        for parent in workspace.parents:
            if str(parent).startswith("/tmp/"):
                os.chmod(parent, os.stat(parent).st_mode | 0o055)
    else:
        os.chmod(workspace, 0o555)
        cmd = [sys.executable, "-c", code]
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache), "HOME": str(cache)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["files"] == 5
    assert got["dir"].startswith(str(cache)) and not (workspace / ".aide").exists()


# -- embedders ---------------------------------------------------------------------------------------


def test_dense_vectors_cached_model_change_reembeds(workspace: Path) -> None:
    with LoopbackServer(dim=16) as srv:
        emb_a = OpenAIEmbedder(srv.url, model="model-a")
        rep = index(workspace, emb_a)
        data = read_index(index_dir_for(workspace))
        assert rep.embedder == "openai:model-a" and not rep.degraded
        assert rep.newly_embedded == len(data.pieces) >= rep.chunks == rep.embedded
        n_inputs = sum(len(x) for x in srv.inputs)
        # no-op reindex: one probe (it notices a model swapped under the same id), nothing embedded
        rep = index(workspace, OpenAIEmbedder(srv.url, model="model-a"))
        assert rep.newly_embedded == 0 and sum(len(x) for x in srv.inputs) == n_inputs + 1
        # rename a file: its chunks come from the cache, no request
        os.rename(workspace / "src/httpclient/retry.py", workspace / "src/httpclient/backoff.py")
        rep = index(workspace, OpenAIEmbedder(srv.url, model="model-a"))
        assert rep.changed == 1 and rep.newly_embedded == 0
        # a different model id re-embeds everything
        rep = index(workspace, OpenAIEmbedder(srv.url, model="model-b"))
        assert rep.newly_embedded == len(read_index(index_dir_for(workspace)).pieces)
        assert any("embedder changed" in m for m in rep.messages)
        assert all(len(batch) <= 16 for batch in srv.inputs)
        data = read_index(index_dir_for(workspace))
        assert data.present.all()
        np.testing.assert_allclose(np.linalg.norm(data.vectors, axis=1), 1.0, rtol=1e-5)


def test_hybrid_search_reports_ranks_and_degrades_on_dead_server(workspace: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai"}})
    with LoopbackServer(dim=16) as srv:
        Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        s = Searcher(workspace, settings, OpenAIEmbedder(srv.url))
        resp = s.search("parse_header")
        assert not resp.degraded
        assert resp.results[0].path == "src/httpclient/headers.py"
        assert any(h.ranks["dense"] is not None for h in resp.results)
        assert resp.results[0].ranks["bm25"] == 1
        url = srv.url
    dead = Searcher(workspace, settings, OpenAIEmbedder(url, retries=0, timeout=2))
    resp = dead.search("parse_header")
    assert resp.degraded and "not reachable" in (resp.degraded_reason or "")
    assert resp.results[0].path == "src/httpclient/headers.py"
    assert all(h.ranks["dense"] is None for h in resp.results)


def test_index_with_dead_embedder_is_degraded_but_complete(workspace: Path) -> None:
    with LoopbackServer() as srv:
        url = srv.url
    rep = index(workspace, OpenAIEmbedder(url, retries=0))
    assert rep.degraded and "not reachable" in (rep.degraded_reason or "")
    assert rep.files == 5 and top_paths(workspace, "parse_header")[0] == "src/httpclient/headers.py"


def test_progress_events_and_cancel(workspace: Path) -> None:
    events: list[Event] = []
    with LoopbackServer(dim=8) as srv:
        index(workspace, OpenAIEmbedder(srv.url), on_progress=events.append)
    states = [e.state for e in events if isinstance(e, Progress)]
    assert states[0] == "scanning" and "embedding" in states
    assert isinstance(events[-1], Committed) and events[-1].vectors_missing == 0
    emb = [e for e in events if isinstance(e, Progress) and e.state == "embedding"]
    assert emb[-1].vectors_done == emb[-1].vectors_total > 0
    cancel = threading.Event()
    cancel.set()
    rep = Indexer(workspace, bm25_settings(workspace)).run(cancel=cancel, rebuild=True)
    assert rep.cancelled


def test_builtin_weights_mismatch_degrades_index_and_search(workspace: Path, tmp_path: Path) -> None:
    """A tampered model copy (wrong sha256) must give BM25-only results with the reason, never a crash."""
    from aide_tui.core.embed.builtin import PACKAGED_SHA256, BuiltinEmbedder, packaged_model_dir

    bad = tmp_path / "model"
    bad.mkdir()
    for f in packaged_model_dir().iterdir():
        if f.is_file():
            (bad / f.name).symlink_to(f)
    (bad / "vocab.txt").unlink()
    (bad / "vocab.txt").write_text((packaged_model_dir() / "vocab.txt").read_text() + "tampered\n")
    emb = BuiltinEmbedder(model_dir=bad, expected_sha256=PACKAGED_SHA256)
    rep = index(workspace, emb)
    assert rep.degraded and "sha256 mismatch" in (rep.degraded_reason or "")
    assert rep.files == 5
    s = Searcher(workspace, bm25_settings(workspace), emb)
    resp = s.search("parse_header")
    assert resp.degraded and "sha256" in (resp.degraded_reason or "")
    assert resp.results[0].path == "src/httpclient/headers.py"


def test_builtin_embedder_end_to_end_and_rename_hits_cache(workspace: Path) -> None:
    from aide_tui.core.embed.builtin import BuiltinEmbedder

    rep = index(workspace, BuiltinEmbedder())
    assert not rep.degraded and rep.embedded == rep.chunks and rep.newly_embedded > 0
    os.rename(workspace / "src/httpclient/retry.py", workspace / "src/httpclient/backoff.py")
    rep = index(workspace, BuiltinEmbedder())
    assert rep.changed == 1 and rep.newly_embedded == 0 and rep.embedded == rep.chunks
    s = Searcher(workspace, load_settings(workspace, {"search": {"mode": "dense"}}), BuiltinEmbedder())
    top = s.search("wait longer and longer between attempts").results[0]
    assert top.path == "src/httpclient/backoff.py" and top.ranks["dense"] == 1


def test_reader_retries_when_its_generation_is_retired(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that read the manifest just before two quick reindexes finds its generation gone."""
    from aide_tui.core.store import segments as store

    index(workspace)
    idx = index_dir_for(workspace)
    stale = store.read_manifest(idx)
    for i in range(2):
        (workspace / "src/httpclient/extra.py").write_text(f"def generation_{i}():\n    pass\n")
        index(workspace, rebuild=True)
    assert not (idx / stale.segments[0].name).exists()
    real = store.read_manifest
    first = [stale]
    monkeypatch.setattr(store, "read_manifest", lambda d: first.pop() if first else real(d))
    data = store.read_index(idx)
    assert any("generation_1" in c.text for c in data.chunks)


def test_targeted_run_looks_only_at_the_named_paths(workspace: Path) -> None:
    """A watcher-driven run re-examines just the changed paths; deletions (files or folders) leave no
    ghosts; a new folder or an ignore-file change falls back to walking the tree."""
    index(workspace)
    (workspace / "src/httpclient/headers.py").write_text("def parse_trailer(line):\n    return line\n")
    (workspace / "src/httpclient/retry.py").write_text("def unnoticed_change():\n    pass\n")
    rep = index(workspace, paths=["src/httpclient/headers.py"])
    assert rep.changed == 1
    texts = paths_and_texts(workspace)
    assert "parse_trailer" in texts["src/httpclient/headers.py"]
    assert "unnoticed_change" not in texts["src/httpclient/retry.py"]  # not named: not looked at
    (workspace / "src/httpclient/client.py").unlink()
    rep = index(workspace, paths=["src/httpclient/client.py"])
    assert rep.removed == 1 and "src/httpclient/client.py" not in paths_and_texts(workspace)
    import shutil

    shutil.rmtree(workspace / "web")
    rep = index(workspace, paths=["web"])
    assert "web/app.ts" not in paths_and_texts(workspace)
    (workspace / "newdir").mkdir()
    (workspace / "newdir" / "fresh.py").write_text("def brand_new():\n    pass\n")
    rep = index(workspace, paths=["newdir"])  # a folder appeared: walk (which also finds retry.py)
    texts = paths_and_texts(workspace)
    assert "brand_new" in texts["newdir/fresh.py"] and "unnoticed_change" in texts["src/httpclient/retry.py"]
    (workspace / ".gitignore").write_text("newdir/\n")
    index(workspace, paths=[".gitignore"])
    assert "newdir/fresh.py" not in paths_and_texts(workspace)
    (workspace / "ignored.log").write_text("x")
    (workspace / ".gitignore").write_text("newdir/\n*.log\n")
    index(workspace)
    rep = index(workspace, paths=["ignored.log", "newdir/fresh.py"])
    assert rep.changed == 0 and set(paths_and_texts(workspace)) == {
        "src/httpclient/headers.py", "src/httpclient/retry.py", "docs/usage.md", ".gitignore",
    }  # fmt: skip


def test_incremental_runs_never_drop_cached_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finished embedding work is kept: after small edits, a rebuild re-embeds nothing it had before."""
    from test_faults import generate_repo

    from aide_tui.core.index.embcache import EmbeddingCache

    monkeypatch.setattr(EmbeddingCache, "PRUNE_FLOOR", 5)
    root = tmp_path / "repo"
    generate_repo(root, 30, seed=5)
    with LoopbackServer(dim=8) as srv:
        first = index(root, OpenAIEmbedder(srv.url))
        for i in range(3):
            p = root / "pkg0" / "mod_0.py"
            p.write_text(p.read_text() + f"\n\ndef edit_{i}():\n    return {i}\n")
            index(root, OpenAIEmbedder(srv.url))
        before = len(srv.requests)
        rep = index(root, OpenAIEmbedder(srv.url), rebuild=True)
        assert rep.vectors_missing == 0 and rep.newly_embedded == 0, (
            rep.newly_embedded,
            first.newly_embedded,
        )
        assert len(srv.requests) - before <= 1  # the dimension probe only
