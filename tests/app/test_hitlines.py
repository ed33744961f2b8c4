"""The best line of a hit (core/hitlines.py): where the preview lands and what vimgrep prints."""

from __future__ import annotations

from pathlib import Path

from aide_tui.core.search.hitlines import best_line, term_spans, vimgrep_line
from aide_tui.core.search.response import Hit
from aide_tui.core.tokens import tokenize

CHUNK = '''def render(self, options):
    """Render the object."""
    lines = self.lines
    for line in lines:
        yield render_markup(line, style=self.style)
    return None
'''


def test_the_line_with_the_most_and_rarest_terms_wins() -> None:
    best = best_line(CHUNK, 1396, tokenize("render markup"), "Console.render")
    assert best.line == 1400 and best.column == len("        yield ") + 1
    assert set(best.matched) == {"render", "markup"}


def test_terms_match_parts_of_identifiers_and_folded_forms() -> None:
    spans = term_spans("x = parse_header(renderPage, parsing)", tokenize("parse page"))
    assert [t for _, _, t in spans] == ["pars", "page", "pars"] or [t for _, _, t in spans] == [
        "parse",
        "page",
        "parse",
    ]
    assert term_spans("x", []) == []


def test_without_matches_the_symbol_line_then_the_first_code_line() -> None:
    text = "\n@decorator\nclass Pool:\n    pass\n"
    assert best_line(text, 10, [], "class Pool").line == 12
    assert best_line(text, 10, []).line == 11


def test_vimgrep_line_points_at_the_best_line() -> None:
    hit = Hit("src/c.py", 1396, 1401, 0.5, "render", "python", {}, tokenize("markup"), CHUNK)
    assert vimgrep_line("src/c.py", hit) == "src/c.py:1400:22:yield render_markup(line, style=self.style)"


def test_a_hit_found_by_meaning_lands_in_its_best_dense_piece(workspace: Path) -> None:
    """No query term in the chunk: the line comes from the piece whose vector ranked it."""
    from loopback_server import LoopbackServer

    from aide_tui.core.config import load_settings
    from aide_tui.core.embed.http import OpenAIEmbedder
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.search.hitlines import hit_best_line
    from aide_tui.core.search.searcher import Searcher

    settings = load_settings(workspace, {"embedding": {"backend": "openai"}, "index": {"chunk_budget": 4000}})
    with LoopbackServer(dim=16) as srv:
        Indexer(workspace, settings, OpenAIEmbedder(srv.url)).run()
        s = Searcher(workspace, settings, OpenAIEmbedder(srv.url))
        hits = [h for h in s.search("zzqq", mode="dense").results if h.path == "src/httpclient/client.py"]
    assert hits and hits[0].best_piece is not None
    lo, hi = hits[0].best_piece
    assert hits[0].start_line <= lo <= hi <= hits[0].end_line
    assert lo <= hit_best_line(hits[0]).line <= hi
    assert (lo, hi) != (hits[0].start_line, hits[0].end_line)  # a piece, not the whole chunk


def test_the_best_line_stays_inside_the_piece_that_ranked_the_hit() -> None:
    """A chunk packs several functions; the query's words recur in a neighbour (here with the rarer
    word too), but the hit was ranked by the piece holding ``keys``: its line is the best line."""
    from aide_tui.core.search.hitlines import hit_best_line

    text = (
        "def items(self):\n"
        '    """Return all the (key, value) pairs: the keys first."""\n'
        "    return [(k, self._dict[k]) for k in self._dict]\n"
        "\n"
        "def keys(self):\n"
        "    return list(self._dict)\n"
    )
    terms = tokenize("return all the keys")
    hit = Hit("p.py", 10, 15, 0.5, "def items", "python", {}, terms, text, best_piece=(14, 15))
    assert hit_best_line(hit).line == 14
    # without a known piece the whole chunk's best line is kept (the docstring holding every word)
    assert hit_best_line(Hit("p.py", 10, 15, 0.5, "def items", "python", {}, terms, text)).line == 11
    # a piece without any query word: a matching line elsewhere in the chunk still wins
    assert hit_best_line(Hit("p.py", 10, 15, 0.5, "def items", "python", {}, tokenize("pairs"), text,
                             best_piece=(14, 15))).line == 11  # fmt: skip
