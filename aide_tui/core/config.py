"""Settings: defaults < user config < workspace config < AIDE_* environment < flags.

Every key lives in a ``[section]`` of a TOML file and maps to the environment variable
``AIDE_<SECTION>_<KEY>`` (upper case). A workspace's own config (``<root>/.aide/config.toml``) comes with
a cloned repository, so some keys are honoured from the user config, the environment and flags only and
ignored there, with a note saying so: ``embedding.allow_remote``, ``answer.allow_remote`` and
``search.rerank_allow_remote`` (a repository must not be able to send your code anywhere) and
``store.uri``, ``store.collection``, ``store.workspace``, ``store.token`` (it must not be able to name a
shared store and overwrite another workspace's index in it). A network ``store.uri`` there is an error
instead, unless the environment or a flag sets one. ``[keys]`` (the app's keymap: a command's id → its
keys) is the user's own: a workspace config's ``[keys]`` is ignored the same way.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from aide_tui.core.errors import ConfigError


@dataclass(frozen=True)
class IndexSettings:
    """What gets indexed and how it is cut."""

    max_file_kb: int = 512
    chunk_budget: int = 1500
    exclude: tuple[str, ...] = ()
    include_sensitive: bool = False
    include_hard_links: bool = False  # files with more than one name (user config only: see scan.py)
    lock_timeout: float = 30.0
    max_segments: int = 32  # segments kept before the smallest are merged (bounded merges)
    build_workers: int = 0  # processes of a big build (0 = one per core, at most 2; 1 = in-process only)
    max_bulk_jobs: int = 1  # bulk embedding jobs this user runs at once across workspaces (the rest queue)
    bulk_turn_seconds: float = 60.0  # a bulk job gives its slot up after this long when another waits


EMBEDDERS = ("builtin", "openai", "ollama", "static", "none")
MODES = ("hybrid", "bm25", "dense")  # search modes (search.mode, --mode, the app's mode key, /search, MCP)


@dataclass(frozen=True)
class EmbeddingSettings:
    """Which embedder computes the dense vectors."""

    backend: str = "builtin"  # builtin | openai | ollama | static (the static tier alone) | none
    url: str = ""  # empty = the backend's loopback default
    model: str = ""
    static: bool = True  # the static tier beside the backend (every backend but none)
    prefixes: bool | None = None  # None = backend default
    model_dir: str = ""  # builtin only: a BERT-family sentence-embedding folder
    max_doc_tokens: int = 128
    workers: int = 0  # builtin: embedding processes while indexing (0 = one per core, at most 2)
    runtime: str = "auto"  # builtin: auto (onnx when aide-tui[onnx] is installed) | numpy | onnx
    allow_remote: bool = False
    timeout: float = 30.0


@dataclass(frozen=True)
class SearchSettings:
    """Ranking knobs (defaults chosen on the public eval)."""

    mode: str = "hybrid"  # hybrid | bm25 | dense
    rrf_k: int = 10
    top_n: int = 50
    bm25_weight: float = 1.0
    dense_weight: float = 1.0
    static_weight: float = 1.0  # the static tier's list (every chunk, query encoded the same way)
    static_with_dense: float = 0.0  # its weight once the transformer covers every piece (eval: none)
    symbol_weight: float = 2.0  # identifier-like queries; prose queries use 0.15 of it
    exact_definition: float = 2.0  # identifier queries: score factor of a chunk defining a name as written
    spelled_definition: float = 2.0  # two or three plain words: the same for a name they spell (digest auth)
    release_heading: float = 2.0  # a release number asked for (changelog 2.3.1): the chunk heading its notes
    path_weight: float = 0.5
    piece_weight: float = 0.25  # BM25 over function-sized pieces, a chunk ranked by its best piece
    phrase_weight: float = 2.0  # chunks containing the query's "double-quoted" spans verbatim
    message_weight: float = 4.0  # an error line's message ("ValueError: ..."): chunks holding most of it
    verbatim_weight: float = 4.0  # 8 words or more (pasted code, a comment): chunks holding half of it
    line_weight: float = 4.0  # a place the query names ("pkg/mod.py:12", a traceback frame): its chunk
    name_weight: float = 0.5  # prose queries: BM25 name field (words naming a function the chunk defines)
    best_piece: str = "piece"  # the piece a hit's best line follows: piece (BM25 piece, else dense) | dense
    test_weight: float = 0.5  # score factor for test files unless the query mentions tests
    per_file_cap: int = 0  # at most this many chunks per file among the first results (0 = no cap)
    # hybrid: a query no lexical list supports finds nothing when its closest chunk's similarity is
    # below this (calibrated for the builtin encoder, docs/quality.md; other embedders: never; 0: never)
    no_match_floor: float = 0.25
    # pasted texts (issues, change descriptions, stack traces: more than 24 distinct terms)
    long_test_weight: float = 0.3  # test files, unless the title mentions tests
    long_dense_weight: float = 1.0  # the dense list (whole text and its segments fused)
    long_static_weight: float = 1.0  # the static tier's list of the whole text
    long_phrase_weight: float = 2.0  # chunks holding the prose's "quoted" spans verbatim
    long_symbol_weight: float = 0.3  # chunks defining the names the text is about
    long_name_weight: float = 0.0  # the BM25 name field (see name_weight) for pasted texts
    mention_weight: float = 1.0  # files the text names (traceback frames, written paths)
    kind_prior: float = 2.0  # demote docs, changelogs, CI config... (exponent of the factors: 0 = off)
    file_agg: float = 0.0  # a file's best chunk gains this times its other chunks' damped sum
    title_weight: float = 0.0  # BM25 weight of the title's words (0 = the title is not singled out)
    dense_segments: bool = True  # embed the title, the prose and the code separately too
    # short prose queries ("where are redirects followed", a commit message)
    prose_kind_prior: float = 2.0  # the same file-kind priors, squared (identifier queries never get them)
    prose_file_agg: float = 0.0  # the same file aggregation
    # test files once more in the final order of a change description (``Fix ...``, ``feat: ...``),
    # unless it asks for tests: the source list reads the order before it, where tests still point at
    # the source they exercise (changeloc, whose changed files are source: hybrid .734/.850 -> .742/.858)
    prose_test_weight: float = 0.5
    # the symbol graph (prose and pasted texts; identifier queries never use it)
    hop_weight: float = 0.15  # short prose: files one import/call hop from the best files (RRF weight)
    long_hop_weight: float = 0.0  # pasted texts: the same (measured flat on swe_dev)
    hop_files: int = 3  # the best files whose neighbours are followed
    centrality: float = 0.1  # short prose: score factor 1 + this x the file's PageRank (imports, calls)
    long_centrality: float = 0.0  # pasted texts: the same (measured mixed on swe_dev)
    # the source files that docs pages, changelogs, examples and tests among the first hits describe
    source_weight: float = 0.15  # short prose (RRF weight of their list)
    long_source_weight: float = 0.0  # pasted texts
    source_with_dense: float = 0.0  # its factor when a dense list takes part (it finds the source itself)
    source_from: int = 5  # the first files read for such pointers
    # opt-in reranking of the top fused hits by a local server (llama.cpp --reranking: POST /v1/rerank)
    rerank: str = "off"  # off | http
    rerank_url: str = ""  # empty: http://127.0.0.1:8080
    rerank_model: str = ""
    rerank_top: int = 30  # fused hits sent to the reranker
    rerank_timeout: float = 5.0  # seconds; slower leaves the fused order ("rerank": "degraded: ...")
    rerank_allow_remote: bool = False  # like embedding.allow_remote: never from the workspace config


@dataclass(frozen=True)
class TuiSettings:
    """The app's own behaviour (``[tui]``)."""

    history: bool = True  # record queries in the XDG state folder (false: record nothing)
    history_size: int = 500
    remember_query: bool = False  # reopen with the last query of the workspace


@dataclass(frozen=True)
class StoreSettings:
    """Where the index lives (``[store]``): the local segments, or a Milvus collection."""

    backend: str = "local"  # local | milvus
    # milvus: a path ending in .db = Milvus Lite (empty: <state dir>/milvus.db); http(s)://host:port = a
    # server. uri, collection, workspace and token come from the user config, AIDE_STORE_* or flags only:
    # the workspace config may choose backend = "milvus" (its own Lite file), never a shared store.
    uri: str = ""
    collection: str = ""  # empty: aide_<hash of the resolved workspace root>; share one by naming it
    workspace: str = ""  # this workspace's id inside the collection (empty: <folder name>-<hash of root>)
    token: str = ""  # server credentials: never read from the workspace config
    read_only: bool = False  # never write to the store (no index, no refresh before searching)


@dataclass(frozen=True)
class AnswerSettings:
    """``aide-tui ask`` (``[answer]``): the local chat model server that writes cited answers."""

    backend: str = "openai"  # openai (llama.cpp's llama-server, llamafile, LM Studio, vLLM) | ollama
    url: str = ""  # empty = the backend's loopback default
    model: str = ""  # empty: the model the server has loaded (openai); ollama needs a name
    limit: int = 5  # hits sent to the model at most
    max_context_tokens: int = 3000  # their budget, in estimated tokens
    timeout: float = 120.0  # seconds for the whole answer
    allow_remote: bool = False  # like embedding.allow_remote: never from the workspace config


@dataclass(frozen=True)
class KeySettings:
    """The app's keymap (``[keys]``): a command's binding id → a key or comma-separated keys, e.g.
    ``help = "f10"``. The key names are checked here; the ids are the app's own (its key table checks
    them when it starts, ``aide_tui/tui/keys.py``), and the environment does not set them."""

    bindings: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.bindings)


@dataclass(frozen=True)
class Settings:
    """All settings, grouped by section."""

    index: IndexSettings = field(default_factory=IndexSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    tui: TuiSettings = field(default_factory=TuiSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    keys: KeySettings = field(default_factory=KeySettings)


_WORKSPACE_FORBIDDEN = {
    ("embedding", "allow_remote"), ("answer", "allow_remote"), ("search", "rerank_allow_remote"),
    ("store", "uri"), ("store", "collection"), ("store", "workspace"), ("store", "token"),
    ("index", "include_hard_links"),
}  # fmt: skip
STORE_BACKENDS = ("local", "milvus")
_NETWORK_SCHEMES = ("http://", "https://", "tcp://", "grpc://", "grpcs://", "unix://", "unix:")


def is_network_uri(uri: str) -> bool:
    """Whether a store URI names a server (anything but a local Milvus Lite file path)."""
    low = uri.strip().lower()
    if not low:
        return False
    if low.startswith(_NETWORK_SCHEMES) or "://" in low:
        return True
    # host:port without a scheme (pymilvus would refuse it, but never treat it as a file)
    head = low.split("/", 1)[0]
    return ":" in head and not (len(head) == 2 and head[1] == ":")  # C: is a drive, not a host


def _check_store(settings: Settings) -> None:
    st = settings.store
    if st.backend not in STORE_BACKENDS:
        raise ConfigError(f"unknown store backend {st.backend!r} ({', '.join(STORE_BACKENDS)})")
    uri = st.uri.strip()
    if uri and not is_network_uri(uri) and not uri.endswith(".db"):
        raise ConfigError(
            f"store.uri {_show(uri)}: a Milvus Lite file must end in .db (or use http(s)://host:port)"
        )
    if st.collection and not _COLLECTION.fullmatch(st.collection):
        raise ConfigError(
            f"store.collection {_show(st.collection)}: letters, digits and _ only, starting with a letter "
            "or _, at most 200 characters"
        )


_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/aide-tui/config.toml`` (default ``~/.config``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "aide-tui" / "config.toml"


def workspace_config_path(root: Path) -> Path:
    """The workspace's own config file, kept across index rebuilds."""
    return root / ".aide" / "config.toml"


# Accepted ranges of the numeric settings: (lowest, highest, lowest allowed itself). Values outside
# would crash later (rrf_k = -1 divides by zero, max_file_kb = 10**20 overflows) or hang (nan waits).
_WEIGHT = (0.0, 1000.0, True)
RANGES: dict[tuple[str, str], tuple[float, float, bool]] = {
    ("index", "max_file_kb"): (1, 1_048_576, True),
    ("index", "chunk_budget"): (100, 100_000, True),
    ("index", "lock_timeout"): (0.0, 86_400.0, True),
    ("index", "max_segments"): (1, 1000, True),
    ("index", "build_workers"): (0, 64, True),
    ("index", "max_bulk_jobs"): (1, 64, True),
    ("index", "bulk_turn_seconds"): (1.0, 86_400.0, True),
    ("embedding", "max_doc_tokens"): (3, 512, True),
    ("embedding", "workers"): (0, 64, True),
    ("embedding", "timeout"): (0.0, 3600.0, False),
    ("search", "rrf_k"): (0, 100_000, True),
    ("search", "top_n"): (1, 10_000, True),
    ("search", "per_file_cap"): (0, 10_000, True),
    **{
        ("search", f"{name}_weight"): _WEIGHT
        for name in (
            "bm25",
            "dense",
            "static",
            "symbol",
            "path",
            "piece",
            "phrase",
            "message",
            "verbatim",
            "line",
            "test",
        )  # fmt: skip
    },
    **{
        ("search", name): _WEIGHT
        for name in (
            "long_test_weight",
            "long_dense_weight",
            "long_static_weight",
            "static_with_dense",
            "long_phrase_weight",
            "long_symbol_weight",
            "mention_weight",
            "title_weight",
            "file_agg",
            "prose_file_agg",
            "prose_test_weight",
            "name_weight",
            "long_name_weight",
            "hop_weight",
            "long_hop_weight",
            "centrality",
            "long_centrality",
            "source_weight",
            "long_source_weight",
            "source_with_dense",
        )
    },  # fmt: skip
    ("search", "hop_files"): (1, 100, True),
    ("search", "source_from"): (1, 100, True),
    ("search", "exact_definition"): (0.0, 100.0, True),
    ("search", "spelled_definition"): (0.0, 100.0, True),
    ("search", "release_heading"): (0.0, 100.0, True),
    ("search", "kind_prior"): (0.0, 4.0, True),
    ("search", "prose_kind_prior"): (0.0, 4.0, True),
    ("search", "rerank_top"): (1, 1000, True),
    ("search", "rerank_timeout"): (0.0, 600.0, False),
    ("answer", "limit"): (1, 100, True),
    ("answer", "max_context_tokens"): (100, 1_000_000, True),
    ("answer", "timeout"): (0.0, 86_400.0, False),
}
MAX_CONFIG_BYTES = 1 << 20
# builtin encoder runtimes; "onnx" is onnx-int8, the explicit variants are for measuring
EMBEDDING_RUNTIMES = ("auto", "numpy", "onnx", "onnx-int8", "onnx-fp32")
_EXPECTED = {bool: "true or false", int: "a whole number", float: "a number", tuple: "a list of strings"}


def _to_bool(value: Any, default: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        if default is None and low in ("", "auto"):
            return None
    raise ValueError(value)


def _to_number(value: Any, default: int | float) -> int | float:
    if isinstance(value, bool):
        raise ValueError(value)  # true/false where a number is expected
    if isinstance(default, float):
        if isinstance(value, int | float | str):
            return float(value)
        raise TypeError(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        return int(value)
    if isinstance(value, int | str):
        return int(value)
    raise TypeError(value)


def _to_tuple(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(value)


def _coerce(value: Any, default: Any, where: str) -> Any:
    """Convert ``value`` to the type of ``default`` (strings from the environment included)."""
    try:
        if value is None:
            if default is None:
                return None
            raise TypeError(value)  # null from JSON settings: only "prefixes" may be unset
        if isinstance(default, bool) or default is None:
            return _to_bool(value, default)
        if isinstance(default, int | float):
            return _to_number(value, default)
        if isinstance(default, tuple):
            return _to_tuple(value)
        if isinstance(value, str):
            return value
        raise TypeError(value)
    except (TypeError, ValueError, OverflowError) as exc:
        kind = _EXPECTED.get(type(default), "a string") if default is not None else "true, false or auto"
        raise ConfigError(f"{where}: invalid value {_show(value)} (expected {kind})") from exc


def _show(value: Any) -> str:
    """A short repr of a config value for a one-line message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _check_range(section: str, key: str, value: Any, where: str) -> None:
    bounds = RANGES.get((section, key))
    if bounds is None or value is None:
        return
    lo, hi, lo_ok = bounds
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: {_show(value)} is not a finite number")
    if value > hi or value < lo or (value == lo and not lo_ok):
        low, high = (str(int(x)) if float(x).is_integer() else f"{x:g}" for x in (lo, hi))
        allowed = f"{low} to {high}" if lo_ok else f"more than {low}, at most {high}"
        raise ConfigError(f"{where}: {_show(value)} is out of range ({allowed})")


_KEY_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,63}")
# A Textual key name: modifiers, then a name (f10, question_mark, pagedown) or one printable character.
_KEY_NAME = re.compile(r"(?:(?:ctrl|shift|alt|meta|super|hyper)\+)*(?:[a-z][a-z0-9_]{1,31}|[^\s,])")


def _key_list(value: Any, where: str) -> str:
    """A ``[keys]`` value (a string of comma-separated keys, or a list of keys) checked and joined."""
    if isinstance(value, str):
        parts = [k.strip() for k in value.split(",")]
    elif isinstance(value, list) and all(isinstance(k, str) for k in value):
        parts = [k.strip() for k in value]
    else:
        raise ConfigError(
            f'{where}: invalid value {_show(value)} (expected a key like "f10" or "ctrl+x, f2")'
        )
    keys = [k if len(k) == 1 else k.lower() for k in parts]
    bad = next((k for k in keys if not _KEY_NAME.fullmatch(k)), None)
    if not keys or bad is not None:
        what = "no key" if not keys or bad == "" else f"{_show(bad)} is not a key name"
        raise ConfigError(f"{where}: {what} (key names look like f10, ctrl+x, question_mark, N)")
    return ",".join(keys)


def _apply_keys(current: KeySettings, table: dict[str, Any], source: str) -> KeySettings:
    """Overlay a ``[keys]`` table: each id's keys replace the ones set before. The dataclass's own shape
    (``{"bindings": [[id, keys], ...]}``, settings handed to a child process) reads back as well."""
    merged = current.as_dict()
    pairs = table.get("bindings")
    if isinstance(pairs, list | tuple) and all(isinstance(p, list | tuple) and len(p) == 2 for p in pairs):
        table = {**{str(k): v for k, v in pairs}, **{k: v for k, v in table.items() if k != "bindings"}}
    for bid, value in table.items():
        if not _KEY_ID.fullmatch(str(bid)):
            raise ConfigError(f"{source}: keys.{_show(bid)}: not a command id (like help or browse.mode)")
        merged[str(bid)] = _key_list(value, f"{source}: keys.{bid}")
    return KeySettings(tuple(merged.items()))


def apply_mapping(
    settings: Settings,
    data: dict[str, Any],
    source: str,
    workspace: bool = False,
    ignored: list[tuple[str, str, Any]] | None = None,
) -> Settings:
    """Overlay a parsed TOML mapping onto ``settings``; ConfigError names any unknown or bad entry.
    ``workspace``: the keys a workspace config may not set are skipped (and listed in ``ignored``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a table of sections, not {type(data).__name__}")
    sections = [f.name for f in fields(Settings)]
    for name, value in data.items():
        if name in sections:
            continue
        hint = _close_match(str(name), sections)
        did = f" (did you mean [{hint[0]}]?)" if hint else f" (sections: {', '.join(sections)})"
        if isinstance(value, dict):
            raise ConfigError(f"{source}: unknown section [{name}]{did}")
        raise ConfigError(f"{source}: unknown top-level key {str(name)!r}; settings belong in a section{did}")
    for section in fields(Settings):
        table = data.get(section.name)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{section.name}] must be a table")
        current = getattr(settings, section.name)
        if isinstance(current, KeySettings):
            if workspace:  # your keys are yours: a cloned repository does not remap them
                if ignored is not None:
                    ignored.extend(("keys", str(k), v) for k, v in table.items())
                continue
            settings = replace(settings, keys=_apply_keys(current, table, source))
            continue
        known = {f.name: f for f in fields(current)}
        changes: dict[str, Any] = {}
        for key, value in table.items():
            if key not in known:
                hint = _close_match(str(key), list(known))
                did = f" (did you mean {section.name}.{hint[0]}?)" if hint else ""
                raise ConfigError(f"{source}: unknown key {section.name}.{key}{did}")
            if workspace and (section.name, key) in _WORKSPACE_FORBIDDEN:
                if ignored is not None:
                    ignored.append((section.name, key, value))
                continue  # never honoured from inside the workspace
            where = f"{source}: {section.name}.{key}"
            changes[key] = _coerce(value, getattr(current, key), where)
            _check_range(section.name, key, changes[key], where)
        settings = replace(settings, **{section.name: replace(current, **changes)})
    return settings


def _close_match(word: str, choices: list[str]) -> list[str]:
    """The known name nearest to a misspelt one, if any (for the error message)."""
    import difflib  # only when a config has an unknown name

    return difflib.get_close_matches(word, choices, n=1)


def _read_toml(path: Path) -> dict[str, Any]:
    """Parse a config file; a missing file is empty, anything else that is not TOML is a ConfigError.

    The file is opened without blocking and must be a regular file of at most 1 MB: a workspace
    config comes with a cloned repository and could be a FIFO or a link to ``/dev/zero``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            os.set_blocking(fh.fileno(), True)
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KB; not a config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    import tomllib  # here, not at the top: most commands find no config file (10 ms of a one-shot)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Collect ``AIDE_<SECTION>_<KEY>`` variables into a TOML-shaped mapping."""
    environ = dict(os.environ) if environ is None else environ
    out: dict[str, dict[str, str]] = {}
    for section in fields(Settings):
        if section.name == "keys":
            continue  # a keymap belongs in a config file
        for f in fields(getattr(Settings(), section.name)):
            name = f"AIDE_{section.name}_{f.name}".upper()
            if name in environ:
                out.setdefault(section.name, {})[f.name] = environ[name]
    if "AIDE_ALLOW_REMOTE_EMBEDDER" in environ:
        out.setdefault("embedding", {})["allow_remote"] = environ["AIDE_ALLOW_REMOTE_EMBEDDER"]
    if "AIDE_EMBEDDER" in environ:
        out.setdefault("embedding", {})["backend"] = environ["AIDE_EMBEDDER"]
    return out


_WHY_IGNORED = {
    "embedding": "it could send your code to another machine",
    "store": "it could name a shared store and overwrite another workspace's index in it",
    "answer": "it could send your code to another machine",
    "search": "it could send your code to another machine",
    "keys": "your keys are your own",
}


def _ignored_note(source: Path, ignored: list[tuple[str, str, Any]]) -> str:
    """One line naming the workspace-config keys that were not honoured, and where to set them."""
    keys = ", ".join(f"{s}.{k}" for s, k, _ in ignored)
    why = "; ".join(dict.fromkeys(_WHY_IGNORED[s] for s, _, _ in ignored))
    return (
        f"{source}: ignored {keys}: a workspace's own config may not set these ({why}); "
        f"set them in {user_config_path()}, the environment (AIDE_<SECTION>_<KEY>) or a flag"
    )


def load_settings(
    root: Path | None,
    flags: dict[str, dict[str, Any]] | None = None,
    environ: dict[str, str] | None = None,
    user_config: Path | None = None,
    notes: list[str] | None = None,
) -> Settings:
    """Resolve settings for a workspace through every layer, lowest precedence first. ``notes`` gets a
    line for what the workspace config set but may not (ignored)."""
    settings = Settings()
    settings = apply_mapping(settings, _read_toml(user_config or user_config_path()), "user config")
    ignored: list[tuple[str, str, Any]] = []
    if root is not None:
        ws = workspace_config_path(root)
        settings = apply_mapping(settings, _read_toml(ws), str(ws), workspace=True, ignored=ignored)
    env = env_overrides(environ)
    settings = apply_mapping(settings, env, "environment")
    if flags:
        settings = apply_mapping(settings, flags, "command line")
    ws_uri = next((v for s, k, v in ignored if (s, k) == ("store", "uri") and isinstance(v, str)), "")
    if is_network_uri(ws_uri) and not settings.store.uri:  # it would have been used: say so loudly
        raise ConfigError(
            f"{workspace_config_path(root) if root is not None else 'workspace config'}: store.uri "
            f"{_show(ws_uri)} is a network address, which a workspace config may not choose (your code "
            "would be sent there); set it in the user config, AIDE_STORE_URI or --store-uri"
        )
    if ignored and notes is not None and root is not None:
        notes.append(_ignored_note(workspace_config_path(root), ignored))
    _check_store(settings)
    if settings.embedding.backend not in EMBEDDERS:
        raise ConfigError(f"unknown embedder {settings.embedding.backend!r} ({', '.join(EMBEDDERS)})")
    if settings.embedding.runtime not in EMBEDDING_RUNTIMES:
        raise ConfigError(
            f"unknown embedding runtime {settings.embedding.runtime!r} ({', '.join(EMBEDDING_RUNTIMES)})"
        )
    if settings.search.best_piece not in ("piece", "dense"):
        raise ConfigError(f"unknown search.best_piece {settings.search.best_piece!r} (piece, dense)")
    if settings.search.mode not in MODES:
        raise ConfigError(f"unknown search mode {settings.search.mode!r} (hybrid, bm25, dense)")
    choices = (("search.rerank", settings.search.rerank, ("off", "http")),
               ("answer.backend", settings.answer.backend, ("openai", "ollama")))  # fmt: skip
    for key, value, allowed in choices:
        if value not in allowed:
            raise ConfigError(f"unknown {key} {value!r} ({', '.join(allowed)})")
    return settings
