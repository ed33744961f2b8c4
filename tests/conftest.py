"""Shared test helpers: a small realistic workspace on disk and the loopback embedding server."""

from __future__ import annotations

import compileall
import fcntl
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "unit"))

TEST_KNOBS = {"AIDE_KILL_ROUNDS"}  # variables that steer the tests themselves, not aide-tui
SCRATCH_HOME = "_AIDE_TESTS_SCRATCH_HOME"  # set by the first process of a run; workers inherit it
USER_MODELS = "_AIDE_TESTS_USER_MODELS"  # the developer's own models folder (read, never written)
OWN_FOLDERS = (".cache/aide-tui", ".config/aide-tui", ".local/state/aide-tui")


def pytest_configure(config: pytest.Config) -> None:
    """Run the whole session with ``HOME`` in a scratch folder and no ``XDG_*`` or ``AIDE_*`` settings,
    before any test module is imported: a module that copies ``os.environ`` at import (so its
    subprocesses miss the per-test isolation below) then writes into the scratch home, where the
    session's end finds it, never into the developer's own cache, config or app state."""
    if os.environ.get(SCRATCH_HOME):
        return  # a pytest-xdist worker: the controller already did this
    from aide_tui.core.paths import models_dir as user_models

    os.environ[USER_MODELS] = str(user_models())
    home = tempfile.mkdtemp(prefix="aide-tests-home-")
    for var in list(os.environ):
        if var.startswith(("XDG_CONFIG", "XDG_CACHE", "XDG_STATE", "XDG_DATA")) or (
            var.startswith("AIDE_") and var not in TEST_KNOBS
        ):
            del os.environ[var]
    os.environ["HOME"] = os.environ[SCRATCH_HOME] = home
    # the hundreds of `python -m aide_tui` subprocesses import the package: compile it once, as a
    # non-editable install does (with PYTHONDONTWRITEBYTECODE set, each one compiled it from source)
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "aide_tui"), quiet=1)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when anything wrote aide-tui's own folders under the scratch home: some test's
    process ran without the per-test isolation (its env was read before the fixture set it)."""
    home = os.environ.get(SCRATCH_HOME)
    if not home or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    leaked = [rel for rel in OWN_FOLDERS if (Path(home) / rel).exists()]
    if leaked:
        sys.stderr.write(
            "\nerror: tests wrote into the user's own aide-tui folders (here a scratch HOME): "
            + ", ".join(f"~/{rel}" for rel in leaked)
            + ". A subprocess took an env read before the isolation fixture (copy os.environ at call time)."
            + f" Left in {home}\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    shutil.rmtree(home, ignore_errors=True)


FILES = {
    "src/httpclient/client.py": '''
        """A tiny HTTP client."""

        import socket

        DEFAULT_TIMEOUT = 5.0


        class Client:
            """Sends requests and follows redirects."""

            def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
                self.base_url = base_url
                self.timeout = timeout

            def send(self, request):
                """Send one request over a socket and return the response."""
                conn = socket.create_connection((request.host, 80), timeout=self.timeout)
                conn.sendall(request.encode())
                return conn.recv(65536)

            def follow_redirects(self, response, max_hops: int = 10):
                """Follow Location headers until a non-redirect response arrives."""
                hops = 0
                while response.status in (301, 302, 307, 308) and hops < max_hops:
                    response = self.send(response.next_request())
                    hops += 1
                return response
    ''',
    "src/httpclient/headers.py": '''
        """Header parsing helpers."""


        def parse_header(line: str) -> tuple[str, str]:
            """Split a raw header line into a lower-cased name and its value."""
            name, _, value = line.partition(":")
            return name.strip().lower(), value.strip()


        def format_headers(headers: dict[str, str]) -> str:
            """Serialise headers as CRLF-separated lines."""
            return "".join(f"{k}: {v}\\r\\n" for k, v in headers.items())
    ''',
    "src/httpclient/retry.py": '''
        """Retry with exponential backoff."""

        import time


        def backoff_delays(attempts: int, base: float = 0.5):
            """Yield exponentially growing sleep durations."""
            for n in range(attempts):
                yield base * (2 ** n)


        def with_retries(fn, attempts: int = 3):
            """Call fn until it succeeds or the attempts run out."""
            for delay in backoff_delays(attempts):
                try:
                    return fn()
                except OSError:
                    time.sleep(delay)
            return fn()
    ''',
    "docs/usage.md": """
        # Usage

        Install the package and create a client.

        ## Redirects

        The client follows redirects up to ten hops.
    """,
    "web/app.ts": """
        import { Router } from "./router";

        export function renderPage(title: string): string {
          return `<h1>${title}</h1>`;
        }

        export class PageCache {
          private entries = new Map<string, string>();

          get(key: string): string | undefined {
            return this.entries.get(key);
          }
        }
    """,
}


def write_workspace(root: Path, files: dict[str, str] = FILES) -> Path:
    """Write a small realistic multi-language workspace under ``root``."""
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body).lstrip("\n"))
    return root


def indexed_bm25(root: Path, files: dict[str, str]) -> Path:
    """``files`` written under ``root`` and indexed with BM25 only (no embedder)."""
    from aide_tui.core.config import load_settings
    from aide_tui.core.index.indexer import Indexer

    write_workspace(root, files)
    Indexer(root, load_settings(root, {"embedding": {"backend": "none"}})).run()
    return root


def texts_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The chunk rows whose text a segment decompresses from now on (``Part.text`` still runs)."""
    from aide_tui.core.store import part

    read: list[int] = []
    real_text = part.Part.text

    def counted(self: part.Part, i: int) -> str:
        read.append(i)
        return real_text(self, i)

    monkeypatch.setattr(part.Part, "text", counted)
    return read


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the sample workspace."""
    return write_workspace(tmp_path / "ws")


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models folder for the session (``AIDE_MODELS_DIR``): the onnx graphs and the static tier's
    table are built once, not once per test (each takes tens of seconds). The static table is copied
    from the user's own cache when it is there (it is checked against its sha256 when read), else
    distilled here once, so that no test depends on which test distils it first. Parallel workers
    (``pytest -n``) share the folder: the first one to take its lock fills it."""
    from aide_tui.core.embed.static import StaticEmbedder
    from aide_tui.core.paths import models_dir as user_models

    os.environ.pop("AIDE_MODELS_DIR", None)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, above each worker's own
    shared = base / "models"
    shared.mkdir(exist_ok=True)
    with open(base / "models.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        name = StaticEmbedder().table_path().name
        if (shared / name).exists():
            return shared  # another worker filled it
        mine = Path(os.environ.get(USER_MODELS) or user_models()) / name
        if mine.is_file() and mine.with_suffix(".json").is_file():
            # copied, not linked: the table is read without following links (a symlinked one was
            # distilled again, 30 s, by whichever test first loaded it)
            for src in (mine.with_suffix(".json"), mine):
                tmp = shared / f".{src.name}.tmp"
                shutil.copyfile(src, tmp)
                os.chmod(tmp, 0o600)
                os.replace(tmp, shared / src.name)
        else:
            os.environ["AIDE_MODELS_DIR"] = str(shared)
            try:
                StaticEmbedder().load()
            finally:
                os.environ.pop("AIDE_MODELS_DIR", None)
    return shared


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models_dir: Path) -> None:
    """Keep tests away from the developer's own config, cache and app state; derived model files are
    shared by the session (see ``models_dir``)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))  # the app's history and state
    for var in list(os.environ):
        if var.startswith("AIDE_") and var not in TEST_KNOBS:
            monkeypatch.delenv(var)
    monkeypatch.setenv("AIDE_MODELS_DIR", str(models_dir))


@pytest.fixture(autouse=True)
def _no_remembered_embedder_failures() -> Iterator[None]:
    """Each test starts with closed circuit breakers (a loopback port can be reused by a later test)."""
    from aide_tui.core.embed.http import reset_breakers

    reset_breakers()
    yield
    reset_breakers()
