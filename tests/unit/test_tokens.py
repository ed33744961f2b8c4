from aide_tui.core.tokens import fold, tokenize


def test_keeps_whole_identifiers_and_parts() -> None:
    toks = tokenize("def parse_header(line): return HTTPTransport(os.path.join(a, b))")
    for t in [
        "parse_header",
        "pars",  # parse, parsed, parsing share this stem
        "header",
        "httptransport",
        "http",
        "transport",
        "os.path.join",
        "join",
    ]:
        assert t in toks


def test_camel_case_with_acronyms() -> None:
    assert tokenize("getHTTPResponseCode") == ["gethttpresponsecode", "get", "http", "respons", "code"]


def test_stopwords_dropped_and_plurals_folded() -> None:
    toks = tokenize("Where are the headers of the queries")
    assert "the" not in toks and "where" not in toks
    assert "header" in toks and "query" in toks


def test_lowercase_and_no_single_letters() -> None:
    assert tokenize("X = Foo + y") == ["foo"]


def test_inflections_share_a_stem() -> None:
    forms = ["parse", "parsed", "parsing", "parses"]
    assert len({tokenize(f)[0] for f in forms}) == 1
    assert tokenize("followed")[0] == tokenize("follows")[0] == tokenize("follow")[0]
    assert tokenize("classes")[0] == tokenize("class")[0] == "class"
    assert tokenize("status") == ["status"] and tokenize("address") == ["address"]


def test_letters_of_every_script_are_word_characters() -> None:
    """A German, Russian or Chinese name is a term (ASCII-only words cut ``größe`` into ``gr`` and
    ``e`` and dropped the others); camelCase still splits at ASCII capitals."""
    assert tokenize("größe_berechnen") == ["größe_berechnen", "größ", "berechnen"]
    assert tokenize("модуль загрузки") == ["модуль", "загрузки"]
    assert tokenize("# 数据处理 函数") == ["数据处理", "函数"]
    assert tokenize("ÄrgerZähler café") == ["ärgerzähler", "ärger", "zähler", "café"]
    assert tokenize("naïve_parse") == ["naïve_parse", "naïv", "pars"]


def test_a_non_ascii_name_is_found_by_keyword(tmp_path: object) -> None:
    from pathlib import Path

    from aide_tui.core.config import load_settings
    from aide_tui.core.index.indexer import Indexer
    from aide_tui.core.search.searcher import Searcher

    root = Path(str(tmp_path)) / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mass.py").write_text("def größe_berechnen(breite, höhe):\n    return breite * höhe\n")
    (root / "pkg" / "data.py").write_text("# 数据处理: 读取文件\ndef lade_daten(pfad):\n    return pfad\n")
    (root / "pkg" / "other.py").write_text("def gr(e):\n    return e\n")
    settings = load_settings(root, {"embedding": {"backend": "none"}})
    Indexer(root, settings).run()
    searcher = Searcher(root, settings)
    assert searcher.search("größe", limit=3, mode="bm25").results[0].path == "pkg/mass.py"
    assert searcher.search("höhe", limit=3, mode="bm25").results[0].path == "pkg/mass.py"
    assert searcher.search("数据处理", limit=3, mode="bm25").results[0].path == "pkg/data.py"


def test_a_word_whose_stem_is_a_stopword_keeps_its_own_term() -> None:
    """``theme`` folded to ``them``, a stopword, so it had no term at all: a query ``theme`` matched no
    word of rich's ``Theme`` class, and a typo of it could not be corrected to it. 27 words of the
    system dictionary were so (``notes``, ``noted``, ``willing``, ``canned``...); each keeps its own."""
    assert tokenize("Theme themes notes note willing") == ["theme", "theme", "note", "note", "willing"]
    assert tokenize("them its") == []  # the stopwords themselves stay out
    assert fold("parsed") == "pars" and fold("parses") == "pars"
