"""A batch's BM25 rows counted with numpy (index/term_rows.py) hold exactly what ``chunk_terms`` gives
each chunk and piece, one document at a time (the reference the Milvus writer still uses)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from aide_tui.core.bm25 import DocTerms, chunk_terms
from aide_tui.core.index.reading import BatchNotes, read_batch
from aide_tui.core.index.term_rows import batch_rows
from aide_tui.core.index.writer import Delta
from aide_tui.core.store.terms import sort_terms

FIXTURES = Path(__file__).parent / "fixtures" / "chunk"


def _delta(root: Path) -> Delta:
    from aide_tui.core.config import load_settings
    from aide_tui.core.index.scan import Scanner

    settings = load_settings(root)
    entries = Scanner.from_settings(root, settings).scan().files
    s = settings.index
    return read_batch(iter(entries), {}, s.max_file_kb * 1024, s.chunk_budget, True, BatchNotes())


def _as_dicts(docs: DocTerms, terms: list[str]) -> list[dict[str, float]]:
    out = []
    for i in range(docs.n_docs):
        lo, hi = int(docs.doc_ptr[i]), int(docs.doc_ptr[i + 1])
        out.append({terms[t]: float(w) for t, w in zip(docs.term_ids[lo:hi], docs.tfs[lo:hi], strict=True)})
    return out


def test_rows_equal_chunk_terms_per_document(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(FIXTURES, ws / "samples")
    # a path that repeats its words, a name that is a stopword's neighbour, other scripts, digits
    (ws / "parse" / "parse").mkdir(parents=True)
    (ws / "parse" / "parse" / "parse.py").write_text(
        "def parse_header(größe, 数据):\n    return parseHeader(größe) + 3abc.def_2 + HTTPTransport\n\n\n"
        "class Parser:\n    def parse(self):\n        return self.parse_header(1, 2)\n"
    )
    (ws / "empty.py").write_text("\n\n")
    delta = _delta(ws)
    assert len(delta.pieces) > len(delta.chunks) > 20

    terms, cdocs, pdocs = batch_rows(delta.chunks, delta.pieces)

    bodies_c, bodies_p = delta.bodies()
    want_c = [chunk_terms(c, b) for c, b in zip(delta.chunks, bodies_c, strict=True)]
    want_p = [chunk_terms(p, b) for (_, p), b in zip(delta.pieces, bodies_p, strict=True)]
    assert terms == sort_terms({t for d in [*want_c, *want_p] for t in d})
    assert _as_dicts(cdocs, terms) == [{t: float(w) for t, w in d.items()} for d in want_c]
    assert _as_dicts(pdocs, terms) == [{t: float(w) for t, w in d.items()} for d in want_p]
    assert cdocs.term_ids.dtype == np.int32 and cdocs.tfs.dtype == np.float32
    # the path's repeated word counts once per occurrence in the path field
    row = next(i for i, c in enumerate(delta.chunks) if c.path == "parse/parse/parse.py")
    assert _as_dicts(cdocs, terms)[row]["pars"] == want_c[row]["pars"] >= 6


def test_an_empty_batch_has_no_terms() -> None:
    terms, cdocs, pdocs = batch_rows([], [])
    assert terms == [] and cdocs.n_docs == 0 and pdocs.n_docs == 0
