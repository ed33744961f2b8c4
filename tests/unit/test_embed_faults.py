"""Embedders against hostile servers and broken models: trickling replies, silence, refused ports,
huge bodies, non-finite and all-zero vectors. A real HTTP server on 127.0.0.1, a real tiny BERT."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loopback_server import LoopbackServer

from aide_tui.core.config import load_settings
from aide_tui.core.embed.base import check_vectors, l2_normalise
from aide_tui.core.embed.builtin import BuiltinEmbedder, packaged_model_dir
from aide_tui.core.embed.http import OllamaEmbedder, OpenAIEmbedder
from aide_tui.core.errors import EmbedderError
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search.searcher import Searcher

HANG = 60.0  # a call still running after this long is a hang (never a performance limit)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(dim=256) as srv:
        yield srv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _guarded(
    fn: Callable[[], Any], srv: LoopbackServer | None = None
) -> tuple[Any, BaseException | None, float]:
    """Run ``fn`` in a thread; (result, exception, seconds). A hang fails the test (the server is closed
    so the thread can end)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    start = time.monotonic()
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG)
    took = time.monotonic() - start
    if t.is_alive():
        if srv is not None:
            srv.close()
        pytest.fail(f"the call was still running after {HANG:.0f}s")
    return box.get("value"), box.get("error"), took


# -- the overall deadline -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["query", "document"])
def test_a_reply_sent_one_byte_at_a_time_hits_the_deadline(server: LoopbackServer, kind: str) -> None:
    """Each byte arrives well inside the 1 s read timeout, the whole reply would take minutes."""
    server.set_mode("drip", delay=0.02)
    emb = OpenAIEmbedder(server.url, timeout=1.0, retries=2)
    _, err, took = _guarded(lambda: emb.embed(["a"], kind=kind), server)  # type: ignore[arg-type]
    assert isinstance(err, EmbedderError), err
    assert str(err) == f"embedding server at {server.url} did not answer within 1s (timeout)"
    assert len(server.requests) == 1  # a request that ran out of time is not repeated
    assert took < HANG


def test_index_and_search_finish_against_a_dripping_server(workspace: Path, server: LoopbackServer) -> None:
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": server.url, "timeout": 1}})
    Indexer(workspace, settings, OpenAIEmbedder(server.url, timeout=1.0)).run()  # vectors while healthy
    server.set_mode("drip", delay=0.02)
    (workspace / "new.py").write_text("def dripping_change():\n    return 1\n")
    rep, err, _ = _guarded(
        lambda: Indexer(workspace, settings, OpenAIEmbedder(server.url, timeout=1.0)).run()
    )
    assert err is None and rep.degraded and "did not answer within 1s" in rep.degraded_reason
    searcher = Searcher(workspace, settings, OpenAIEmbedder(server.url, timeout=1.0))
    resp, err, _ = _guarded(lambda: searcher.search("dripping_change"))
    assert err is None and resp.degraded and resp.results[0].path == "new.py"


# -- silence, refusal and the circuit breaker -------------------------------------------------------------


def test_a_server_that_never_answers_gets_one_attempt_per_query(server: LoopbackServer) -> None:
    server.set_mode("silent")
    emb = OpenAIEmbedder(server.url, timeout=1.0, retries=2, cooldown=30)
    _, err, _ = _guarded(lambda: emb.embed(["where"], kind="query"), server)
    assert isinstance(err, EmbedderError) and "did not answer within 1s" in str(err)
    assert len(server.requests) == 1
    # the circuit breaker: the next calls (any embedder of this endpoint) fail at once with the reason
    again = OpenAIEmbedder(server.url, timeout=1.0)
    for call in (lambda: emb.embed(["next"], kind="query"), lambda: again.embed(["doc"], kind="document")):
        _, err2, _ = _guarded(call, server)
        assert isinstance(err2, EmbedderError) and str(err2).startswith(str(err))
        assert "not tried again for" in str(err2)
    assert len(server.requests) == 1  # nothing more reached the server


def test_document_batches_are_retried_on_refusal_and_5xx_then_the_breaker_opens(
    server: LoopbackServer,
) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    emb = OllamaEmbedder(url, "m", timeout=1.0, retries=2)
    _, err, _ = _guarded(lambda: emb.embed(["a"], kind="document"))
    assert (
        isinstance(err, EmbedderError) and "connection refused" in str(err) and "after 3 attempts" in str(err)
    )
    _, err2, took = _guarded(lambda: emb.embed(["a"], kind="query"))
    assert isinstance(err2, EmbedderError) and "not tried again" in str(err2)
    server.set_mode("error", status=503)
    emb5 = OpenAIEmbedder(server.url, retries=2)
    _, err3, _ = _guarded(lambda: emb5.embed(["a"], kind="document"))
    assert isinstance(err3, EmbedderError) and "HTTP 503" in str(err3) and len(server.requests) == 3
    _, err4, _ = _guarded(lambda: emb5.embed(["a"], kind="query"))
    assert isinstance(err4, EmbedderError) and len(server.requests) == 3


def test_breaker_closes_after_the_cooldown(server: LoopbackServer) -> None:
    server.set_mode("error", status=500, times=1)
    emb = OpenAIEmbedder(server.url, retries=0, cooldown=0.3)
    with pytest.raises(EmbedderError, match="HTTP 500"):
        emb.embed(["a"], kind="query")
    with pytest.raises(EmbedderError, match="not tried again"):
        emb.embed(["a"], kind="query")
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        try:
            out = emb.embed(["a"], kind="query")
            break
        except EmbedderError:
            time.sleep(0.1)
    assert out.shape == (1, 256) and len(server.requests) == 2


def test_cli_search_against_a_silent_server_tries_once(workspace: Path, server: LoopbackServer) -> None:
    """The CLI's refresh and its query share the breaker: one request, then BM25 with the reason."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "AIDE_EMBEDDING_TIMEOUT": "1"}
    base = [sys.executable, "-m", "aide_tui"]
    flags = ["--embedder", "openai", "--embedding-url", server.url]
    subprocess.run(
        [*base, "index", str(workspace), *flags], env=env, check=True, capture_output=True, timeout=120
    )
    server.set_mode("silent")
    sent = len(server.requests)
    (workspace / "new.py").write_text("def quiet_change():\n    return 1\n")  # vectors missing again
    out = subprocess.run(
        [*base, "search", "--path", str(workspace), *flags, "--json", "quiet_change"],
        env=env, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.splitlines()[-1])
    assert res["degraded"] and "did not answer within 1s" in res["degraded_reason"]
    assert res["results"][0]["path"] == "new.py"
    assert len(server.requests) - sent == 1


# -- bodies ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["endless", "oversize"])
def test_answers_over_64_mb_are_refused(server: LoopbackServer, mode: str) -> None:
    server.set_mode(mode)
    emb = OpenAIEmbedder(server.url, timeout=20.0, retries=0)
    _, err, _ = _guarded(lambda: emb.embed(["a"]), server)
    assert isinstance(err, EmbedderError) and "64 MB" in str(err), err


# -- vectors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("zero", "returned all-zero vectors for 2 of 2 inputs"),
        ("huge", "returned non-finite values (NaN, inf or beyond float32) in 1 of 2 vectors"),
        ("nan", "returned non-finite values (NaN or inf)"),
    ],
)
@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_bad_vectors_are_rejected_at_the_boundary(
    server: LoopbackServer, mode: str, message: str, cls: type
) -> None:
    server.set_mode(mode)
    emb = cls(server.url, "m", retries=0)
    with pytest.raises(EmbedderError) as info:
        emb.embed(["a", "b"])
    assert str(info.value) == f"embedding server at {server.url} {message}"


def test_bad_vectors_mark_the_index_run_degraded_with_the_reason(
    workspace: Path, server: LoopbackServer
) -> None:
    server.set_mode("huge")
    settings = load_settings(workspace, {"embedding": {"backend": "openai", "url": server.url}})
    rep = Indexer(workspace, settings, OpenAIEmbedder(server.url, retries=0)).run()
    assert rep.degraded and "non-finite" in (rep.degraded_reason or "")
    assert rep.files == 5  # BM25 is complete


def test_check_vectors_and_normalising_large_values() -> None:
    ok = check_vectors(np.array([[3e20, 4e20], [1e-30, 0.0]], dtype=np.float64), "x")
    np.testing.assert_allclose(ok, [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)  # no float32 overflow in the norm
    assert np.isfinite(l2_normalise(np.array([[3e38, 3e38]], dtype=np.float32))).all()
    with pytest.raises(EmbedderError, match="all-zero vectors for 1 of 2"):
        check_vectors(np.array([[1.0, 0.0], [1e-50, 0.0]]), "x")  # 1e-50 is 0 in float32
    with pytest.raises(EmbedderError, match="non-finite"):
        check_vectors(np.array([[1e39, 1.0]]), "x")


def _tiny_bert(folder: Path, last_ln_gamma: float, last_ln_beta: float) -> Path:
    """A 1-layer, 8-wide BERT over the packaged vocabulary, written as safetensors."""
    folder.mkdir()
    vocab = (packaged_model_dir() / "vocab.txt").read_text(encoding="utf-8")
    (folder / "vocab.txt").write_text(vocab, encoding="utf-8")
    n_vocab, h, inter = len(vocab.splitlines()), 8, 16
    config = {"hidden_size": h, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": inter,
              "max_position_embeddings": 64, "vocab_size": n_vocab, "hidden_act": "gelu"}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(0)
    t: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(size=(n_vocab, h)),
        "embeddings.position_embeddings.weight": rng.normal(size=(64, h)),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, h)),
        "embeddings.LayerNorm.weight": np.ones(h),
        "embeddings.LayerNorm.bias": np.zeros(h),
    }
    p = "encoder.layer.0."
    for name, (n_out, n_in) in {
        "attention.self.query": (h, h), "attention.self.key": (h, h), "attention.self.value": (h, h),
        "attention.output.dense": (h, h), "intermediate.dense": (inter, h), "output.dense": (h, inter),
    }.items():  # fmt: skip
        t[p + name + ".weight"] = rng.normal(size=(n_out, n_in)) * 0.1
        t[p + name + ".bias"] = np.zeros(n_out)
    t[p + "attention.output.LayerNorm.weight"] = np.ones(h)
    t[p + "attention.output.LayerNorm.bias"] = np.zeros(h)
    t[p + "output.LayerNorm.weight"] = np.full(h, last_ln_gamma)
    t[p + "output.LayerNorm.bias"] = np.full(h, last_ln_beta)
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, arr in t.items():
        raw = np.asarray(arr, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(np.shape(arr)),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    hb = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(len(hb).to_bytes(8, "little") + hb + b"".join(blobs))
    return folder


def test_builtin_embedder_rejects_zero_and_non_finite_vectors(tmp_path: Path) -> None:
    good = BuiltinEmbedder(_tiny_bert(tmp_path / "good", 1.0, 0.0))
    assert np.isfinite(good.embed(["def a(): pass"])).all()
    zero = BuiltinEmbedder(_tiny_bert(tmp_path / "zero", 0.0, 0.0))
    with pytest.raises(
        EmbedderError, match=r"builtin embedder \(builtin:zero:\w+\) returned all-zero vectors"
    ):
        zero.embed(["def a(): pass", "b"])
    inf = BuiltinEmbedder(_tiny_bert(tmp_path / "inf", 1.0, float("inf")))
    with pytest.raises(
        EmbedderError, match=r"builtin embedder \(builtin:inf:\w+\) returned non-finite values"
    ):
        inf.embed(["x"], kind="query")
