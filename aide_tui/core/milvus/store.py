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
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from aide_tui.core.config import Settings, is_network_uri
from aide_tui.core.events import Committed, Event, Progress
from aide_tui.core.model import Chunk
from aide_tui.core.status import IndexStatus
from aide_tui.core.store.segments import FileRecord, IndexCorrupt, IndexError_, IndexMissing, writer_lock

INSTALL_HINT = "pip install 'aide-tui[milvus]'"
SCHEMA_VERSION = "2"
INSERT_BATCH = 256  # rows per insert call
FILE_BATCH = 64  # files per resumable batch (their paths are journalled in the meta record)
EMBED_BATCH = 32
MAX_VARCHAR = 65_535
MAX_TEXT_BYTES = 60_000
MAX_DEFINES = 256
FILTER_PATHS = 500  # paths per `path in [...]` filter
META_PATH = ""  # the meta record's path (no file has an empty path)


class StoreUnavailable(IndexError_):
    """The Milvus engine cannot be reached or read (the message says which and why)."""


class StoreReadOnly(IndexError_):
    """A write was asked of a read-only store."""


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


# -- tokens --------------------------------------------------------------------------------------------


def escape_term(term: str) -> str:
    """A term (or a defined name, lower-cased) as one ``[a-z0-9]`` word any Milvus analyzer keeps whole.

    ``z`` is the escape: ``zz``, ``zu`` (_), ``zd`` (.), ``zx`` + 6 hex digits (anything else): injective.
    """
    out = []
    for ch in term:
        if "a" <= ch <= "y" or "0" <= ch <= "9":
            out.append(ch)
        elif ch == "z":
            out.append("zz")
        elif ch == "_":
            out.append("zu")
        elif ch == ".":
            out.append("zd")
        else:
            out.append(f"zx{ord(ch):06x}")
    return "".join(out)


def names_text(names: Iterable[str]) -> str:
    """Defined names for the exact-name lookup (a second BM25 field: an inverted index of names)."""
    return _clip(" ".join(dict.fromkeys(escape_term(n.lower()) for n in names)), MAX_VARCHAR - 1024)


def terms_text(counts: dict[str, float], limit: int = MAX_VARCHAR - 1024) -> str:
    """Weighted term frequencies as the whitespace-joined text Milvus's BM25 counts (weight = repeats)."""
    out: list[str] = []
    size = 0
    for term, weight in counts.items():
        word = escape_term(term)
        reps = max(1, int(round(weight)))
        if size + (len(word) + 1) * reps > limit:
            break
        out.extend([word] * reps)
        size += (len(word) + 1) * reps
    return " ".join(out)


def query_text(terms: Iterable[str], weights: dict[str, float] | None = None) -> str:
    """A query's BM25 terms for Milvus (a weight of 2 repeats the term: Milvus counts query terms)."""
    words: list[str] = []
    for t in terms:
        reps = max(1, int(round(weights.get(t, 1.0)))) if weights else 1
        words.extend([escape_term(t)] * reps)
    return " ".join(words)


def _clip(text: str, max_bytes: int) -> str:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", "ignore")


def _lit(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    return json.dumps(value, ensure_ascii=False)


def _row_id(*parts: object) -> str:
    return hashlib.sha1("\0".join(map(str, parts)).encode("utf-8", "surrogatepass")).hexdigest()[:32]


# -- the engine -----------------------------------------------------------------------------------------


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
    return " ".join(str(text).split())[:400]


CONNECT_ATTEMPTS = 3


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
                damage = _lite_damage(folder)
                if damage:
                    raise IndexCorrupt(
                        f"Milvus Lite store {self.uri} is damaged: {damage}; remove that folder and run "
                        "`aide-tui index` to rebuild it"
                    )
            else:
                folder.parent.mkdir(parents=True, exist_ok=True)
            if not _wait_for_lite(folder, self.lock_wait):
                raise StoreUnavailable(
                    f"Milvus Lite store {self.uri} is in use by another process (Milvus Lite opens a store "
                    "in one process at a time: share a collection between machines or concurrent users "
                    "through a Milvus server, store.uri = http(s)://host:port)"
                )
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # installed but broken (a mismatched grpc, say)
            raise StoreUnavailable(f"pymilvus cannot be imported ({exc}): {INSTALL_HINT}") from None

        _quiet_engine_logs()  # pymilvus logs every failed call with a traceback; we say it in one line
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
        except IndexError_:
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
            try:
                c.create_collection(name, **kwargs)
            except Exception as exc:  # noqa: BLE001 - "already exists" when another writer won the race
                if not self.call("list collections", c.has_collection, name):
                    raise self._fail(exc, doing) from None

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
            _set_collection_record(self, schema=SCHEMA_VERSION)

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

    def query_all(self, collection: str, filter: str, fields: list[str], batch: int = 2000) -> Iterator[dict]:
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
        rows = self.call("read the workspace record", c.get, self.files, ids=[_row_id("meta", ws)],
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
        for row in self.query_all(self.files, f"path == {_lit(META_PATH)}", ["workspace", "data"]):
            try:
                data = json.loads(row["data"])
            except (ValueError, TypeError):
                continue
            if isinstance(data, dict) and isinstance(row.get("workspace"), str):
                out[row["workspace"]] = data  # other writers' records: anything else is skipped
        return out

    def records(self, ws: str) -> dict[str, FileRecord]:
        out: dict[str, FileRecord] = {}
        flt = f"workspace == {_lit(ws)} and path != {_lit(META_PATH)}"
        fields = ["path", "sha1", "size", "mtime_ns", "chunks", "pieces", "vectors"]
        for r in self.query_all(self.files, flt, fields):
            out[r["path"]] = FileRecord(int(r["size"]), int(r["mtime_ns"]), r["sha1"], 0, int(r["chunks"]),
                                        int(r["pieces"]), int(r["vectors"]))  # fmt: skip
        return out

    # -- writes ----------------------------------------------------------------------------------

    def put_meta(self, ws: str, data: dict[str, Any]) -> None:
        c = self.client()
        row = {"id": _row_id("meta", ws), "workspace": ws, "path": META_PATH, "sha1": "", "size": 0,
               "mtime_ns": 0, "chunks": 0, "pieces": 0, "vectors": 0, "_v": [0.0, 0.0],
               "data": _clip(json.dumps(data), MAX_VARCHAR - 16)}  # fmt: skip
        self.call("write the workspace record", c.upsert, self.files, [row])

    def put_records(self, ws: str, records: dict[str, FileRecord]) -> None:
        c = self.client()
        rows = [
            {"id": _row_id("file", ws, p), "workspace": ws, "path": p, "sha1": r.sha1, "size": r.size,
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
            flt = f"workspace == {_lit(ws)} and path in [{', '.join(map(_lit, group))}]"
            for name in names:
                self.call("delete rows", c.delete, name, filter=flt)

    def delete_records(self, ws: str, paths: Iterable[str]) -> None:
        c = self.client()
        ids = [_row_id("file", ws, p) for p in paths]
        for i in range(0, len(ids), FILTER_PATHS):
            self.call("delete file records", c.delete, self.files, ids=ids[i : i + FILTER_PATHS])

    def delete_workspace(self, ws: str) -> None:
        c = self.client()
        for name in (self.chunks, self.pieces, self.files):
            self.call("delete a workspace", c.delete, name, filter=f"workspace == {_lit(ws)}")

    def insert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        c = self.client()
        for i in range(0, len(rows), INSERT_BATCH):
            self.call("insert rows", c.insert, collection, rows[i : i + INSERT_BATCH])


def _quiet_engine_logs() -> None:
    """Milvus Lite logs its own failures with tracebacks on stderr; we report them in one line instead."""
    import logging

    for name in ("milvus_lite", "pymilvus", "grpc"):  # grpc: the engine's server logs unimplemented calls
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _served_here() -> set[str]:
    """Lite folders whose engine runs in this process (pymilvus reuses it for every client)."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return set()
    return set(getattr(server_manager_instance, "_servers", {}))


def _wait_for_lite(folder: Path, wait: float) -> bool:
    """Whether the Lite folder is free to open (polls up to ``wait`` seconds while another process has it)."""
    lock = folder / "LOCK"
    if not lock.exists() or os.path.abspath(folder) in _served_here():
        return True  # nobody has it, or this process does (its engine serves every client here)
    try:
        import fcntl
    except ImportError:  # Windows: let the engine say it
        return True
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
        finally:
            os.close(fd)
        time.sleep(0.1)


def _lite_damage(folder: Path) -> str | None:
    """Why a Milvus Lite data folder cannot be opened (None when it looks intact)."""
    if not folder.is_dir():
        return "not a Milvus Lite data folder"
    for name in ("collections", "databases"):
        if not (folder / name).is_dir():
            return f"its {name}/ folder is missing"
    for manifest in [*folder.glob("collections/*/manifest.json"), *folder.glob("collections/*/schema.json")]:
        try:
            json.loads(manifest.read_bytes())
        except (OSError, ValueError):
            return f"{manifest.relative_to(folder)} is not readable JSON"
    return None


# -- the backend ---------------------------------------------------------------------------------------


class MilvusBackend:
    """The store seam (see backend.py) over Milvus collections."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root)
        self.settings = settings
        self.ws = workspace_id(self.root, settings)
        self.name = collection_name(self.root, settings)
        self._store: MilvusStore | None = None

    def store(self, create: bool = False) -> MilvusStore:
        if self._store is None:
            uri = resolve_uri(self.root, self.settings, create=create and not self.settings.store.read_only)
            self._store = MilvusStore(
                uri, self.name, self.settings.store.token, self.settings.embedding.timeout,
                self.settings.index.lock_timeout,
            )  # fmt: skip
        return self._store

    def settings_for_children(self) -> Settings:
        """The settings for a front end's indexing process: this store's collection and workspace named
        explicitly, and for a Lite file the loopback address of its engine, which this process starts
        and hosts (Milvus Lite opens a store in one process at a time; the child connects to ours)."""
        from dataclasses import replace

        st = replace(self.settings.store, collection=self.name, workspace=self.ws)
        store = self.store(create=not st.read_only)
        if store.local:
            store.client(create=not st.read_only)  # starts the engine here (or raises why it cannot)
            try:
                from milvus_lite.server_manager import server_manager_instance
            except ImportError as exc:
                raise StoreUnavailable(f"milvus-lite cannot be imported ({exc}): {INSTALL_HINT}") from None

            served = server_manager_instance.start_and_get_uri(store.uri)
            if not served:
                raise StoreUnavailable(f"Milvus Lite store {store.uri}: the engine did not start")
            st = replace(st, uri=served)
        return replace(self.settings, store=st)

    def release(self) -> None:
        """Close the connection and stop a Lite engine this process hosts (the file is free again)."""
        store = self._store
        if store is None:
            return
        store.close()
        if store.local and os.path.abspath(store.uri) in _served_here():
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(store.uri)

    def version_key(self) -> object | None:
        try:
            meta = self.store().meta(self.ws)
        except IndexError_:
            return None
        return None if meta is None else meta.get("version")

    def load_view(self, previous: Any) -> Any:
        raise IndexError_("a Milvus store is searched through MilvusSearcher, not an index view")

    def make_indexer(self, embedder: Any, embedder_error: str | None) -> MilvusIndexer:
        return MilvusIndexer(self, embedder, embedder_error)

    def status(self) -> IndexStatus:
        try:
            store = self.store()
            if not store.exists():
                return IndexStatus("missing")
            meta = store.meta(self.ws)
            if meta is None or meta.get("version") is None:  # no run has finished yet
                return IndexStatus("missing")
            records = store.records(self.ws)
        except IndexMissing:
            return IndexStatus("missing")
        except IndexError_ as exc:
            return IndexStatus("corrupt", error=str(exc))
        emb = str(meta.get("embedder") or "none")
        has_emb = emb != "none"
        missing = sum(r.pieces - r.vectors for r in records.values()) if has_emb else 0
        st = IndexStatus(
            state="ready" if missing == 0 else "partial",
            files=len(records),
            chunks=sum(r.chunks for r in records.values()),
            embedded=sum(r.chunks for r in records.values() if r.vectors >= r.pieces) if has_emb else 0,
            embedder=emb,
            last_indexed=meta.get("last_indexed"),
            vectors_missing=missing,
            skipped=int(meta.get("skipped", 0)),
        )
        backend = self.settings.embedding.backend
        reason = meta.get("degraded_reason")
        if backend != "none" and not has_emb:
            st.degraded_reason = (
                str(reason)
                if reason
                else (f"index has no vectors although embedder {backend!r} is configured")
            )
        elif backend != "none" and reason:
            st.degraded_reason = str(reason)
        st.degraded = st.degraded_reason is not None
        if st.degraded:
            st.state = "partial"
        st.extra = {
            "store": "milvus",
            "uri": shown_uri(store.uri),
            "collection": self.name,
            "workspace": self.ws,
        }
        return st


# -- indexing -------------------------------------------------------------------------------------------


@dataclass
class _Batch:
    records: dict[str, FileRecord] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    pieces: list[tuple[int, Chunk]] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)


class MilvusIndexer:
    """Same ``run`` contract as :class:`~aide_tui.core.index.indexer.Indexer`, writing into Milvus."""

    def __init__(self, backend: MilvusBackend, embedder: Any, embedder_error: str | None) -> None:
        self.backend = backend
        self.settings = backend.settings
        self.root = backend.root
        self.embedder = embedder
        self.embedder_error = embedder_error
        self.computed = 0  # vectors the embedder computed in the current run (not from the cache)

    def run(
        self,
        on_progress: Callable[[Event], None] | None = None,
        cancel: threading.Event | None = None,
        rebuild: bool = False,
        priority: Iterable[str] = (),
        embed: bool = True,
        should_yield: Callable[[], bool] | None = None,
        paths: Iterable[str] | None = None,
    ) -> Any:
        from aide_tui.core.index.indexer import IndexReport
        from aide_tui.core.paths import state_dir

        if self.settings.store.read_only:
            raise StoreReadOnly("the store is read-only (store.read_only / --read-only): not indexing")
        emit = on_progress or (lambda e: None)
        report = IndexReport()
        self.computed = 0
        started = time.monotonic()
        state = state_dir(self.root)
        with writer_lock(state / "index", timeout=self.settings.index.lock_timeout):
            try:
                self._run(state, report, emit, rebuild, cancel)
            finally:
                self.backend.store().close()
        report.seconds = time.monotonic() - started
        return report

    def _embedder_state(self, report: Any) -> tuple[Any, str, int, str | None]:
        from aide_tui.core.embed.base import EmbedderError

        if self.embedder is None:
            return None, "none", 0, self.embedder_error
        try:
            return self.embedder, self.embedder.id, int(self.embedder.dim), None
        except EmbedderError as exc:
            return None, "none", 0, str(exc)

    def _run(self, state: Path, report: Any, emit: Callable[[Event], None], rebuild: bool,
             cancel: threading.Event | None) -> None:  # fmt: skip
        from aide_tui.core.index.indexer import diff
        from aide_tui.core.index.scan import Scanner

        ws = self.backend.ws
        store = self.backend.store(create=True)
        embedder, emb_id, dim, emb_error = self._embedder_state(report)
        store.ensure(dim)
        meta = self._start(store, ws, rebuild, report, dim)
        col_dim = store.vector_dim()
        col_emb = _collection_embedder(store)
        if embedder is not None and (col_dim != dim or (col_emb not in (None, emb_id))):
            emb_error = (
                f"collection {store.name} holds "
                f"{'no vectors' if not col_dim else f'{col_dim}-d vectors of {col_emb}'}"
                f"; embedder {emb_id} gives {dim}-d: use another store.collection or rebuild it"
            )
            embedder, emb_id, dim = None, "none", 0
        if embedder is not None and col_emb is None:
            _set_collection_record(store, embedder=emb_id)
        emit(Progress("scanning", message="walking the workspace"))
        s = self.settings.index
        scan = Scanner(self.root, s.max_file_kb * 1024, s.exclude, s.include_sensitive).scan()
        report.skipped = {**scan.skipped, **scan.errors}
        report.warnings.extend(scan.warnings)
        records = store.records(ws)
        plan = diff(scan.files, cast(Any, _Files(records)))
        to_read = list(plan.to_read)
        if embedder is not None:  # files whose vectors are missing (an embedder that failed before)
            seen = {e.rel for e in to_read}
            to_read += [e for e in scan.files if e.rel not in seen and e.rel in plan.unchanged
                        and plan.unchanged[e.rel].vectors < plan.unchanged[e.rel].pieces]  # fmt: skip
        if plan.removed:
            meta["pending"] = sorted(plan.removed)
            store.put_meta(ws, meta)
            store.delete_paths(ws, plan.removed)
            report.wrote = True
        report.removed = len(plan.removed)
        cache = None
        if embedder is not None:
            from aide_tui.core.index.embcache import EmbeddingCache

            cache = EmbeddingCache(state, emb_id, dim)
        degraded = self._batches(store, ws, meta, to_read, records, (embedder, col_dim, cache), emb_error,
                                 report, emit, cancel)  # fmt: skip
        if cache is not None:
            cache.save()
        self._finish(store, ws, meta, emb_id, col_dim or dim, degraded, report, emit)

    def _start(self, store: MilvusStore, ws: str, rebuild: bool, report: Any, dim: int) -> dict[str, Any]:
        """The workspace's record after any rebuild (settings or layout changed, or asked for) and after
        purging the files of a batch a killed run left unfinished."""
        from aide_tui.core.index.indexer import index_settings_key

        key = index_settings_key(self.settings)
        meta = store.meta(ws)
        if meta is not None and not rebuild and meta.get("settings") != key:
            report.messages.append("index settings or format changed; rebuilding")
            rebuild = True
        try:
            check_layout(store)
        except IndexCorrupt as exc:
            if set(store.workspaces()) - {ws}:
                raise IndexCorrupt(
                    f"{exc.args[0].split(': run')[0]}, and other workspaces share it: drop it (all of them "
                    "re-index) or choose another store.collection"
                ) from None
            report.messages.append(f"{exc.args[0].split(': run')[0]}; rebuilding")
            rebuild = True
        if rebuild and not set(store.workspaces()) - {ws}:
            store.drop()  # alone in the collection: start it afresh (a new embedder may need a new schema)
            store.ensure(dim)
            meta = None
        elif rebuild and meta is not None:
            store.delete_workspace(ws)
            meta = None
        meta = dict(meta or {})
        pending = list(meta.get("pending") or [])
        if pending:  # a run was killed mid-batch: those files are purged and redone
            report.messages.append(f"resuming: redoing {len(pending)} files of an interrupted batch")
            store.delete_paths(ws, pending)
        meta.update(root=str(self.root), settings=key, schema=SCHEMA_VERSION, workspace=ws)
        return meta

    def _batches(
        self, store: MilvusStore, ws: str, meta: dict[str, Any], to_read: list[Any],
        records: dict[str, FileRecord], vectors: tuple[Any, int, Any], degraded: str | None, report: Any,
        emit: Callable[[Event], None], cancel: threading.Event | None,
    ) -> str | None:  # fmt: skip
        """Replace the changed files' rows, a journalled batch at a time; returns why vectors are missing."""
        embedder, col_dim, cache = vectors
        total = len(to_read)
        for start in range(0, total, FILE_BATCH):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            group = to_read[start : start + FILE_BATCH]
            batch, same = self._read(group, records, report)
            if same:
                store.put_records(ws, same)
            unreadable = [e.rel for e in group if e.rel in report.skipped and e.rel in records]
            if unreadable:  # indexed before, unreadable now: its rows go, as from the local store
                store.delete_paths(ws, unreadable)
                report.removed += len(unreadable)
                report.wrote = True
            if batch.records:
                meta["pending"] = sorted(batch.records)
                store.put_meta(ws, meta)
                store.delete_paths(ws, batch.records, records=False)
                degraded = self._write(store, ws, batch, embedder, col_dim, cache, degraded) or degraded
                if degraded and embedder is not None:
                    embedder = None  # the embedder failed: the rest of the run is lexical (zero vectors)
                store.put_records(ws, batch.records)
                report.changed += len(batch.records)
                report.wrote = True
            emit(
                Progress(
                    "indexing", min(start + FILE_BATCH, total), total, message=f"{report.changed} changed"
                )
            )
        return degraded

    def _finish(self, store: MilvusStore, ws: str, meta: dict[str, Any], emb_id: str, dim: int,
                degraded: str | None, report: Any, emit: Callable[[Event], None]) -> None:  # fmt: skip
        """Clear the journal, record the run in the workspace's record and fill the report."""
        report.newly_embedded = self.computed
        records = store.records(ws)
        meta["pending"] = []
        if emb_id != "none" or not meta.get("embedder"):
            meta["embedder"] = emb_id if dim else "none"
        meta["dim"] = dim
        meta["degraded_reason"] = degraded
        meta["skipped"] = len(report.skipped)
        if report.wrote or meta.get("version") is None:
            meta["version"] = f"v{time.time_ns():x}"
            meta["last_indexed"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        store.put_meta(ws, meta)
        has_emb = meta["embedder"] != "none"
        report.files = len(records)
        report.chunks = sum(r.chunks for r in records.values())
        report.embedded = sum(r.chunks for r in records.values() if r.vectors >= r.pieces) if has_emb else 0
        report.vectors_missing = sum(r.pieces - r.vectors for r in records.values()) if has_emb else 0
        report.embedder = emb_id
        if degraded and self.settings.embedding.backend != "none":
            report.degraded, report.degraded_reason = True, degraded
        emit(Committed(files=report.files, chunks=report.chunks, embedded=report.embedded,
                       vectors_missing=report.vectors_missing, version=str(meta["version"])))  # fmt: skip

    def _read(self, group: list[Any], records: dict[str, FileRecord], report: Any) -> tuple[_Batch, dict]:
        """Read and chunk a group of files (our scan rules, chunkers and secret masking)."""
        from aide_tui.core.chunk.chunker import chunk_file_multi
        from aide_tui.core.chunk.pieces import PIECE_BUDGET, dense_pieces
        from aide_tui.core.index.scan import read_entry
        from aide_tui.core.secrets import mask_secrets

        s = self.settings.index
        batch = _Batch()
        same: dict[str, FileRecord] = {}
        for entry in group:
            text, raw, why = read_entry(entry, s.max_file_kb * 1024)
            if text is None or raw is None:
                report.skipped[entry.rel] = why or "unreadable"
                continue
            digest = hashlib.sha1(raw).hexdigest()
            old = records.get(entry.rel)
            if old is not None and old.sha1 == digest and old.vectors >= old.pieces:
                same[entry.rel] = FileRecord(len(raw), entry.mtime_ns, digest, 0, old.chunks, old.pieces,
                                             old.vectors)  # fmt: skip
                continue
            try:
                file_chunks, small = chunk_file_multi(
                    entry.rel, mask_secrets(text), (s.chunk_budget, PIECE_BUDGET), report.fallbacks
                )
            except Exception as exc:  # noqa: BLE001 - a chunker bug must not cost the rest of the index
                report.skipped[entry.rel] = f"chunker failed: {exc.__class__.__name__}: {exc}"
                continue
            base = len(batch.chunks)
            file_pieces = dense_pieces(file_chunks, small)
            batch.pieces.extend((base + i, p) for i, p in file_pieces)
            batch.chunks.extend(file_chunks)
            batch.hashes[entry.rel] = digest
            batch.records[entry.rel] = FileRecord(len(raw), entry.mtime_ns, digest, 0, len(file_chunks),
                                                  len(file_pieces))  # fmt: skip
        return batch, same

    def _write(self, store: MilvusStore, ws: str, batch: _Batch, embedder: Any, dim: int, cache: Any,
               degraded: str | None) -> str | None:  # fmt: skip
        """Insert a batch's chunk and piece rows (vectors from the cache or the embedder)."""
        from aide_tui.core.bm25 import chunk_terms
        from aide_tui.core.embed.base import EmbedderError
        from aide_tui.core.index.indexer import check_vectors
        from aide_tui.core.tokens import tokenize

        piece_bodies = [Counter(tokenize(p.text)) for _, p in batch.pieces]
        chunk_bodies: list[Counter[str]] = [Counter() for _ in batch.chunks]
        for (owner, _), body in zip(batch.pieces, piece_bodies, strict=True):
            chunk_bodies[owner].update(body)
        ids = [_row_id(ws, c.path, c.start_line, c.end_line, c.id) for c in batch.chunks]
        rows = []
        for c, body, cid in zip(batch.chunks, chunk_bodies, ids, strict=True):
            defines = [d[:500] for d in c.defines[:MAX_DEFINES]]
            rows.append({
                "id": cid, "workspace": ws, "path": c.path,
                "start_line": c.start_line, "end_line": c.end_line,
                "language": c.language[:64], "symbol": _clip(c.symbol or "", 4000),
                "text": _clip(c.text, MAX_TEXT_BYTES), "file_hash": batch.hashes[c.path],
                "defines": defines, "names": names_text(c.defines),
                "tokens": terms_text(chunk_terms(c, body)),
            })  # fmt: skip
        store.insert(store.chunks, rows)
        vectors = np.zeros((len(batch.pieces), dim), np.float32) if dim else None
        present = np.zeros(len(batch.pieces), bool)
        if embedder is not None and vectors is not None and cache is not None:
            todo = []
            for i, (_, p) in enumerate(batch.pieces):
                v = cache.lookup(p.embed_key)
                if v is not None:
                    vectors[i], present[i] = v, True
                else:
                    todo.append(i)
            try:
                for k in range(0, len(todo), EMBED_BATCH):
                    part = todo[k : k + EMBED_BATCH]
                    vecs = embedder.embed([batch.pieces[i][1].embed_text for i in part], kind="document")
                    check_vectors(vecs, len(part), dim)
                    cache.add([batch.pieces[i][1].embed_key for i in part], vecs)
                    vectors[part] = vecs
                    present[part] = True
                    self.computed += len(part)
            except EmbedderError as exc:
                degraded = str(exc)
        prow = []
        for i, ((owner, p), body) in enumerate(zip(batch.pieces, piece_bodies, strict=True)):
            row = {"id": _row_id(ids[owner], i, p.start_line), "workspace": ws, "path": p.path,
                   "chunk_id": ids[owner], "language": p.language[:64],
                   "start_line": p.start_line, "end_line": p.end_line,
                   "tokens": terms_text(chunk_terms(p, body))}  # fmt: skip
            if vectors is not None:
                row["vec"] = vectors[i].tolist()
            prow.append(row)
        store.insert(store.pieces, prow)
        per_file: Counter[str] = Counter(
            p.path for (_, p), ok in zip(batch.pieces, present, strict=True) if ok
        )
        for path, rec in batch.records.items():
            rec.vectors = per_file.get(path, 0)
        return degraded


class _Files:
    """What :func:`aide_tui.core.index.indexer.diff` reads of a manifest."""

    def __init__(self, files: dict[str, FileRecord]) -> None:
        self.files = files


def collection_record(store: MilvusStore) -> dict[str, Any]:
    """The collection's own record: its layout version and the embedder of its vectors."""
    rows = store.call("read the collection record", store.client().get, store.files,
                      ids=[_row_id("collection")], output_fields=["data"])  # fmt: skip
    if not rows:
        return {}
    try:
        data = json.loads(rows[0]["data"])
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _collection_embedder(store: MilvusStore) -> str | None:
    return collection_record(store).get("embedder") or None


def _set_collection_record(store: MilvusStore, **changes: Any) -> None:
    data = {**collection_record(store), **changes}
    row = {"id": _row_id("collection"), "workspace": "", "path": "#collection", "sha1": "", "size": 0,
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
