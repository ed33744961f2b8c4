"""The ranked lists a query asks a retriever for, built the same way over any store.

Each list is a short function over a :class:`~aide_tui.core.search.retriever.Retrieval[K]`: which names
or files the query points at is decided here, the store only looks them up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from aide_tui.core.filekinds import is_test_path
from aide_tui.core.model import Definition, Reference
from aide_tui.core.search.query import CODE_LIKE, Frame, QueryParts, UsesAsked, declared_name, last_part
from aide_tui.core.search.releases import asked_versions, heading_pattern, version_pattern
from aide_tui.core.search.retriever import Candidate, K, Retrieval, SymbolGraph
from aide_tui.core.store.pathindex import PathIndex
from aide_tui.core.tokens import STOPWORDS, identifiers, span_terms

MAX_PATH_WORDS = 300  # distinct words of a (pasted) query checked against file paths
MAX_VERSION_CANDIDATES = 1000  # chunks read for a release number beyond its release notes
_RELEASE_CORE = re.compile(r"\d+(?:\.\d+)+")  # a release number's numbers, without a pre-release tail
# definitions that may name a base type on their header lines (subtype_declarations)
TYPE_KINDS = frozenset(
    "class interface struct trait object record protocol mixin extension actor enum impl".split()
)
HEADER_LINES = 2  # a base on a Python class's header may come this many lines below its name


def _raising(name: str) -> re.Pattern[str]:
    """A line that raises or throws ``name`` (``raise X(``, ``throw new X(``, ``raise X from e``)."""
    return re.compile(rf"\b(?:raise|throw)\s+(?:new\s+)?(?:[\w.]+\.)?{re.escape(name)}\b")


def _rust_impl(trait: str) -> re.Pattern[str]:
    """``impl<...> path::Trait<...> for Type``: ``trait`` implemented (not a bound of the generics)."""
    return re.compile(
        rf"\s*(?:unsafe\s+)?impl\b(?:\s*<.*?>)?\s+(?:[\w:]+::)?{re.escape(trait)}\b(?:<.*?>)?\s+for\b"
    )


# how test files are named after what they test (file stems, lower case): Python, Go, JS/TS, Java, Ruby
TEST_FILE_FORMS = ("test_{}", "{}_test", "{}.test", "{}.spec", "{}test", "{}_spec", "{}tests")
TEST_WORDS = frozenset("test tests tested testing unit units spec specs".split())
MAX_SYMBOL_DEFS = 8  # a name defined in more chunks than this says little about where to look
QUOTED = re.compile(r'"([^"]{2,200})"')
CLI_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*\w")  # ``--follow-redirects``: looked for as written
MAX_FLAG_QUERY_WORDS = 3  # a flag in a longer query is mentioned, not asked for
# an upper-case name with underscores (``FORCE_COLOR``, ``XDG_CONFIG_HOME``): an environment variable, a
# setting or a constant, looked for as written in a short query (its words alone are everywhere)
CONSTANT = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w-])")
MAX_CONSTANT_QUERY_WORDS = 4
# one upper-case word asked for as a variable (``TERM environment variable``, ``COLUMNS env``): looked
# for in that case as a whole word ("term" and "columns" are everywhere; alone, ``API``, ``SSL`` or
# ``JSON`` is an acronym that code spells in lower case)
_CAPS_ASKED = re.compile(
    r"\s*([A-Z][A-Z0-9]{2,})(?:\s+(?:env|environment|variable|var|setting|constant)){1,2}\s*"
)
_WORD = re.compile(r"\w+")
_FILE_NAME = re.compile(r"[\w.-]+\.[a-z][a-z0-9]{0,5}")
_BACKTICKED = re.compile(r"`([^`]{1,80})`")
_COMMIT_SCOPE = re.compile(r"^\s*\w+\(([\w./-]{2,40})\)!?:")
MAX_MODULE_FILES = 3  # a module named in backticks or a commit scope that names more files is vague

Frames = list[tuple[str | None, int]]


def looks_like_code(text: str) -> bool:
    """A short query made of identifiers (``parse_header``, ``Client.send``, ``routing``) rather than
    prose. Two or three plain words with no code-like one and nothing in backticks are prose: a
    commit subject ("Fix environment proxies", "Remove dead code"). A declaration (``class Client``,
    ``type Command struct``) is code."""
    if declared_name(text):
        return True
    words = text.split()
    code = sum(bool(CODE_LIKE.search(w)) for w in words)
    if 2 <= len(words) <= 3 and not code and "`" not in text:
        return False
    return 0 < len(words) <= 3 or code * 2 >= len(words) > 0


# -- names ----------------------------------------------------------------------------------------------


def _name_candidates(name: str) -> list[str]:
    """A name and its last dotted part, when long enough and not a stopword."""
    return [
        c
        for c in dict.fromkeys([name, name.rsplit(".", 1)[-1]])
        if len(c) >= 3 and c.lower() not in STOPWORDS
    ]


def symbol_names(text: str, parts: QueryParts) -> list[tuple[str, float]]:
    """(name, weight) pairs to look up as definitions: for a pasted text the names it is about
    (weighted by where they occur); for a short query its identifiers (all of them when it has at most
    three words, else the code-like ones)."""
    if parts.long:
        return [(c, float(w)) for name, w in parts.names.items() for c in _name_candidates(name)]
    declared = declared_name(text)
    if declared:  # ``class Client(BaseClient)`` asks for Client, not its base, nor a class named "class"
        return [(c, 1.0) for c in _name_candidates(declared)]
    words = identifiers(CLI_FLAG.sub(" ", text))  # ``--follow-redirects`` names no function ``follow``
    short = len(words) <= 3
    named = [(c, 1.0) for w in words if short or CODE_LIKE.search(w) for c in _name_candidates(w)]
    return named + [(c, 1.0) for c in other_spellings(text) if len(c) >= 3 and (c, 1.0) not in named]


_CAMEL_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_PLAIN = re.compile(r"[a-z][a-z0-9]*")


def other_spellings(text: str) -> list[str]:
    """The one name a short query writes, in the other conventions it may be defined in:
    ``promptForValue`` → ``prompt_for_value``; ``prompt_for_value`` → ``promptforvalue`` (definitions
    are looked up in any case: ``promptForValue``, ``PromptForValue``); two or three plain words
    ``digest auth`` → ``digest_auth`` and ``digestauth`` (``DigestAuth``), and each with a leading
    underscore (``_digest_auth``, ``_DigestAuth``)."""
    words = text.split()
    if len(words) == 1:
        w = words[0].strip("()`'\"")
        if "_" in w.strip("_") and w.replace("_", "").isalnum():
            return [w.replace("_", "")]  # snake: camel and Pascal, looked up in any case
        if w[:1].islower() and w.isalnum() and any(c.isupper() for c in w):
            return ["_".join(p.lower() for p in _CAMEL_PART.findall(w))]  # camel: snake
        return []
    if 2 <= len(words) <= 3 and all(_PLAIN.fullmatch(w) for w in words):
        snake, joined = "_".join(words), "".join(words)
        return [snake, joined, "_" + snake, "_" + joined]  # a private name too (``_split_blueprint_path``)
    return []


def asked_names(text: str, parts: QueryParts) -> set[str]:
    """The names of :func:`symbol_names` that the query writes whole: the declared one, a word as
    typed, or a qualified word's last part (``Client.send``: ``send``), not a piece of a longer word
    (``--no-verify``: ``verify``)."""
    words = [w.strip("()[]{}<>:;,`'") for w in text.split()]
    declared = declared_name(text)
    spelled = set(other_spellings(text)) if not parts.long else set()
    return {
        name for name, _ in symbol_names(text, parts)
        if name == declared or name in spelled or any(w == name or w.endswith("." + name) for w in words)
    }  # fmt: skip


def symbol_list(r: Retrieval[K], text: str, parts: QueryParts, limit: int) -> list[K]:
    """Chunks defining the names the query mentions: an exact-case definition first, then by BM25. For a
    pasted text a chunk scores the weights of the names it defines; a name defined in more than
    MAX_SYMBOL_DEFS chunks is skipped."""
    names = symbol_names(text, parts)
    if not names:
        return []
    defs = r.defining(list(dict.fromkeys(n for n, _ in names)))
    scored: dict[K, float] = {}
    for name, weight in names:
        keys = defs.get(name.lower(), [])
        if parts.long and (not keys or len(keys) > MAX_SYMBOL_DEFS):
            continue
        shouted = bool(CONSTANT.fullmatch(name))  # FORCE_COLOR is the constant, not def force_color
        for k in keys:
            exact = name in r.defines(k)
            if shouted and not exact:
                continue
            if parts.long:
                scored[k] = scored.get(k, 0.0) + weight * (1.0 if exact else 0.5)
            else:
                scored[k] = max(scored.get(k, 0.0), 2.0 if exact else 1.0)
    return sorted(scored, key=lambda k: (-scored[k], -r.score(k), r.order(k)))[:limit]


# -- files ----------------------------------------------------------------------------------------------


def module_mentions(text: str) -> set[str]:
    """Lower-cased words a short text sets apart as code: inside backticks (```utils```), and a
    conventional commit's scope (``fix(console): ...``), which usually names the module changed."""
    words = {w for span in _BACKTICKED.findall(text) for w in identifiers(span)}
    m = _COMMIT_SCOPE.match(text)
    if m:
        words.update(identifiers(m.group(1)))
    return words


def _module_files(path_parts: Mapping[str, Iterable[str]], word: str) -> set[str]:
    """The files whose stem or a folder is ``word`` as written (case too: ```Segment``` is a class,
    not ``segment.py``); empty when more than MAX_MODULE_FILES."""
    found = {
        p for p in path_parts.get(word.lower(), ())
        if word in p.split("/")[:-1] or p.rsplit("/", 1)[-1].rsplit(".", 1)[0] == word
    }  # fmt: skip
    return found if len(found) <= MAX_MODULE_FILES else set()


def test_files_of(word: str, path_parts: Mapping[str, Iterable[str]]) -> list[str]:
    """The files named as the tests of ``word`` (lower case) in the usual conventions: ``test_word.py``,
    ``word_test.go``, ``word.test.ts``, ``word.spec.js``, ``WordTest.java``."""
    return [p for form in TEST_FILE_FORMS for p in path_parts.get(form.format(word), ())]


def named_files(
    text: str, path_parts: Mapping[str, Iterable[str]], bare_words: bool, tests: bool = False
) -> tuple[dict[str, int], bool]:
    """Indexed files the query names, each with a weight (2 per explicit path or file name, or a module
    set apart as code that names at most MAX_MODULE_FILES files; 1 per bare word when ``bare_words``;
    1 per test file named after a word when the query asks for ``tests``: ``tests for headers`` names
    ``test_headers.py`` as explicitly as a file name), and whether any was explicit; empty when none or
    more than 50 match.
    ``path_parts`` maps a lower-cased path component (or file stem) to the files having it."""
    hits: dict[str, int] = {}
    explicit = False
    words = dict.fromkeys(raw.lower().strip("./-") for raw in re.findall(r"[\w./-]+", text))
    for module in module_mentions(text):
        for p in _module_files(path_parts, module) if len(module) >= 3 else ():
            hits[p] = hits.get(p, 0) + 2
            explicit = True
    for word in list(words)[:MAX_PATH_WORDS]:
        if len(word) < 3 or word in STOPWORDS:
            continue
        if "/" in word or _FILE_NAME.fullmatch(word):
            named = [
                p  # files named, or under, the last part
                for p in path_parts.get(word.rsplit("/", 1)[-1], ())
                if (low := p.lower()) == word or low.endswith("/" + word) or f"/{word}/" in f"/{low}"
            ]
            if not named and word.count("/") >= 2:  # a longer path than the workspace's: a link's
                named = resolve_path(path_parts, word)  # (github.com/o/r/blob/main/pkg/mod.py), an install's
            for p in named:
                hits[p] = hits.get(p, 0) + 2
                explicit = True
            continue
        if bare_words:  # ``compat`` names ``_compat.py`` (a private module), ``version`` ``__version__.py``
            named = [*path_parts.get(word, ())]
            named += [*path_parts.get("_" + word, ()), *path_parts.get(f"__{word}__", ())]
            for p in dict.fromkeys(named):
                hits[p] = hits.get(p, 0) + 1
        if tests and word not in TEST_WORDS:
            for p in test_files_of(word, path_parts):  # a file named the way the query asks for it
                hits[p] = hits.get(p, 0) + 1
                explicit = True
    return (hits, explicit) if len(hits) <= 50 else ({}, False)


def path_list(
    r: Retrieval[K],
    text: str,
    path_parts: Mapping[str, Iterable[str]],
    limit: int,
    bare_words: bool,
    tests: bool = False,
) -> tuple[list[K], bool]:
    """Chunks of files named by the query, by BM25 score within them; and whether a path was explicit.

    Explicit paths (``cli/main.go``, ``server.py``, as in a stack trace) always count; bare words
    (``routing``) only when ``bare_words`` (identifier-like queries); the test files of a word when the
    query asks for ``tests``.
    """
    hits, explicit = named_files(text, path_parts, bare_words, tests)
    if not hits:
        return [], False
    keys = r.in_files(hits, limit)
    keys.sort(key=lambda k: (-hits[r.path(k)], -r.score(k), r.order(k)))
    return keys[:limit], explicit


def resolve_path(path_parts: Mapping[str, Iterable[str]], written: str) -> list[str]:
    """Indexed files a written path names: those sharing the longest tail of path components.

    ``/usr/lib/python3/site-packages/pkg/mod.py`` finds ``src/pkg/mod.py``; a bare file name must
    be unambiguous enough (at most 3 files), a longer path must share at least two components.
    """
    comps = [c for c in written.replace("\\", "/").lower().split("/") if c and c not in (".", "..")]
    if not comps:
        return []
    last = comps[-1]
    two = "/".join(comps[-2:])
    # only a file in the written path's folder can share two components or more: compare just those
    # (thousands of files share a name such as __init__.py on a big workspace)
    if len(comps) > 1 and isinstance(path_parts, PathIndex):
        deeper = [(p, p.lower()) for p in path_parts.named_in_folders_named(last, comps[-2])]
    else:
        deeper = [
            (p, low) for p in path_parts.get(last, ()) if (low := p.lower()) == two or low.endswith("/" + two)
        ] if len(comps) > 1 else []  # fmt: skip
    if not deeper:
        named = [
            (p, low)
            for p in path_parts.get(last, ())
            if (low := p.lower()) == last or low.endswith("/" + last)
        ]
        best, best_len = [p for p, _ in named], 1 if named else 0
    else:
        best, best_len = _longest_tails(deeper, comps)
    if not best or (best_len < 2 and best_len < len(comps)) or (best_len == 1 and len(best) > 3):
        return []
    return sorted(best)


def _longest_tails(paths: list[tuple[str, str]], comps: list[str]) -> tuple[list[str], int]:
    """The paths (each with its lower case) sharing the longest tail of components with ``comps``, and
    its length."""
    best: list[str] = []
    best_len = 0
    for p, low in paths:
        pc = low.split("/")
        common = 0
        while common < min(len(pc), len(comps)) and pc[-1 - common] == comps[-1 - common]:
            common += 1
        if common > best_len:
            best, best_len = [p], common
        elif common == best_len:
            best.append(p)
    return best, best_len


def mentioned_files(parts: QueryParts, resolve: Callable[[str], list[str]]) -> dict[str, Frames]:
    """Indexed files a pasted text names, in order (traceback frames innermost first, then written
    paths), each with its frames' (function, line); empty when none or more than 30 are named."""
    files: dict[str, Frames] = {}
    for f in reversed(parts.frames):
        for p in resolve(f.path):
            files.setdefault(p, []).append((f.func, f.line))
    for written in parts.paths:
        for p in resolve(written):
            files.setdefault(p, [])
    return files if len(files) <= 30 else {}


def _holds_frame(c: Candidate, frames: Frames) -> bool:
    """Whether a chunk defines a frame's function or holds its line."""
    return any(
        (func and (func in c.defines or func.rsplit(".", 1)[-1] in c.defines))
        or c.start_line <= line <= c.end_line
        for func, line in frames
    )


def mention_list(
    r: Retrieval[K], parts: QueryParts, path_parts: Mapping[str, Iterable[str]], limit: int
) -> list[K]:
    """Chunks of the files a pasted text names: traceback frames innermost first, then written paths.
    Each file leads with the chunk defining the frame's function (or holding its line)."""
    files = mentioned_files(parts, lambda written: resolve_path(path_parts, written))
    if not files:
        return []
    by_file: dict[str, list[K]] = {p: [] for p in files}
    for k in r.all_in_files(files):
        by_file.setdefault(r.path(k), []).append(k)
    heads: list[K] = []
    tails: list[K] = []
    for p, frames in files.items():
        keys = by_file[p]
        if not keys:
            continue

        def key(k: K, frames: Frames = frames) -> tuple[int, float, object]:
            return (0 if _holds_frame(r.chunk(k), frames) else 1, -r.score(k), r.order(k))

        keys.sort(key=key)  # type: ignore[arg-type]  # order() is comparable within one retriever
        heads.append(keys[0])
        tails.extend(keys[1:3])
    return (heads + tails)[:limit]


# -- phrases --------------------------------------------------------------------------------------------


def phrase_list(r: Retrieval[K], text: str, limit: int, release_notes: Sequence[str] = ()) -> list[K]:
    """Chunks with a BM25 score holding every "double-quoted" span of the query verbatim (any case),
    looked for among the chunks that hold every span's words as terms (see :func:`span_terms`: whole
    words, the last one as the start of a word; a span of stopwords alone does not narrow): a quoted
    span on a big workspace no longer reads every chunk with a query word, and a second span narrows
    what the first leaves (``"is not None" ... "def save"``: the chunks holding a word that starts
    with ``save`` too). A command-line flag asked for (``--no-verify``, ``--timeout seconds``: at most
    three words) counts as quoted: its words are everywhere, the flag itself where the option is
    declared and documented; a question that mentions a flag in passing is about something else. So
    does an upper-case name with underscores in a query of at most four words (``FORCE_COLOR``,
    ``FLASK_DEBUG environment variable``: where it is read or set), and one upper-case word asked for
    as a variable (``TERM env``, ``COLUMNS environment variable``); both in that case, as whole words
    (the function ``force_color`` is not the variable). A release number asked for (releases.py) is
    looked for as a whole number, in the ``release_notes`` files too, headings of its notes first."""
    n_words = len(text.split())
    flags = CLI_FLAG.findall(text) if n_words <= MAX_FLAG_QUERY_WORDS else []
    # upper-case names are looked for in that case, as whole words
    caps = CONSTANT.findall(text) if n_words <= MAX_CONSTANT_QUERY_WORDS else []
    alone = _CAPS_ASKED.fullmatch(text)
    if alone is not None:
        caps.append(alone.group(1))
    versions = asked_versions(text)
    exact = [re.compile(rf"(?<!\w){c}(?!\w)") for c in dict.fromkeys(caps)]
    exact += [version_pattern(v) for v in versions]
    phrases = [p.lower() for p in [*QUOTED.findall(text), *flags, *caps, *versions] if p.strip()]
    if not phrases:
        return []
    held: set[K] | None = None
    told = True  # the store can say which chunks hold a phrase's terms
    for phrase in dict.fromkeys(phrases):
        all_of, any_of, prefix = span_terms(phrase)
        if not (all_of or prefix):
            continue
        got = r.holding(all_of, any_of, prefix)
        if got is None:  # the store cannot tell: every chunk with a BM25 score is a candidate
            held, told = None, False
            break
        held = set(got) if held is None else held.intersection(got)
    cands: Iterable[K]
    if held is not None and versions and release_notes and len(held) > MAX_VERSION_CANDIDATES:
        # a number's parts are common terms (24, 10): its notes, and what the keywords rank best
        cands = held.intersection([*r.all_in_files(release_notes), *r.bm25(MAX_VERSION_CANDIDATES)])
    elif held is not None:  # a chunk holding every phrase holds their terms, release notes included
        cands = held
    elif versions and release_notes and told and set(phrases) <= set(versions):
        cands = r.all_in_files(release_notes)  # a number without a term (2.3.1): where the notes are
    else:
        cands = r.positive()
        if versions and release_notes:
            cands = dict.fromkeys([*cands, *r.all_in_files(release_notes)])

    def holds(text: str) -> bool:
        low = text.lower()  # once per chunk, not once per phrase
        return all(p in low for p in phrases) and all(x.search(text) for x in exact)

    hits = [k for k in cands if holds(r.chunk(k).text)]
    headings = [heading_pattern(v) for v in versions]

    def heads(k: K) -> bool:
        return any(h.search(r.chunk(k).text) for h in headings)

    hits.sort(key=lambda k: (not heads(k) if headings else False, -r.score(k), r.order(k)))
    return hits[:limit]


def missing_release(r: Retrieval[K], text: str, phrase_hits: Sequence[K]) -> str | None:
    """A release number ``text`` asks for (releases.py) that no chunk of the code holds, when the
    phrase list found none: looked for in every chunk holding its terms (its parts of two digits or
    more), without a pre-release tail (``2.0.0-rc1`` is held by ``2.0.0rc1``) and as the start of a
    longer number (``release 0.28`` is held by ``0.28.1``). None when one is held, or when that cannot
    be told: a number without such a part (``8.1.7``), or one whose terms more than
    ``MAX_VERSION_CANDIDATES`` chunks hold."""
    if phrase_hits:
        return None
    for number in asked_versions(text):
        core = _RELEASE_CORE.match(number)
        if core is None:
            return None
        all_of, any_of, prefix = span_terms(core.group())
        if not (all_of or any_of or prefix):
            return None
        held = r.holding(all_of, any_of, prefix)
        if held is None:
            return None
        chunks = list(held)
        if len(chunks) > MAX_VERSION_CANDIDATES:
            return None
        starts = re.compile(rf"(?<![\w.])v?{re.escape(core.group())}(?!\d)", re.IGNORECASE)
        if not any(starts.search(r.chunk(k).text) for k in chunks):
            return number
    return None


def trigram_list(r: Retrieval[K], quoted: str, pool: Iterable[K], limit: int, floor: float = 0.0) -> list[K]:
    """The chunks of ``pool`` holding the most of ``quoted``'s word trigrams verbatim (any case,
    punctuation, indentation and line breaks aside), and at least the share ``floor`` of them: a value
    the program filled into an error message, or a line changed in pasted code, breaks only the
    trigrams around it. Ties keep the pool's order."""
    words = _WORD.findall(quoted.lower())
    grams = set(zip(words, words[1:], words[2:], strict=False))
    if not grams:
        return []
    need = max(1.0, floor * len(grams))
    of_word: dict[str, set[tuple[str, str, str]]] = {}
    for g in grams:
        for w in g:
            of_word.setdefault(w, set()).add(g)
    hits = []
    for i, k in enumerate(pool):
        low = r.chunk(k).text.lower()
        if floor:  # a word the chunk lacks even as a substring breaks every trigram it is in
            broken = set().union(*(gs for w, gs in of_word.items() if w not in low))
            if len(grams) - len(broken) < need:
                continue
        text = _WORD.findall(low)
        held = len(grams.intersection(zip(text, text[1:], text[2:], strict=False)))
        if held >= need:
            hits.append((-held, i, k))
    hits.sort(key=lambda h: h[:2])
    return [k for _, _, k in hits[:limit]]


def location_list(
    r: Retrieval[K], places: Sequence[Frame], path_parts: Mapping[str, Iterable[str]], limit: int
) -> tuple[list[K], dict[K, tuple[int, int]]]:
    """The chunk holding each place's line (``File "x.py", line 12``, ``x.py:12``) in the indexed files its
    path names, the narrowest first, in the order written; a frame's function, when no chunk of the file
    holds the line (the file changed since), names the chunk that defines it. With the line each chunk
    was found at (where its preview lands)."""
    out: list[K] = []
    lines: dict[K, tuple[int, int]] = {}
    for place in places:
        files = resolve_path(path_parts, place.path)
        if not files or len(files) > 3:
            continue
        keys = r.all_in_files(files)
        r.fetch(keys)
        chunks = [(r.chunk(k), k) for k in keys]
        holding = [(c, k) for c, k in chunks if c.start_line <= place.line <= c.end_line]
        at_line = bool(holding)
        if not holding and place.func:
            holding = [(c, k) for c, k in chunks if _holds_frame(c, [(place.func, -1)])]
        if not holding:
            continue
        holding.sort(key=lambda ck: (ck[0].end_line - ck[0].start_line, r.order(ck[1])))  # type: ignore[arg-type, return-value]
        k = holding[0][1]
        if k not in out:
            out.append(k)
            if at_line:
                lines[k] = (place.line, place.line)
    return out[:limit], lines


# -- uses -----------------------------------------------------------------------------------------------

MAX_USE_FILES = 60  # files read for a name's uses (the ones with the most uses first)
_IMPORT = "import"


def subtype_declarations(
    graph: SymbolGraph, refs: Sequence[tuple[str, Reference]], name: str, most: int | None = None
) -> list[tuple[str, Reference]]:
    """The references to ``name`` that declare a type with it as a base: on the header of a class,
    interface, struct or trait that the graph defines there (``class HTTPTransport(BaseTransport):``,
    ``class Foo extends Bar implements Baz``; a Python header may run over two more lines), or on a
    Rust ``impl Name for Type`` line; the first ``most`` of them when given."""
    defs: dict[str, list[Definition]] = {}
    rust_impl = _rust_impl(name)
    out = []
    for path, ref in refs:
        if path not in defs:
            defs[path] = [d for d in graph.definitions_in(path) if d.kind in TYPE_KINDS and d.name != name]
        if path.endswith(".rs"):  # a bound in a struct's generics is no base: only impl lines
            declares = rust_impl.match(graph.line_text(path, ref.line) or "") is not None
        else:
            below = HEADER_LINES if path.endswith((".py", ".pyi")) else 0  # class X(\n    Base,\n):
            declares = any(d.line <= ref.line <= d.line + below for d in defs[path])
        if declares:
            out.append((path, ref))
            if most is not None and len(out) >= most:
                break
    return out


def use_list(
    r: Retrieval[K], graph: SymbolGraph | None, asked: UsesAsked, limit: int
) -> tuple[list[K], dict[K, tuple[int, int]]]:
    """The chunks where a name is used (the symbol graph's references: calls, attributes, names, and
    imports last), the most uses first; source before tests, or tests alone when tests are asked for
    (``tests for echo``), or only the declarations of its subtypes when they are (``subclasses of
    BaseTransport``); the imports first when where it is imported is (``who imports _compat``). A
    qualified name's uses are its last part's (``Client.send``: every ``.send``; the graph does not
    know receivers' types). With each chunk's first use line (where its preview lands)."""
    if graph is None:
        return [], {}
    name = last_part(asked.name)
    refs = graph.references(name, True) or graph.references(name, False)
    if asked.subclasses:
        refs = subtype_declarations(graph, refs, name)
    if asked.raises:  # the raise and throw sites, when the graph shows any
        raising = _raising(name)
        refs = [(p, ref) for p, ref in refs if raising.search(graph.line_text(p, ref.line) or "")] or refs
    by_file: dict[str, list[tuple[int, bool]]] = {}
    for path, ref in refs:
        if asked.tests and not is_test_path(path):
            continue
        by_file.setdefault(path, []).append((ref.line, ref.kind == _IMPORT))
    files = sorted(by_file, key=lambda p: -len(by_file[p]))[:MAX_USE_FILES]
    ranked: list[tuple[tuple[bool, int, int], K, int]] = []
    for path in files:
        keys = r.all_in_files([path])
        r.fetch(keys)
        test = is_test_path(path)
        for k in keys:
            c = r.chunk(k)
            inside = sorted((ln, imp) for ln, imp in by_file[path] if c.start_line <= ln <= c.end_line)
            uses = sum(not imp for _, imp in inside)
            if asked.imports:  # where it is imported: those lines count, and the preview lands there
                uses = len(inside) - uses
            if inside:
                first = next((ln for ln, imp in inside if imp == asked.imports), inside[0][0])
                ranked.append(((test, -uses, -len(inside)), k, first))
    ranked.sort(key=lambda t: (t[0], r.order(t[1])))  # type: ignore[arg-type, return-value]
    top = ranked[:limit]
    return [k for _, k, _ in top], {k: (ln, ln) for _, k, ln in top}
