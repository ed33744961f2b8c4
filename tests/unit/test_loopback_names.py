"""Host names and the loopback rule (issue 32 #6): ``localhost.`` and a ``localhost`` that resolves
elsewhere are not this machine, for ``ask --url``, ``[answer] url``, ``[search] rerank_url`` and
``[embedding] url``. Each case runs inside a private network namespace (``unshare -m -n``, only ``lo``
up) with its own ``/etc/hosts`` bind-mounted as the resolver's answer, so no packet can leave whatever
the client does; a real model server listens on the namespace's 127.0.0.1 to see what reaches it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import write_workspace
from serve_helpers import clean_env

from aide_tui.core.embed.policy import is_loopback_host  # the one rule every model client uses

UNIT = Path(__file__).resolve().parent
DRIVER = """
import json, subprocess, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from model_server import ModelServer

ws, cases = Path(sys.argv[2]), json.loads(sys.argv[3])
with ModelServer() as srv:
    port = srv.url.rsplit(":", 1)[1]
    out = {}
    for name, (config, args) in cases.items():
        (ws / ".aide").mkdir(exist_ok=True)
        (ws / ".aide" / "config.toml").write_text(config.replace("PORT", port))
        args = [a.replace("PORT", port) for a in args]
        seen = len(srv.requests)
        cmd = [sys.executable, "-m", "aide_tui", *args]
        got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        out[name] = {"code": got.returncode, "stdout": got.stdout, "stderr": got.stderr,
                     "requests": len(srv.requests) - seen}
print(json.dumps(out))
"""
ASK = ["ask", "--path", "WS", "--embedder", "none", "how are redirects followed?"]
SEARCH = ["search", "--path", "WS", "--json", "redirects"]
CASES: dict[str, tuple[str, list[str]]] = {
    "ask --url localhost.": ("", [*ASK[:-1], "--url", "http://localhost.:PORT", ASK[-1]]),
    "ask --url localhost": ("", [*ASK[:-1], "--url", "http://localhost:PORT", ASK[-1]]),
    "[answer] url": ('[answer]\nurl = "http://localhost.:PORT"\n', ASK),
    "[search] rerank_url": (
        '[search]\nrerank = "http"\nrerank_url = "http://localhost.:PORT"\n',
        [*SEARCH[:-1], "--embedder", "none", SEARCH[-1]],
    ),  # fmt: skip
    "[embedding] url": ('[embedding]\nbackend = "openai"\nurl = "http://localhost.:PORT"\n', ["index", "WS"]),
    "ask --url 127.0.0.1": ("", [*ASK[:-1], "--url", "http://127.0.0.1:PORT", ASK[-1]]),
}


def in_namespace(tmp_path: Path, hosts: str) -> dict[str, Any]:
    """Run every case in a fresh network and mount namespace whose ``/etc/hosts`` is ``hosts``."""
    root = write_workspace(tmp_path / "ws")
    (tmp_path / "hosts").write_text(hosts)
    cases = {
        name: (cfg, [str(root) if a == "WS" else a for a in args]) for name, (cfg, args) in CASES.items()
    }
    shell = f'mount --bind "{tmp_path / "hosts"}" /etc/hosts && ip link set lo up && exec "$@"'
    cmd = ["unshare", "-m", "-n", "sh", "-c", shell, "sh", sys.executable, "-c", DRIVER, str(UNIT), str(root),
           json.dumps(cases)]  # fmt: skip
    env = clean_env(tmp_path)
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert got.returncode == 0, got.stderr
    return dict(json.loads(got.stdout))


needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"),
    reason="needs root, unshare and ip (a private network namespace)",
)


@needs_namespaces
def test_names_that_resolve_elsewhere_are_refused_for_every_model_server(tmp_path: Path) -> None:
    got = in_namespace(tmp_path, "192.0.2.1 localhost localhost.\n::1 ip6-localhost\n")
    for name in ("ask --url localhost.", "ask --url localhost", "[answer] url"):
        assert got[name]["code"] == 2, (name, got[name]["stderr"])
        assert "refusing non-loopback model server http://localhost" in got[name]["stderr"], name
    rerank = json.loads(got["[search] rerank_url"]["stdout"])
    assert rerank["rerank"].startswith("degraded: refusing non-loopback rerank endpoint http://localhost.:")
    embedding = got["[embedding] url"]  # indexed without vectors, and says why
    assert embedding["code"] == 0, embedding["stderr"]
    assert "refusing non-loopback embedding endpoint http://localhost.:" in embedding["stderr"]
    assert got["ask --url 127.0.0.1"]["code"] == 0, got["ask --url 127.0.0.1"]["stderr"]  # lo works here
    assert [c["requests"] for c in got.values()] == [0, 0, 0, 0, 0, 1]


@needs_namespaces
def test_localhost_is_loopback_when_it_resolves_there_and_localhost_dot_never(tmp_path: Path) -> None:
    got = in_namespace(tmp_path, "127.0.0.1 localhost localhost.\n::1 localhost ip6-localhost\n")
    assert got["ask --url localhost"]["code"] == 0 and got["ask --url localhost"]["requests"] == 1
    assert got["ask --url localhost."]["code"] == 2  # a trailing dot asks DNS on many resolvers
    assert got["[answer] url"]["code"] == 2 and got["[answer] url"]["requests"] == 0


def test_only_literal_loopback_addresses_and_localhost_are_loopback() -> None:
    for host in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "::ffff:127.0.0.1"):
        assert is_loopback_host(host), host
    for host in ("localhost.", "LOCALHOST.", "localhost.localdomain", "ip6-localhost", "127.1", "0x7f.1",
                 "127.0.0.1.nip.io", "0.0.0.0", "::", "192.0.2.1"):  # fmt: skip
        assert not is_loopback_host(host), host
