"""Run ``aide-tui serve`` as a real subprocess and talk to it over its real Unix socket (httpx)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The test process's environment without AIDE_* settings, with private config/cache dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDE_") or k == "AIDE_MODELS_DIR"}
    env.update(
        PYTHONPATH=str(REPO),
        XDG_CONFIG_HOME=str(home / "xdg-config"),
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        **extra,
    )
    return env


def cli(
    *args: str, env: dict[str, str], stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args],
        input=stdin, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


RUNNING: list[Served] = []  # every server a test started and that the cleanup fixture has not reaped


@pytest.fixture(autouse=True)
def _reap_servers() -> Iterator[None]:
    """Kill the servers a test left running (a failed assertion must not leak a process)."""
    yield
    for srv in [s for s in RUNNING if not s.shared]:
        srv.kill()


class Served:
    """One ``aide-tui serve ROOT`` process; ``http`` talks to its socket."""

    def __init__(self, root: Path, *args: str, env: dict[str, str], shared: bool = False) -> None:
        self.root = root
        self.sock = root / ".aide" / "serve.sock"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aide_tui", "serve", str(root), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.shared = shared
        RUNNING.append(self)
        self.lines: list[str] = []
        self.port: int | None = None
        want_http = "--port" in args
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.append(line.strip())
            if line.startswith("listening http://"):
                self.port = int(line.split("://", 1)[1].split()[0].rsplit(":", 1)[1])
                break
            if line.startswith("listening unix:") and not want_http:
                break
        if self.proc.poll() is not None:
            self.kill()
            raise AssertionError(f"serve exited {self.proc.returncode}: {self.proc.stderr.read()}")  # type: ignore[union-attr]
        self.http = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.sock)), base_url="http://aide", timeout=60
        )

    def wait_ready(self, timeout: float = 90) -> dict[str, Any]:
        """Wait for the server's first index; returns /status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.http.get("/status").json()
            if st["state"] in ("ready", "partial"):
                return st
            time.sleep(0.1)
        raise AssertionError("no index within the timeout")

    def search(self, query: str, **body: Any) -> dict[str, Any]:
        r = self.http.post("/search", json={"query": query, **body})
        assert r.status_code == 200, r.text
        return r.json()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and return the exit code (the process is killed if it does not exit in 20 s)."""
        if hasattr(self, "http"):
            self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        finally:
            if self.proc.poll() is not None and self in RUNNING:
                RUNNING.remove(self)
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe:
                    pipe.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(20)
        if self in RUNNING:
            RUNNING.remove(self)


def without_took(lines: str) -> list[dict[str, Any]]:
    out = []
    for line in lines.splitlines():
        obj = json.loads(line)
        obj.pop("took_ms")
        out.append(obj)
    return out
