"""Headers are stored without the file and symbol lines their rows hold, and read back exactly."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from aide_tui.core.bm25 import chunk_terms
from aide_tui.core.chunk.chunker import chunk_file_multi
from aide_tui.core.chunk.pieces import dense_pieces
from aide_tui.core.model import Chunk
from aide_tui.core.store.headers import packed_header, unpacked_header
from aide_tui.core.store.part import Part
from aide_tui.core.store.segment_write import SegmentData, sorted_docs, write_segment
from aide_tui.core.store.terms import sort_terms
from aide_tui.core.tokens import term_counts

LONG = "very_long_name_" * 20  # longer than the header's 160-character symbol line


@pytest.mark.parametrize(
    ("header", "path", "symbol"),
    [
        ("file: a/b.py\nsymbol: f\ndef f():", "a/b.py", "f"),
        ("file: a/b.py\nsymbol: f", "a/b.py", "f"),
        ("file: a/b.py", "a/b.py", None),
        ("file: a/b.py\nclass C:", "a/b.py", "C.g"),  # the symbol line is not the row's symbol
        (f"file: a/b.py\nsymbol: {LONG[:157]}...\nclass C:", "a/b.py", LONG),
        ("file: a/b.pyc\nsymbol: f", "a/b.py", "f"),  # a longer path that starts with the row's
        ("something else entirely", "a/b.py", "f"),
        ("", "a/b.py", None),
    ],
)
def test_a_packed_header_unpacks_to_itself(header: str, path: str, symbol: str | None) -> None:
    stored = packed_header(header, path, symbol)
    assert unpacked_header(stored, path, symbol) == header
    if header.startswith("file: " + path):
        assert isinstance(stored, list) and path not in str(stored[1])


@pytest.mark.parametrize("stored", [[3, "x"], [2, "x"], [1], [1, 2], {"a": 1}, 7, None])
def test_a_stored_header_no_writer_makes_is_refused(stored: object) -> None:
    assert unpacked_header(stored, "a/b.py", None) is None


def _source() -> str:
    funcs = [
        f"def function_{i}(argument):\n" + "\n".join(f"    v{j} = call_{j}(argument)" for j in range(40))
        for i in range(4)
    ]
    methods = "\n".join(f"    def {LONG}{i}(self):\n        return {i}\n" for i in range(3))
    return "import os\n\n\n" + "\n\n\n".join(funcs) + f"\n\n\nclass Holder:\n{methods}"


def test_a_written_segment_reads_back_every_header(tmp_path: Path) -> None:
    path = "pkg/deep/folder/module_with_a_long_name.py"
    chunks, small = chunk_file_multi(path, _source(), (1500, 300))
    pairs = dense_pieces(chunks, small)
    pieces = [p for _, p in pairs]
    # a piece whose header is its own and does not start with the file line is kept as written
    pieces[-1] = replace(pieces[-1], header="a header written some other way")
    owners = np.array([o for o, _ in pairs], np.int64)
    counts = [chunk_terms(c, Counter(term_counts(c.text))) for c in chunks]
    pcounts = [chunk_terms(p, Counter(term_counts(p.text))) for p in pieces]
    terms = sort_terms(t for c in counts + pcounts for t in c)
    _, docs = sorted_docs(counts, terms)
    _, pdocs = sorted_docs(pcounts, terms)
    n = len(pieces)
    data = SegmentData(chunks, pieces, owners, terms, docs, pdocs, np.zeros((n, 0), np.float32),
                       np.zeros(n, bool))  # fmt: skip
    assert any(p.symbol and len(p.symbol) > 160 for p in pieces)
    assert any(p.header != chunks[o].header for o, p in zip(owners, pieces, strict=True))
    part = Part(tmp_path, write_segment(tmp_path, data))
    got_chunks = [part.chunk(i) for i in range(part.n_chunks)]

    def row(c: Chunk) -> tuple[str, str | None, str]:
        return (c.header, c.symbol, c.text)

    assert [row(c) for c in got_chunks] == [row(c) for c in chunks]
    assert [(p.header, p.symbol) for _, p in part.pieces()] == [(p.header, p.symbol) for p in pieces]
    # the path is written once (paths.json), not once per row
    meta = (tmp_path / entry_dir(tmp_path) / "c_meta.bin").read_bytes()
    meta += (tmp_path / entry_dir(tmp_path) / "p_meta.bin").read_bytes()
    assert path.encode() not in meta


def entry_dir(root: Path) -> str:
    """The one segment folder ``write_segment`` made under ``root``."""
    (folder,) = [p.name for p in root.iterdir() if p.is_dir()]
    return folder
