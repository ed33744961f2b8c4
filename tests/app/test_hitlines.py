"""The best line of a hit (core/hitlines.py): where the preview lands and what vimgrep prints."""

from __future__ import annotations

from aide_tui.core.hitlines import best_line, term_spans, vimgrep_line
from aide_tui.core.search import Hit
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
