"""The builtin encoder's onnxruntime graph (aide_tui.core.embed.onnx_encoder), against the real packaged
weights and the real onnxruntime; skipped when onnx / onnxruntime are not installed (the error for a
missing onnxruntime is tested always)."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from aide_tui.core.embed.builtin import PACKAGED_SHA256, BuiltinEmbedder
from aide_tui.core.embed.onnx_embedder import OnnxEmbedder
from aide_tui.core.embed.onnx_encoder import onnx_importable
from aide_tui.core.errors import EmbedderError

HERE = Path(__file__).resolve()
# real code pieces (this project's own source), cut at 128 tokens like the indexer's pieces
PIECES = [
    chunk
    for path in sorted((HERE.parents[2] / "aide_tui" / "core").glob("*.py"))[:6]
    for chunk in (path.read_text(encoding="utf-8")[i : i + 1500] for i in (0, 1500))
    if chunk.strip()
]
QUERIES = ["read a file and split it into lines", "where is the index written atomically", "RRF fusion"]
SHA = PACKAGED_SHA256["model.safetensors"]

needs_onnx = pytest.mark.skipif(not onnx_importable(), reason="onnx / onnxruntime not installed")


@pytest.fixture(scope="module")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture
def model_cache(_shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One user cache for the module's graph builds (conftest gives each test its own otherwise)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(_shared_cache))
    monkeypatch.delenv("AIDE_MODELS_DIR", raising=False)  # this module tests the default place
    return _shared_cache


@pytest.fixture(scope="module")
def numpy_vectors() -> tuple[np.ndarray, np.ndarray]:
    emb = BuiltinEmbedder()
    return emb.embed(PIECES), emb.embed(QUERIES, kind="query")


def test_missing_onnxruntime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("AIDE_MODELS_DIR", raising=False)  # this module tests the default place
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    emb = OnnxEmbedder("int8")
    assert emb.id == f"builtin:all-MiniLM-L6-v2:{SHA[:8]}:onnx-int8-u8"  # never the numpy encoder's id
    assert OnnxEmbedder("fp32").id.endswith(":onnx-fp32")
    with pytest.raises(EmbedderError, match=r"pip install 'aide-tui\[onnx\]'"):
        emb.embed(["x"])
    wired = BuiltinEmbedder(runtime="onnx")  # the setting's path: same error, same id
    assert wired.id == emb.id
    with pytest.raises(EmbedderError, match=r"pip install 'aide-tui\[onnx\]'"):
        wired.embed(["x"])
    assert not (tmp_path / "aide-tui").exists()
    with pytest.raises(ValueError):
        OnnxEmbedder("fp16")


@needs_onnx
def test_fp32_graph_matches_numpy(model_cache: Path, numpy_vectors: tuple[np.ndarray, ...]) -> None:
    docs, queries = numpy_vectors
    emb = OnnxEmbedder("fp32")
    got = emb.embed(PIECES)
    assert got.dtype == np.float32 and got.shape == docs.shape
    cos = (got * docs).sum(axis=1)
    assert 1 - cos.min() < 1e-5, cos.min()
    assert np.abs(got - docs).max() < 1e-4
    gq = emb.embed(QUERIES, kind="query")
    assert 1 - (gq * queries).sum(axis=1).min() < 1e-5
    # padding inside a batch changes nothing: alone vs. batched with a longer piece
    alone = emb.embed([QUERIES[2]])
    mixed = emb.embed([QUERIES[2], PIECES[0]])
    assert np.abs(alone[0] - mixed[0]).max() < 1e-5
    assert emb.embed([]).shape == (0, emb.dim)


@needs_onnx
def test_int8_graph_is_close_to_numpy(model_cache: Path, numpy_vectors: tuple[np.ndarray, ...]) -> None:
    docs, queries = numpy_vectors
    emb = OnnxEmbedder("int8")
    got = emb.embed(PIECES)
    cos = (got * docs).sum(axis=1)
    # int8 weights + outlier handling: ~0.9986 mean on real code (plain per-tensor int8 was 0.94)
    assert cos.mean() > 0.997 and cos.min() > 0.995, (cos.mean(), cos.min())
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    gq = emb.embed(QUERIES, kind="query")
    assert ((gq * queries).sum(axis=1) > 0.995).all()
    for q_np, q_ort in zip(queries, gq, strict=True):
        # numpy's best piece for each query is int8's best too, up to a near tie
        s_np, s_ort = docs @ q_np, got @ q_ort
        assert s_ort.max() - s_ort[np.argmax(s_np)] < 0.01, (s_np, s_ort)
        assert np.abs(s_np - s_ort).max() < 0.03  # measured up to 0.016


@needs_onnx
def test_int8_graph_has_no_saturating_products(model_cache: Path) -> None:
    """Every quantized product of the int8 graph takes uint8 weights: onnxruntime runs u8 x s8 products
    through a saturating int16 pair sum on CPUs without VNNI (vectors then drift to a cosine of 0.979);
    u8 x u8 products are exact integers on every CPU."""
    import onnx
    from onnx import numpy_helper

    emb = OnnxEmbedder("int8")
    emb.load()
    assert emb.encoder is not None
    model = onnx.load(str(emb.encoder.path))
    inits = {t.name: t for t in model.graph.initializer}
    quantized = [n for n in model.graph.node if n.op_type in ("DynamicQuantizeMatMul", "MatMulInteger",
                                                             "QAttention", "QLinearMatMul")]  # fmt: skip
    assert len(quantized) >= 4 * 6, [n.op_type for n in quantized]  # 4 products per layer, 6 layers
    weight_types = set()
    for n in quantized:
        weight = n.input[1]  # B of DynamicQuantizeMatMul / MatMulInteger, the weight of QAttention
        assert weight in inits, (n.name, weight)
        weight_types.add(numpy_helper.to_array(inits[weight]).dtype)
    assert weight_types == {np.dtype(np.uint8)}, weight_types


QEMU = shutil.which("qemu-x86_64")
NO_VNNI_PROBE = """
import sys, numpy as np
sys.path.insert(0, {root!r})
from aide_tui.core.embed.onnx_embedder import OnnxEmbedder
pieces = {pieces!r}
ref = np.load({ref!r})
got = OnnxEmbedder("int8").embed(pieces)
cos = (got * ref).sum(axis=1)
print(f"{{cos.mean():.5f}} {{cos.min():.5f}}")
"""


@needs_onnx
@pytest.mark.skipif(QEMU is None or platform.machine() != "x86_64", reason="needs qemu-x86_64 (qemu-user)")
def test_int8_graph_is_close_to_numpy_without_vnni(
    model_cache: Path, numpy_vectors: tuple[np.ndarray, ...], tmp_path: Path
) -> None:
    """The same parity on a CPU without VNNI (an AVX2 Haswell, emulated: onnxruntime has no switch to
    force its non-VNNI kernels), where the int8-weight graph gave a cosine of 0.979 to numpy."""
    docs, _ = numpy_vectors
    OnnxEmbedder("int8").load()  # build the graph natively (the emulated run only reads it)
    pieces = PIECES[:4]
    ref = tmp_path / "ref.npy"
    np.save(ref, docs[:4])
    script = NO_VNNI_PROBE.format(root=str(HERE.parents[2]), pieces=pieces, ref=str(ref))
    env = {**os.environ, "XDG_CACHE_HOME": str(model_cache)}
    out = subprocess.run([QEMU, "-cpu", "Haswell", sys.executable, "-c", script], capture_output=True,
                         text=True, env=env, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    mean, low = map(float, out.stdout.split())
    assert mean > 0.997 and low > 0.995, (mean, low)


def test_int8_calibration_is_data_free_and_keyed() -> None:
    from aide_tui.core.embed import onnx_encoder as oe

    vocab = {"[PAD]": 0, "[CLS]": 101, "[SEP]": 102, "[unused1]": 1}
    vocab.update({f"w{i}": 200 + i for i in range(50_000)})
    rows = oe.calibration_ids(vocab)
    assert rows == oe.calibration_ids(dict(reversed(list(vocab.items()))))  # depends on the ids only
    assert len(rows) == oe.CALIBRATION_SHAPE[0]
    assert all(r[0] == 101 and r[-1] == 102 and len(r) == oe.CALIBRATION_SHAPE[1] + 2 for r in rows)
    assert not {0, 1, 101, 102} & {t for r in rows for t in r[1:-1]}
    emb = BuiltinEmbedder()
    emb.load()
    enc, cfg = emb._encoder, emb._read_config()
    assert enc is not None
    keys = {
        oe.graph_key(enc, cfg, "mean"),
        oe.graph_key(enc, cfg, "cls"),
        oe.graph_key(enc, cfg, "mean", rows),
        oe.graph_key(enc, cfg, "mean", rows[:-1]),
    }
    assert len(keys) == 4
    assert oe.cached_model_path(SHA, "int8", "k").name == f"{SHA[:16]}-int8-k.onnx"
    with pytest.raises(ValueError):
        oe.cached_model_path(SHA, "fp16", "k")


@needs_onnx
def test_graph_cached_in_user_cache_not_workspace(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a "workspace": nothing may be written here
    emb = OnnxEmbedder("fp32")
    emb.load()
    models = model_cache / "aide-tui" / "models"
    files = sorted(p.name for p in models.iterdir())
    assert any(n.startswith(f"{SHA[:16]}-fp32-") for n in files), files
    assert all(n.endswith(".onnx") and not n.startswith(".") for n in files), files  # no temporaries
    assert emb.encoder is not None and emb.encoder.path.parent == models
    assert (os.stat(models).st_mode & 0o777) == 0o700
    assert list(tmp_path.iterdir()) == []


@needs_onnx
def test_build_is_atomic_offline_and_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    monkeypatch.delenv("AIDE_MODELS_DIR", raising=False)  # this module tests the default place
    models = tmp_path / "aide-tui" / "models"

    # a crash while writing leaves neither a final file nor a temporary
    real_save = onnx.save

    def crash(model, path, *a, **k):
        Path(path).write_bytes(b"half a model")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx, "save", crash)
    with pytest.raises(EmbedderError, match="No space left"):
        OnnxEmbedder("fp32").load()
    assert list(models.iterdir()) == []
    monkeypatch.setattr(onnx, "save", real_save)

    # building never opens a socket
    def no_network(*a, **k):
        raise AssertionError("the graph build tried to use the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)

    # concurrent builders (two indexer processes at once) both end with the same complete file
    errors: list[BaseException] = []

    def load() -> None:
        try:
            OnnxEmbedder("fp32").embed(["def f(): pass"])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    (final,) = list(models.iterdir())
    onnx.checker.check_model(str(final))

    # a corrupt cache file (disk trouble) is rebuilt once, not fatal
    final.write_bytes(b"\0garbage")
    vec = OnnxEmbedder("fp32").embed(["def f(): pass"])
    assert np.isfinite(vec).all() and final.stat().st_size > 1_000_000


# -- wired: [embedding] runtime, the factory, the pooled workers ---------------------------------------
def test_runtime_setting_is_validated_and_resolved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.builtin import resolve_runtime
    from aide_tui.core.errors import ConfigError

    cfg = tmp_path / "config.toml"
    cfg.write_text('[embedding]\nruntime = "numpy"\n')
    assert load_settings(None, user_config=cfg, environ={}).embedding.runtime == "numpy"
    assert load_settings(None, user_config=tmp_path / "none.toml", environ={}).embedding.runtime == "auto"
    env = {"AIDE_EMBEDDING_RUNTIME": "onnx"}
    assert load_settings(None, user_config=cfg, environ=env).embedding.runtime == "onnx"
    cfg.write_text('[embedding]\nruntime = "tensorflow"\n')
    with pytest.raises(ConfigError, match="unknown embedding runtime 'tensorflow'"):
        load_settings(None, user_config=cfg, environ={})
    with pytest.raises(ValueError):
        BuiltinEmbedder(runtime="gpu")
    assert resolve_runtime("numpy") == "numpy"
    assert resolve_runtime("onnx") == "onnx-int8"
    assert resolve_runtime("auto") == ("onnx-int8" if onnx_importable() else "numpy")
    from aide_tui.core.embed import onnx_encoder

    monkeypatch.setattr(onnx_encoder, "onnx_importable", lambda: False)  # the extra is not installed
    assert resolve_runtime("auto") == "numpy"


def test_factory_passes_the_runtime_to_every_worker(tmp_path: Path) -> None:
    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.factory import make_embedder
    from aide_tui.core.embed.pool import PooledEmbedder

    def settings(runtime: str):
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'[embedding]\nruntime = "{runtime}"\nworkers = 2\n')
        return load_settings(None, user_config=cfg, environ={})

    plain = make_embedder(settings("numpy"))
    assert plain is not None and plain.id == f"builtin:all-MiniLM-L6-v2:{SHA[:8]}"
    onnx = make_embedder(settings("onnx"))
    assert onnx is not None and onnx.id == plain.id + ":onnx-int8-u8"
    fp32 = make_embedder(settings("onnx-fp32"))
    assert fp32 is not None and fp32.id == plain.id + ":onnx-fp32"
    pooled = make_embedder(settings("onnx"), for_indexing=True)
    assert isinstance(pooled, PooledEmbedder)
    assert pooled._kwargs["runtime"] == "onnx-int8" and pooled.id == onnx.id


def test_queries_are_encoded_in_numpy_unless_a_runtime_is_set(tmp_path: Path) -> None:
    """A query encoder with the runtime left to auto is numpy even over an onnx-built index (the same
    model: no onnx session to open for a few tokens); a runtime the user set is honoured."""
    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.base import same_model
    from aide_tui.core.embed.factory import make_embedder

    def settings(runtime: str):
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'[embedding]\nruntime = "{runtime}"\n')
        return load_settings(None, user_config=cfg, environ={})

    plain = f"builtin:all-MiniLM-L6-v2:{SHA[:8]}"
    onnx_index = plain + ":onnx-int8-u8"
    query = make_embedder(settings("auto"), recorded=onnx_index, for_queries=True)
    assert query is not None and query.id == plain and same_model(query.id, onnx_index)
    docs = make_embedder(settings("auto"), recorded=onnx_index)
    assert docs is not None and docs.id == (onnx_index if onnx_importable() else plain)
    chosen = make_embedder(settings("onnx"), recorded=onnx_index, for_queries=True)
    assert chosen is not None and chosen.id == onnx_index


@needs_onnx
def test_setting_runs_the_same_graph(model_cache: Path, numpy_vectors: tuple[np.ndarray, ...]) -> None:
    docs, _ = numpy_vectors
    emb = BuiltinEmbedder(runtime="onnx-fp32")
    got = emb.embed(PIECES)
    assert 1 - (got * docs).sum(axis=1).min() < 1e-5
    int8 = BuiltinEmbedder(runtime="onnx")
    assert np.abs(int8.embed(PIECES) - OnnxEmbedder("int8").embed(PIECES)).max() < 1e-6
