"""The Milvus store on the real engine (Milvus Lite on a temp folder, no mocks).

Module-scoped: one Lite store holds two workspaces sharing a collection, indexed once; tests that change
a workspace use their own collection in the same store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="the milvus extra is not installed (pip install 'aide-tui[milvus]')")
pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (pip install 'aide-tui[milvus]')")

from conftest import FILES, write_workspace  # noqa: E402

from aide_tui.cli import main  # noqa: E402
from aide_tui.core.config import Settings  # noqa: E402
from aide_tui.core.errors import EmbedderError
from aide_tui.core.index.indexer import Indexer  # noqa: E402
from aide_tui.core.milvus.terms import escape_term  # noqa: E402
from aide_tui.core.search.milvus import MilvusRetriever  # noqa: E402
from aide_tui.core.search.searcher import Searcher  # noqa: E402

PKG_PARENT = str(Path(__file__).resolve().parents[2])

OTHER = {
    "lib/cache.py": '''
        """An LRU cache for parsed templates."""


        class TemplateCache:
            """Keeps the most recently rendered templates."""

            def evict_oldest(self) -> None:
                """Drop the least recently used template."""
                self.entries.pop(next(iter(self.entries)))
    ''',
    "lib/render.py": '''
        def render_template(name: str, context: dict) -> str:
            """Render a template by name with the given context."""
            return name.format(**context)
    ''',
}


def _settings(db: Path, collection: str = "team", workspace: str = "", **store: object) -> Settings:
    s = Settings()
    return replace(
        s,
        embedding=replace(s.embedding, backend="none"),
        store=replace(s.store, backend="milvus", uri=str(db), collection=collection, workspace=workspace,
                      **store),  # type: ignore[arg-type]
    )  # fmt: skip


def _index(root: Path, settings: Settings, embedder: object = None, error: str | None = None) -> object:
    return Indexer(root, settings, embedder, error).run()  # type: ignore[arg-type]


def _rows(settings: Settings, root: Path, collection: str = "") -> list[dict]:
    """Every chunk row of the workspace in the engine: (path, start, end)."""
    b = MilvusRetriever(root, settings)
    store = b.store()
    try:
        return list(
            store.query_all(collection or store.chunks, f'workspace == "{b.ws}"', ["path", "start_line"])
        )
    finally:
        store.close()


class HashEmbedder:
    """A deterministic 16-d embedder: bag of hashed words (so similar texts are near)."""

    id = "test-hash-16"
    dim = 16

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        if self.fail:
            raise EmbedderError("test embedder is down")
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i, 0] += 0.01
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two workspaces indexed into one collection of one Lite store (the first with vectors)."""
    base = tmp_path_factory.mktemp("milvus")
    db = base / "team.db"
    a = write_workspace(base / "alpha")
    b = write_workspace(base / "beta", OTHER)
    sa, sb = _settings(db, workspace="alpha"), _settings(db, workspace="beta")
    ra = _index(a, sa, HashEmbedder())
    rb = _index(b, sb, HashEmbedder())
    return {"base": base, "db": db, "a": a, "b": b, "sa": sa, "sb": sb, "reports": (ra, rb)}


def test_escaped_terms_stay_one_word() -> None:
    assert escape_term("os.path.join") == "oszdpathzdjoin"
    assert escape_term("parse_header") == "parsezuheader"
    assert escape_term("zz_") != escape_term("z.z")  # injective


def test_index_and_search_find_the_right_file(shared: dict) -> None:
    ra, rb = shared["reports"]
    assert ra.files == len(FILES) and ra.chunks > 0 and rb.files == len(OTHER)
    assert ra.newly_embedded >= ra.chunks and rb.newly_embedded > 0  # `index` prints "N vectors computed"
    assert _index(shared["a"], shared["sa"], HashEmbedder()).newly_embedded == 0  # nothing new
    searcher = Searcher(shared["a"], shared["sa"], HashEmbedder())
    resp = searcher.search("parse_header", limit=5)
    assert resp.results[0].path == "src/httpclient/headers.py"
    assert resp.results[0].ranks["bm25"] == 1 and resp.results[0].ranks.get("symbol") == 1
    assert not resp.degraded
    resp = searcher.search("follow redirects until a non-redirect response", limit=5)
    top = resp.results[0]
    assert top.path == "src/httpclient/client.py"
    assert top.ranks["bm25"] is not None and top.ranks["dense"] is not None  # both retrievers found it
    assert all(h.path in FILES for h in resp.results)  # never the other workspace's files
    assert resp.to_json()["results"][0].keys() >= {
        "path",
        "start_line",
        "end_line",
        "score",
        "symbol",
        "ranks",
    }


def test_same_ranking_as_the_local_store(shared: dict, tmp_path: Path) -> None:
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.search.searcher import Searcher

    local_root = write_workspace(tmp_path / "local")
    s = Settings()
    s = replace(s, embedding=replace(s.embedding, backend="none"))
    Indexer(local_root, s).run()
    local = Searcher(local_root, s)
    milvus = Searcher(shared["a"], shared["sa"])
    for q in ("parse_header", "Client.send", "send one request over a socket", "lang:ts cache get",
              "format headers", "path:headers.py split"):  # fmt: skip
        want = [(h.path, h.start_line) for h in local.search(q, limit=5, mode="bm25").results]
        got = [(h.path, h.start_line) for h in milvus.search(q, limit=5, mode="bm25").results]
        assert got[:3] == want[:3], q


HEADERS = {
    "include/holder.h": "namespace util {\nclass Holder {\npublic:\n    int capybara() { return 1; }\n};\n}",
    "src/image.h": "typedef struct Image *ImagePtr;\nextern int capybara_count(ImagePtr im);\n",
    "src/image.c": "int capybara_count(ImagePtr im) {\n    return 0;\n}\n",
}


def test_a_header_passes_c_and_cpp_filters_as_in_the_local_store(tmp_path: Path) -> None:
    """A ``.h`` that writes C++ is chunked as C++: the engine's ``language`` column alone would drop it
    from ``lang:c`` and a C header from ``lang:cpp``; both stores answer by the file's path."""
    from aide_tui.core.search.searcher import Searcher

    local_root = write_workspace(tmp_path / "local", HEADERS)
    s = Settings()
    s = replace(s, embedding=replace(s.embedding, backend="none"))
    Indexer(local_root, s).run()
    root = write_workspace(tmp_path / "gamma", HEADERS)
    sm = _settings(tmp_path / "gamma.db", workspace="gamma")
    _index(root, sm)
    for q in ("lang:cpp capybara", "lang:c capybara"):
        want = {h.path for h in Searcher(local_root, s).search(q, limit=10, mode="bm25").results}
        got = {h.path for h in Searcher(root, sm).search(q, limit=10, mode="bm25").results}
        assert got == want, q
    assert "src/image.h" in want and "include/holder.h" in want


def test_embedder_down_is_degraded_with_bm25_results(shared: dict) -> None:
    searcher = Searcher(shared["a"], shared["sa"], HashEmbedder(fail=True))
    resp = searcher.search("parse_header", limit=5)
    assert resp.degraded and "down" in (resp.degraded_reason or "")
    assert resp.results[0].path == "src/httpclient/headers.py"
    assert resp.results[0].ranks["dense"] is None


def test_all_workspaces_labels_each_hit(shared: dict, capsys: pytest.CaptureFixture[str]) -> None:
    root, db = shared["a"], shared["db"]
    store = ["--store", "milvus", "--store-uri", str(db), "--collection", "team", "--workspace-id", "alpha"]
    args = ["search", "--path", str(root), *store, "--embedder", "none", "--no-update", "--json"]
    args += ["--limit", "20"]
    assert main([*args, "--all-workspaces", "render template cache headers"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    labels = {r["workspace"]: r["path"] for r in out["results"]}
    assert set(labels) == {"alpha", "beta"}
    assert {r["path"] for r in out["results"] if r["workspace"] == "beta"} <= set(OTHER)
    assert main([*args, "render template"]) == 0  # this workspace only: no labels, no beta files
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert all("workspace" not in r and r["path"] in FILES for r in out["results"])
    assert main([a for a in args if a != "--json"] + ["--all-workspaces", "evict_oldest"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("[beta] lib/cache.py:")
    plain = [a for a in args if a != "--json"]
    assert main([*plain, "--format", "paths", "--all-workspaces", "evict_oldest"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(str(Path("beta") / "lib" / "cache.py"))  # under its own workspace's root


def test_status_reports_the_store(shared: dict, capsys: pytest.CaptureFixture[str]) -> None:
    st = MilvusRetriever(shared["b"], shared["sb"]).status()
    assert st.state == "ready" and st.files == len(OTHER) and st.extra["workspace"] == "beta"


def test_edit_replaces_and_delete_purges(shared: dict, tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "edit")
    s = _settings(shared["db"], collection="edits")
    _index(root, s)
    before = _rows(s, root)
    assert {r["path"] for r in before} == set(FILES)
    assert _index(root, s).changed == 0  # unchanged files cost nothing
    hp = root / "src/httpclient/headers.py"
    hp.write_text(hp.read_text().replace("parse_header", "split_header_line"))
    report = _index(root, s)
    assert report.changed == 1
    rows = _rows(s, root)
    assert len(rows) == len(before)  # replaced, not added
    searcher = Searcher(root, s)
    assert searcher.search("split_header_line", limit=3).results[0].path == "src/httpclient/headers.py"
    assert all("parse_header" not in h.text for h in searcher.search("parse_header", limit=20).results)
    (root / "src/httpclient/client.py").unlink()
    assert _index(root, s).removed == 1
    assert "src/httpclient/client.py" not in {r["path"] for r in _rows(s, root)}
    b = MilvusRetriever(root, s)
    pieces = list(b.store().query_all(b.store().pieces, 'path == "src/httpclient/client.py"', ["path"]))
    assert pieces == []  # no ghosts among the pieces either
    assert "src/httpclient/client.py" not in b.store().records(b.ws)
    b.store().close()
    assert all(h.path != "src/httpclient/client.py" for h in Searcher(root, s).search("redirects").results)


class Killed(BaseException):
    """Stands for a kill in the middle of a batch (nothing in the indexer catches it)."""


class DyingEmbedder(HashEmbedder):
    def __init__(self, after: int) -> None:
        super().__init__()
        self.calls = 0
        self.after = after

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        self.calls += 1
        if self.calls > self.after:
            raise Killed
        return super().embed(texts, kind)


def test_an_interrupted_batch_is_redone(
    shared: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aide_tui.core.index.milvus_writer as ms

    monkeypatch.setattr(ms, "FILE_BATCH", 2)
    root = write_workspace(tmp_path / "resume")
    s = _settings(shared["db"], collection="resume")
    with pytest.raises(Killed):  # chunk rows of the second batch are in, its records are not
        _index(root, s, DyingEmbedder(after=1))
    b = MilvusRetriever(root, s)
    assert b.store().meta(b.ws)["pending"]  # the batch in flight is journalled
    b.store().close()
    report = _index(root, s, HashEmbedder())
    assert any("interrupted" in m for m in report.messages)
    rows = _rows(s, root)
    b = MilvusRetriever(root, s)
    records = b.store().records(b.ws)
    b.store().close()
    assert set(records) == set(FILES)
    assert len(rows) == sum(r.chunks for r in records.values())  # no duplicates, nothing missing
    assert len({(r["path"], r["start_line"]) for r in rows}) == len(rows)


def test_read_only_writes_nothing(shared: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_workspace(tmp_path / "ro")
    db = shared["db"]
    s = _settings(db, collection="readonly")
    _index(root, s)
    b = MilvusRetriever(root, s)
    version = b.version_key()
    b.store().close()
    (root / "src/httpclient/new_module.py").write_text("def brand_new_function():\n    return 1\n")
    base = ["--path", str(root), "--store", "milvus", "--store-uri", str(db), "--collection", "readonly",
            "--embedder", "none", "--json"]  # fmt: skip
    assert main(["search", *base, "--read-only", "brand_new_function"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert all(r["path"] != "src/httpclient/new_module.py" for r in out["results"])
    b = MilvusRetriever(root, s)
    assert b.version_key() == version and "src/httpclient/new_module.py" not in b.store().records(b.ws)
    b.store().close()
    code = main(["index", str(root), "--store", "milvus", "--store-uri", str(db), "--collection", "readonly",
                 "--embedder", "none", "--read-only"])  # fmt: skip
    assert code == 1 and "read-only" in capsys.readouterr().err
    assert main(["search", *base, "brand_new_function"]) == 0  # a writer refreshes first
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["results"][0]["path"] == "src/httpclient/new_module.py"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PKG_PARENT, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)  # fmt: skip


def test_engine_deleted_or_damaged_is_a_clear_message(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "fault", OTHER)
    db = tmp_path / "fault.db"
    store = ["--store", "milvus", "--store-uri", str(db), "--embedder", "none"]
    proc = _cli(["index", str(root), *store], tmp_path)
    assert proc.returncode == 0, proc.stderr
    search = ["search", "--path", str(root), *store, "--no-update", "render"]
    assert _cli(search, tmp_path).returncode == 0
    import fcntl

    with open(db / "LOCK", "a+") as held:  # another process has the store open
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        proc = _cli([*search, "--lock-timeout", "0"], tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "in use by another process" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    manifest = next(db.glob("collections/*_files/manifest.json"))
    manifest.write_text("{not json")
    for args in (search, ["index", str(root), *store]):
        proc = _cli(args, tmp_path)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "damaged" in proc.stderr and str(db) in proc.stderr
    status = _cli(["status", str(root), *store, "--json"], tmp_path)
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == "corrupt"
    shutil.rmtree(db)
    proc = _cli([*search, "--read-only"], tmp_path)  # a reader says why it cannot answer
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no Milvus Lite store" in proc.stderr
    proc = _cli(search, tmp_path)  # a writer builds the store again, as with a missing local index
    assert proc.returncode == 0 and "lib/render.py" in proc.stdout


def test_kill_9_mid_batch_then_the_next_run_resumes(tmp_path: Path) -> None:
    """A real kill -9 of `aide-tui index` between batches' writes: the next run leaves no duplicates,
    no ghosts and every file indexed."""
    import signal

    root = tmp_path / "big"
    for i in range(400):
        p = root / f"pkg{i % 8}" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f'def function_{i}(x):\n    """Return x plus {i}."""\n    return x + {i}\n' * 3)
    db = tmp_path / "kill.db"
    store = ["--store", "milvus", "--store-uri", str(db), "--embedder", "none"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PKG_PARENT, env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "aide_tui", "index", str(root), *store, "--progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:
        if '"indexing"' in line:
            seen += 1
            if seen == 2:  # two batches are committed, the third is being written
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    done = _cli(["index", str(root), *store, "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    # (usually "resuming: redoing 64 files of an interrupted batch": the kill lands in the third batch's
    # writes; landing between its read and its journal entry is just as valid)
    assert json.loads(done.stdout.strip().splitlines()[-1])["files"] == 400
    s = _settings(db, collection="")
    b = MilvusRetriever(root, s)
    try:
        records = b.store().records(b.ws)
        rows = list(b.store().query_all(b.store().chunks, f'workspace == "{b.ws}"', ["path", "start_line"]))
        pieces = list(b.store().query_all(b.store().pieces, f'workspace == "{b.ws}"', ["path", "start_line"]))
    finally:
        b.store().close()
    assert len(records) == 400
    assert len(rows) == sum(r.chunks for r in records.values())
    assert len({(r["path"], r["start_line"]) for r in rows}) == len(rows)
    assert len(pieces) == sum(r.pieces for r in records.values())


def test_unreachable_server_is_one_line(tmp_path: Path, workspace: Path) -> None:
    store = ["--store", "milvus", "--store-uri", "http://127.0.0.1:9", "--embedder", "none"]
    for args in (["search", "--path", str(workspace), *store, "client"], ["index", str(workspace), *store]):
        proc = _cli(args, tmp_path)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "cannot connect" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_vectors_come_with_a_rebuild_when_the_collection_had_none(shared: dict, tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "novec", OTHER)
    s = _settings(shared["db"], collection="novec")
    _index(root, s)  # no embedder: the collection has no vector field
    report = _index(root, s, HashEmbedder())
    assert report.degraded is False or "no vectors" in (report.degraded_reason or "")
    resp = Searcher(root, s, HashEmbedder()).search("render a template by name")
    assert resp.degraded and "no vectors" in (resp.degraded_reason or "")
    report = Indexer(root, s, HashEmbedder(), None).run(rebuild=True)  # alone in it: recreated with vectors
    assert not report.degraded and report.embedded == report.chunks
    resp = Searcher(root, s, HashEmbedder()).search("render a template by name")
    assert not resp.degraded and any(h.ranks["dense"] for h in resp.results)


def test_an_older_layout_is_rebuilt_or_named(shared: dict, tmp_path: Path) -> None:
    from aide_tui.core.errors import IndexCorrupt
    from aide_tui.core.milvus.connection import set_collection_record

    root = write_workspace(tmp_path / "layout", OTHER)
    s = _settings(shared["db"], collection="layout")
    _index(root, s)
    b = MilvusRetriever(root, s)
    set_collection_record(b.store(), schema="0")  # as an older aide-tui would have left it
    b.store().close()
    with pytest.raises(IndexCorrupt, match="layout 0"):
        Searcher(root, s).refresh()
    report = _index(root, s)  # alone in the collection: rebuilt in the current layout
    assert any("rebuilding" in m for m in report.messages) and report.files == len(OTHER)
    assert Searcher(root, s).search("evict_oldest").results[0].path == "lib/cache.py"


def test_a_pasted_traceback_finds_the_files_it_names(shared: dict) -> None:
    issue = (
        "Crash when a header has no colon. I call the client with a raw header line and it fails in a way "
        "that is hard to understand, the value comes back empty and then the request is rejected later on "
        'by the server. Traceback (most recent call last): File "/home/me/app/main.py", line 3, in <module> '
        'File "/usr/lib/python3/site-packages/httpclient/headers.py", line 6, in parse_header '
        "ValueError: not enough values to unpack. Expected the header to be skipped with a warning."
    )
    resp = Searcher(shared["a"], shared["sa"]).search(issue, limit=5, mode="bm25")
    assert resp.results[0].path == "src/httpclient/headers.py"
    assert resp.results[0].ranks.get("path") == 1  # found through the frame it names
