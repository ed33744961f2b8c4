"""The store kind (issue 30): what each store implements, asked instead of its name, and the one guard
for searching every workspace, worded as each front end said it before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write_workspace
from serve_helpers import Served, _reap_servers, clean_env, cli  # noqa: F401

from aide_tui.core.config import Settings, StoreSettings
from aide_tui.core.storekind import LOCAL, MILVUS, NeedsSharedStore, store_kind


def settings(**store: object) -> Settings:
    return replace(Settings(), store=replace(StoreSettings(), **store))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("store", "shared", "engine", "embedded", "graph", "static", "writable"),
    [
        ({}, False, False, False, True, True, True),
        ({"read_only": True}, False, False, False, True, True, True),  # the local store ignores it
        ({"backend": "milvus"}, True, True, True, False, False, True),  # a Lite file in the state dir
        ({"backend": "milvus", "uri": "/tmp/team.db"}, True, True, True, False, False, True),
        ({"backend": "milvus", "uri": "http://127.0.0.1:19530"}, True, True, False, False, False, True),
        ({"backend": "milvus", "uri": "127.0.0.1:19530", "read_only": True}, True, True, False, False, False,
         False),
    ],
)  # fmt: skip
def test_each_store_says_what_it_implements(
    store: dict[str, object],
    shared: bool,
    engine: bool,
    embedded: bool,
    graph: bool,
    static: bool,
    writable: bool,
) -> None:
    kind = store_kind(settings(**store))
    assert kind.name == (MILVUS.name if shared else LOCAL.name)
    assert (kind.shared, kind.all_workspaces, kind.needs_engine_host, kind.embedded_engine) == (
        shared, shared, engine, embedded,
    )  # fmt: skip
    assert (kind.symbol_graph, kind.static_tier, kind.writable, kind.read_only) == (
        graph, static, writable, not writable,
    )  # fmt: skip


def test_the_guard_words_the_refusal_as_each_front_end_asked() -> None:
    local = store_kind(Settings())
    with pytest.raises(NeedsSharedStore) as cli_said:
        local.require_all_workspaces("--all-workspaces", 'set store.backend = "milvus" (see the README)')
    assert (
        str(cli_said.value)
        == '--all-workspaces needs a shared store: set store.backend = "milvus" (see the README)'
    )
    with pytest.raises(ValueError, match=r'^all_workspaces needs a shared store: store.backend = "milvus"$'):
        local.require_all_workspaces("all_workspaces")
    store_kind(settings(backend="milvus")).require_all_workspaces("all_workspaces")  # no refusal


def test_the_cli_and_serve_refuse_every_workspace_of_the_local_store(tmp_path: Path) -> None:
    env = clean_env(tmp_path, AIDE_EMBEDDING_BACKEND="none")
    root = write_workspace(tmp_path / "ws")
    out = cli("search", "--path", str(root), "--all-workspaces", "client", env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert (
        out.stderr
        == 'aide-tui: --all-workspaces needs a shared store: set store.backend = "milvus" (see the README)\n'
    )
    srv = Served(root, env=env)
    srv.wait_ready()
    got = srv.http.post("/search", json={"query": "client", "all_workspaces": True})
    assert got.status_code == 400
    assert got.json() == {"error": 'all_workspaces needs a shared store: store.backend = "milvus"'}
    assert srv.stop() == 0
