"""One real end-to-end ask against llama.cpp, run by llama-cpp-python's OpenAI-compatible server on a
tiny GGUF written at test time (tiny_gguf.py). Skipped when no interpreter has ``llama_cpp.server`` and
``gguf``: set ``LLAMA_CPP_PYTHON`` to one (``pip install 'llama-cpp-python[server]' gguf`` compiles
llama.cpp, about 15 minutes on 2 shared cores), else the current interpreter is tried."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_cli import run

PYTHON = os.environ.get("LLAMA_CPP_PYTHON") or sys.executable
HERE = Path(__file__).parent


def _usable() -> bool:
    if not Path(PYTHON).exists():
        return False
    probe = subprocess.run([PYTHON, "-c", "import llama_cpp.server, gguf"], capture_output=True, timeout=120)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _usable(), reason="llama-cpp-python[server] and gguf are not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    model = tmp_path / "tiny.gguf"
    subprocess.run([PYTHON, str(HERE / "tiny_gguf.py"), str(model)], check=True, timeout=120)
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "4096", "--chat_format", "chatml"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.25)
        else:
            pytest.fail("llama_cpp.server did not start")
        assert proc.poll() is None, (tmp_path / "server.log").read_text()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_ask_against_a_real_llama_cpp_server(workspace: Path, llama_server: str) -> None:
    out = run("ask", "--path", str(workspace), "--embedder", "none", "--json", "--url", llama_server,
              "--limit", "2", "--max-context-tokens", "400", "how are redirects followed?")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["answer"].startswith("[1][1]") and data["backend"] == "openai"
    assert data["model"].endswith("tiny.gguf")  # named by the real server
    assert [c["n"] for c in data["citations"]] == [1] and data["unknown_citations"] == []
    first = data["results"][0]
    assert (data["citations"][0]["path"], data["citations"][0]["start_line"]) == (
        first["path"],
        first["start_line"],
    )
    # text mode streams the same answer, then the citation
    out = run("ask", "--path", str(workspace), "--embedder", "none", "--no-update", "--url", llama_server,
              "--limit", "1", "how are redirects followed?")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[1][1]") and "\nCitations:\n  [1] " in out.stdout
