"""Settings validation: ranges, types, unknown sections, unreadable files; the CLI's exit 2."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aide_tui.core.config import Settings, apply_mapping, load_settings
from aide_tui.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

BAD = [
    ("search", "rrf_k", -1),
    ("search", "rrf_k", -5),
    ("search", "top_n", 0),
    ("search", "per_file_cap", -1),
    ("search", "bm25_weight", -0.5),
    ("search", "dense_weight", float("inf")),
    ("search", "test_weight", float("nan")),
    ("embedding", "max_doc_tokens", 0),
    ("embedding", "max_doc_tokens", 2),
    ("embedding", "max_doc_tokens", 513),
    ("embedding", "workers", -1),
    ("embedding", "workers", 65),
    ("embedding", "timeout", 0),
    ("embedding", "timeout", float("nan")),
    ("embedding", "timeout", float("inf")),
    ("index", "max_file_kb", 0),
    ("index", "max_file_kb", 10**20),
    ("index", "lock_timeout", float("nan")),
    ("index", "lock_timeout", -1.0),
    ("index", "lock_timeout", float("inf")),
    ("index", "chunk_budget", 0),
    ("index", "max_segments", 0),
    ("index", "chunk_budget", 10**9),
]


@pytest.mark.parametrize(("section", "key", "value"), BAD)
def test_numeric_settings_out_of_range_are_config_errors(
    tmp_path: Path, section: str, key: str, value: object
) -> None:
    with pytest.raises(ConfigError, match=rf"command line: {section}\.{key}: .*(out of range|not a finite)"):
        load_settings(tmp_path, {section: {key: value}})
    # the same check for the environment (strings) and a config file
    env = {f"AIDE_{section}_{key}".upper(): str(value)}
    with pytest.raises(ConfigError, match=rf"environment: {section}\.{key}"):
        load_settings(tmp_path, environ=env)
    cfg = tmp_path / "user.toml"
    text = {float("nan"): "nan", float("inf"): "inf"}.get(value, repr(value))  # type: ignore[call-overload]
    cfg.write_text(f"[{section}]\n{key} = {text}\n")
    with pytest.raises(ConfigError, match=rf"user config: {section}\.{key}"):
        load_settings(tmp_path, environ={}, user_config=cfg)


def test_bounds_and_defaults_are_accepted(tmp_path: Path) -> None:
    s = load_settings(
        tmp_path,
        {
            "search": {"rrf_k": 0, "top_n": 1, "bm25_weight": 0, "per_file_cap": 0},
            "embedding": {"max_doc_tokens": 3, "workers": 64, "timeout": 0.5},
            "index": {"max_file_kb": 1_048_576, "lock_timeout": 0, "chunk_budget": 100},
        },
        environ={},
    )
    assert s.search.rrf_k == 0 and s.embedding.max_doc_tokens == 3 and s.index.max_file_kb == 1_048_576
    assert apply_mapping(Settings(), {}, "x") == Settings() == load_settings(tmp_path, environ={})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"serach": {"mode": "bm25"}}, r"unknown section \[serach\] \(did you mean \[search\]\?\)"),
        ({"rrf_k": 5}, r"unknown top-level key 'rrf_k'"),
        ({"search": {"rrf": 5}}, r"unknown key search\.rrf \(did you mean search\.rrf_k\?\)"),
        ({"search": {"rrf_k": "many"}}, r"search\.rrf_k: invalid value 'many' \(expected a whole number\)"),
        ({"search": {"rrf_k": 2.5}}, r"search\.rrf_k: invalid value 2\.5"),
        ({"search": {"rrf_k": True}}, r"search\.rrf_k: invalid value True"),
        ({"index": {"include_sensitive": 3}}, r"invalid value 3 \(expected true or false\)"),
        ({"index": {"exclude": [1, 2]}}, r"expected a list of strings"),
        ({"embedding": {"model": ["a"]}}, r"embedding\.model: invalid value \['a'\] \(expected a string\)"),
        ({"search": ["mode"]}, r"\[search\] must be a table"),
    ],
)
def test_unknown_sections_keys_and_wrong_types(tmp_path: Path, data: dict, message: str) -> None:
    cfg = tmp_path / "config.toml"
    import tomllib

    lines = []
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"[{k}]")
            lines.extend(f"{kk} = {_toml(vv)}" for kk, vv in v.items())
        else:
            lines.insert(0, f"{k} = {_toml(v)}")
    cfg.write_text("\n".join(lines) + "\n")
    assert tomllib.loads(cfg.read_text()) == data
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path, environ={}, user_config=cfg)


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return repr(v)


def test_binary_huge_fifo_and_folder_configs_are_config_errors(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".aide").mkdir(parents=True)
    cfg = ws / ".aide" / "config.toml"
    cfg.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe[search]\n")
    with pytest.raises(ConfigError, match=r"config\.toml: not UTF-8 text"):
        load_settings(ws, environ={})
    cfg.write_bytes(b"# " + b"x" * (2 << 20))
    with pytest.raises(ConfigError, match="larger than 1024 KB"):
        load_settings(ws, environ={})
    cfg.unlink()
    cfg.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_settings(ws, environ={})
    cfg.unlink()
    cfg.mkdir()
    with pytest.raises(ConfigError, match="config.toml"):
        load_settings(ws, environ={})
    cfg.rmdir()
    os.mkfifo(cfg)  # open() without O_NONBLOCK would wait for a writer forever
    box: dict[str, BaseException] = {}

    def load() -> None:
        try:
            load_settings(ws, environ={})
        except BaseException as exc:  # noqa: BLE001
            box["exc"] = exc

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():  # unblock the old code so the test run can go on
        os.close(os.open(cfg, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)
        pytest.fail("loading a FIFO as config.toml hung")
    assert isinstance(box.get("exc"), ConfigError) and "not a regular file" in str(box["exc"])


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "aide_tui", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "--no-update", "--rrf-k", "-1", "q"], "search.rrf_k: -1 is out of range"),
        (["index", "--max-file-kb", str(10**20)], "index.max_file_kb: 100000000000000000000 is out of range"),
        (["index", "--lock-timeout", "nan"], "index.lock_timeout: nan is not a finite number"),
        (["status", "--lock-timeout", "-3"], "index.lock_timeout: -3.0 is out of range"),
    ],
)
def test_cli_rejects_bad_flags_with_exit_2_and_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def a():\n    pass\n")
    subprocess.run(
        [sys.executable, "-m", "aide_tui", "index", str(ws), "--embedder", "none"],
        env={**os.environ, "PYTHONPATH": str(REPO)}, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    out = _cli(*args, "--embedder", "none", cwd=ws)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("aide-tui: config error: command line: ")
    assert message in out.stderr


def test_cli_config_file_errors_exit_2(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".aide").mkdir(parents=True)
    for content, message in [
        (b"[serach]\nmode = 'bm25'\n", "unknown section [serach] (did you mean [search]?)"),
        (b"\xff\xfe\x00binary", "not UTF-8 text"),
        (b"[search]\nrrf_k = -1\n", "search.rrf_k: -1 is out of range"),
    ]:
        (ws / ".aide" / "config.toml").write_bytes(content)
        out = _cli("status", str(ws), cwd=ws)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith("aide-tui: config error: ") and message in out.stderr


def test_null_from_json_settings_is_rejected_except_for_prefixes() -> None:
    """The TUI hands resolved settings to its indexer as JSON, where null exists (found by test_fuzz)."""
    with pytest.raises(ConfigError, match=r"settings: embedding\.max_doc_tokens: invalid value None"):
        apply_mapping(Settings(), {"embedding": {"max_doc_tokens": None}}, "settings")
    assert apply_mapping(Settings(), {"embedding": {"prefixes": None}}, "settings").embedding.prefixes is None


# -- [keys]: the app's keymap ------------------------------------------------------------------------


def test_keys_table_is_read_and_its_key_names_checked(tmp_path: Path) -> None:
    config = tmp_path / "user.toml"
    config.write_text('[keys]\nhelp = "F10"\n"browse.mode" = ["M", "ctrl+x"]\n')
    settings = load_settings(None, user_config=config)
    assert settings.keys.as_dict() == {"help": "f10", "browse.mode": "M,ctrl+x"}
    later = load_settings(None, {"keys": {"help": "f9"}}, user_config=config)  # later layers win, per id
    assert later.keys.as_dict() == {"help": "f9", "browse.mode": "M,ctrl+x"}
    bad = {
        "": "no key",
        "f1,,f2": "no key",
        "ctrl + x": "'ctrl + x' is not a key name",
        "ctrl+x y": "is not a key name",
    }
    for value, message in bad.items():
        with pytest.raises(ConfigError, match=re.escape(message)):
            apply_mapping(Settings(), {"keys": {"help": value}}, "user config")
    with pytest.raises(ConfigError, match=r"keys.help: invalid value 3"):
        apply_mapping(Settings(), {"keys": {"help": 3}}, "user config")
    with pytest.raises(ConfigError, match="not a command id"):
        apply_mapping(Settings(), {"keys": {"1help": "f1"}}, "user config")


def test_keys_survive_the_trip_to_a_child_process_and_the_environment_does_not_set_them() -> None:
    import json
    from dataclasses import asdict

    settings = apply_mapping(Settings(), {"keys": {"help": "f10"}}, "user config")
    again = apply_mapping(Settings(), json.loads(json.dumps(asdict(settings))), "settings")
    assert again.keys == settings.keys
    assert (
        load_settings(None, environ={"AIDE_KEYS_HELP": "f10", "AIDE_KEYS_BINDINGS": "x"}).keys.as_dict() == {}
    )
