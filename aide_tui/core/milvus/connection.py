"""The Milvus store: a workspace's chunks, pieces and file records in Milvus collections.

Optional (``pip install 'aide-tui[milvus]'``); ``pymilvus`` is imported only when this store is used.
A URI ending in ``.db`` is Milvus Lite (an embedded engine in a local folder), ``http(s)://host:port``
a server or cluster. Three collections share the configured name:

- ``<name>``: one row per chunk (workspace id, path, lines, language, symbol, text, content hash,
  defined names) plus ``tokens``, our own code-aware terms (field weights as repeats, each term
  escaped into ``[a-z0-9]``), which Milvus's BM25 function turns into a sparse vector;
- ``<name>_pieces``: one row per dense piece (owner chunk, lines, tokens for the piece BM25 list and,
  when the collection was created with an embedder, the piece's vector);
- ``<name>_files``: one record per indexed file (content hash, stat data, counts), committed after
  its rows, and one ``meta`` record per workspace (root, embedder, version, the batch in flight).

Several workspaces can share the names: every row carries its workspace id. Indexing is incremental by
content hash and resumable: a batch's paths are written to the workspace's meta record before its rows
change and cleared after its file records are committed, so a run killed mid-batch purges and redoes
those files next time (no ghosts, no duplicates).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from aide_tui.core.config import Settings, is_network_uri
from aide_tui.core.errors import IndexCorrupt, IndexMissing, IndexProblem, StoreUnavailable
from aide_tui.core.milvus.lite import lite_damage, quiet_engine_logs, wait_for_lite
from aide_tui.core.milvus.terms import MAX_VARCHAR, clip, literal, row_id
from aide_tui.core.store.records import FileRecord

INSTALL_HINT = "pip install 'aide-tui[milvus]'"
SCHEMA_VERSION = "2"
INSERT_BATCH = 256  # rows per insert call
MAX_DEFINES = 256  # defined names kept per chunk row
FILTER_PATHS = 500  # paths per `path in [...]` filter
META_PATH = ""  # the meta record's path (no file has an empty path)


def _installed(name: str) -> bool:
    """Whether ``name`` can be imported, without importing it (pymilvus takes half a second)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def milvus_missing(settings: Settings) -> str | None:
    """None when the packages the settings need are installed, else a one-line message."""
    if not _installed("pymilvus"):
        return f"store.backend = milvus needs pymilvus, which is not installed: {INSTALL_HINT}"
    if not is_network_uri(settings.store.uri) and not _installed("milvus_lite"):
        return f"a Milvus Lite store (a .db file) needs milvus-lite, which is not installed: {INSTALL_HINT}"
    return None


def _root_hash(root: Path, n: int) -> str:
    real = os.path.realpath(root)
    return hashlib.sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:n]


def workspace_id(root: Path, settings: Settings) -> str:
    """This workspace's id in the collection: ``store.workspace``, else ``<folder>-<hash of the root>``."""
    if settings.store.workspace:
        return settings.store.workspace
    name = Path(os.path.realpath(root)).name or "root"
    return f"{name}-{_root_hash(root, 8)}"


def collection_name(root: Path, settings: Settings) -> str:
    return settings.store.collection or f"aide_{_root_hash(root, 12)}"


def resolve_uri(root: Path, settings: Settings, create: bool = True) -> str:
    """The URI to connect to: a server's as given, a Lite file made absolute (relative = to the root)."""
    uri = settings.store.uri.strip()
    if is_network_uri(uri):
        return uri
    if not uri:
        from aide_tui.core.paths import state_dir

        return str(state_dir(root, create=create) / "milvus.db")
    path = Path(uri).expanduser()
    return str(path if path.is_absolute() else Path(root) / path)


def shown_uri(uri: str) -> str:
    """A URI for messages (credentials in it are hidden)."""
    if "@" in uri and "://" in uri:
        scheme, rest = uri.split("://", 1)
        return f"{scheme}://…@{rest.rsplit('@', 1)[1]}"
    return uri


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
    return " ".join(str(text).split())[:400]


CONNECT_ATTEMPTS = 3
CREATE_WAIT = 10.0  # seconds a writer that lost the race to create a collection waits to see it


class MilvusStore:
    """The three collections behind one name, over one connection; every failure is a StoreUnavailable."""

    def __init__(
        self, uri: str, name: str, token: str = "", timeout: float = 30.0, lock_wait: float = 30.0
    ) -> None:
        self.uri = uri
        self.lock_wait = lock_wait
        self.name = name
        self.token = token
        self.timeout = timeout
        self._client: Any = None
        self._dim: int | None = None

    # -- connection ------------------------------------------------------------------------------

    @property
    def local(self) -> bool:
        return not is_network_uri(self.uri)

    def _fail(self, exc: BaseException, doing: str) -> StoreUnavailable:
        return StoreUnavailable(f"Milvus store {shown_uri(self.uri)}: cannot {doing}: {_message(exc)}")

    def client(self, create: bool = False) -> Any:
        """The connected client. A Lite file that does not exist is IndexMissing unless ``create``."""
        if self._client is not None:
            return self._client
        if self.local:
            folder = Path(self.uri)
            if not folder.exists() and not create:
                raise IndexMissing(f"no Milvus Lite store at {self.uri}: run `aide-tui index`")
            if folder.exists():
                damage = lite_damage(folder)
                if damage:
                    raise IndexCorrupt(
                        f"Milvus Lite store {self.uri} is damaged: {damage}; remove that folder and run "
                        "`aide-tui index` to rebuild it"
                    )
            else:
                folder.parent.mkdir(parents=True, exist_ok=True)
            if not wait_for_lite(folder, self.lock_wait):
                raise StoreUnavailable(
                    f"Milvus Lite store {self.uri} is in use by another process (Milvus Lite opens a store "
                    "in one process at a time: share a collection between machines or concurrent users "
                    "through a Milvus server, store.uri = http(s)://host:port)"
                )
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # installed but broken (a mismatched grpc, say)
            raise StoreUnavailable(f"pymilvus cannot be imported ({exc}): {INSTALL_HINT}") from None

        quiet_engine_logs()  # pymilvus logs every failed call with a traceback; we say it in one line
        kwargs: dict[str, Any] = {"uri": self.uri, "timeout": self.timeout}
        if self.token:
            kwargs["token"] = self.token
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                client = MilvusClient(**kwargs)
                break
            except Exception as exc:  # noqa: BLE001 - pymilvus and the engine raise many kinds
                if attempt + 1 == CONNECT_ATTEMPTS:
                    raise self._fail(exc, "connect") from None
                time.sleep(0.25 * (attempt + 1))  # a busy engine can refuse the handshake once
        self._client = client
        for name in (self.chunks, self.pieces, self.files):  # a reopened collection starts released
            if self.call("list collections", client.has_collection, name):
                self.call(f"load collection {name}", client.load_collection, name)
        return client

    def call(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except IndexProblem:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, doing) from None

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
            self._client = None

    # -- collections -----------------------------------------------------------------------------

    @property
    def chunks(self) -> str:
        return self.name

    @property
    def pieces(self) -> str:
        return f"{self.name}_pieces"

    @property
    def files(self) -> str:
        return f"{self.name}_files"

    def exists(self) -> bool:
        c = self.client()
        return bool(self.call("list collections", c.has_collection, self.files))

    def vector_dim(self) -> int:
        """The dimension of the pieces' vectors (0: the collection was created without an embedder)."""
        if self._dim is None:
            c = self.client()
            desc = self.call("describe the collection", c.describe_collection, self.pieces)
            dim = 0
            for f in desc.get("fields", []):
                if f.get("name") == "vec":
                    dim = int((f.get("params") or {}).get("dim") or 0)
            self._dim = dim
        return self._dim

    def ensure(self, dim: int) -> None:
        """Create the collections when missing (the pieces get a ``dim``-d vector field when dim > 0).
        Several writers may start at once on a server: each collection is created by whoever gets
        there first, and a writer that finds them mid-creation waits for the layout record."""
        c = self.client(create=True)
        if self.call("list collections", c.has_collection, self.files):
            self._await_record()
            return
        from pymilvus import DataType, Function, FunctionType

        def create(doing: str, name: str, **kwargs: Any) -> None:
            self._create(c, doing, name, **kwargs)

        def text_fields(s: Any, source: str = "tokens", sparse: str = "sparse") -> None:
            s.add_field(source, DataType.VARCHAR, max_length=MAX_VARCHAR, enable_analyzer=True,
                        analyzer_params={"tokenizer": "standard"})  # fmt: skip
            s.add_field(sparse, DataType.SPARSE_FLOAT_VECTOR)
            s.add_function(Function(name=f"bm25_{source}", function_type=FunctionType.BM25,
                                    input_field_names=[source], output_field_names=[sparse]))  # fmt: skip

        def base(s: Any) -> None:
            s.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
            s.add_field("workspace", DataType.VARCHAR, max_length=256)
            s.add_field("path", DataType.VARCHAR, max_length=4096)

        def bm25_index(extra: Callable[[Any], None] | None = None) -> Any:
            ip = c.prepare_index_params()
            ip.add_index(
                field_name="sparse",
                index_type="SPARSE_INVERTED_INDEX",
                metric_type="BM25",
                params={"bm25_k1": 1.2, "bm25_b": 0.75},
            )  # fmt: skip  (our bm25.K1, bm25.B)
            if extra:
                extra(ip)
            return ip

        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        base(s)
        s.add_field("start_line", DataType.INT64)
        s.add_field("end_line", DataType.INT64)
        s.add_field("language", DataType.VARCHAR, max_length=64)
        s.add_field("symbol", DataType.VARCHAR, max_length=4096)
        s.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR)
        s.add_field("file_hash", DataType.VARCHAR, max_length=64)
        s.add_field("defines", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_DEFINES,
                    max_length=512)  # fmt: skip
        text_fields(s)
        text_fields(s, "names", "names_sparse")  # defined names: the symbol lookup is an index search

        def names_index(ip: Any) -> None:
            ip.add_index(field_name="names_sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")

        create("create the chunk collection", self.chunks, schema=s, index_params=bm25_index(names_index))

        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        base(s)
        s.add_field("chunk_id", DataType.VARCHAR, max_length=64)
        s.add_field("language", DataType.VARCHAR, max_length=64)
        s.add_field("start_line", DataType.INT64)
        s.add_field("end_line", DataType.INT64)
        text_fields(s)
        if dim:
            s.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)

        def vec_index(ip: Any) -> None:
            if dim:
                ip.add_index(field_name="vec", index_type="FLAT", metric_type="IP")

        create("create the piece collection", self.pieces, schema=s, index_params=bm25_index(vec_index))

        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        base(s)
        s.add_field("sha1", DataType.VARCHAR, max_length=64)
        for name in ("size", "mtime_ns", "chunks", "pieces", "vectors"):
            s.add_field(name, DataType.INT64)
        s.add_field("data", DataType.VARCHAR, max_length=MAX_VARCHAR)
        s.add_field("_v", DataType.FLOAT_VECTOR, dim=2)  # Milvus wants a vector field in every collection
        ip = c.prepare_index_params()
        ip.add_index(field_name="_v", index_type="FLAT", metric_type="L2")
        create("create the file collection", self.files, schema=s, index_params=ip)
        self._dim = None  # the winner's schema decides
        if not collection_record(self).get("schema"):
            set_collection_record(self, schema=SCHEMA_VERSION)

    def _create(self, c: Any, doing: str, name: str, **kwargs: Any) -> None:
        """Create a collection; a writer that lost the race to another waits until it can see it."""
        try:
            c.create_collection(name, **kwargs)
        except Exception as exc:  # noqa: BLE001 - "already exists" when another writer won the race
            deadline = time.monotonic() + CREATE_WAIT  # the winner may still be creating it
            while not self.call("list collections", c.has_collection, name):
                if time.monotonic() > deadline:
                    raise self._fail(exc, doing) from None
                time.sleep(0.1)

    def _await_record(self, wait: float = 15.0) -> None:
        """Collections without their layout record are still being created by another writer."""
        deadline = time.monotonic() + wait
        while not collection_record(self).get("schema") and time.monotonic() < deadline:
            time.sleep(0.2)

    def drop(self) -> None:
        c = self.client()
        for name in (self.chunks, self.pieces, self.files):
            if self.call("list collections", c.has_collection, name):
                self.call("drop a collection", c.drop_collection, name)
        self._dim = None

    # -- reads -----------------------------------------------------------------------------------

    def query_all(
        self, collection: str, filter: str, fields: list[str], batch: int = 2000
    ) -> Iterator[dict[str, Any]]:
        """Every row matching ``filter`` (paged)."""
        c = self.client()
        offset = 0
        while True:
            rows = self.call("query", c.query, collection, filter=filter, output_fields=fields,
                             limit=batch, offset=offset)  # fmt: skip
            yield from rows
            if len(rows) < batch:
                return
            offset += batch

    def meta(self, ws: str) -> dict[str, Any] | None:
        c = self.client()
        rows = self.call("read the workspace record", c.get, self.files, ids=[row_id("meta", ws)],
                         output_fields=["data"])  # fmt: skip
        if not rows:
            return None
        try:
            data = json.loads(rows[0]["data"])
        except (ValueError, TypeError):
            raise IndexCorrupt(
                f"Milvus store {shown_uri(self.uri)}: workspace record {ws!r} is damaged"
            ) from None
        return data if isinstance(data, dict) else None

    def workspaces(self) -> dict[str, dict[str, Any]]:
        """Every workspace in the collection → its meta record."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.query_all(self.files, f"path == {literal(META_PATH)}", ["workspace", "data"]):
            try:
                data = json.loads(row["data"])
            except (ValueError, TypeError):
                continue
            if isinstance(data, dict) and isinstance(row.get("workspace"), str):
                out[row["workspace"]] = data  # other writers' records: anything else is skipped
        return out

    def records(self, ws: str) -> dict[str, FileRecord]:
        out: dict[str, FileRecord] = {}
        flt = f"workspace == {literal(ws)} and path != {literal(META_PATH)}"
        fields = ["path", "sha1", "size", "mtime_ns", "chunks", "pieces", "vectors"]
        for r in self.query_all(self.files, flt, fields):
            out[r["path"]] = FileRecord(int(r["size"]), int(r["mtime_ns"]), r["sha1"], 0, int(r["chunks"]),
                                        int(r["pieces"]), int(r["vectors"]))  # fmt: skip
        return out

    # -- writes ----------------------------------------------------------------------------------

    def put_meta(self, ws: str, data: dict[str, Any]) -> None:
        c = self.client()
        row = {"id": row_id("meta", ws), "workspace": ws, "path": META_PATH, "sha1": "", "size": 0,
               "mtime_ns": 0, "chunks": 0, "pieces": 0, "vectors": 0, "_v": [0.0, 0.0],
               "data": clip(json.dumps(data), MAX_VARCHAR - 16)}  # fmt: skip
        self.call("write the workspace record", c.upsert, self.files, [row])

    def put_records(self, ws: str, records: dict[str, FileRecord]) -> None:
        c = self.client()
        rows = [
            {"id": row_id("file", ws, p), "workspace": ws, "path": p, "sha1": r.sha1, "size": r.size,
             "mtime_ns": r.mtime_ns, "chunks": r.chunks, "pieces": r.pieces, "vectors": r.vectors,
             "data": "", "_v": [0.0, 0.0]}
            for p, r in records.items()
        ]  # fmt: skip
        for i in range(0, len(rows), INSERT_BATCH):
            self.call("write file records", c.upsert, self.files, rows[i : i + INSERT_BATCH])

    def delete_paths(self, ws: str, paths: Iterable[str], records: bool = True) -> None:
        """Remove every row of these files (chunks, pieces and, with ``records``, their file records)."""
        c = self.client()
        todo = sorted(set(paths))
        names = [self.chunks, self.pieces] + ([self.files] if records else [])
        for i in range(0, len(todo), FILTER_PATHS):
            group = todo[i : i + FILTER_PATHS]
            flt = f"workspace == {literal(ws)} and path in [{', '.join(map(literal, group))}]"
            for name in names:
                self.call("delete rows", c.delete, name, filter=flt)

    def delete_records(self, ws: str, paths: Iterable[str]) -> None:
        c = self.client()
        ids = [row_id("file", ws, p) for p in paths]
        for i in range(0, len(ids), FILTER_PATHS):
            self.call("delete file records", c.delete, self.files, ids=ids[i : i + FILTER_PATHS])

    def delete_workspace(self, ws: str) -> None:
        c = self.client()
        for name in (self.chunks, self.pieces, self.files):
            self.call("delete a workspace", c.delete, name, filter=f"workspace == {literal(ws)}")

    def insert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        c = self.client()
        for i in range(0, len(rows), INSERT_BATCH):
            self.call("insert rows", c.insert, collection, rows[i : i + INSERT_BATCH])


def collection_record(store: MilvusStore) -> dict[str, Any]:
    """The collection's own record: its layout version and the embedder of its vectors."""
    rows = store.call("read the collection record", store.client().get, store.files,
                      ids=[row_id("collection")], output_fields=["data"])  # fmt: skip
    if not rows:
        return {}
    try:
        data = json.loads(rows[0]["data"])
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def set_collection_record(store: MilvusStore, **changes: Any) -> None:
    data = {**collection_record(store), **changes}
    row = {"id": row_id("collection"), "workspace": "", "path": "#collection", "sha1": "", "size": 0,
           "mtime_ns": 0, "chunks": 0, "pieces": 0, "vectors": 0, "_v": [0.0, 0.0],
           "data": json.dumps(data)}  # fmt: skip
    store.call("write the collection record", store.client().upsert, store.files, [row])


def check_layout(store: MilvusStore) -> None:
    """Raise IndexCorrupt when the collection was laid out by another version of aide-tui."""
    found = collection_record(store).get("schema")
    if found != SCHEMA_VERSION:
        raise IndexCorrupt(
            f"collection {store.name} has layout {found or '?'} (this aide-tui writes {SCHEMA_VERSION}): "
            "run `aide-tui index --rebuild`"
        )


def connect(root: Path, settings: Settings, create: bool = False) -> MilvusStore:
    """A (not yet connected) store for ``root``'s collection; a read-only store never creates its folder."""
    uri = resolve_uri(root, settings, create=create and not settings.store.read_only)
    s = settings
    return MilvusStore(
        uri, collection_name(root, s), s.store.token, s.embedding.timeout, s.index.lock_timeout
    )
