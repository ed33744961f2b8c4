"""Issue-like queries, filters that narrow before ranking, the file finder and deterministic ties.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.embed.base import l2_normalise
from aide_tui.core.errors import QueryError
from aide_tui.core.filekinds import (
    CHANGELOG,
    CI,
    DOCS,
    EXAMPLE,
    IMAGE,
    SOURCE,
    TRANSLATION,
    is_tooling,
    kind_of,
    prior,
)
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.index.scan import Scanner
from aide_tui.core.search.filters import canonical_language, parse_query
from aide_tui.core.search.query import analyze
from aide_tui.core.search.searcher import Searcher
from aide_tui.core.tokens import tokenize

NO_EMBED = {"embedding": {"backend": "none"}}


def make(root: Path, files: dict[str, str], **search: object) -> Searcher:
    write_workspace(root, files)
    settings = load_settings(root, {**NO_EMBED, "search": search} if search else NO_EMBED)
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    return s


def _style_files() -> dict[str, str]:
    files = {
        f"pkg/theme_{i}.py": "\n".join(f"STYLE_{j} = style('style {j}')  # style style" for j in range(30))
        for i in range(8)
    }
    files["pkg/_render.py"] = '''
        def render(row, width):
            """Lay out one log row."""
            cells = [row.time, row.level, row.message]
            return " ".join(c.ljust(width) for c in cells)


        def column(table, name, style=None):
            table.add_column(name, style=style)
    '''
    return files


# -- filters narrow before ranking -----------------------------------------------------------------


def test_path_filter_applies_before_each_list_takes_its_top_n(tmp_path: Path) -> None:
    # eight files say "style" far more often than pkg/_render.py; with top_n=5 an unfiltered BM25 list
    # never reaches it, so filtering after fusion answered nothing
    s = make(tmp_path / "ws", _style_files(), top_n=5)
    assert all(h.path != "pkg/_render.py" for h in s.search("style").results)
    res = s.search("style path:pkg/_render.py").results
    assert res and {h.path for h in res} == {"pkg/_render.py"}
    assert res[0].ranks["bm25"] == 1
    res = s.search("style path:pkg/_*.py").results
    assert {h.path for h in res} == {"pkg/_render.py"}


def test_lang_filter_and_aliases(tmp_path: Path) -> None:
    files = _style_files()
    files["web/style.ts"] = "export function style(name: string) { return name }\n"
    files["docs/style.md"] = "# Style\n\nHow to style a table.\n"
    s = make(tmp_path / "ws", files, top_n=5)
    for alias in ("ts", "typescript", "TS"):
        assert {h.path for h in s.search(f"style lang:{alias}").results} == {"web/style.ts"}
    assert {h.path for h in s.search("style lang:md").results} == {"docs/style.md"}
    assert parse_query("x lang:py lang:golang lang:yml lang:rs lang:js").langs == [
        "python", "go", "yaml", "rust", "javascript",
    ]  # fmt: skip


def test_unknown_language_is_an_error_listing_valid_names(tmp_path: Path) -> None:
    err = parse_query("style lang:cobol").error
    assert err and "cobol" in err and "python" in err and "golang" in err
    with pytest.raises(QueryError):
        canonical_language("cobol")
    assert canonical_language("Golang") == "go" and parse_query("style lang:py").error is None
    s = make(tmp_path / "ws", _style_files())
    resp = s.search("style lang:cobol")
    assert resp.results == [] and resp.error is not None and "python" in resp.error
    assert resp.to_json()["error"] == resp.error
    assert "error" not in s.search("style").to_json()


def test_filter_only_query_is_a_file_finder(tmp_path: Path) -> None:
    files = _style_files()
    files["pyproject.toml"] = '[project]\nname = "pkg"\n'
    files["pkg/color_triplet.py"] = "class ColorTriplet:\n    pass\n"
    s = make(tmp_path / "ws", files)
    res = s.search("path:pkg/_render.py").results
    assert [h.path for h in res] == ["pkg/_render.py"] and res[0].start_line == 1
    assert [h.path for h in s.search("path:*.toml").results] == ["pyproject.toml"]
    assert len(s.search("lang:python", limit=100).results) == 10
    # fuzzy: no path contains "clrtrp", but its letters appear in order in color_triplet.py
    assert s.search("path:clrtrp").results[0].path == "pkg/color_triplet.py"
    # an exact file name comes before paths that merely contain the text
    assert s.search("path:render").results[0].path == "pkg/_render.py"


# -- ties break by path and line -----------------------------------------------------------------


def test_ties_break_by_path_and_line_in_incremental_and_rebuilt_index(tmp_path: Path) -> None:
    same = "def handler(request):\n    return dispatch(request)\n"
    files = {"b/mod.py": same, "a/mod.py": same, "c/mod.py": same}
    root = tmp_path / "ws"
    s = make(root, files)
    first = [h.path for h in s.search("dispatch request").results]
    assert first == ["a/mod.py", "b/mod.py", "c/mod.py"]
    # rewrite a/mod.py with the same text: an incremental update gives it new (later) rows
    (root / "a/mod.py").write_text(same)
    os.utime(root / "a/mod.py", ns=(1, 1))
    settings = load_settings(root, NO_EMBED)
    Indexer(root, settings).run()
    s.refresh()
    assert [h.path for h in s.search("dispatch request").results] == first
    Indexer(root, settings).run(rebuild=True)
    s.refresh()
    assert [h.path for h in s.search("dispatch request").results] == first


# -- issue text -> file ----------------------------------------------------------------------------

ISSUE_FILES = {
    "src/shop/cart.py": '''
        class Cart:
            def total(self, items):
                """Sum the prices of the items, with the discount applied."""
                return sum(i.price for i in items) * (1 - self.discount)
    ''',
    "src/shop/pricing.py": '''
        def apply_discount(price, discount):
            """Apply a discount to a price; rounding happens at checkout."""
            if discount > 1:
                raise ValueError("discount must be a fraction")
            return round(price * (1 - discount), 2)
    ''',
    "src/shop/checkout.py": '''
        from shop.pricing import apply_discount


        def checkout(cart, discount):
            """Check out a cart: price every item, then charge."""
            return [apply_discount(i.price, discount) for i in cart.items]
    ''',
    "docs/discounts.rst": """
        Discounts
        =========

        A discount is a fraction of the price. The cart applies the discount to every price at
        checkout; the discount must be a fraction, or checkout raises an error about the discount.
        Discount, discount, price, checkout, cart.
    """,
    "CHANGELOG.md": """
        # Changes

        - Fix the discount applied twice at checkout when the cart has one item (price was wrong).
        - Checkout raises an error when the discount is not a fraction of the price.
    """,
    ".github/ISSUE_TEMPLATE/bug.md": """
        **Describe the bug** A clear description of the bug. **Expected behavior** What you expected.
        **Steps to reproduce** The code you ran, the traceback. **Version** the version you use.
    """,
}

ISSUE = (
    "Discount applied at checkout raises for a valid discount **Describe the bug** When I check out a "
    "cart with a discount of 100 percent written as 1.0 the checkout raises an error, although the "
    "docs say the discount must be a fraction and 1.0 is a fraction. **Steps to reproduce** ```python "
    "from shop.checkout import checkout checkout(cart, 1.0) ``` Traceback (most recent call last): "
    'File "/home/me/app/run.py", line 3, in <module> '
    'File "/home/me/.venv/lib/python3.11/site-packages/shop/checkout.py", line 6, in checkout '
    'File "/home/me/.venv/lib/python3.11/site-packages/shop/pricing.py", line 4, in apply_discount '
    "ValueError: discount must be a fraction **Expected behavior** No error. **Version** 2.1"
)


def test_issue_text_finds_the_innermost_frame_and_keeps_docs_below(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", ISSUE_FILES)
    files = list(dict.fromkeys(h.path for h in s.search(ISSUE).results))
    assert files[0] == "src/shop/pricing.py"  # raised here: the innermost frame inside the repository
    assert files.index("src/shop/checkout.py") < min(
        files.index(p)
        for p in ("docs/discounts.rst", "CHANGELOG.md", ".github/ISSUE_TEMPLATE/bug.md")
        if p in files
    )
    top = s.search(ISSUE).results[0]
    assert top.ranks.get("path") == 1 and top.symbol and "apply_discount" in top.symbol


def test_file_kind_priors_put_source_above_docs_changelog_and_templates(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", ISSUE_FILES)
    others = ("docs/discounts.rst", "CHANGELOG.md", ".github/ISSUE_TEMPLATE/bug.md")
    files = list(dict.fromkeys(h.path for h in s.search(ISSUE).results))
    assert files.index("src/shop/cart.py") < min(files.index(p) for p in others)
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"kind_prior": 0}})
    files = list(dict.fromkeys(h.path for h in s.search(ISSUE).results))
    assert files.index("src/shop/cart.py") > max(files.index(p) for p in others)


def test_traceback_frame_names_the_file_the_prose_does_not(tmp_path: Path) -> None:
    files = {
        **ISSUE_FILES,
        "src/shop/money.py": "def to_cents(amount):\n    return int(amount * 100)\n",
    }
    s = make(tmp_path / "ws", files)
    issue = ISSUE.replace(
        'File "/home/me/.venv/lib/python3.11/site-packages/shop/pricing.py", line 4, in apply_discount ',
        'File "/home/me/.venv/lib/python3.11/site-packages/shop/money.py", line 2, in to_cents ',
    ).replace("ValueError: discount must be a fraction", "OverflowError: cannot convert float infinity")
    res = s.search(issue).results
    assert res[0].path == "src/shop/money.py" and res[0].ranks.get("path") == 1
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"mention_weight": 0}})
    without = next(h for h in s.search(issue).results if h.path == "src/shop/money.py")
    assert without.score < res[0].score - 0.05  # the frame list is worth a first rank's share


def test_docs_are_not_demoted_when_the_issue_is_about_them(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", ISSUE_FILES, mention_weight=0)
    about_docs = ISSUE.replace("Discount applied at checkout raises", "Docs: discount documentation")
    files = list(dict.fromkeys(h.path for h in s.search(about_docs).results))
    assert files.index("docs/discounts.rst") < 3


def test_written_absolute_path_resolves_to_the_repository_file(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", ISSUE_FILES)
    issue = (
        "Warnings when pricing runs under numpy: /usr/lib/python3/site-packages/shop/pricing.py:5: "
        "FutureWarning: rounding will change in a future release, please have a look at this because "
        "our logs fill up with the warning every time we run the nightly batch job over all the orders"
    )
    assert analyze(issue).long
    res = s.search(issue).results
    assert res[0].path == "src/shop/pricing.py" and res[0].ranks.get("path") == 1


def test_quoted_file_names_in_a_traceback_are_not_phrases(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", ISSUE_FILES)
    assert all("phrase" not in h.ranks for h in s.search(ISSUE).results)


def test_query_parts() -> None:
    p = analyze(ISSUE)
    assert p.long and p.title.startswith("Discount applied at checkout raises for a valid discount")
    assert "**" not in p.title
    assert [f.func for f in p.frames] == ["<module>", "checkout", "apply_discount"]
    assert p.code_blocks and "checkout(cart, 1.0)" in p.code_blocks[0]
    assert p.errors == ["ValueError: discount must be a fraction"]
    assert p.names["apply_discount"] >= 1
    segs = p.segments()
    assert len(segs) == 3 and segs[0] == p.title
    assert not analyze("where is the discount applied").long


# -- file kinds ----------------------------------------------------------------------------------


def test_file_kinds() -> None:
    assert kind_of("src/pkg/mod.py") == SOURCE
    assert kind_of("docs/source/usage.rst") == DOCS and kind_of("README.md") == DOCS
    assert kind_of("docs/examples/plot_tilt.py") == DOCS and kind_of("examples/demo.py") == EXAMPLE
    assert kind_of("CHANGES.rst") == CHANGELOG and kind_of("ChangeLog") == CHANGELOG
    assert kind_of("locale/fr/LC_MESSAGES/app.po") == TRANSLATION and kind_of("logo.svg") == IMAGE
    assert kind_of(".github/workflows/ci.yml") == CI and kind_of(".travis.yml") == CI


def test_tooling_is_the_projects_own_scripts_at_the_top() -> None:
    for path in ("scripts/release.py", "tools/make_widths.py", "hack/verify.sh", "Makefile",
                 "noxfile.py", "internal/build/build.go", "build_tools/ci/upload.sh"):  # fmt: skip
        assert is_tooling(path) and kind_of(path) == SOURCE, path
        assert prior(path) == 0.5 and prior(path, strength=2) == 0.25 and prior(path, {"tooling"}) == 1.0
    for path in ("src/tools/clippy/lib.rs", "pkg/scripts.py", "setup.py", "internal/parse/parse.go",
                 "lib/Makefile", "scripts.py", "src/pkg/build/wheel.py"):  # fmt: skip
        assert not is_tooling(path) and prior(path) == 1.0, path


def test_translations_and_svg_are_not_indexed_by_default(tmp_path: Path) -> None:
    root = write_workspace(
        tmp_path / "ws",
        {"app.py": "x = 1\n", "locale/app.pot": 'msgid "x"\n', "logo.svg": "<svg></svg>\n"},
    )
    assert [e.rel for e in Scanner(root).scan().files] == ["app.py"]
    assert "index.exclude" in Scanner(root).scan().skipped["logo.svg"]
    back = Scanner(root, extra_excludes=("!*.svg",)).scan().files
    assert [e.rel for e in back] == ["app.py", "logo.svg"]


# -- the dense side ------------------------------------------------------------------------------


class WordHashEmbedder:
    """A deterministic bag-of-words embedder (64 hashed dims) standing in for the model."""

    id = "test:wordhash"
    dim = 64

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        if kind == "query":
            self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for w in tokenize(text):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return l2_normalise(out)


def make_dense(root: Path, files: dict[str, str], **search: object) -> tuple[Searcher, WordHashEmbedder]:
    write_workspace(root, files)
    settings = load_settings(root, {"search": search} if search else None)
    emb = WordHashEmbedder()
    Indexer(root, settings, emb).run()
    s = Searcher(root, settings, emb)
    s.refresh()
    return s, emb


def test_dense_list_is_filtered_before_its_top_n(tmp_path: Path) -> None:
    s, _ = make_dense(tmp_path / "ws", _style_files(), top_n=3)
    assert all(h.path != "pkg/_render.py" for h in s.search("style", mode="dense").results)
    res = s.search("style path:_render", mode="dense").results
    assert res and {h.path for h in res} == {"pkg/_render.py"} and res[0].ranks["dense"] == 1


def test_a_pasted_issue_is_embedded_in_segments(tmp_path: Path) -> None:
    s, emb = make_dense(tmp_path / "ws", ISSUE_FILES)
    s.search(ISSUE, mode="dense")
    parts = analyze(ISSUE)
    assert emb.calls[-1] == [ISSUE, *parts.segments()] and len(emb.calls[-1]) == 4
    s.search("where is the discount applied", mode="dense")
    assert emb.calls[-1] == ["where is the discount applied"]
    n_calls = len(emb.calls)
    s.search(ISSUE, mode="dense")  # every segment's vector is remembered: nothing is embedded again
    assert len(emb.calls) == n_calls
    s.settings = load_settings(s.root, {"search": {"dense_segments": False}})
    s.search(ISSUE + " Thanks!", mode="dense")
    assert emb.calls[-1] == [ISSUE + " Thanks!"]
