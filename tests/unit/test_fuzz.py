"""Property tests for the parsers that take outside input: ignore files, config, embedding server
replies, query syntax, file bytes and secret masking. Random input must give a result or the
module's own error, never anything else. Seeded through hypothesis' database-free profile."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback_server import LoopbackServer

from aide_tui.core.config import Settings, apply_mapping, load_settings
from aide_tui.core.embed.http import OllamaEmbedder, OpenAIEmbedder
from aide_tui.core.errors import ConfigError, EmbedderError
from aide_tui.core.index.scan import Scanner, decode_text
from aide_tui.core.search.filters import parse_query
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.secrets import MASK, mask_secrets

FAST = settings(
    max_examples=120,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run (and in CI)
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# gitignore-ish characters, so most lines are patterns and many are subtly broken ones
IGNORE_CHARS = st.sampled_from(list("ab*?[]!\\/-z^.# \t{}") + ["**", "[z-a]", "[!", "\\", "\x00", "é"])
IGNORE_LINE = st.one_of(st.lists(IGNORE_CHARS, max_size=12).map("".join), st.text(max_size=20))


@settings(FAST, max_examples=60)
@given(gitignore=st.lists(IGNORE_LINE, max_size=12), aideignore=st.lists(IGNORE_LINE, max_size=6),
       exclude=st.lists(IGNORE_LINE, max_size=4))  # fmt: skip
def test_ignore_files_never_break_the_scan(
    gitignore: list[str], aideignore: list[str], exclude: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sub").mkdir()
        for rel in ("a.py", "b.log", "sub/c.py", "sub/d.txt"):
            (root / rel).write_text("x = 1\n")
        (root / ".gitignore").write_bytes("\n".join(gitignore).encode("utf-8", "surrogateescape"))
        (root / "sub" / ".aideignore").write_bytes("\n".join(aideignore).encode("utf-8", "surrogateescape"))
        scanner = Scanner(root, extra_excludes=tuple(exclude))
        res = scanner.scan()
        assert {f.rel for f in res.files} <= {
            ".gitignore",
            "a.py",
            "b.log",
            "sub/c.py",
            "sub/d.txt",
            "sub/.aideignore",
        }
        assert all(":" in w for w in res.warnings)
        for rel in ("a.py", "sub/c.py", "sub", "sub/x/y.py"):
            scanner.is_ignored(rel, is_dir=rel == "sub")


SECTIONS = ["index", "embedding", "search", "serach", "x"]
FIELDS = {name: list(vars(getattr(Settings(), name))) for name in ("index", "embedding", "search")}
KEYS = [k for keys in FIELDS.values() for k in keys]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.one_of(st.text(max_size=5), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)  # fmt: skip
# mostly well-shaped mappings (real sections, their own keys) so the values get checked
WELL_SHAPED = st.fixed_dictionaries(
    {},
    optional={
        name: st.dictionaries(st.sampled_from(keys), VALUES, max_size=4) for name, keys in FIELDS.items()
    },
)
MAPPING = st.one_of(
    WELL_SHAPED,
    WELL_SHAPED,
    st.dictionaries(
        st.one_of(st.sampled_from(SECTIONS), st.text(max_size=6)),
        st.one_of(
            st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), VALUES, max_size=3), VALUES
        ),
        max_size=3,
    ),
)


@FAST
@given(data=MAPPING)
def test_config_mappings_give_settings_or_config_error(data: dict[str, Any]) -> None:
    try:
        s = apply_mapping(Settings(), data, "fuzz")
    except ConfigError as exc:
        assert str(exc).startswith("fuzz: ") and "\n" not in str(exc)
        return
    assert isinstance(s, Settings)
    assert set(data) <= {"index", "embedding", "search"}  # a misspelt section is an error, not ignored
    for section in (s.index, s.embedding, s.search):
        for name, value in vars(section).items():
            if isinstance(value, float):
                assert math.isfinite(value) and value >= 0, name
            elif isinstance(value, int) and not isinstance(value, bool):
                assert 0 <= value <= 2**20, name
    assert s.search.top_n >= 1 and s.embedding.max_doc_tokens >= 3 and s.embedding.timeout > 0


@FAST
@given(raw=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)),
       env=st.dictionaries(st.sampled_from([f"AIDE_{s}_{k}".upper() for s in SECTIONS[:3] for k in KEYS[:8]]),
                           st.text(max_size=8), max_size=3))  # fmt: skip
def test_config_files_and_environment_give_settings_or_config_error(raw: bytes, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.toml"
        cfg.write_bytes(raw)
        try:
            assert isinstance(load_settings(None, environ=env, user_config=cfg), Settings)
        except ConfigError as exc:
            assert "\n" not in str(exc).strip()


FLOATS = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(-(2**80), 2**80))
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), FLOATS, st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
VECTOR = st.lists(st.one_of(FLOATS, st.just(1e39), st.just(0.0), st.text(max_size=2)), min_size=0, max_size=5)
OPENAI_REPLY = st.fixed_dictionaries(
    {"data": st.lists(st.fixed_dictionaries({"index": st.integers(-1, 3), "embedding": VECTOR}), max_size=3)}
)
OLLAMA_REPLY = st.fixed_dictionaries({"embeddings": st.lists(VECTOR, max_size=3)})
# well-formed replies for both inputs with one dimension and odd values: the vector checks are reached
ODD = st.one_of(FLOATS, st.sampled_from([1e39, -1e39, 0.0, -0.0, 1e-50, 3e38]))
PAIR = st.integers(1, 4).flatmap(
    lambda d: st.lists(st.lists(ODD, min_size=d, max_size=d), min_size=2, max_size=2)
)
GOOD_SHAPE = st.one_of(
    PAIR.map(lambda vs: {"data": [{"index": i, "embedding": v} for i, v in enumerate(vs)]}),
    PAIR.map(lambda vs: {"embeddings": vs}),
)


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackServer(dim=4) as srv:
        yield srv


@pytest.fixture(scope="module")
def client() -> Any:
    """One HTTP client for every example (a new one per embedder costs an SSL context each)."""
    import httpx

    with httpx.Client(trust_env=False) as c:
        yield c


REPLY = st.one_of(GOOD_SHAPE, GOOD_SHAPE, JSON, OPENAI_REPLY, OLLAMA_REPLY, st.binary(max_size=40))


@FAST
@given(status=st.sampled_from([200, 200, 200, 404, 500]), body=REPLY, ollama=st.booleans())
def test_embedding_server_replies_give_vectors_or_embedder_error(
    server: LoopbackServer, client: Any, status: int, body: Any, ollama: bool
) -> None:
    payload = body if isinstance(body, bytes) else json.dumps(body, allow_nan=True)
    server.handler = lambda path, req: (status, payload)
    if isinstance(body, dict) and ("data" in body or "embeddings" in body):
        ollama = "embeddings" in body  # the shape its backend expects
    cls = OllamaEmbedder if ollama else OpenAIEmbedder
    emb = cls(server.url, "m", retries=0, cooldown=0, timeout=5, client=client)
    try:
        out = emb.embed(["a", "b"], kind="query")
    except EmbedderError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert out.dtype == np.float32 and out.shape[0] == 2 and np.isfinite(out).all()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    from conftest import write_workspace

    from aide_tui.core.index.indexer import Indexer

    root = write_workspace(tmp_path_factory.mktemp("fuzz") / "ws")
    settings_ = load_settings(root, {"embedding": {"backend": "none"}}, environ={})
    Indexer(root, settings_).run()
    s = Searcher(root, settings_)
    s.refresh()
    return s


QUERY_PARTS = ["path:", "lang:", '"', "*", "src/", "py", "parse_header", " ", "(", "\\", "\x00", "ü", "**/",
               "[", "-", "path:**", "lang:xyz"]  # fmt: skip
QUERY = st.one_of(st.text(max_size=60), st.lists(st.sampled_from(QUERY_PARTS), max_size=10).map("".join))


@FAST
@given(query=QUERY)
def test_query_syntax_never_raises(searcher: Searcher, query: str) -> None:
    parsed = parse_query(query)
    assert isinstance(parsed.text, str)
    resp = searcher.search(query, limit=5)
    assert len(resp.results) <= 5


BOMS = [b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"\xef\xbb\xbf"]
WITH_BOM = st.sampled_from(BOMS).flatmap(lambda bom: st.binary(max_size=32).map(lambda b: bom + b))


@FAST
@given(raw=st.one_of(st.binary(max_size=64), WITH_BOM))
def test_file_bytes_decode_to_text_or_a_reason(raw: bytes) -> None:
    text, why = decode_text(raw)
    assert (text is None) != (why is None)


LINE = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(["password", "token", "key", "=", ": ", '"', "'", "sk_live_", "AKIA", "://", "@",
                              "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "x" * 20,
                              "Zm9vYmFy1234", "\t", "export ", "auth", "-data"]), max_size=8).map("".join),
)  # fmt: skip


@FAST
@given(lines=st.lists(LINE, max_size=8))
def test_masking_keeps_lines_and_is_stable(lines: list[str]) -> None:
    text = "\n".join(lines)
    masked = mask_secrets(text)
    assert masked.count("\n") == text.count("\n")
    again = mask_secrets(masked)
    assert again.count("\n") == text.count("\n") and again.count(MASK) >= masked.count(MASK)
