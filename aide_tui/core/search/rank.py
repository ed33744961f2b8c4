"""One ranking pipeline over any retriever: lists → RRF fusion → priors → file aggregation → rows.

For a query it chooses the BM25 terms (a pasted text keeps its identifiers and rarest words), asks the
retriever for the lexical lists (BM25 over chunks and over function-sized pieces, definitions of the
names mentioned, files named, quoted phrases) and the dense list, fuses them by weighted RRF, scales
by the test-file and file-kind priors, adds file-level evidence and builds the result rows. Nothing
here knows which store answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from aide_tui.core import filekinds
from aide_tui.core.bm25 import field_query
from aide_tui.core.config import SearchSettings
from aide_tui.core.errors import EmbedderError
from aide_tui.core.filekinds import is_test_path
from aide_tui.core.search import graphrank as G
from aide_tui.core.search import lists as L
from aide_tui.core.search.filters import ParsedQuery
from aide_tui.core.search.fuse import Fused, rrf
from aide_tui.core.search.hitlines import symbol_at_line
from aide_tui.core.search.nameglob import AskedPattern, PatternList, asked_pattern, glob_list
from aide_tui.core.search.query import (
    CODE_LIKE,
    LONG_QUERY_TERMS,
    QueryParts,
    UsesAsked,
    analyze,
    asked_name,
    asked_subclasses,
    asked_uses,
    code_line,
    error_message,
    last_part,
    locations,
    member_words,
    pasted_code,
    reads_as_change,
    reads_as_code,
    verbatim_words,
    without_frames,
    without_timestamp,
)
from aide_tui.core.search.releases import asked_versions, heads_release, release_note_files
from aide_tui.core.search.response import Hit
from aide_tui.core.search.retriever import Candidate, Key, Retrieval, Retriever, SymbolGraph, TermStats
from aide_tui.core.search.spelling import corrected
from aide_tui.core.tokens import identifiers, prefix_forms, tokenize
from aide_tui.core.wordshape import NONSENSE_CEILING, reads_as_nonsense

T = TypeVar("T")
PATTERN_OTHER_LISTS = 0.1  # a name pattern's other lists (its words) order what it matches
PROSE_SYMBOL_FACTOR = 0.15  # prose mentioning a name usually asks about code using it, not its definition
PROSE_PATH_FACTOR = 0.0
LIST_ORDER = (
    "bm25",
    "phrase",
    "message",
    "verbatim",
    "line",
    "uses",
    "piece",
    "symbol",
    "path",
    "dense",
    "static",
)  # fusion adds them in this order
PREFIX_CAP = 32  # completions of a partly typed word, the most frequent in the index
PREFIX_WEIGHT = 0.5  # BM25 weight of the most frequent completion (an exact term weighs 1)
COMPLETED_NAMES = 3  # completions of a partly typed word whose definitions join the symbol list
VERBATIM_SHARE = 0.5  # pasted code's chunk holds at least this share of its word trigrams
VERBATIM_POOL = 20  # ... among the first this many of the BM25 lists (it holds every word of it)
PROSE_VERBATIM_SHARE = 1.0  # a pasted comment or docstring: all of it (twins differ by a word)
LEXICAL_LISTS = ("bm25", "piece", "symbol", "path", "phrase", "message", "verbatim", "line", "uses")
# builtin models whose similarities no_match_floor was calibrated on (the public eval's queries vs
# random strings, docs/quality.md "No results")
CALIBRATED_MODELS = ("all-MiniLM-L6-v2",)
FILTER_WORD = re.compile(r"^(path|lang):")


@dataclass
class QueryEncoder:
    """The dense side as ranking sees it: ``encode(texts)`` gives (embedder id, vectors) or raises
    EmbedderError; ``encode`` None means no embedder (``error`` says why, None when none is configured).
    ``static(text)`` gives the static tier's (model id, vector), None when the tier is off or its table
    is not built yet."""

    encode: Callable[[list[str]], tuple[str, list[np.ndarray]]] | None
    error: str | None = None
    static: Callable[[str], tuple[str, np.ndarray] | None] | None = None


@dataclass
class Ranked:
    """The result rows, why the dense side was left out (None: it took part, or was not asked), why
    there are none when nothing supports the query (None: rows, or no reason to give), and the query
    with its typos fixed when it had any."""

    hits: list[Hit]
    degraded: str | None = None
    no_results: str | None = None
    corrected: str | None = None  # the query as the lexical lists read it, when a typo was fixed
    read_as: str | None = None  # what a question about one name was read as ("uses of send")
    missing: str | None = None  # a release number asked for that no chunk holds (lists.missing_release)
    pattern: bool = False  # a name pattern's matches lead (nameglob.py)


def diversify(items: list[T], keys: list[str], cap: int, window: int) -> list[T]:
    """Reorder so the first ``window`` items hold at most ``cap`` per key; the overflow follows in order."""
    head: list[T] = []
    rest: list[T] = []
    seen: dict[str, int] = {}
    for item, key in zip(items, keys, strict=True):
        if len(head) < window and seen.get(key, 0) < cap:
            seen[key] = seen.get(key, 0) + 1
            head.append(item)
        else:
            rest.append(item)
    return head + rest


def query_terms(
    stats: TermStats | None, text: str, title: str, title_weight: float
) -> tuple[list[str], dict[str, float] | None]:
    """BM25 terms and weights. A long pasted text (issue, stack trace) keeps its identifiers, weighted
    double, and its rarest other terms, so boilerplate prose cannot drown the names that matter; the
    words of its title (what the issue is about) are kept too. A store without a vocabulary keeps every
    term (identifiers still weighted double)."""
    terms = list(dict.fromkeys(tokenize(text)))
    if len(terms) <= LONG_QUERY_TERMS:
        return terms, None
    code_terms = list(dict.fromkeys(t for w in identifiers(text) if CODE_LIKE.search(w) for t in tokenize(w)))
    weights = {t: 2.0 for t in code_terms}
    if stats is None:
        return terms, weights
    vocab = stats.vocab
    others = [t for t in terms if t in vocab and t not in code_terms]
    known = sorted(zip((w or 0.0 for w in stats.idfs(others)), others, strict=True), reverse=True)
    keep = [t for t in code_terms if t in vocab][: 2 * LONG_QUERY_TERMS]
    keep += [t for _, t in known[: max(LONG_QUERY_TERMS - len(keep) // 2, 8)]]
    if title and title_weight > 0:
        for t in dict.fromkeys(tokenize(title)):
            if t in vocab:
                if t not in keep:
                    keep.append(t)
                weights[t] = max(weights.get(t, 1.0), title_weight)
    return keep, weights


def partial_word(query: str) -> str | None:
    """The word being typed: the query's last word when nothing (a space, a bracket, a quote) follows
    it, unless it is a filter (``path:``, ``lang:``)."""
    tail = query.split()[-1] if query and not query[-1].isspace() else ""
    words = identifiers(tail)
    if not words or FILTER_WORD.match(tail) or not tail.endswith(words[-1]):
        return None
    return words[-1]


def completions(stats: TermStats | None, word: str) -> dict[str, int]:
    """The index terms that complete the typed ``word`` (those of its prefix forms, see
    :func:`~aide_tui.core.tokens.prefix_forms`, the ``PREFIX_CAP`` most frequent of each), with their
    document frequencies. A word, not a compound, completes to words only (a compound's parts are
    terms of their own). A store that does not expose its vocabulary (None) completes nothing."""
    found: dict[str, int] = {}
    if stats is None:
        return found
    for form in prefix_forms(word):
        for term, df in stats.prefix_terms(form, PREFIX_CAP, compounds="." in form or "_" in form):
            found[term] = max(found.get(term, 0), df)
    return found


def with_completions(
    terms: list[str], weights: dict[str, float] | None, found: dict[str, int]
) -> tuple[list[str], dict[str, float] | None]:
    """The query's terms plus the ``PREFIX_CAP`` most frequent completions of the word being typed
    (``found``, see :func:`completions`), each weighted ``PREFIX_WEIGHT`` times the square root of its
    share of the most frequent one's documents: every completion ranks below an exact term, the
    likelier ones above the rare. A completion that only extends a more frequent one (``timeout`` →
    ``timeouttypes``, a compound of it) is left out: a chunk holding it holds that one too, and
    counting both would favour such chunks over the one the word names."""
    exact = set(terms)
    kept = [t for t, df in found.items()
            if t not in exact and not any(found.get(t[:k], -1) >= df for k in range(2, len(t)))]  # fmt: skip
    best = sorted(kept, key=lambda t: (-found[t], t))[:PREFIX_CAP]
    if not best:
        return terms, weights
    peak = found[best[0]]
    out = dict(weights) if weights else {}
    for t in best:
        out[t] = PREFIX_WEIGHT * (found[t] / peak) ** 0.5
    return [*terms, *best], out


def completed_definitions(
    q: Retrieval[Any], stats: TermStats, symbol: list[Key], word: str, n: int
) -> list[Key]:
    """The symbol list plus the definitions of the names the typed ``word`` begins (the
    ``COMPLETED_NAMES`` shortest: ``Timeou`` → ``Timeout``, ``cook`` → ``Cookies``), each name's by
    BM25 score, so a half-typed name finds its definition."""
    start = word.lower().rsplit(".", 1)[-1]
    names = stats.defined_names(start, COMPLETED_NAMES) if len(start) >= 2 else []
    defs = q.defining(names) if names else {}
    extra = [k for name in names for k in sorted(defs.get(name, ()), key=lambda k: (-q.score(k), q.order(k)))]
    return list(dict.fromkeys([*symbol, *extra]))[:n]


def list_weights(
    s: SearchSettings,
    long: bool,
    code_like: bool,
    explicit_path: bool,
    copied: bool = False,
    uses: bool = False,
    pattern: bool = False,
) -> dict[str, float]:
    """RRF weight of each ranked list for this kind of query. No symbol list for ``copied`` code (found
    where it was copied from: its names are uses, not definitions asked for) nor when a name's ``uses``
    are asked for (the places the graph knows weigh as a place the query names). A name ``pattern``'s
    matches (the symbol list) come before what the other lists find by its words."""
    w = {"bm25": s.bm25_weight, "dense": s.dense_weight, "symbol": s.symbol_weight,
         "path": s.path_weight, "piece": s.piece_weight, "phrase": s.phrase_weight,
         "message": s.message_weight, "verbatim": s.verbatim_weight, "line": s.line_weight,
         "uses": s.line_weight, "static": s.static_weight}  # fmt: skip
    if long:
        w.update(symbol=s.long_symbol_weight, path=s.mention_weight, phrase=s.long_phrase_weight,
                 dense=s.long_dense_weight, static=s.long_static_weight)  # fmt: skip
    elif not code_like:
        w["symbol"] *= PROSE_SYMBOL_FACTOR
        if not explicit_path:
            w["path"] *= PROSE_PATH_FACTOR
    if copied or uses:
        w["symbol"] = 0.0
    if pattern:
        w = {name: weight * (1.0 if name == "symbol" else PATTERN_OTHER_LISTS) for name, weight in w.items()}
    return w


def _copied_code(found: dict[str, list[Key]], text: str, parts: QueryParts) -> bool:
    """Whether the query is a line or a few lines of code (not an issue) that the verbatim list found."""
    if not found.get("verbatim"):
        return False
    return code_line(text) or (not parts.long and pasted_code(text) is not None)


def rank(
    retriever: Retriever,
    parsed: ParsedQuery,
    mode: str,
    limit: int,
    encoder: QueryEncoder,
    s: SearchSettings,
    partial: str | None = None,
) -> Ranked:
    """The ranked rows for ``parsed.text`` (its filters already parsed) in ``mode``; ``partial``: the
    word being typed, completed over the index's vocabulary (see :func:`completions`)."""
    parsed, message = _pasted_line(parsed)
    parsed, uses, read_as = _asked_about_a_name(parsed, retriever if mode != "dense" else None)
    as_typed = parsed.text
    parts = analyze(parsed.text)
    lexical_stats = retriever.term_stats if mode != "dense" else None
    glob = asked_pattern(as_typed, partial is not None, lexical_stats, lambda: retriever.graph)
    typed = completions(retriever.term_stats, partial) if partial and not parts.long and not glob else {}
    # typos in a short query's names; the word being typed only once nothing in the index begins so
    lexical = not parts.long and message is None and mode != "dense"
    parsed, parts, fixed = _typos_fixed(parsed, parts, retriever.term_stats, bool(typed), lexical)
    code_like = L.looks_like_code(parsed.text)
    terms, weights = query_terms(retriever.term_stats, parsed.text, parts.title, s.title_weight)
    if typed:
        terms, weights = with_completions(terms, weights, typed)
    # prose asks about functions by their names: the BM25 name field (identifiers have the symbol list)
    name_weight = s.long_name_weight if parts.long else (0.0 if code_like else s.name_weight)
    q = retriever.begin(parsed, *field_query(terms, weights, name_weight))
    found: dict[str, list[Key]] = {}
    explicit_path = False
    piece_spans: dict[Key, tuple[int, int]] = {}
    pattern: PatternList[Key] | None = None
    if mode in ("hybrid", "bm25"):
        explicit_path = _lexical_lists(q, retriever, parsed.text, parts, s.top_n, found, piece_spans, uses)
        pattern = _pattern_list(q, retriever, glob, s.top_n, found, piece_spans)
        stats = retriever.term_stats
        if partial and typed and stats is not None:
            found["symbol"] = completed_definitions(q, stats, found["symbol"], partial, s.top_n)
    spans: dict[Key, tuple[int, int]] = {}
    degraded: str | None = None
    closest: Closest | None = None
    complete = False
    if mode in ("hybrid", "dense") and parsed.text:
        texts = [as_typed] + (parts.segments() if parts.long and s.dense_segments else [])
        dense, degraded, spans, closest = _dense_list(q, texts, s, encoder)
        if dense is not None:
            found["dense"] = dense
            # complete: this model's vectors were searched (an index embedded by another model, or by
            # none, has no vector of it and counts none missing) and cover every piece
            complete = retriever.vectors_missing == 0 and closest is not None and closest[0] is not None
        # the static list weighs static_with_dense once the transformer covers every piece: at 0 (the
        # default) it is not computed (a tenth of a hybrid query, and a one-shot's scan of every vector)
        wanted = not (complete and s.static_with_dense == 0)
        static, static_spans, static_closest = (
            _static_list(q, as_typed, s, encoder) if wanted else (None, {}, None)
        )
        if static is not None:
            found["static"] = static
            spans = {**static_spans, **spans}
            closest = closest or static_closest
            if encoder.encode is None:
                degraded = None  # the static tier alone was asked for, and it answers
    q.fetch(k for keys in found.values() for k in keys)
    missing = None
    if mode in ("hybrid", "bm25"):
        missing = _verbatim_lists(
            q, parsed.text, parts, None if parts.long else message, s.top_n, found, retriever.path_parts,
            whole=not parsed.has_filters,
        )  # fmt: skip
    if mode == "hybrid" and closest is not None and not any(found.get(name) for name in LEXICAL_LISTS):
        # only the dense list: it holds nothing close, or the query's words read as no words of this code
        why = far_from_everything(*closest) or nonsense(as_typed, retriever.term_stats, *closest)
        if why is not None:
            return Ranked([], degraded, no_results=why)
    graph = retriever.graph if mode in ("hybrid", "bm25") and not code_like else None
    copied = _copied_code(found, parsed.text, parts)
    read_as = read_as or _read_as_pattern(glob, pattern)
    asked = (copied, uses is not None, pattern is not None)
    list_w = list_weights(s, parts.long, code_like, explicit_path, *asked)
    if complete and "static" in found:
        list_w["static"] *= s.static_with_dense
    lists = {name: found[name] for name in LIST_ORDER if name in found}
    fused = _fuse(q, lists, list_w, parsed.text, parts, code_like, s, lambda: retriever.graph)
    if graph is not None:
        fused = _graph_hops(q, retriever, graph, fused, lists, list_w, parsed.text, parts, s)
    _tests_after_source(q, fused, parsed.text, parts, code_like, s.prose_test_weight)
    fused = _pattern_first(fused, pattern)
    if s.per_file_cap > 0:
        fused = diversify(fused, [q.file_of(f.doc) for f in fused], s.per_file_cap, limit)
    top = fused[:limit]
    q.fetch(f.doc for f in top)
    if s.best_piece == "piece":  # a hit's best line follows its best BM25 piece, else its dense one
        spans = {**spans, **{f.doc: piece_spans[f.doc] for f in top if f.doc in piece_spans}}
    hits = _labelled_by_pattern(top, [_hit(q, f, terms, spans.get(f.doc)) for f in top], pattern)
    listed = pattern is not None
    return Ranked(hits, degraded, corrected=fixed, read_as=read_as, missing=missing, pattern=listed)


def _fuse(
    q: Retrieval[Any],
    lists: dict[str, list[Key]],
    weights: dict[str, float],
    text: str,
    parts: QueryParts,
    code_like: bool,
    s: SearchSettings,
    graph: Callable[[], SymbolGraph | None] = lambda: None,
) -> list[Fused]:
    """RRF of the lists, the priors, and the order of the result (``graph``: the symbol graph, asked
    only what kind of definition a one-word query's name has, see :func:`named_file`)."""
    fused = rrf(lists, k=s.rrf_k, weights=weights, order=q.order)
    apply_priors(q, fused, text, parts, code_like, s)
    # a name, or a declaration: the definition spelled that way first (a quoted span asks for words)
    named = code_like and not parts.long and '"' not in text and weights.get("symbol", 0) > 0
    # a module named by its stem, unless a function or a type is defined under the word: then the
    # variables and fields of that name are not what it asks for either
    module = (
        named
        and s.exact_definition != 1
        and named_file(q, fused, lists.get("symbol", []), text, s.exact_definition, graph)
    )
    if named and not module and s.exact_definition != 1 and lists.get("symbol"):
        exact_definitions(q, fused, lists["symbol"], text, parts, s.exact_definition)
    if not code_like and not parts.long and s.spelled_definition != 1 and lists.get("symbol"):
        spelled_definitions(q, fused, lists["symbol"], text, s.spelled_definition)
    if not parts.long and s.release_heading != 1 and lists.get("phrase"):
        release_headings(q, fused, lists["phrase"], text, s.release_heading)
    _in_rank_order(q, fused)
    return fused


def release_headings(
    q: Retrieval[Any], fused: Sequence[Fused], phrase: Sequence[Key], text: str, factor: float
) -> None:
    """Scale by ``factor`` the chunks that head the notes of a release number the query asks for
    (``what changed in 2.3.1``: the section ``## [2.3.1] - 2024-01-02``), among those the phrase list
    found holding it: the number's own words are digits, so the keyword lists rank the sections of
    nearby releases as high."""
    numbers = asked_versions(text)
    if not numbers:
        return
    heading = {k for k in phrase if heads_release(q.chunk(k).text, numbers)}
    for f in fused:
        if f.doc in heading:
            f.score *= factor


def spelled_definitions(
    q: Retrieval[Any], fused: Sequence[Fused], defining: Sequence[Key], text: str, factor: float
) -> None:
    """Scale by ``factor`` the source chunks defining the one name two or three plain words spell
    (``help formatter`` → ``HelpFormatter``, ``from file`` → ``from_file``, in any case): such a query
    reads as prose (a commit subject, a topic), so the symbol list weighs little, yet a name made of
    exactly its words is what it most likely asks for."""
    spelled = {name.lower() for name in L.other_spellings(text) if " " in text.strip()}
    if not spelled:
        return
    hits = {
        k for k in defining
        if not spelled.isdisjoint(n.lower() for n in q.defines(k))
        and filekinds.kind_of(q.path(k)) == filekinds.SOURCE
    }  # fmt: skip
    for f in fused:
        if f.doc in hits:
            f.score *= factor


MAX_NAMED_FILES = 3  # a word naming more files (setup, __init__, index) says which one no better


VALUE_KINDS = frozenset({"variable", "attribute", "field", "property", "const", "let", "var"})


def named_file(
    q: Retrieval[Any],
    fused: Sequence[Fused],
    defining: Sequence[Key],
    text: str,
    factor: float,
    graph: Callable[[], SymbolGraph | None] = lambda: None,
) -> bool:
    """Scale the chunks of the file a one-word query names by its stem (``_compat`` or ``compat`` for
    ``_compat.py``, ``version`` for ``__version__.py``, ``termui``) by ``factor``, when at most
    ``MAX_NAMED_FILES`` files are so named and nothing ``defining`` it defines the word as written as a
    function or a type (``align`` is ``Text.align`` before ``align.py``; a field or a variable,
    ``Table.columns``, is not what the word asks before ``columns.py``; without a ``graph`` to tell, any
    definition): the module is what such a word asks for, and its words alone spread over the files
    that import it. True when it did."""
    word = text.strip()
    if len(word) < 3 or not word.replace("_", "").replace("-", "").isalnum():
        return False
    bare = word.strip("_")

    def stem(path: str) -> str:
        return path.rsplit("/", 1)[-1].split(".", 1)[0]

    files = {p for f in fused if (st := stem(p := q.path(f.doc))) == word or st.strip("_") == bare}
    if not 0 < len(files) <= MAX_NAMED_FILES:
        return False
    # the graph is asked last: most names name no file, and a one-shot search would open it for nothing
    if any(word in q.defines(k) for k in defining) and _defines_code(graph(), word):
        return False
    for f in fused:
        if q.path(f.doc) in files:
            f.score *= factor
    return True


def _defines_code(graph: SymbolGraph | None, name: str) -> bool:
    """Whether ``name`` (as written) is defined as a function or a type anywhere, not only as a value;
    True without a graph to tell."""
    return graph is None or any(d.kind not in VALUE_KINDS for _, d in graph.definitions(name))


def exact_definitions(
    q: Retrieval[Any],
    fused: Sequence[Fused],
    defining: Sequence[Key],
    text: str,
    parts: QueryParts,
    factor: float,
) -> None:
    """Scale the chunks of source files that define one of an identifier query's names exactly as
    written (``Headers`` is the class, not ``BaseClient.headers``; a page's "## Options" heading is not
    ``interface Options``) by ``factor``: one list's first rank is not enough to put the definition
    above a chunk that several lists rank near the top. A qualified name (``Client.send``,
    ``click.echo``) keeps the definitions inside what qualifies it, when any is."""
    names = L.asked_names(text, parts)
    exact = [
        k for k in defining
        if not names.isdisjoint(q.defines(k)) and filekinds.kind_of(q.path(k)) == filekinds.SOURCE
    ]  # fmt: skip
    qualifiers = [name.split(".")[:-1] for name in names if "." in name]
    if qualifiers and len(exact) > 1:
        q.fetch(exact)
        # inside the class first (Subject.next, not AnonymousSubject.next of the same Subject.ts), then
        # inside the module or folder (click.echo)
        for by_path in (False, True):
            inside = [
                k for k in exact if any(_qualified_by(q.chunk(k), qual, by_path) for qual in qualifiers)
            ]
            if inside:
                exact = inside
                break
    scaled = set(exact)
    for f in fused:
        if f.doc in scaled:
            f.score *= factor


def _qualified_by(chunk: Candidate, qualifier: Sequence[str], by_path: bool = True) -> bool:
    """Whether every part of a name's qualifier is a name in the chunk's symbol chain (``class Client >
    def send``) or, ``by_path``, a folder or module of its path (``click`` for ``src/click/utils.py``)."""
    where = set(identifiers(chunk.symbol or ""))
    for part in chunk.path.split("/") if by_path else ():
        stem = part.rsplit(".", 1)[0]
        where.update((stem, stem.lstrip("_")))
    return all(part in where for part in qualifier)


def _in_rank_order(q: Retrieval[Any], fused: list[Fused]) -> None:
    """Sort by score, then by the best rank any list gave, then by the store's order (deterministic)."""
    fused.sort(key=lambda f: (-f.score, min(f.ranks.values()), q.order(f.doc)))


def _graph_hops(
    q: Retrieval[Any],
    retriever: Retriever,
    graph: SymbolGraph,
    fused: list[Fused],
    lists: dict[str, list[Key]],
    weights: dict[str, float],
    text: str,
    parts: QueryParts,
    s: SearchSettings,
) -> list[Fused]:
    """Fuse again with the files one hop from the best files (LocAgent's lever), when weighted; the
    centrality prior scales each file by its PageRank in the import and call graph."""
    hop_weight = s.long_hop_weight if parts.long else s.hop_weight
    centrality = s.long_centrality if parts.long else s.centrality
    source_weight = s.long_source_weight if parts.long else s.source_weight
    if "dense" in lists:  # the dense side finds the source a page describes by itself
        source_weight *= s.source_with_dense
    if hop_weight <= 0 and centrality <= 0 and source_weight <= 0:
        return fused
    if source_weight > 0:
        src = _source_list(q, retriever, graph, fused, parts.title if parts.long else text, s)
        if src:
            lists["source"], weights["source"] = src, source_weight
            fused = _fuse(q, lists, weights, text, parts, False, s)
    if hop_weight > 0:
        top: list[str] = []
        for f in fused:
            if len(top) >= s.hop_files:
                break
            if (p := q.path(f.doc)) not in top:
                top.append(p)
        near = G.neighbours(graph, retriever.path_parts, top)
        hop = G.hop_list(q, near, s.top_n)
        if hop:
            lists["hop"], weights["hop"] = hop, hop_weight
            fused = _fuse(q, lists, weights, text, parts, False, s)
    if centrality > 0:
        ranks = G.file_rank(graph, retriever.path_parts, graph.memo)
        for f in fused:
            f.score *= 1.0 + centrality * ranks.get(q.path(f.doc), 0.0)
        _in_rank_order(q, fused)
    return fused


_NAMES_A_SPEC = re.compile(r"\bspecs?\b", re.I)


def _tests_after_source(
    q: Retrieval[Any], fused: list[Fused], text: str, parts: QueryParts, code_like: bool, factor: float
) -> None:
    """Scale test files by ``factor`` once more in the final order of a short query that reads as a change
    description (``Fix ...``, ``feat: ...``; unless it asks for tests): the change is to the source. The
    test prior of :func:`apply_priors` keeps them among the first files the source list reads for what
    they point at; here they make way for the source itself. A description of what code does
    (``L{URL.remove} removes every ...``, a docstring) may well ask for a test: it is left alone."""
    if factor == 1 or code_like or parts.long or not reads_as_change(text) or asks_for_tests(text):
        return
    if _NAMES_A_SPEC.search(text):
        return  # "the flaky retry spec": a spec is a test it names
    for f in fused:
        if is_test_path(q.path(f.doc)):
            f.score *= factor
    _in_rank_order(q, fused)


def is_source(path: str) -> bool:
    """Whether ``path`` is a source file (not docs, config, data, examples... nor a test)."""
    return filekinds.kind_of(path) == filekinds.SOURCE and not is_test_path(path)


def _source_list(
    q: Retrieval[Any],
    retriever: Retriever,
    graph: SymbolGraph,
    fused: list[Fused],
    about: str,
    s: SearchSettings,
) -> list[Key]:
    """The source files the docs pages, changelogs, examples and tests among the first ``source_from``
    files describe (see :func:`graphrank.described_files`), each by its best BM25 chunk. A kind the
    query is about (``about``: tests, docs...) is an answer, not a pointer."""
    low = about.lower()
    exempt = filekinds.kinds_asked_about(set(re.findall(r"[\w.-]+", low)))
    tests_asked = "test" in low
    pointers: list[tuple[int, str, str, bool]] = []
    seen: set[str] = set()
    for f in fused:
        p = q.path(f.doc)
        if p in seen:
            continue
        seen.add(p)
        if len(seen) > s.source_from:
            break
        is_test = is_test_path(p)
        if is_source(p) or (is_test and tests_asked) or filekinds.kind_of(p) in exempt:
            continue
        pointers.append((len(seen), p, q.chunk(f.doc).text, is_test))
    if not pointers:
        return []
    described = G.described_files(graph, retriever.path_parts, pointers, is_source)
    return G.hop_list(q, described, s.top_n)


def _labelled_by_pattern(top: list[Fused], hits: list[Hit], pattern: PatternList[Key] | None) -> list[Hit]:
    """A name pattern's matches labelled by the definition each matched (a chunk is labelled by its
    first definition: ``MockTransport`` sits in the chunk of ``class SyncStream``; a constant by its
    name); others as they are."""
    if pattern is None:
        return hits
    out = []
    for f, h in zip(top, hits, strict=True):
        label = pattern.labels.get(f.doc)
        if label is None and h.ranks.get("symbol") and h.best_piece:
            label = symbol_at_line(h, h.best_piece[0])
        out.append(h if label is None else replace(h, symbol=label))
    return out


def _pattern_first(fused: list[Fused], pattern: PatternList[Key] | None) -> list[Fused]:
    """A name pattern's matches first, in the pattern list's order (the other lists only order what it
    does not hold); any other query's as it is."""
    if pattern is None:
        return fused
    return sorted(fused, key=lambda f: (0, f.ranks["symbol"]) if f.ranks.get("symbol") else (1, 0))


def _read_as_pattern(asked: AskedPattern | None, pattern: PatternList[Key] | None) -> str | None:
    """What a name pattern was read as, when its definitions are the symbol list (``pattern``: only
    made for one asked)."""
    return f"the definitions named like {asked.glob.text}" if asked and pattern else None


def _pattern_list(
    q: Retrieval[Any],
    retriever: Retriever,
    asked: AskedPattern | None,
    n: int,
    found: dict[str, list[Key]],
    piece_spans: dict[Key, tuple[int, int]],
) -> PatternList[Key] | None:
    """The definitions of the names a name pattern matches as the symbol list (None, the symbol list
    as it was, when the query is no pattern or no live chunk defines a name it matches)."""
    if asked is None:
        return None
    got = glob_list(q, retriever.graph, asked, n)
    if not got.keys:
        return None
    found["symbol"] = got.keys
    piece_spans.update(got.lines)
    return got


def _lexical_lists(
    q: Retrieval[Any],
    retriever: Retriever,
    text: str,
    parts: QueryParts,
    n: int,
    found: dict[str, list[Key]],
    piece_spans: dict[Key, tuple[int, int]],
    uses: UsesAsked | None = None,
) -> bool:
    """Add the keyword-side lists but phrases to ``found``; True when the query names a path outright."""
    found["bm25"] = q.bm25(n)
    found["piece"], spans = q.piece_bm25(n)
    piece_spans.update(spans)
    if uses is not None:  # who calls a name, its tests: where the graph says it is used
        found["uses"], lines = L.use_list(q, retriever.graph, uses, n)
        piece_spans.update(lines)
    found["symbol"] = L.symbol_list(q, text, parts, n)
    if parts.long:
        found["path"] = L.mention_list(q, parts, retriever.path_parts, n)
        return False
    found["path"], explicit = L.path_list(
        q, text, retriever.path_parts, n, L.looks_like_code(text), tests=asks_for_tests(text)
    )
    places = locations(text)
    if places:  # "pkg/mod.py:12", a traceback frame: the chunk at that line, its preview at the line
        found["line"], lines = L.location_list(q, places, retriever.path_parts, n)
        piece_spans.update(lines)
    return explicit


def _typos_fixed(
    parsed: ParsedQuery, parts: QueryParts, stats: TermStats | None, typing: bool, wanted: bool
) -> tuple[ParsedQuery, QueryParts, str | None]:
    """The query with its misspelt words fixed (see :mod:`spelling`), its parts, and the fixed text
    (None, and the query as it was, when no word needed it or ``wanted`` is False)."""
    fixed = corrected(parsed.text, stats, typing=typing) if wanted else None
    if fixed is None:
        return parsed, parts, None
    return replace(parsed, text=fixed), analyze(fixed), fixed


def _pasted_line(parsed: ParsedQuery) -> tuple[ParsedQuery, str | None]:
    """A pasted error or log line without its date and time (no word of the code; their digits pulled
    chunks of numbers into the BM25 list), and its message; any other query as it is, and None."""
    message = error_message(parsed.text)
    if message is None:
        return parsed, None
    return replace(parsed, text=without_timestamp(parsed.text)), message


def _asked_about_a_name(
    parsed: ParsedQuery, retriever: Retriever | None = None
) -> tuple[ParsedQuery, UsesAsked | None, str | None]:
    """A short question about one name as what to search for: its uses or tests (``who calls send``:
    the name, and what is asked; see :func:`~aide_tui.core.search.query.asked_uses`) or its definition
    (``where is Headers defined``: the name alone, see :func:`~aide_tui.core.search.query.asked_name`;
    ``client send``: ``Client.send`` when ``retriever``'s graph says so, see :func:`_member_in_words`);
    any other query as it is. With what the question was read as, for the front ends to say."""
    uses = asked_uses(parsed.text)
    if uses is not None:
        uses = _as_the_code_names_it(uses, retriever)
        said = (
            f"tests using {uses.name}" if uses.tests
            else f"where {uses.name} is raised" if uses.raises
            else f"imports of {uses.name}" if uses.imports
            else f"uses of {uses.name}"
        )  # fmt: skip
        return replace(parsed, text=uses.as_query()), uses, said
    subtypes = asked_subclasses(parsed.text)
    graph = retriever.graph if subtypes is not None and retriever is not None else None
    if subtypes is not None and graph is not None and _has_subtypes(graph, subtypes.name):
        return replace(parsed, text=subtypes.as_query()), subtypes, f"subclasses of {subtypes.name}"

    name = asked_name(parsed.text)
    if name is None:
        found, member = _member_in_words(parsed, retriever)
        return found, None, member
    return replace(parsed, text=name), None, f"the definition of {name}"


def _as_the_code_names_it(uses: UsesAsked, retriever: Retriever | None) -> UsesAsked:
    """The name a question about uses means: as written, or its private form when only that is in the
    code (``who calls send_single_request`` when the code has ``_send_single_request``). A plain word
    stays a word (``tests for headers`` is not about a ``_headers`` attribute)."""
    graph = retriever.graph if retriever is not None else None
    last = last_part(uses.name)
    if graph is None or not last or last.startswith("_") or not reads_as_code(last):
        return uses
    if graph.has_references(last, False) or graph.definitions(last, False):
        return uses
    for private in ("_" + last, "__" + last):
        if graph.has_references(private) or graph.definitions(private):
            return replace(uses, name=uses.name[: len(uses.name) - len(last)] + private)
    return uses


def _has_subtypes(graph: SymbolGraph, name: str) -> bool:
    """Whether the graph knows a type declared with ``name`` (its last part) as a base."""
    last = last_part(name)
    refs = graph.references(last, True) or graph.references(last, False)
    return bool(L.subtype_declarations(graph, refs, last, most=1))


def _member_in_words(parsed: ParsedQuery, retriever: Retriever | None) -> tuple[ParsedQuery, str | None]:
    """A member named by its type in words (``client send``, ``send method of Client``) searched as the
    qualified name (``Client.send``) when ``retriever``'s graph defines that member inside a type
    spelled so (in any case); any other query as it is, and None."""
    asked = member_words(parsed.text)
    graph = retriever.graph if asked is not None and retriever is not None else None
    if asked is None or graph is None:
        return parsed, None
    owner, member = asked
    owners = {
        parent for _, d in graph.definitions(member)
        if (parent := d.qualname.rpartition(".")[0].rpartition(".")[2]).lower() == owner.lower()
    }  # fmt: skip
    if len(owners) != 1:
        return parsed, None
    name = f"{owners.pop()}.{member}"
    return replace(parsed, text=name), f"the definition of {name}"


def _verbatim_lists(
    q: Retrieval[Any],
    text: str,
    parts: QueryParts,
    message: str | None,
    n: int,
    found: dict[str, list[Key]],
    path_parts: Mapping[str, Iterable[str]] | None = None,
    whole: bool = True,
) -> str | None:
    """Add the lists of text the query quotes or copies, each looked for among the BM25 lists' chunks
    but the first: its "double-quoted" phrases (in a pasted text only the prose's: not code, not
    traceback file names; none in pasted code, whose strings nobody quoted), a pasted error line's
    ``message`` (where it is raised), and a passage pasted from a file (code, a comment, a docstring:
    where it is). Returns a release number the query asks for that no chunk holds (see
    :func:`~aide_tui.core.search.lists.missing_release`), when the search reads the ``whole`` code
    (no filter)."""
    quoted = parts.prose_without_frames() if parts.long else without_frames(text)
    code = pasted_code(quoted) is not None  # an issue's prose around its code blocks and frames is no code
    missing = None
    if not code:
        notes = release_note_files(path_parts) if path_parts is not None and asked_versions(quoted) else []
        found["phrase"] = L.phrase_list(q, quoted, n, notes)
        missing = L.missing_release(q, quoted, found["phrase"]) if whole else None
    passage = message is None and verbatim_words(text) and (code or not parts.long)  # not an issue's
    if message is None and not passage:
        return missing
    m = VERBATIM_POOL if passage else None  # a message is looked for in the whole lists
    pool = dict.fromkeys([*found.get("bm25", [])[:m], *found.get("piece", [])[:m]])
    if message is not None:
        found["message"] = L.trigram_list(q, message, pool, n)
    else:
        share = VERBATIM_SHARE if code else PROSE_VERBATIM_SHARE
        found["verbatim"] = L.trigram_list(q, text, pool, n, floor=share)
    return missing


Closest = tuple[float | None, float | None]  # the best dense similarity, and the model's floor


def _dense_list(
    q: Retrieval[Any], texts: list[str], s: SearchSettings, encoder: QueryEncoder
) -> tuple[list[Key] | None, str | None, dict[Key, tuple[int, int]], Closest | None]:
    """The dense list (None when unusable, with why), with each chunk's best-piece lines, and how close
    the closest chunk is with the model's floor (None when unusable; see :func:`far_from_everything`).

    Several texts (a pasted issue's whole text, title, prose and code) each rank the chunks; their
    rankings are fused by RRF into one list.
    """
    if encoder.encode is None:
        return None, encoder.error, {}, None
    try:
        emb_id, vectors = encoder.encode(texts)
    except EmbedderError as exc:
        return None, str(exc), {}, None
    got = q.dense(vectors, emb_id, s.top_n)
    if got.degraded is not None:
        return None, got.degraded, {}, None
    closest = (got.best, dense_floor(s, emb_id))
    if len(got.lists) <= 1:  # a chunk ranks by its best piece
        return (got.lists[0] if got.lists else []), None, got.spans, closest
    fused = rrf({str(i): keys for i, keys in enumerate(got.lists)}, k=s.rrf_k, order=q.order)
    return [f.doc for f in fused[: s.top_n]], None, got.spans, closest


def _static_list(
    q: Retrieval[Any], text: str, s: SearchSettings, encoder: QueryEncoder
) -> tuple[list[Key] | None, dict[Key, tuple[int, int]], Closest | None]:
    """The static tier's list (None when the tier is off or not ready), each chunk's best-piece lines,
    and how close the closest chunk is (with the tier's floor)."""
    if encoder.static is None:
        return None, {}, None
    try:
        got_vec = encoder.static(text)
    except EmbedderError:
        return None, {}, None
    if got_vec is None:
        return None, {}, None
    static_id, vector = got_vec
    got = q.static(vector, static_id, s.top_n)
    if got.degraded is not None or not got.lists:
        return None, {}, None
    return got.lists[0], got.spans, (got.best, dense_floor(s, static_id))


def dense_floor(s: SearchSettings, embedder_id: str) -> float | None:
    """The similarity under which the closest chunk is not related to the query: ``no_match_floor``
    for a model it was calibrated on; None (no floor) for another, whose similarities are on another
    scale, or when it is 0."""
    name = embedder_id.split(":")[1] if embedder_id.startswith("builtin:") else ""
    return s.no_match_floor if s.no_match_floor > 0 and name in CALIBRATED_MODELS else None


def nonsense(text: str, stats: TermStats | None, best: float | None, floor: float | None) -> str | None:
    """Why nothing answers a query whose words all read as no words of this code base (see
    core/wordshape.py), when its closest chunk is not close enough to trust anyway (None otherwise;
    only for a calibrated model, and a store that knows its vocabulary)."""
    if stats is None or best is None or floor is None or best >= NONSENSE_CEILING:
        return None
    if not reads_as_nonsense(text, stats.letter_trigrams()):
        return None
    return (
        f"no word of the query is in the index or reads like a word of this code (closest code: "
        f"similarity {best:.2f}): check the spelling, or describe the code in other words"
    )


def far_from_everything(best: float | None, floor: float | None) -> str | None:
    """Why nothing answers a query that no lexical list supports, when even its closest chunk is below
    the floor (None otherwise), with a hint."""
    if best is None or floor is None or best >= floor:
        return None
    n = next((d for d in (2, 3, 4) if f"{best:.{d}f}" != f"{floor:.{d}f}"), 6)  # never "0.25, below 0.25"
    return (
        f"no word of the query is in the index and no code is close to it in meaning (best similarity "
        f"{best:.{n}f}, below {floor:.{n}f}): check the spelling, or describe the code in other words"
    )


def apply_priors(
    q: Retrieval[Any],
    fused: Sequence[Fused],
    text: str,
    parts: QueryParts,
    code_like: bool,
    s: SearchSettings,
) -> None:
    """Scale fused scores by the test-path and file-kind priors, then add file-level evidence."""
    test_weight = s.long_test_weight if parts.long else s.test_weight
    if test_weight != 1 and not asks_for_tests(parts.title if parts.long else text):
        for f in fused:
            if is_test_path(q.path(f.doc)):
                f.score *= test_weight
    strength = s.kind_prior if parts.long else (0.0 if code_like else s.prose_kind_prior)
    if strength > 0:
        about = parts.title if parts.long else text
        exempt = filekinds.kinds_asked_about(set(re.findall(r"[\w.-]+", about.lower())))
        if asked_versions(about):  # a release number asked for: its notes are the answer
            exempt |= {filekinds.CHANGELOG, filekinds.DOCS}
        if not parts.long and not reads_as_change(text):
            exempt.add(filekinds.TOOLING)  # a question may well be about how the project is built
        named = exempt | {filekinds.TOOLING}
        for f in fused:
            # a file whose name or definition the text names is what it is about, tooling or not
            asked = "symbol" in f.ranks or "path" in f.ranks
            f.score *= filekinds.prior(q.path(f.doc), named if asked else exempt, strength)
    agg = s.file_agg if parts.long else s.prose_file_agg
    if agg > 0:
        aggregate_files(fused, q.file_of, agg)


_HOW_QUESTION = re.compile(r"\s*how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)\b|\s*how\s+to\b", re.I)


def asks_for_tests(text: str) -> bool:
    """Whether a query asks for test files (it says "test"), so their prior is lifted. A how-question
    (``how do I test my CLI``, ``how to change the session inside a test``) asks how to do it: the
    answer is the code that helps (a testing module), not the project's own tests (public eval: the
    two such questions, click's and flask's, MRR .33 → 1 and .10 → .25)."""
    low = text.lower()
    return "test" in low and not _HOW_QUESTION.match(low)


def aggregate_files(fused: Sequence[Fused], file_of: Callable[[Key], str], agg: float) -> None:
    """File-level evidence: a file's best chunk scores its best plus ``agg`` times the damped sum of
    its other chunks (the i-th next best counts 1/i), so a file hit in many places rises."""
    by_file: dict[str, list[Fused]] = {}
    for f in fused:
        by_file.setdefault(file_of(f.doc), []).append(f)
    for items in by_file.values():
        if len(items) < 2:
            continue
        items.sort(key=lambda f: -f.score)
        extra = sum(f.score / i for i, f in enumerate(items[1:], start=1))
        items[0].score += agg * extra


def _hit(q: Retrieval[Any], f: Fused, terms: list[str], span: tuple[int, int] | None) -> Hit:
    """The result row of fused item ``f``."""
    c = q.chunk(f.doc)
    ranks: dict[str, int | None] = {"bm25": f.ranks.get("bm25"), "dense": f.ranks.get("dense")}
    for extra in ("symbol", "path", "piece", "phrase", "message", "verbatim", "line", "uses", "hop",
                  "source", "static"):  # fmt: skip
        if extra in f.ranks:
            ranks[extra] = f.ranks[extra]
    return Hit(c.path, c.start_line, c.end_line, f.score, c.symbol, c.language, ranks, terms, c.text,
               best_piece=span, workspace=c.workspace, root=c.root, file_hash=c.file_hash)  # fmt: skip
