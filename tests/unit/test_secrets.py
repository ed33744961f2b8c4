"""Credentials never reach the index: masking rules, files skipped by name, and every byte of .aide/."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from loopback_server import LoopbackServer
from secret_cases import NOT_SECRETS, SECRET_FILES, SECRETS

from aide_tui.core.config import load_settings
from aide_tui.core.embed.http import OpenAIEmbedder
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.index.scan import Scanner
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.secrets import MASK, mask_secrets


@pytest.mark.parametrize(("case", "text", "secret"), SECRETS, ids=[c[0] for c in SECRETS])
def test_secret_is_masked_and_line_count_kept(case: str, text: str, secret: str) -> None:
    masked = mask_secrets(text)
    assert secret not in masked, masked
    assert MASK in masked and masked.count("\n") == text.count("\n")
    assert mask_secrets(masked) == masked  # masking is stable


@pytest.mark.parametrize("line", NOT_SECRETS)
def test_ordinary_code_is_left_alone(line: str) -> None:
    assert mask_secrets(line) == line


def test_secret_files_are_skipped_by_name_or_path(tmp_path: Path) -> None:
    for rel, body in SECRET_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    (tmp_path / "src" / "credentials").mkdir(parents=True)  # a package named like a secret file
    (tmp_path / "src" / "credentials" / "provider.py").write_text("def provide():\n    pass\n")
    (tmp_path / "kube" / "config").parent.mkdir()
    (tmp_path / "kube" / "config").write_text("not a kubeconfig folder\n")  # only .kube/config is
    res = Scanner(tmp_path).scan()
    assert [f.rel for f in res.files] == ["kube/config", "src/credentials/provider.py"]
    for rel, _ in SECRET_FILES:
        assert res.skipped[rel].startswith("sensitive file"), rel
    assert "production.env" in [f.rel for f in Scanner(tmp_path, include_sensitive=True).scan().files]


def test_private_key_blocks_end_at_their_marker() -> None:
    text = (
        "before = 1\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oLc\n"
        "-----END EC PRIVATE KEY-----\ndef after():\n    return 2\n"
    )
    assert mask_secrets(text) == (
        "before = 1\n-----BEGIN EC PRIVATE KEY-----\n«masked»\n-----END EC PRIVATE KEY-----\n"
        "def after():\n    return 2\n"
    )
    # code that only names the header keeps everything after it
    code = 'HEADER = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n\ndef parse(data):\n    return data\n'
    assert mask_secrets(code) == code
    # a truncated key: its base64 lines are masked, the code after it is kept
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPH\nAAAAB3NzaC1yc2EAAAADAQAB\n\nx = 1\n"
    assert mask_secrets(cut) == "-----BEGIN RSA PRIVATE KEY-----\n«masked»\n«masked»\n\nx = 1\n"


def _secret_pieces(text: str, secret: str) -> set[str]:
    """The secret and its alphanumeric runs of 6+ characters that the masked text does not show."""
    shown = mask_secrets(text).lower()
    runs = {r.lower() for r in re.findall(r"[A-Za-z0-9]{6,}", secret)}
    return {secret.lower()} | {r for r in runs if r not in shown}


def test_no_secret_reaches_any_file_of_the_index(tmp_path: Path) -> None:
    """Index a tree holding every case (BM25 and vectors from a loopback server), then read every
    byte under .aide/: neither a secret nor any distinctive part of one is there."""
    root = tmp_path / "ws"
    for n, (case, text, _) in enumerate(SECRETS):
        p = root / "cases" / f"case_{n:02}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {case}\ndef visible_marker_{n}():\n    pass\n\n{text}")
    for rel, body in SECRET_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    with LoopbackServer(dim=8) as srv:
        settings = load_settings(root, {"embedding": {"backend": "openai", "url": srv.url}})
        rep = Indexer(root, settings, OpenAIEmbedder(srv.url)).run()
        assert not rep.degraded and rep.files == len(SECRETS) and rep.embedded == rep.chunks
        # what the embedding server was sent is masked too
        sent = "\n".join(t for batch in srv.inputs for t in batch)
    blob = b""
    for dirpath, _, names in os.walk(root / ".aide"):
        for name in names:
            blob += Path(dirpath, name).read_bytes()
    index_text = blob.decode("utf-8", errors="replace").lower()
    assert "visible_marker_7" in index_text  # positive control: the index is readable this way
    leaks = []
    for case, text, secret in SECRETS:
        for piece in _secret_pieces(text, secret):
            if piece in index_text or piece in sent.lower():
                leaks.append((case, piece))
    for rel, body in SECRET_FILES:
        value = re.findall(r"[A-Za-z0-9]{10,}", body)[-1].lower()
        if value in index_text:
            leaks.append((rel, value))
    assert leaks == []
    s = Searcher(root, settings)
    s.refresh()
    assert s.search("visible_marker_3").results[0].path == "cases/case_03.py"
