from aide_tui.core.tokens import tokenize


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
