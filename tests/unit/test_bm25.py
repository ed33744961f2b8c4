import math
from collections import Counter

import numpy as np
import pytest

from aide_tui.core.bm25 import (
    BM25,
    NAME_FIELD,
    DocTerms,
    chunk_terms,
    concat,
    encode_docs,
    field_query,
    function_names,
    top_positive,
)
from aide_tui.core.model import Chunk
from aide_tui.core.tokens import tokenize


def _index(docs: list[list[str]]) -> BM25:
    vocab: dict[str, int] = {}
    return BM25(encode_docs((Counter(d) for d in docs), vocab), vocab)


def test_scores_match_hand_computation() -> None:
    docs = [["apple", "banana", "apple"], ["banana", "cherry"], ["cherry", "cherry", "cherry", "date"]]
    bm = _index(docs)
    n, k1, b = 3, 1.2, 0.75
    avgdl = (3 + 2 + 4) / 3

    def expected(doc: list[str], term: str) -> float:
        df = sum(term in d for d in docs)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = doc.count(term)
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))

    got = bm.scores(["apple", "cherry"])
    want = [expected(d, "apple") + expected(d, "cherry") for d in docs]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_exact_symbol_beats_prose() -> None:
    docs = [
        ["parse_header", "parse", "header", "line", "name", "value"],
        ["parse", "the", "header", "line", "prose", "explains", "parse", "header", "usage", "more", "text"],
    ]
    bm = _index(docs)
    idx, _ = bm.top(["parse_header", "parse", "header"], 10)
    assert idx[0] == 0


def test_zero_scores_never_returned() -> None:
    bm = _index([["alpha"], ["beta"], ["gamma"]])
    idx, scores = bm.top(["beta", "unknown"], 10)
    assert idx.tolist() == [1]
    assert (scores > 0).all()
    idx, _ = bm.top(["nothing"], 10)
    assert idx.size == 0


def test_top_positive_orders_and_truncates() -> None:
    idx, vals = top_positive(np.array([0.0, 3.0, -1.0, 5.0, 3.0], np.float32), 2)
    assert idx.tolist() == [3, 1]
    assert vals.tolist() == [5.0, 3.0]


def test_take_and_concat_round_trip() -> None:
    vocab: dict[str, int] = {}
    docs = encode_docs([Counter({"a": 1}), Counter({"b": 2, "c": 1}), Counter({"d": 3})], vocab)
    sub = docs.take([2, 0])
    assert sub.n_docs == 2
    back = concat([sub, docs.take([1])])
    assert back.n_docs == 3
    bounds = zip(back.doc_ptr[:-1], back.doc_ptr[1:], strict=True)
    rows = [dict(zip(back.term_ids[s:e].tolist(), back.tfs[s:e].tolist(), strict=True)) for s, e in bounds]
    assert rows == [{vocab["d"]: 3.0}, {vocab["a"]: 1.0}, {vocab["b"]: 2.0, vocab["c"]: 1.0}]
    assert DocTerms.empty().take([]).n_docs == 0


@pytest.mark.parametrize("terms", [[], ["x"] * 3])
def test_empty_or_unknown_queries(terms: list[str]) -> None:
    bm = _index([["a1"], ["b2"]])
    assert bm.scores(terms).tolist() == [0.0, 0.0]


def _chunk(text: str, defines: tuple[str, ...] = (), symbol: str | None = None) -> Chunk:
    return Chunk("pkg/params.py", 1, text.count("\n") + 1, "python", symbol, "", text, defines)


def test_name_field_ranks_the_function_a_query_names_above_heavier_body_use() -> None:
    """A chunk that defines ``keys`` beats a bigger one that only says "keys" in its code and docstrings
    once the query's words also score in the name field (BM25F-like), and not without it."""
    user = _chunk(
        'def items(self):\n    """Return all the items, like keys() and values()."""\n'
        "    return [(k, self.keys()[k]) for k in self.keys() if k in self.all_keys]\n",
        ("items",),
    )
    owner = _chunk("def keys(self):\n    return list(self._dict)\n", ("keys",))
    filler = [_chunk(f"def f{i}(self):\n    return all_the_{i}\n", (f"f{i}",)) for i in range(6)]
    vocab: dict[str, int] = {}
    bm = BM25(encode_docs((chunk_terms(c) for c in [user, owner, *filler]), vocab), vocab)
    terms = tokenize("Return all the keys")
    assert bm.top(terms, 2)[0][0] == 0  # the body alone: the heavier user wins
    fterms, fweights = field_query(terms, None, 0.5)
    assert bm.top(fterms, 2, fweights)[0][0] == 1
    assert field_query(terms, None, 0.0) == (terms, None)


def test_name_field_holds_functions_not_types_constants_or_dunders() -> None:
    c = _chunk(
        "class QueryParams:\n    MAX_SIZE = 3\n    def __init__(self):\n        pass\n"
        "    def get_list(self, key):\n        return []\n",
        ("QueryParams", "MAX_SIZE", "__init__", "get_list"),
    )
    assert function_names(c) == ("get_list",)
    assert {t for t in chunk_terms(c) if t.startswith(NAME_FIELD)} == {"n:get_list", "n:get", "n:list"}
    # a dense piece records no definitions: its symbol's innermost name stands in, unless it is a type
    assert function_names(_chunk("return 1", (), "class A > def keys")) == ("keys",)
    assert function_names(_chunk("x = 1", (), "class QueryParams")) == ()
    # Go: a struct type is left out, its method is kept
    go = Chunk("cmd.go", 1, 3, "go", None, "", "type Command struct{}\nfunc (c *Command) Run() {}\n",
               ("Command", "Run"))  # fmt: skip
    assert function_names(go) == ("Run",)


def test_a_type_after_a_word_that_is_also_a_type_keyword_stays_out_of_the_name_field() -> None:
    # "type" ends the line before: a regex scan took "type class" as one match and missed Fussy
    text = "x = token.type\n\nclass Fussy(Base):\n    def handle(self):\n        pass\n"
    assert function_names(_chunk(text, ("Fussy", "handle"))) == ("handle",)
    # a keyword inside a longer word (subclass) or a name that goes on (Fussy2) does not make a type
    assert function_names(_chunk("subclass Fussy\nFussy()\n", ("Fussy",))) == ("Fussy",)
    assert function_names(_chunk("class Fussy2: pass\nFussy = 1\n", ("Fussy",))) == ("Fussy",)
    assert function_names(_chunk("struct\tFussy {}\n", ("Fussy",))) == ()
