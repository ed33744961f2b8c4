"""HTTP embedders against a real loopback server (no mocks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from aide_tui.core.embed.base import Embedder
from aide_tui.core.embed.http import OllamaEmbedder, OpenAIEmbedder
from aide_tui.core.embed.policy import check_endpoint, is_loopback_url
from aide_tui.core.errors import EmbedderError

try:
    from loopback_server import LoopbackServer, fake_vector
except ImportError:  # tests/ imported as a package
    from tests.unit.loopback_server import LoopbackServer, fake_vector

DIM = 8


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(dim=DIM) as srv:
        yield srv


def expected(texts: list[str]) -> np.ndarray:
    v = np.array([fake_vector(t, DIM) for t in texts], dtype=np.float64)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- happy paths -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_returns_normalised_float32_in_input_order(server: LoopbackServer, cls: type) -> None:
    texts = ["def foo(): pass", "class Bar", "x", "def foo(): pass"]
    with cls(server.url, "m", prefixes=False) as emb:
        out = emb.embed(texts)
        assert isinstance(emb, Embedder)  # on 3.11 this reads .dim: only cheap once dim is known
        assert out.dtype == np.float32 and out.shape == (4, DIM)
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
        assert emb.dim == DIM
    assert len(server.requests) == 1  # dim known from the embed call: no probe


def test_openai_orders_by_index(server: LoopbackServer) -> None:
    server.set_mode("reversed")
    texts = ["alpha", "beta", "gamma"]
    with OpenAIEmbedder(server.url) as emb:
        np.testing.assert_allclose(emb.embed(texts), expected(texts), rtol=1e-6)


def test_openai_batches_of_at_most_16(server: LoopbackServer) -> None:
    texts = [f"text {i}" for i in range(40)]
    with OpenAIEmbedder(server.url, batch_size=64) as emb:
        out = emb.embed(texts)
    assert out.shape == (40, DIM)
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
    assert [len(b) for b in server.inputs] == [16, 16, 8]
    assert all(r.path == "/v1/embeddings" and r.body["model"] == "default" for r in server.requests)
    assert sum(server.inputs, []) == texts


def test_openai_request_format_and_url_normalisation(server: LoopbackServer) -> None:
    for url in (server.url, server.url + "/", server.url + "/v1/embeddings", server.url + "/v1"):
        with OpenAIEmbedder(url, "llama") as emb:
            emb.embed(["a"])
    assert {r.path for r in server.requests} == {"/v1/embeddings"}
    assert server.requests[0].body == {"model": "llama", "input": ["a"]}


def test_prefixes_by_kind(server: LoopbackServer) -> None:
    with OpenAIEmbedder(server.url, prefixes=True) as emb:
        assert emb.id == "openai:default:p"
        doc = emb.embed(["a", "b"], kind="document")
        query = emb.embed(["a"], kind="query")
    assert server.inputs == [["search_document: a", "search_document: b"], ["search_query: a"]]
    np.testing.assert_allclose(doc, expected(["search_document: a", "search_document: b"]), rtol=1e-6)
    np.testing.assert_allclose(query, expected(["search_query: a"]), rtol=1e-6)


def test_no_prefixes_by_default_for_openai(server: LoopbackServer) -> None:
    with OpenAIEmbedder(server.url, "nomic-embed-text") as emb:
        assert emb.id == "openai:nomic-embed-text"
        emb.embed(["a"], kind="query")
    assert server.inputs == [["a"]]


def test_ollama_format_and_default_prefixes(server: LoopbackServer) -> None:
    with OllamaEmbedder(server.url + "/api/embed") as emb:  # default model nomic-embed-text -> prefixes
        assert emb.id == "ollama:nomic-embed-text:p"
        out = emb.embed(["q"], kind="query")
    req = server.requests[0]
    assert req.path == "/api/embed"
    assert req.body == {"model": "nomic-embed-text", "input": ["search_query: q"]}
    np.testing.assert_allclose(out, expected(["search_query: q"]), rtol=1e-6)
    with OllamaEmbedder(server.url, "all-minilm") as emb:
        assert emb.id == "ollama:all-minilm"
        emb.embed(["q"], kind="query")
    assert server.inputs[-1] == ["q"]


def test_dim_probe_once_and_empty_input(server: LoopbackServer) -> None:
    with OpenAIEmbedder(server.url) as emb:
        assert emb.embed([]).shape == (0, 0)
        assert server.requests == []
        assert emb.dim == DIM and emb.dim == DIM
        assert server.inputs == [["dim probe"]]
        empty = emb.embed([])
        assert empty.shape == (0, DIM) and empty.dtype == np.float32
    assert len(server.requests) == 1


def test_environment_proxy_ignored(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    dead_proxy = f"http://127.0.0.1:{free_port()}"  # if it were used, the request would fail
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with OpenAIEmbedder(server.url, retries=0) as emb:
        assert emb.embed(["a"]).shape == (1, DIM)


def test_construction_does_no_io() -> None:
    OpenAIEmbedder(f"http://127.0.0.1:{free_port()}").close()  # nothing listening, still constructs


def test_serialised_requests_across_threads(server: LoopbackServer) -> None:
    server.set_mode("slow", delay=0.05)
    active, peak = 0, 0
    lock = threading.Lock()

    def handler(path: str, body: dict) -> tuple[int, dict]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return 200, {"embeddings": [fake_vector(t, DIM) for t in body["input"]]}

    server.handler = handler
    with OllamaEmbedder(server.url, "m") as emb:
        threads = [threading.Thread(target=emb.embed, args=([f"t{i}"],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(server.requests) == 4 and peak == 1


# -- failures ----------------------------------------------------------------------------------------------


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with OpenAIEmbedder(url, retries=0) as emb, pytest.raises(EmbedderError, match="not reachable") as info:
        emb.embed(["a"])
    assert "connection refused" in str(info.value) and url in str(info.value)


def test_timeout_on_hang(server: LoopbackServer) -> None:
    server.set_mode("hang")
    start = time.monotonic()
    with (
        OpenAIEmbedder(server.url, timeout=0.3, retries=0) as emb,
        pytest.raises(EmbedderError, match="0.3s"),
    ):
        emb.embed(["a"])
    assert time.monotonic() - start < 2.0
    server.release()


def test_5xx_retried_then_error(server: LoopbackServer) -> None:
    server.set_mode("error", status=500)
    with OpenAIEmbedder(server.url, retries=2) as emb, pytest.raises(EmbedderError, match="HTTP 500") as info:
        emb.embed(["a"])
    assert len(server.requests) == 3
    assert "fake failure" in str(info.value) and "\n" not in str(info.value)


def test_5xx_once_then_ok(server: LoopbackServer) -> None:
    server.set_mode("error", times=1, status=503)
    with OllamaEmbedder(server.url, "m", retries=2) as emb:
        out = emb.embed(["a", "b"])
    assert out.shape == (2, DIM) and len(server.requests) == 2


def test_4xx_not_retried(server: LoopbackServer) -> None:
    server.set_mode("error", status=404)
    with OpenAIEmbedder(server.url, retries=2) as emb, pytest.raises(EmbedderError, match="HTTP 404"):
        emb.embed(["a"])
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("wrong_dim", "dimension 9, expected 8"),
        ("nan", "non-finite"),
        ("fewer", "1 vectors for 2 inputs"),
        ("invalid_json", "invalid JSON"),
    ],
)
def test_bad_responses(server: LoopbackServer, mode: str, message: str) -> None:
    with OpenAIEmbedder(server.url) as emb:
        assert emb.dim == DIM
        server.set_mode(mode)
        with pytest.raises(EmbedderError, match=message):
            emb.embed(["a", "b"])
    assert len(server.requests) == 2  # probe + one attempt: bad responses are not retried


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"nope": []}, "no 'data' list"),
        ({"data": [{"index": 0}]}, "no 'embedding'"),
        ({"data": [{"index": 5, "embedding": [1.0]}]}, "bad 'index'"),
        ({"data": [{"index": 0, "embedding": ["1", "2"]}]}, "non-numeric"),
        ({"data": [{"index": 0, "embedding": []}]}, "empty vectors"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}, "inconsistent"),
    ],
)
def test_malformed_openai_payloads(server: LoopbackServer, payload: dict, message: str) -> None:
    server.handler = lambda path, body: (200, payload)
    with OpenAIEmbedder(server.url) as emb, pytest.raises(EmbedderError, match=message):
        emb.embed(["a"] * len(payload.get("data", [1])))


def test_ollama_missing_embeddings(server: LoopbackServer) -> None:
    server.handler = lambda path, body: (200, {"embedding": [1.0]})
    with OllamaEmbedder(server.url, "m") as emb, pytest.raises(EmbedderError, match="no 'embeddings' list"):
        emb.embed(["a"])


def test_closed_embedder(server: LoopbackServer) -> None:
    emb = OpenAIEmbedder(server.url)
    emb.close()
    with pytest.raises(EmbedderError, match="closed"):
        emb.embed(["a"])


# -- endpoint policy ---------------------------------------------------------------------------------------


def test_non_loopback_refused_unless_allowed() -> None:
    with pytest.raises(EmbedderError, match="refusing non-loopback") as info:
        OpenAIEmbedder("http://192.0.2.1:8080")
    assert "--allow-remote-embedder" in str(info.value) and "http://192.0.2.1:8080" in str(info.value)
    with pytest.raises(EmbedderError, match="refusing non-loopback"):
        OllamaEmbedder("http://embeddings.example.com")
    # Allowed: construction succeeds (never embed: that would contact the address).
    emb = OpenAIEmbedder("http://192.0.2.1:8080", allow_remote=True)
    assert emb.endpoint == "http://192.0.2.1:8080/v1/embeddings"
    emb.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8080",
        "http://LOCALHOST",
        "http://127.0.0.1:8080/v1/embeddings",
        "http://127.0.0.5",
        "https://127.255.255.254:1",
        "http://[::1]:11434",
    ],
)
def test_loopback_urls(url: str) -> None:
    assert is_loopback_url(url)
    check_endpoint(url, allow_remote=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://192.0.2.1:8080",
        "http://128.0.0.1",
        "http://localhost.example.com",
        "http://localhost.:8080",
        "http://localhost.localdomain",
        "http://127.0.0.1.nip.io",
        "http://127.0.0.1@evil.example",
        "http://[::2]",
        "http://0.0.0.0:8080",
        "ftp://127.0.0.1/x",
        "127.0.0.1:8080",
        "http://[::1",
    ],
)
def test_not_loopback_urls(url: str) -> None:
    assert not is_loopback_url(url)
    with pytest.raises(EmbedderError):
        check_endpoint(url, allow_remote=False)


def test_non_http_scheme_refused_even_when_remote_allowed() -> None:
    with pytest.raises(EmbedderError, match="unsupported"):
        check_endpoint("ftp://127.0.0.1/x", allow_remote=True)
    with pytest.raises(EmbedderError, match="unsupported"):
        OpenAIEmbedder("ftp://127.0.0.1:8080", allow_remote=True)


def test_credentials_not_shown_in_messages() -> None:
    with pytest.raises(EmbedderError) as info:
        OpenAIEmbedder("http://user:secret@192.0.2.1:8080")
    assert "secret" not in str(info.value)
