"""The index folder as untrusted input, bad vectors, bit rot, status after failures, permissions and
leftovers (issue 14 items 3, 4, 7, 8, 9, 10): real files, real processes, a real loopback server."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from loopback_server import LoopbackServer

from aide_tui.core.config import load_settings
from aide_tui.core.embed.http import OpenAIEmbedder
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.paths import fallback_dir, index_dir_for
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.store.filetable import FIELDS
from aide_tui.core.store.segments import FORMAT_VERSION, encode_manifest, read_index
from aide_tui.core.store.status import read_status

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip


def bm25(root: Path):  # noqa: ANN201
    return load_settings(root, {"embedding": {"backend": "none"}})


def rewrite_manifest(path: Path, manifest: dict) -> None:
    """Write a changed manifest with a valid checksum (what a buggy or hostile writer would leave)."""
    manifest.pop("checksum", None)
    path.write_bytes(encode_manifest(manifest))


def first_segment(root: Path) -> Path:
    idx = index_dir_for(root)
    return idx / json.loads((idx / "manifest.json").read_text())["segments"][0]["name"]


# -- a cloned repository that ships its own .aide ---------------------------------------------------------


@pytest.mark.parametrize("target", ["/dev/zero", "/proc/self/fd/0"])
def test_manifest_symlinked_to_a_device_is_not_read(workspace: Path, target: str) -> None:
    """No MemoryError, no hang: the manifest is untrusted, the index is rebuilt beside it."""
    idx = workspace / ".aide" / "index"
    idx.mkdir(parents=True)
    (idx / "manifest.json").symlink_to(target)
    out = cli("status", str(workspace), "--json", "--embedder", "none", timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["state"] == "corrupt"
    assert "symlink" in json.loads(out.stdout)["error"]
    out = cli("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header", timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
    assert not (idx / "manifest.json").is_symlink()  # replaced by a real manifest, the target untouched


def test_segment_file_symlinked_to_dev_zero_is_detected(workspace: Path) -> None:
    Indexer(workspace, bm25(workspace)).run()
    seg = first_segment(workspace)
    (seg / "texts.bin").unlink()
    (seg / "texts.bin").symlink_to("/dev/zero")
    out = cli("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header", timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
    assert "rebuilding" in out.stderr


def test_symlinked_aide_folder_is_never_written_through(workspace: Path, tmp_path: Path) -> None:
    """A .aide that points elsewhere: the index goes to the user cache, nothing is written there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / ".aide").symlink_to(elsewhere)
    rep = Indexer(workspace, bm25(workspace)).run()
    assert rep.files == 5
    assert list(elsewhere.iterdir()) == []
    assert (fallback_dir(workspace) / "index" / "manifest.json").is_file()
    s = Searcher(workspace, bm25(workspace))
    assert s.search("parse_header").results[0].path == "src/httpclient/headers.py"


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m.update(file_table=list(m["file_table"]["paths"])),
        lambda m: m.update(segments={"a": 1}),
        lambda m: m["meta"].update(dim="x"),
        lambda m: m.update(counts={"files": "many"}),
        lambda m: m["segments"][0].update(name="../../etc"),
        lambda m: m["segments"][0]["files"].update({"chunks.json": "big"}),
        lambda m: m["file_table"]["segment"].__setitem__(0, 99),
        lambda m: m["file_table"]["chunks"].pop(),
        lambda m: m["file_table"]["pieces"].__setitem__(1, -1),
        lambda m: m["file_table"]["size"].__setitem__(2, "big"),
        lambda m: m["file_table"]["paths"].__setitem__(1, m["file_table"]["paths"][0]),
        lambda m: m["file_table"].pop("sha1"),
        lambda m: m.update(format=11),  # the old shape's member is missing
    ],
    ids=[
        "files-list",
        "segments-dict",
        "dim-str",
        "counts-str",
        "segment-escapes",
        "sizes-str",
        "bad-segment-ref",
        "short-column",
        "negative-count",
        "size-str",
        "path-twice",
        "column-missing",
        "old-format-no-files",
    ],
)
def test_manifest_with_wrong_types_is_rebuilt_without_traceback(workspace: Path, damage) -> None:  # noqa: ANN001
    Indexer(workspace, bm25(workspace)).run()
    path = index_dir_for(workspace) / "manifest.json"
    manifest = json.loads(path.read_text())
    damage(manifest)
    rewrite_manifest(path, manifest)  # checksummed: the shape checks themselves must catch it
    assert read_status(workspace).state == "corrupt"
    out = cli("status", str(workspace), "--embedder", "none")
    assert out.returncode == 0 and "Traceback" not in out.stderr
    out = cli("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "malformed" in out.stderr or "corrupt" in out.stderr
    assert json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"


def test_a_format_12_manifest_still_reads_and_the_next_commit_is_the_current_format(workspace: Path) -> None:
    """Format 13 changed how a segment's rows are stored, not the manifest: a format-12 index is read as
    it is (its segments' rows by their dtype and shape), and the next commit says 13."""
    Indexer(workspace, bm25(workspace)).run()
    path = index_dir_for(workspace) / "manifest.json"
    rewrite_manifest(path, {**json.loads(path.read_text()), "format": 12})
    assert read_status(workspace).state == "ready"
    assert (
        Searcher(workspace, bm25(workspace)).search("parse_header").results[0].path
        == "src/httpclient/headers.py"
    )
    (workspace / "src" / "extra.py").write_text("def brand_new_helper():\n    return 1\n")
    rep = Indexer(workspace, bm25(workspace)).run()
    assert rep.changed == 1, rep.messages
    assert json.loads(path.read_text())["format"] == FORMAT_VERSION == 13


def test_a_format_11_manifest_still_reads_and_the_next_commit_writes_columns(workspace: Path) -> None:
    """Format 12 only moved the file records into columns: an index written before it is read as it is
    (no rebuild on upgrade), and the next commit writes the new shape with the same records."""
    Indexer(workspace, bm25(workspace)).run()
    path = index_dir_for(workspace) / "manifest.json"
    new = json.loads(path.read_text())
    table = new.pop("file_table")
    cols = [table[f] for f in FIELDS]
    old = {**new, "format": 11, "files": {p: [c[i] for c in cols] for i, p in enumerate(table["paths"])}}
    rewrite_manifest(path, old)
    before = read_index(index_dir_for(workspace)).files
    assert read_status(workspace).state == "ready"
    s = Searcher(workspace, bm25(workspace))
    assert s.search("parse_header").results[0].path == "src/httpclient/headers.py"
    (workspace / "src" / "extra.py").write_text("def brand_new_helper():\n    return 1\n")
    rep = Indexer(workspace, bm25(workspace)).run()
    assert rep.changed == 1, rep.messages  # the old records were trusted: only the new file was read
    again = json.loads(path.read_text())
    assert again["format"] == FORMAT_VERSION and "files" not in again
    after = read_index(index_dir_for(workspace)).files

    def kept(files: dict) -> dict:  # what a record says of its file (a merge may renumber segments)
        return {p: (r.size, r.mtime_ns, r.sha1, r.chunks, r.pieces) for p, r in files.items()}

    assert kept({p: r for p, r in after.items() if p != "src/extra.py"}) == kept(before)


def test_garbage_npy_never_mentions_pickles(workspace: Path) -> None:
    Indexer(workspace, bm25(workspace)).run()
    seg = first_segment(workspace)
    raw = (seg / "c_ptr.npy").read_bytes()
    fake = b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (3,), }"
    (seg / "c_ptr.npy").write_bytes(fake.ljust(len(raw), b" "))
    out = cli("search", "--path", str(workspace), "--embedder", "none", "--json", "parse_header")
    assert out.returncode == 0 and "pickle" not in out.stderr.lower(), out.stderr


def _crafted(seg: Path, name: str) -> bytes:
    """``name``'s bytes as no writer makes them: names that are not UTF-8, pointers far past the table."""
    raw = (seg / name).read_bytes()
    if name.endswith(".bin"):
        return b"\xff" * len(raw)
    header = 10 + int.from_bytes(raw[8:10], "little")
    return raw[:header] + b"\xf0" * (len(raw) - header)  # each pointer near 4e9 rows


@pytest.mark.parametrize("name", ["g_names.bin", "g_qual.bin", "g_def_ptr.npy", "g_ref_path_ptr.npy"])
def test_a_symbol_graph_file_with_a_valid_checksum_and_bytes_no_writer_made_is_a_damaged_index(
    workspace: Path, name: str
) -> None:
    """A cloned repository may ship its own ``.aide`` with checksums that hold: names that are not
    UTF-8 ended ``search``, ``defs`` and ``refs`` with a UnicodeDecodeError traceback, and a definition
    pointer near 4e9 made ``defs`` allocate a range of that many rows (the kernel killed it). Each is a
    damaged index now: said in one line with exit 1 without updating, rebuilt and answered with it. The
    commands run under a 3 GB address-space limit, so a pointer followed again fails here, not the host."""
    Indexer(workspace, bm25(workspace)).run()
    seg = first_segment(workspace)
    data = _crafted(seg, name)
    (seg / name).write_bytes(data)
    idx = index_dir_for(workspace)
    manifest = json.loads((idx / "manifest.json").read_text())
    from aide_tui.core.store.mapped import FileSum

    for entry in manifest["segments"]:
        if entry["name"] == seg.name:
            entry["files"][name] = FileSum.of(data).to_json()
    rewrite_manifest(idx / "manifest.json", manifest)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    run = "import runpy, sys; sys.argv[0] = 'aide-tui'; runpy.run_module('aide_tui', run_name='__main__')"
    ws = str(workspace)
    for args in (
        ["defs", "--path", ws, "--no-update", "--no-server", "Client"],
        ["refs", "--path", ws, "--no-update", "--no-server", "send"],
        ["search", "--path", ws, "--no-update", "--no-server", "--embedder", "none", "Client.send"],
    ):
        out = subprocess.run(
            [sys.executable, "-c", limit + run, *args],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert "Traceback" not in out.stderr and out.returncode in (0, 1), (args, out.returncode, out.stderr)
        if out.returncode == 1:
            assert "symbol graph is malformed" in out.stderr or "not UTF-8" in out.stderr, out.stderr
    fixed = cli("search", "--path", ws, "--embedder", "none", "--json", "Client.send")
    assert fixed.returncode == 0 and json.loads(fixed.stdout)["results"], fixed.stderr


# -- bad vectors and bit rot --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nan", "zero", "huge"])
def test_bad_vectors_degrade_with_reason_and_are_never_cached(workspace: Path, mode: str) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai"}})
    with LoopbackServer(dim=8) as srv:
        if mode == "nan":
            srv.set_mode("nan")
        else:
            value = 0.0 if mode == "zero" else 1e39  # 1e39 overflows float32 to inf
            srv.handler = lambda path, body: (200, {"data": [
                {"index": i, "embedding": [value] * 8} for i in range(len(body["input"]))
            ]})  # fmt: skip
        rep = Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        assert rep.degraded and rep.degraded_reason
        st = read_status(workspace, "openai")
        assert st.degraded and st.degraded_reason and st.state == "partial"
        srv.handler = None
        srv.set_mode("normal")
        rep = Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run(rebuild=True)
        assert not rep.degraded and rep.vectors_missing == 0 and rep.newly_embedded > 0
    data = read_index(index_dir_for(workspace))
    assert data.present.all() and bool((abs(data.vectors).sum(axis=1) > 0).all())


def test_dimension_change_under_the_same_model_id(workspace: Path) -> None:
    """A llama.cpp model swap: same id, new dimension. Search degrades with a message; index re-embeds."""
    settings = load_settings(workspace, {"embedding": {"backend": "openai"}})
    with LoopbackServer(dim=8) as srv:
        Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        srv.dim = 17
        s = Searcher(workspace, settings, OpenAIEmbedder(srv.url))
        resp = s.search("parse_header")
        assert resp.degraded and "re-embed" in (resp.degraded_reason or "")
        assert resp.results[0].path == "src/httpclient/headers.py"
        rep = Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        assert any("17" in m for m in rep.messages) and rep.vectors_missing == 0
        s = Searcher(workspace, settings, OpenAIEmbedder(srv.url))
        resp = s.search("parse_header")
        assert not resp.degraded and any(h.ranks["dense"] for h in resp.results)


def test_status_says_why_a_run_failed_midway(workspace: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai"}})
    with LoopbackServer(dim=8) as srv:

        def fewer(path: str, body: dict) -> tuple[int, dict]:  # the probe works, real batches come up short
            n = len(body["input"])
            return 200, {
                "data": [{"index": i, "embedding": [1.0] * 8} for i in range(n if n == 1 else n - 1)]
            }

        srv.handler = fewer
        rep = Indexer(workspace, settings, OpenAIEmbedder(srv.url, retries=0)).run()
    assert rep.degraded
    out = cli("status", str(workspace), "--json", "--embedder", "openai")
    st = json.loads(out.stdout)
    assert st["state"] == "partial" and st["degraded"] is True and st["degraded_reason"]


def test_skipped_files_are_listed_by_reason(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe.py")
    (workspace / "blob.py").write_bytes(b"\x00\x01binary")
    out = cli("index", str(workspace), "--embedder", "none", "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(out.stdout.splitlines()[-1])["skipped"]}
    assert "binary" in skipped["blob.py"]
    out = cli("index", str(workspace), "--embedder", "none", "--rebuild", timeout=60)
    assert "skipped" in out.stdout and "blob.py" in out.stdout


# -- permissions and leftovers ----------------------------------------------------------------------------


def test_state_folders_are_private_and_ignored_by_git(workspace: Path) -> None:
    code = (
        "import os, sys; os.umask(0); from pathlib import Path; "
        "from aide_tui.core.config import load_settings; from aide_tui.core.index.indexer import Indexer; "
        "from loopback_server import LoopbackServer; from aide_tui.core.embed.http import OpenAIEmbedder\n"
        "root = Path(sys.argv[1])\n"
        "with LoopbackServer(dim=8) as srv:\n"
        "    s = load_settings(root, {'embedding': {'backend': 'openai'}})\n"
        "    Indexer(root, s, OpenAIEmbedder(srv.url)).run()\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests' / 'unit'}"}
    subprocess.run([sys.executable, "-c", code, str(workspace)], check=True, env=env, timeout=120)
    aide = workspace / ".aide"
    for d in (aide, aide / "index", aide / "cache", aide / "cache" / "embeddings"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in aide.rglob("*"):
        if f.is_file() and f.name != ".gitignore":
            assert stat.S_IMODE(f.stat().st_mode) & 0o077 == 0, f
    assert (aide / ".gitignore").read_text() == "*\n"


def test_leftover_temps_are_removed_even_when_their_pid_is_alive(workspace: Path) -> None:
    Indexer(workspace, bm25(workspace)).run()
    idx = index_dir_for(workspace)
    live = os.getppid()  # a live process that is not an aide-tui writer
    (idx / f".manifest.json.{live}.tmp").write_text("{}")
    (idx / f".tmp-s18deadbeef-{live}").mkdir()
    (workspace / "src" / "new.py").write_text("def added():\n    pass\n")
    Indexer(workspace, bm25(workspace)).run()
    assert not [p.name for p in idx.iterdir() if p.name.startswith(".")]
    (idx / f".manifest.json.{live}.tmp").write_text("{}")
    Indexer(workspace, bm25(workspace)).run(rebuild=True)
    assert not [p.name for p in idx.iterdir() if p.name.startswith(".")]


def test_an_edit_writes_a_small_segment_not_the_whole_index(workspace: Path) -> None:
    """Cost proportional to the change: a one-file edit adds one small segment; readers see both."""
    Indexer(workspace, bm25(workspace)).run()
    idx = index_dir_for(workspace)
    base = first_segment(workspace)
    before = {p.name: p.stat().st_mtime_ns for p in base.iterdir()}
    (workspace / "src/httpclient/retry.py").write_text("def jittered_backoff():\n    return 0.5\n")
    rep = Indexer(workspace, bm25(workspace)).run()
    assert rep.changed == 1
    manifest = json.loads((idx / "manifest.json").read_text())
    assert len(manifest["segments"]) == 2 and manifest["segments"][1]["chunks"] == 1
    assert {p.name: p.stat().st_mtime_ns for p in base.iterdir()} == before  # the base was not rewritten
    s = Searcher(workspace, bm25(workspace))
    assert s.search("jittered_backoff").results[0].path == "src/httpclient/retry.py"
    assert not s.search("with_retries backoff_delays").results or all(
        "with_retries" not in h.text for h in s.search("with_retries").results
    )  # the old version of the file is gone: no ghosts


def test_flipped_bit_in_the_embedding_cache_is_never_used(workspace: Path) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai"}})
    with LoopbackServer(dim=8) as srv:
        Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        blocks = list((workspace / ".aide" / "cache" / "embeddings").rglob("b*.npy"))
        assert blocks
        raw = bytearray(blocks[0].read_bytes())
        raw[-3] ^= 0x40
        blocks[0].write_bytes(bytes(raw))
        before = sum(len(r.body["input"]) for r in srv.requests if isinstance(r.body, dict))
        rep = Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run(rebuild=True)
        sent = sum(len(r.body["input"]) for r in srv.requests if isinstance(r.body, dict)) - before
    assert rep.newly_embedded > 0 and sent > 1  # the damaged block was dropped and its vectors redone
    assert any("checksum" in w for w in rep.warnings)
    from loopback_server import fake_vector

    data = read_index(index_dir_for(workspace))
    want = np.array([fake_vector(p.embed_text, 8) for p in data.pieces], np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert data.present.all()
    np.testing.assert_allclose(data.vectors, want, atol=1e-6)  # no damaged vector reached the index


def test_a_segment_of_an_older_layout_is_rebuilt_by_the_indexer(workspace: Path) -> None:
    """A segment missing a file readers need: the writer notices it (not only the reader) and rebuilds."""
    Indexer(workspace, bm25(workspace)).run()
    path = index_dir_for(workspace) / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["segments"][0]["files"]["c_ptr.npy"]
    rewrite_manifest(path, manifest)
    rep = Indexer(workspace, bm25(workspace)).run()
    assert any("lacks c_ptr.npy" in m for m in rep.messages) and rep.changed == 5
    assert Searcher(workspace, bm25(workspace)).search("parse_header").results


def test_a_flipped_bit_in_the_manifest_is_detected(workspace: Path) -> None:
    """One bit of a file-path key (``headers.py`` -> ``hdaders.py``): the manifest's own checksum
    catches it: ``status`` says corrupt instead of ready, and ``search --no-update`` says so and rebuilds
    instead of silently dropping the file."""
    Indexer(workspace, bm25(workspace)).run()
    path = index_dir_for(workspace) / "manifest.json"
    raw = path.read_bytes()
    key = b'"src/httpclient/headers.py"'
    at = raw.index(key) + len(b'"src/httpclient/he')
    path.write_bytes(raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :])  # headers.py -> hdaders.py
    assert json.loads(path.read_bytes())["file_table"]  # still valid JSON: only the checksum can tell
    st = read_status(workspace)
    assert st.state == "corrupt" and "checksum" in (st.error or ""), st
    # --no-update reads the index as it is: a damaged one counts as none, said on stderr, and is rebuilt
    args = ("--embedder", "none", "--no-update", "--json", "parse_header")
    out = cli("search", "--path", str(workspace), *args)
    assert out.returncode == 0 and "checksum" in out.stderr, out.stderr
    assert json.loads(out.stdout)["results"][0]["path"] == "src/httpclient/headers.py"
    assert read_status(workspace).state == "ready"


def test_every_single_bit_flip_of_the_manifest_is_detected(workspace: Path) -> None:
    """A sweep: each of 400 evenly spread bytes of a real manifest, one bit flipped, never parses."""
    from aide_tui.core.errors import IndexCorrupt
    from aide_tui.core.store.segments import parse_manifest

    Indexer(workspace, bm25(workspace)).run()
    raw = (index_dir_for(workspace) / "manifest.json").read_bytes()
    parse_manifest(raw)
    step = max(1, len(raw) // 400)
    for at in range(0, len(raw), step):
        bit = 1 << (at % 8)
        with pytest.raises(IndexCorrupt):
            parse_manifest(raw[:at] + bytes([raw[at] ^ bit]) + raw[at + 1 :])
