"""The static embedding tier and the cold build: vectors in the same commit as the lexical rows, a list
of their own in the ranking, coverage that every front end reports, and a build on every core that
answers like one in a single process."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.embed.static import STATIC_DIM, TABLE_BLOCK, StaticEmbedder, split_camel
from aide_tui.core.errors import EmbedderError
from aide_tui.core.index import parallel
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.quantize import pack_bytes, unpack
from aide_tui.core.store.segment_write import signs_file, write_static
from aide_tui.core.store.segments import commit, read_index, read_manifest
from aide_tui.core.store.sketch import sketch

REPO = Path(__file__).resolve().parents[2]


def cli(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


def static(root: Path, **over: object) -> object:
    return load_settings(root, {"embedding": {"backend": "static"}, **over})


def test_the_static_tier_alone_covers_every_chunk_in_the_lexical_commit(workspace: Path) -> None:
    out = cli("index", str(workspace), "--embedder", "static", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["static_missing"] == 0 and summary["static"].startswith("static:all-MiniLM-L6-v2:")
    manifest = read_manifest(index_dir_for(workspace))
    assert manifest.counts.static_missing == 0 and manifest.meta.static == summary["static"]
    # one commit: the segment was written with its static vectors (static.npy), not given them later
    assert [s.static_file for s in manifest.segments] == ["static.npy"]
    st = json.loads(cli("status", str(workspace), "--json", "--embedder", "static").stdout)
    assert st["state"] == "ready" and st["static_missing"] == 0 and not st["degraded"]
    got = json.loads(cli("search", "--path", str(workspace), "--embedder", "static", "--json",
                         "--no-update", "wait longer after every failure").stdout)  # fmt: skip
    assert got["static_missing"] == 0 and not got["degraded"]
    assert got["results"][0]["path"] == "src/httpclient/retry.py"
    assert any(r["ranks"].get("static") for r in got["results"])


def test_an_index_without_the_tier_counts_every_chunk_missing_for_a_user_who_wants_it(
    workspace: Path,
) -> None:
    """Built with ``--embedder none``, read by settings that use the static tier: ``static_missing`` is
    every chunk (not 0, which would say the tier is complete), in ``status`` and in a search's JSON; read
    with ``none`` it is 0, since nothing is wanted."""
    out = cli("index", str(workspace), "--embedder", "none", "--json")
    assert out.returncode == 0, out.stderr
    chunks = json.loads(out.stdout.splitlines()[-1])["chunks"]
    assert chunks > 0
    st = json.loads(cli("status", str(workspace), "--json", "--embedder", "static", "--no-server").stdout)
    assert st["static_missing"] == chunks and st["static"] is None and st["state"] == "partial"
    text = cli("status", str(workspace), "--embedder", "static", "--no-server").stdout
    assert f"static tier: not in the index yet ({chunks} chunks without it)" in text
    got = json.loads(cli("search", "--path", str(workspace), "--embedder", "static", "--json", "--no-update",
                         "--no-server", "--mode", "bm25", "parse a header line").stdout)  # fmt: skip
    assert got["static_missing"] == chunks
    assert got["results"][0]["path"] == "src/httpclient/headers.py"
    st = json.loads(cli("status", str(workspace), "--json", "--embedder", "none", "--no-server").stdout)
    assert st["static_missing"] == 0 and st["state"] == "ready"


def test_static_vectors_rank_by_meaning_where_no_word_matches(workspace: Path) -> None:
    """No word of the query is in the code: only the static list can find the function."""
    Indexer(workspace, static(workspace)).run()
    s = Searcher(workspace, static(workspace))
    resp = s.search("pause between attempts", limit=5)
    ranks = {h.path: h.ranks for h in resp.results}
    assert resp.results and not resp.degraded
    assert ranks.get("src/httpclient/retry.py", {}).get("static") is not None
    assert resp.results[0].path == "src/httpclient/retry.py"


def test_an_index_without_the_tier_gets_it_later_without_a_rebuild(workspace: Path) -> None:
    Indexer(workspace, load_settings(workspace, {"embedding": {"backend": "none"}})).run()
    before = read_manifest(index_dir_for(workspace))
    assert before.meta.static == "" and before.segments[0].static_file == ""
    rep = Indexer(workspace, static(workspace)).run()
    after = read_manifest(index_dir_for(workspace))
    assert rep.changed == 0 and after.counts.static_missing == 0  # nothing was read or chunked again
    assert [s.name for s in after.segments] == [s.name for s in before.segments]
    assert after.segments[0].static_file.startswith("st") and after.segments[0].static == after.meta.static
    # an edit while the tier is off: that segment is counted as missing, the next run with it fills it
    (workspace / "src" / "extra.py").write_text("def extra_helper():\n    return 1\n")
    Indexer(workspace, load_settings(workspace, {"embedding": {"backend": "none"}})).run()
    assert read_manifest(index_dir_for(workspace)).counts.static_missing == 1
    Indexer(workspace, static(workspace)).run()
    assert read_manifest(index_dir_for(workspace)).counts.static_missing == 0


def test_the_table_is_read_only_when_its_checksum_matches(tmp_path: Path) -> None:
    """A record from before block sums: the table is read whole against its sha256 (and the record gains
    the block sums); damage there means no table (distilled again), never a wrong one."""
    table = np.arange(12, dtype=np.float16).reshape(4, 3)
    path = tmp_path / "t.npy"
    np.save(path, table)
    import hashlib

    meta = path.with_suffix(".json")
    meta.write_text(json.dumps({"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}))
    assert np.array_equal(StaticEmbedder._read(path), table)
    assert json.loads(meta.read_text())["size"] == path.stat().st_size  # recorded for the next process
    meta.write_text(json.dumps({"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}))
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    assert StaticEmbedder._read(path) is None  # damaged: distilled again, never used
    meta.unlink()
    assert StaticEmbedder._read(path) is None


def test_a_mapped_table_checks_the_blocks_of_the_rows_it_reads(tmp_path: Path) -> None:
    """Block sums recorded: the table is mapped and a block is checked when a row in it is first read;
    a damaged block fails the rows in it (the rest read as ever) and never gives a wrong row."""
    from aide_tui.core.embed.static import MappedTable, TableDamaged, block_sums

    table = np.random.default_rng(5).standard_normal((2000, 256)).astype(np.float16)  # 1 MB: 16 blocks
    path = tmp_path / "t.npy"
    np.save(path, table)
    data = path.read_bytes()
    path.with_suffix(".json").write_text(json.dumps({"sha256": "not read", **block_sums(data)}))
    got = StaticEmbedder._read(path)
    assert isinstance(got, MappedTable) and got.shape == table.shape and len(got) == 2000
    assert np.array_equal(got.rows([3, 1999, 3]), table[[3, 1999, 3]])
    assert int(got._ok.sum()) <= 3  # the header's block and the rows' blocks, not the file
    row = table.strides[0]
    at = (len(data) - table.nbytes) + 1000 * row  # row 1000's first byte
    damaged = bytearray(data)
    damaged[at] ^= 0x40
    path.write_bytes(bytes(damaged))
    bad = StaticEmbedder._read(path)
    assert isinstance(bad, MappedTable)
    assert np.array_equal(bad.rows([0, 5]), table[[0, 5]])
    far = at // TABLE_BLOCK
    with pytest.raises(TableDamaged, match=f"block {far}"):
        bad.rows([1000])
    with pytest.raises(TableDamaged):
        bad.whole()


def test_a_damaged_table_found_by_a_query_is_distilled_again_on_next_use(tmp_path: Path) -> None:
    tier = StaticEmbedder()
    tier.load()
    path = tier.table_path()
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert "blocks" in meta  # the machine's table records its block sums once read
    tier2 = StaticEmbedder()
    tier2.table_path = lambda: copy  # type: ignore[method-assign]
    copy.with_suffix(".json").write_text(json.dumps(meta))
    data = bytearray(copy.read_bytes())
    for i in range(TABLE_BLOCK, len(data), TABLE_BLOCK):  # every block but the header's
        data[i] ^= 0x40
    copy.write_bytes(bytes(data))
    with pytest.raises(EmbedderError, match="damaged"):
        tier2.embed(["parse the header of a request"], kind="query")
    assert not copy.with_suffix(".json").exists()  # its record is gone: the next load distils it again


def test_identifiers_are_read_as_their_words() -> None:
    assert split_camel("parseHeader HTTPClient getURLPath x") == "parse Header HTTP Client get URL Path x"
    tier = StaticEmbedder()
    a, b, c = tier.embed(["parseHeader", "parse header", "render the table"])
    assert float(a @ b) > 0.99 and float(a @ c) < 0.9


def _big_repo(root: Path, n_files: int, seed: int) -> None:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "parse", "render", "fetch", "store", "retry", "token"]
    for i in range(n_files):
        p = root / f"pkg{i % 9}" / f"mod_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        funcs = []
        for j in range(rng.randint(4, 10)):
            name = f"{rng.choice(words)}_{rng.choice(words)}_{i}_{j}"
            body = "\n".join(
                f"    x{k} = {rng.choice(words)}_{k}(x{k - 1})" for k in range(1, rng.randint(4, 30))
            )
            funcs.append(
                f"def {name}(x0):\n    '''Do {rng.choice(words)} things.'''\n{body}\n    return x0\n"
            )
        p.write_text("import os\n\n\n" + "\n\n".join(funcs))


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_build_on_every_core_answers_like_one_in_a_single_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str
) -> None:
    """Helpers forked (a process with one thread) or spawned (another thread runs) build the same index."""
    one, many = tmp_path / "one", tmp_path / "many"
    _big_repo(one, 60, seed=3)
    _big_repo(many, 60, seed=3)
    Indexer(one, static(one, index={"build_workers": 1})).run()
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_BATCH_BYTES", 20_000)
    ctx = multiprocessing.get_context(start)
    monkeypatch.setattr(parallel, "helper_context", lambda: (ctx, start == "fork"))
    rep = Indexer(many, static(many, index={"build_workers": 2})).run()
    assert rep.files == 60 and rep.changed == 60
    m1, m2 = read_manifest(index_dir_for(one)), read_manifest(index_dir_for(many))
    assert len(m1.segments) == 1 and len(m2.segments) > 2  # each batch a segment of its own
    assert m2.counts == m1.counts and m2.counts.static_missing == 0
    assert not any(p.name.startswith(".staging-") for p in index_dir_for(many).iterdir())
    a, b = read_index(index_dir_for(one)), read_index(index_dir_for(many))
    assert sorted((c.path, c.start_line, c.text) for c in a.chunks) == sorted(
        (c.path, c.start_line, c.text) for c in b.chunks
    )
    for q in ("parse alpha things", "render_token", "retry fetch store", "delta_gamma_7_2"):
        r1 = Searcher(one, static(one)).search(q, limit=10)
        r2 = Searcher(many, static(many)).search(q, limit=10)
        assert [(h.path, h.start_line) for h in r1.results] == [(h.path, h.start_line) for h in r2.results], q


def test_kill_9_during_a_build_on_every_core_leaves_a_usable_index(tmp_path: Path) -> None:
    """A big backlog is built by helper processes; SIGKILL of the indexer at random points leaves the
    last committed version, never a half-written one, and the next run finishes and cleans up."""
    root = tmp_path / "repo"
    _big_repo(root, 700, seed=5)  # about 4.5 MB: past the size a build goes parallel at
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIDE_INDEX_BUILD_WORKERS": "2"}
    cmd = [sys.executable, "-m", "aide_tui", "index", str(root), "--embedder", "static"]
    rng = random.Random(11)
    for _ in range(3):
        subprocess.run(["rm", "-rf", str(root / ".aide")], check=True)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
        time.sleep(rng.uniform(0.5, 4.0))
        os.killpg(proc.pid, signal.SIGKILL)  # the indexer and its helpers
        proc.wait()
        st = subprocess.run(
            [*cmd[:3], "status", str(root), "--json"], env=env, capture_output=True, text=True
        )
        assert st.returncode == 0, st.stderr
        assert json.loads(st.stdout)["state"] in ("missing", "ready", "partial"), st.stdout
    done = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["files"] == 700 and summary["static_missing"] == 0
    names = {p.name for p in index_dir_for(root).iterdir()}
    assert not [n for n in names if n.startswith(".")], names  # no staging folder or temp left behind


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv")
def test_a_models_folder_the_user_cannot_read_leaves_the_static_tier_out_not_the_index() -> None:
    """As uid 65534, with AIDE_MODELS_DIR a folder only root may enter: keyword search still works, the
    static tier is missing and says why."""
    import shutil
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="aide-models-", dir="/tmp"))
    try:
        os.chmod(home, 0o755)
        models = home / "models"
        models.mkdir(mode=0o700)  # root's
        root = write_workspace(home / "ws")
        for p in [root, *root.rglob("*")]:
            os.chown(p, 65534, 65534)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDE_", "XDG_"))}
        env.update(
            PYTHONPATH=str(REPO), HOME=str(home), XDG_CACHE_HOME=str(home / "c"), AIDE_MODELS_DIR=str(models)
        )
        os.makedirs(home / "c", mode=0o755)
        os.chown(home / "c", 65534, 65534)
        user = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "aide_tui",
        ]
        out = subprocess.run([*user, "index", str(root), "--embedder", "static", "--json"], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout.splitlines()[-1])
        assert summary["files"] == 5 and summary["static_missing"] == summary["chunks"]
        assert any("static tier" in w and "cannot write" in w for w in summary["warnings"]), summary
        query = ["search", "--path", str(root), "--embedder", "static", "--json", "--no-update"]
        query.append("parse_header")
        got = subprocess.run([*user, *query], env=env, capture_output=True, text=True, timeout=120)
        assert (
            got.returncode == 0
            and json.loads(got.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_merge_gives_way_to_newer_work_between_segments(tmp_path: Path) -> None:
    """A merge reads its segments one at a time and stops when newer work waits: it commits nothing, the
    index stays as it was (every segment, every answer), and a later run merges."""
    root = tmp_path / "ws"
    _big_repo(root, 12, seed=9)
    settings = static(root, index={"max_segments": 1})
    for i in range(3):  # three more segments, one per edit
        Indexer(root, static(root, index={"max_segments": 100})).run()
        (root / f"pkg{i}" / "mod_0.py").write_text(f"def edit_{i}():\n    return {i}\n")
    Indexer(root, static(root, index={"max_segments": 100})).run()
    before = read_manifest(index_dir_for(root))
    assert len(before.segments) >= 3
    asked: list[int] = []

    def newer_work_after_one_segment() -> bool:
        asked.append(1)
        return len(asked) > 2  # the check before the merge, then one segment read, then newer work

    rep = Indexer(root, settings).run(should_yield=newer_work_after_one_segment)
    assert not rep.merged and read_manifest(index_dir_for(root)).segments == before.segments
    hits = Searcher(root, settings).search("edit_2", limit=3).results
    assert hits and hits[0].path == "pkg2/mod_0.py"
    rep = Indexer(root, settings).run()
    assert rep.merged and len(read_manifest(index_dir_for(root)).segments) == 1
    assert Searcher(root, settings).search("edit_2", limit=3).results[0].path == "pkg2/mod_0.py"


def test_static_vectors_stored_a_byte_a_value_before_still_rank_and_a_merge_stores_four_bits(
    workspace: Path,
) -> None:
    """A segment written before four bits a value (int8 rows) ranks as it did; a merge with a newer
    segment writes the lot as four bits (uint8, half the bytes) and the ranking holds."""
    Indexer(workspace, static(workspace)).run()
    idx = index_dir_for(workspace)
    m = read_manifest(idx)
    seg = m.segments[0]
    rows = np.load(idx / seg.name / seg.static_file)
    assert rows.dtype == np.uint8 and rows.shape[1] == STATIC_DIM // 2 + 4

    def top(query: str) -> tuple[str, int | None]:
        hit = Searcher(workspace, static(workspace)).search(query, limit=5).results[0]
        return hit.path, hit.ranks.get("static")

    want = top("pause between attempts")
    assert want[0] == "src/httpclient/retry.py" and want[1] is not None
    old = write_static(idx, seg, pack_bytes(unpack(rows)), seg.static)
    commit(idx, replace(m, segments=[old], version="v-bytes"), m)
    assert np.load(idx / seg.name / old.static_file).shape == (len(rows), STATIC_DIM + 4)
    # the vectors' sign sketch goes with them; the replaced ones are no longer named (and are retired)
    assert signs_file(old.static_file) in old.files and signs_file(seg.static_file) not in old.files
    assert np.array_equal(np.load(idx / seg.name / signs_file(old.static_file)), sketch(rows))
    assert not (idx / seg.name / signs_file(seg.static_file)).exists()
    assert top("pause between attempts") == want
    (workspace / "src" / "extra.py").write_text("def extra_helper():\n    return 1\n")
    Indexer(workspace, static(workspace, index={"max_segments": 1})).run()
    after = read_manifest(idx)
    assert (
        len(after.segments) == 1 and after.segments[0].name != seg.name and after.counts.static_missing == 0
    )
    merged = np.load(idx / after.segments[0].name / after.segments[0].static_file)
    assert merged.dtype == np.uint8 and len(merged) == len(rows) + 1
    signs = np.load(idx / after.segments[0].name / signs_file(after.segments[0].static_file))
    assert np.array_equal(signs, sketch(merged))
    assert top("pause between attempts") == want


def test_an_index_embedded_by_the_static_tier_alone_is_searched_by_meaning_with_the_defaults(
    workspace: Path,
) -> None:
    """Indexed with ``--embedder static``, searched with the defaults (the transformer and the tier): the
    index holds no transformer vector, so the static list answers (before, the transformer's empty list
    counted as complete and left the static list out: no list by meaning at all)."""
    out = cli("index", str(workspace), "--embedder", "static", "--json")
    assert out.returncode == 0, out.stderr
    got = cli("search", "--path", str(workspace), "--json", "--no-update", "pause between attempts")
    assert got.returncode == 0, got.stderr
    hits = json.loads(got.stdout)["results"]
    assert hits and hits[0]["path"] == "src/httpclient/retry.py"
    assert hits[0]["ranks"].get("static") is not None


def test_once_the_transformer_covers_every_piece_the_static_list_is_left_out(workspace: Path) -> None:
    """The default settings weigh the static list 0 (``static_with_dense``) once the transformer's
    vectors cover the index, so a hybrid search does not compute it (no hit says it found it); a
    weight above 0 (here from the environment) brings it back."""
    out = cli("index", str(workspace), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["vectors_missing"] == 0 and summary["static_missing"] == 0

    def lists_of(*args: str, env: dict[str, str] | None = None) -> set[str]:
        got = cli("search", "--path", str(workspace), "--json", "--no-update", *args,
                  "wait longer after every failure", env=env)  # fmt: skip
        assert got.returncode == 0, got.stderr
        hits = json.loads(got.stdout)["results"]
        assert hits and hits[0]["path"] == "src/httpclient/retry.py"
        return {name for h in hits for name in h["ranks"]}

    assert {"bm25", "dense"} <= lists_of() and "static" not in lists_of()
    assert {"dense", "static"} <= lists_of(env={"AIDE_SEARCH_STATIC_WITH_DENSE": "0.5"})
    assert "static" in lists_of("--embedder", "static")  # the tier alone
