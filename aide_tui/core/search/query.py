"""Reading a long query (an issue, a change description, a stack trace) the way a developer does.

A pasted issue mixes a title, prose, code blocks, tracebacks and quoted error messages. The parts carry
different evidence: a traceback frame names a file and a function; a name in backticks or in the title
is what the issue is about; the user's own script mostly calls public API. :func:`analyze` pulls these
parts out (the text arrives folded onto one line, so fences, headings and frames are found inline).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from aide_tui.core.tokens import STOPWORDS, identifiers, tokenize

LONG_QUERY_TERMS = 24  # distinct terms above which a query is read as a pasted text

_FENCE = re.compile(r"```[\w+-]*\s?(.*?)(?:```|$)", re.S)
_INLINE = re.compile(r"`([^`\n]{1,200})`")
_LINE_NO = r"(\d{1,9})(?!\d)"  # a line number (int() of 4,300 digits and more raises)
_FRAME = re.compile(rf"""File "([^"]{{1,400}})", line {_LINE_NO}(?:, in ([\w.<>]+))?""")
_PLACE_PATH = (  # a written file path, its extension one a compiler, a linter or a stack trace names
    r"((?:[\w.-]{1,200}/){0,40}[\w.-]{1,200}\.(?:py|pyx|pyi|js|jsx|mjs|cjs|ts|tsx|mts|cts|go|rs|java|kt|kts|scala"
    r"|swift|rb|c|h|cpp|cc|cxx|hpp|hh|hxx|m|mm|php|cs|lua|dart|ex|exs|zig|sh|vue|svelte|ya?ml|toml|json|md|rst))"
)
_PATH_LINE = re.compile(rf"(?<![\w.-]){_PLACE_PATH}[:(]{_LINE_NO}")
# a link's line anchor (``path#L12``, ``#L12-L20``, ``#L12C5``; Bitbucket's ``#lines-12``), a URL's path
# being the file's path under a repository's (github.com/o/r/blob/main/pkg/mod.py), or the words a person
# writes (``pkg/mod.py line 12``, ``mod.py, at line 12``, ``line 12 of mod.py``)
_ANCHOR_LINE = re.compile(rf"(?<![\w.-]){_PLACE_PATH}#(?:L|lines-){_LINE_NO}")
_WORDED_LINE = re.compile(
    rf"(?<![\w.-]){_PLACE_PATH},?\s+(?:(?:at|on|near)\s+)?line\s+{_LINE_NO}\b"
    rf"|\bline\s+{_LINE_NO}\s+(?:of|in)\s+{_PLACE_PATH}(?![\w-]|\.\w)",  # not config.yaml.example
    re.I,
)
_EXTENSION_LINE = re.compile(r"\.[A-Za-z]{1,6}[:(]\d")  # what every _PATH_LINE holds
_LINE_WORD = re.compile(r"\bline\s+\d", re.I)  # ... and every _WORDED_LINE
_WRITTEN_PATH = re.compile(
    r"(?<![\w@])((?:[\w.-]{1,200}/){1,40}[\w.-]{1,200}\.[A-Za-z][A-Za-z0-9]{0,5}|[\w-]{1,200}(?:\.[\w-]{1,200}){0,40}\.(?:py|pyi|pyx|js|jsx|ts|tsx|go|rs|java|rb|c|h|cpp|cc|hpp|php|cs|kt|swift|scala|toml|cfg|ini|yml|yaml))\b"
)
_HEADING = re.compile(r"(?:^|\s)(?:#{1,6}\s|\*\*[A-Z][^*]{0,60}\*\*|```|Traceback \(most recent)")
_ERROR_LINE = re.compile(
    r"\b([A-Z]\w*(?:Error|Exception|Warning)): ([^`\n]{3,160}?)(?=\s{2}|\s*```|\s+File \"|\s\*\*|\s#|$)"
)
_ERROR_QUERY = re.compile(
    r"^\s*(?:Uncaught\s+|Exception in thread \"[^\"]{1,80}\"\s+)?"  # how JS and Java print it
    # the exception's class: ...Error, ...Exception, ...Warning, or any CamelCase name (CookieConflict,
    # StreamConsumed, InvalidURL, StopIteration)
    r"(?:[\w.$]+\.)?(?:(?:[A-Z]\w*)?(?:Error|Exception|Warning)|[A-Z][a-z]+(?:[A-Z][a-z0-9]*|[A-Z]+)+)"
    r"\s*:\s+(\S.*?)\s*$",
    re.S,
)
_STAMP = r"\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?\s+"  # a log line's date and time
_TIMESTAMP = re.compile(rf"^\s*{_STAMP}")
_LOG_QUERY = re.compile(
    rf"^\s*(?:{_STAMP})?"
    r"(?:\[\s*)?(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG|TRACE)(?:\s*\])?"  # the level
    r"(?::[\w.]+:|\s*:|\s)\s*(\S.*?)\s*$"  # logging's default "LEVEL:logger:message", or the message
    r"|^\s*(?:error|warning|fatal|panic)(?:\[\w+\])?:\s+(\S.*?)\s*$",  # a compiler's or a CLI's own
    re.S,
)
MAX_LOCATIONS = 8  # frames or path:line places of a short query looked up (a pasted trace is a long text)
MESSAGE_WORDS = 3  # an error line's message needs this many words to be looked for verbatim
LINE_WORDS, LINE_MARKS = 3, 2  # a line of code pasted whole: looked for verbatim (all its word trigrams)
VERBATIM_WORDS = 8  # a query of this many words (about three lines of code) is looked for verbatim too
CODE_MARKS = 0.25  # code marks (brackets, =, ;, ->, a.b) per word of pasted code, 3 at least
_WORD = re.compile(r"\w+")
_CODE_MARK = re.compile(r"[()\[\]{}=;]|->|::|\w\.\w")
_CODE_TOKEN = re.compile(r"\w\(|\w\.\w|\w\[|[=;{}]|->|::")  # a call, an attribute, an index, an assignment
_COMMIT_SUBJECT = re.compile(r"\w+\([\w ,./-]*\)!?:")  # fix(table): ...
CODE_LIKE = re.compile(r"[_.]|[a-z][A-Z]|(?<![A-Z])[A-Z]{2,}[a-z]|\d")  # an identifier, not a word

MAX_DECLARATION_CHARS = 160  # a signature's length; a longer text is a pasted block
# A query written as a declaration asks for that definition: ``class Client``, ``def get_list``,
# ``export async function fetchJson``, ``type Command struct``, ``func (c *Command) Run``, ``pub fn new``.
_DECLARATION = re.compile(
    r"^\s*(?:(?:export|default|async|pub(?:\(\w+\))?|public|private|protected|internal|static|abstract|final"
    r"|declare|unsafe|extern|sealed|open|data|inline)\s+)*"  # modifiers
    r"(?:(?:class|def|func|function\*?|fn|interface|struct|enum|trait|impl|protocol|record)\s+"
    r"(?:\(\s*\w*\s*\*?\s*[\w.]+\s*\)\s*)?"  # a Go method's receiver
    r"|type\s+(?=[A-Z]|\w+\s+(?:struct|interface)\b))"  # Go and TypeScript types: ``type hints`` is prose
    r"([^\W\d]\w*)"  # the name being defined
    r"(?:\s*[(<:{\[].*|\s+(?:struct|interface|extends|implements|for)\b.*|\s*)$",  # what may follow it
    re.S,
)


def declared_name(text: str) -> str | None:
    """The name a query written as a declaration defines (``class Client`` → ``Client``), else None.
    A signature at most: a longer text that starts with ``def`` is pasted code, read as such."""
    if len(text) > MAX_DECLARATION_CHARS:
        return None
    m = _DECLARATION.match(text)
    return m.group(1) if m else None


# the words around a name in a question asking to see it ("where is X defined", "I need the X class")
_KINDS = frozenset(
    "class function func method struct interface type enum trait def constant variable module package".split()
)
# cues that make a short text a question about a name whatever the name looks like ("where is echo
# defined"), and weak ones that do only for a name that reads as code ("the Headers class", "source of
# get_config"; "type hints", "source maps", "module resolution" are topics)
_STRONG_CUES = frozenset(
    "where defined defines declared declares implemented located definition declaration implementation "
    "do does".split()
)  # fmt: skip
_CUES = _STRONG_CUES | _KINDS | frozenset("define impl source live lives".split())
_FILLER = frozenset(
    "what which how is are was the a an of for in to me i we you can could should would need want please "
    "find show see locate look up go jump explain our this my code codebase repo repository project file"
    .split()
)  # fmt: skip
_ASKED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*(?:\(\))?")
MAX_QUESTION_WORDS = 8
_NOT_A_NAME = frozenset(
    ["it", "this", "that", "there", "here", "a", "an", "the", "me", "all", "self", "none", "null", "nil",
     "true", "false", "undefined", *_KINDS]
)  # fmt: skip


def last_part(name: str) -> str:
    """A qualified name's last part (``Client.send``, ``Client::send``, ``Client#send``: ``send``)."""
    return name.replace("::", ".").replace("#", ".").rsplit(".", 1)[-1]


def reads_as_code(word: str) -> bool:
    """A word that is a name in code, not prose: ``get_config``, ``Client.send``, ``Headers``, ``echo()``."""
    return bool(CODE_LIKE.search(word)) or word[:1].isupper() or word.endswith("()")


def _the_one_name(words: list[str], wrappers: frozenset[str]) -> str | None:
    """The one word of ``words`` that is not a wrapper, when it can be a name (None otherwise)."""
    rest = [w for w in words if w.lower() not in wrappers]
    if len(rest) != 1 or not _ASKED.fullmatch(rest[0]) or rest[0].lower().removesuffix("()") in _NOT_A_NAME:
        return None
    return rest[0]


def _question_words(text: str) -> list[str] | None:
    """The words of a short question (2 to ``MAX_QUESTION_WORDS``), punctuation stripped; else None."""
    words = [w.strip("?!.,:;\"'`") for w in text.replace("'s ", " is ").split()]
    return words if 2 <= len(words) <= MAX_QUESTION_WORDS else None


def asked_name(text: str) -> str | None:
    """The one name a short question asks to see (``where is TooManyRedirects defined``, ``what does
    echo do``, ``I need the Headers class``, ``definition of Client.send``), else None: every other word
    is a question's filler or a cue (``defined``, ``where``, ``class``...). A name that does not read as
    code needs a strong cue and three words, or four words (``where is echo defined``, ``show me the
    echo function``; ``type hints``, ``implementation details``, ``find duplicates`` are topics). Such
    a question is answered as the name alone: its wrapper words are no words of the code. A question
    about uses (``where is echo called``) or about more than one word is left."""
    if declared_name(text):  # ``class Client``, ``def send``: a declaration, read as one
        return None
    words = _question_words(text)
    found = _the_one_name(words, _FILLER | _CUES) if words else None
    if words is None or found is None:
        return None
    strong = len(words) >= 3 and any(w.lower() in _STRONG_CUES for w in words)
    # "show me the echo function": a request around a name ("show me the tests" has no cue: a topic);
    # "echo function": a name and its kind
    sentence = len(words) >= 4 and any(w.lower() in _CUES for w in words)
    sentence = sentence or (len(words) == 2 and words[1].lower() in _KINDS and words[1].lower() != "type")
    return found.removesuffix("()") if strong or sentence or reads_as_code(found) else None


_MEMBER_OF = re.compile(
    r"(?P<member>[A-Za-z_]\w*)(?:\(\))?\s+(?:method|function|property|attribute|field)\s+(?:of|in|on)\s+"
    r"(?:the\s+|a\s+|an\s+)?(?P<owner>[A-Za-z_]\w*)(?:\s+(?:class|type|struct|object))?",
    re.IGNORECASE,
)
_OWNERS_MEMBER = re.compile(r"(?P<owner>[A-Za-z_]\w*)(?:'s)?\s+(?P<member>[A-Za-z_]\w*)(?:\(\))?")


def member_words(text: str) -> tuple[str, str] | None:
    """(owner, member) when a short query names a member by its type in words: ``Client send``,
    ``client send``, ``Client's send``, ``send method of Client``, ``the send method of the client
    class``; None for anything else. Whether the owner defines such a member is the index's to say
    (see :func:`~aide_tui.core.search.rank.rank`)."""
    t = text.strip().removeprefix("the ").strip()
    m = _MEMBER_OF.fullmatch(t) or _OWNERS_MEMBER.fullmatch(t)
    if m is None:
        return None
    owner, member = m.group("owner"), m.group("member")
    if owner.lower() in STOPWORDS or member.lower() in STOPWORDS or owner.lower() == member.lower():
        return None
    return owner, member


_USE_CUES = frozenset(
    "called calls call caller callers calling used uses use usage usages using referenced references "
    "reference refs invoked invokes imported imports import importing instantiated instantiates "
    "raised raises raise raising thrown throws throw throwing".split()
)  # fmt: skip
_TEST_CUES = frozenset("test tests tested testing".split())
_POINTS_AT = frozenset(
    "for of calls call uses use callers usages references imports import importing raises throws".split()
)  # "callers of X", "who imports X", "what raises X"
_USED_AS = frozenset(
    "used called invoked referenced imported instantiated callers usages raised thrown".split()
)
_USE_FILLER = _FILLER | frozenset(
    "where who whom all every list places place sites site does do modules module files that which".split()
)
_IMPORT_CUES = frozenset("imported imports import importing".split())
_RAISE_CUES = frozenset("raised raises raise raising thrown throws throw throwing".split())


@dataclass(frozen=True)
class UsesAsked:
    """A short question about where one name is used (``who calls send``, ``usages of Headers``) or
    tested (``tests for send``)."""

    name: str
    tests: bool  # the tests that use it, not the code
    subclasses: bool = False  # the types declared with it as a base (``subclasses of BaseTransport``)
    imports: bool = False  # where it is imported (``who imports _compat``): the imports first
    raises: bool = False  # where it is raised or thrown (``where is TooManyRedirects raised``)

    def as_query(self) -> str:
        """What the keyword and dense lists search for: the name (and "tests" when tests are asked)."""
        return f"{self.name} tests" if self.tests else self.name


_SUBTYPES = r"(?:subclasses|subclass|subtypes|derived\s+classes|child\s+classes|implementations|implementers)"
_INHERIT = (
    r"(?:inherits?|inheriting|derives?|derived|deriving)\s+from|extends?|extending|implements?|implementing"
    r"|subclass(?:es)?|subclassing"
)
_NAME = r"(?P<name>[A-Za-z_][\w.:]*)"
_KIND = r"(?:\s+(?:class|classes|interface|trait|protocol|type|base\s+class|abc))?"
_SUBCLASSES = re.compile(
    rf"(?:(?:list|find|show|all|every|the|which\s+are\s+the|what\s+are\s+the)\s+)*{_SUBTYPES}\s+of\s+"
    rf"(?:the\s+)?{_NAME}{_KIND}"
    rf"|(?:(?:which|what|all|the)\s+)?(?:classes|types|structs|objects)\s+(?:that\s+|which\s+)?"
    rf"(?:{_INHERIT})\s+(?:the\s+)?{_NAME.replace('name', 'name2')}{_KIND}"
    rf"|(?:what|who|which)\s+(?:{_INHERIT})\s+(?:the\s+)?{_NAME.replace('name', 'name3')}{_KIND}"
    rf"|{_NAME.replace('name', 'name4')}\s+{_SUBTYPES}",
    re.IGNORECASE,
)


def asked_subclasses(text: str) -> UsesAsked | None:
    """The one type a short question asks the subclasses or implementations of (``subclasses of
    BaseTransport``, ``classes that inherit from Auth``, ``what implements Handler``, ``Auth
    subclasses``), else None."""
    m = _SUBCLASSES.fullmatch(text.strip().rstrip("?").strip())
    if m is None:
        return None
    name = next(g for g in (m.group("name"), m.group("name2"), m.group("name3"), m.group("name4")) if g)
    if name.lower() in STOPWORDS or len(name) < 2:
        return None
    return UsesAsked(name, tests=False, subclasses=True)


def asked_uses(text: str) -> UsesAsked | None:
    """The one name a short question asks the uses or the tests of (``where is echo called``, ``who
    calls Client.send``, ``usages of Headers``, ``tests for echo``), else None: every other word is a
    question's filler or a cue of uses or tests, and one cue at least is there. Two words ask so only
    when the name reads as code (``Headers usages``, ``get_config callers``): ``call graph``,
    ``unit tests``, ``circular imports`` are topics."""
    words = _question_words(text)
    found = _the_one_name(words, _USE_FILLER | _USE_CUES | _TEST_CUES) if words else None
    if words is None or found is None:
        return None
    low = [w.lower() for w in words]
    tests = any(w in _TEST_CUES for w in low)
    if not (tests or any(w in _USE_CUES for w in low)):
        return None
    if not reads_as_code(found):
        if len(words) < 3:
            return None
        # "tests for echo", "callers of echo": a plain word is a name when the question points at it
        # ("run the tests", "where are integration tests", "how are tests run" are about tests)
        at = low.index(found.lower())
        before, after = (low[at - 1] if at else ""), (low[at + 1] if at + 1 < len(low) else "")
        if before not in _POINTS_AT and after not in _USED_AS:
            return None
    imports, raises = any(w in _IMPORT_CUES for w in low), any(w in _RAISE_CUES for w in low)
    return UsesAsked(found.removesuffix("()"), tests, imports=imports, raises=raises)


@dataclass
class Frame:
    """One traceback frame: the path as written, its line and function."""

    path: str
    line: int
    func: str | None


@dataclass
class QueryParts:
    """The parts of a (long) query text."""

    text: str
    long: bool
    title: str = ""
    prose: str = ""  # the text without code blocks
    code_blocks: list[str] = field(default_factory=list)
    inline_code: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)  # in written order (innermost last)
    paths: list[str] = field(default_factory=list)  # written file paths, frames excluded
    errors: list[str] = field(default_factory=list)  # "TypeError: message"
    names: Counter[str] = field(default_factory=Counter)  # code-like names, weighted by where they occur

    def prose_without_frames(self) -> str:
        """The prose with traceback frames cut out (their quoted file names are not phrases)."""
        return without_frames(self.prose)

    def segments(self, max_chars: int = 1200) -> list[str]:
        """Texts to embed separately: the title, the prose, the code and error lines (non-empty, distinct)."""
        out: list[str] = []
        if self.title:
            out.append(self.title)
        if self.prose.strip():
            out.append(self.prose[:max_chars])
        code = " ".join([*self.errors, *self.code_blocks])
        if code.strip():
            out.append(code[:max_chars])
        return list(dict.fromkeys(s.strip() for s in out if s.strip()))


def _title(text: str) -> str:
    """The text before the first heading, bold label, fence or traceback, at most 30 words."""
    m = _HEADING.search(text)
    head = text[: m.start()] if m and m.start() > 0 else text
    return " ".join(head.split()[:30])


def analyze(text: str) -> QueryParts:
    """Split ``text`` into its parts; ``long`` is True for a pasted text (more than 24 distinct terms)."""
    long = len(set(tokenize(text))) > LONG_QUERY_TERMS
    parts = QueryParts(text=text, long=long)
    if not long:
        return parts
    parts.title = _title(text)
    parts.code_blocks = [b.strip() for b in _FENCE.findall(text) if b.strip()]
    parts.prose = _FENCE.sub(" ", text)
    parts.inline_code = [c.strip() for c in _INLINE.findall(parts.prose) if c.strip()]
    parts.frames = [Frame(p, int(n), f) for p, n, f in _FRAME.findall(text)]
    framed = {f.path for f in parts.frames}
    rest = _FRAME.sub(" ", text)
    seen: dict[str, None] = {}
    for m in _PATH_LINE.finditer(rest):
        seen.setdefault(m.group(1))
    for m in _WRITTEN_PATH.finditer(rest):
        p = m.group(1)
        if p not in framed and not p.startswith("."):
            seen.setdefault(p)
    parts.paths = list(seen)
    parts.errors = [f"{e}: {msg}" for e, msg in _ERROR_LINE.findall(text)]
    # names: code-like identifiers; the title and inline code count more than a pasted script
    names: Counter[str] = Counter()
    for w in identifiers(parts.prose):
        if CODE_LIKE.search(w) and not w[:1].isdigit():
            names[w] += 1
    for w in identifiers(" ".join(parts.inline_code)):
        names[w] += 2
    for w in identifiers(parts.title):
        if CODE_LIKE.search(w) or re.fullmatch(r"[A-Z][a-z0-9]+[A-Z]\w*", w):
            names[w] += 3
    for f in parts.frames:
        if f.func and not f.func.startswith("<"):
            names[f.func] += 1
    parts.names = Counter({n: c for n, c in names.items() if len(n) >= 3 and n.lower() not in STOPWORDS})
    return parts


def error_message(text: str) -> str | None:
    """The message of a query pasted from an error line (``ValueError: invalid literal for int()``) or a
    log line (``WARNING:app.db:retrying the connection``, ``2024-05-01 12:00:03 ERROR ...``, ``error:
    ...``), when it has at least ``MESSAGE_WORDS`` words (None otherwise): what a developer greps for
    to find where it is raised or logged."""
    m = _ERROR_QUERY.match(text) or _LOG_QUERY.match(text)
    message = None if m is None else next((g for g in m.groups() if g), None)
    if message is None or len(_WORD.findall(message)) < MESSAGE_WORDS:
        return None
    return message


def verbatim_words(text: str) -> bool:
    """Whether ``text`` has words enough to be looked for verbatim, as a passage pasted from a file, or
    reads as one line copied from code (:func:`code_line`)."""
    return len(_WORD.findall(text)) >= VERBATIM_WORDS or code_line(text)


# a question word opening a line: prose about code, which no line of code starts with
_ASKS = re.compile(r"(?:how|why|what|where|when|which|who|whose|does|can|could|should|would)\s+\w", re.I)


# the first word of a change description: what a commit subject or a changelog line starts with ("do"
# only as "do not", "use" not as "use of")
_CHANGE_VERBS = frozenset(
    """fix fixes fixed add adds added remove removes removed drop drops dropped update updates updated
    bump deprecate refactor cleanup improve improves allow allows avoid revert rename replace do don't
    use hide enable disable implement resolve""".split()
)
_CONVENTIONAL = re.compile(  # feat: ..., fix(table): ...
    r"\s*(?:feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)(?:\([^)]*\))?!?:\s", re.I
)
_FIRST_WORDS = re.compile(r"\W*([\w']+)\s*([\w']*)")
_LABELLED = re.compile(r"\W*\w+(?:\s+\w+)?:\s")  # "Update failed: permission denied", a log line's label


def reads_as_change(text: str) -> bool:
    """Whether ``text`` reads as a change description: a conventional commit subject (``feat: ...``,
    ``fix(table): ...``) or a line starting with a verb of change (``Fix ...``, ``Added ...``, ``Do not
    ...``); not a description of what code does (``Return the ...``, ``Ensure that ...``), a question,
    an error line (``Update failed: ...``) or a name (``fix_path breaks ...``)."""
    if _CONVENTIONAL.match(text):
        return True
    text = text.replace("\u2019", "'")
    first = _FIRST_WORDS.match(text)
    if first is None or text.rstrip().endswith("?") or _LABELLED.match(text) or error_message(text):
        return False
    verb, after = first.group(1).lower(), first.group(2).lower()
    # "Do redirects ...?", "Use of uninitialized value": not the verbs
    noun = (verb == "do" and after != "not") or (verb == "use" and after == "of")
    return verb in _CHANGE_VERBS and not noun


def code_line(text: str) -> bool:
    """Whether ``text`` reads as one line copied from code (``rv = os.fsdecode(Path(rv).resolve())``):
    one line of ``LINE_WORDS`` words or more (fewer than ``VERBATIM_WORDS``), ``LINE_MARKS`` code marks
    and a call, an attribute, an index or an assignment. Not prose that quotes code (backticks), a
    conventional commit subject (``fix(table): ...``) or an error line. A developer pastes it to find
    where it is; its words alone are everywhere in the file around it."""
    s = text.strip()
    words = len(_WORD.findall(s))
    if "\n" in s or "`" in s or not LINE_WORDS <= words < VERBATIM_WORDS or _COMMIT_SUBJECT.match(s):
        return False
    if _ASKS.match(s) or s.endswith("?"):
        return False  # a question about code: "how does dict.get() work"
    marks = len(_CODE_MARK.findall(s))
    return marks >= LINE_MARKS and bool(_CODE_TOKEN.search(s)) and error_message(s) is None


def pasted_code(text: str) -> str | None:
    """``text`` when it reads as code copied from a file (a few lines of it, or the same joined onto one
    line): at least ``VERBATIM_WORDS`` words and ``CODE_MARKS`` code marks per word; None for prose, a
    call or two, and an error line."""
    words = len(_WORD.findall(text))
    marks = len(_CODE_MARK.findall(text))
    if words < VERBATIM_WORDS or marks < max(3, CODE_MARKS * words) or error_message(text):
        return None
    return text


def without_timestamp(text: str) -> str:
    """A pasted log line without its leading date and time (their digits are no words of the code)."""
    return _TIMESTAMP.sub("", text, count=1)


def locations(text: str) -> list[Frame]:
    """The places a short query points at: a traceback frame (``File "pkg/mod.py", line 12, in run``), a
    ``path:line`` as compilers, linters and JS stack traces print it (``src/app.ts:40:7``), a link's line
    anchor (``https://github.com/o/r/blob/main/pkg/mod.py#L12``), ``mod.py line 12``: in the order
    written."""
    found = [Frame(p, int(n), f) for p, n, f in _FRAME.findall(text)]
    rest = _FRAME.sub(" ", text)
    # each place pattern tries up to 40 folders from every start: only a text with its mark is scanned
    written = [*_PATH_LINE.finditer(rest)] if _EXTENSION_LINE.search(rest) else []
    if "#L" in rest or "#lines-" in rest:
        written += _ANCHOR_LINE.finditer(rest)
    places = [(m.start(), m.group(1), m.group(2)) for m in written]
    worded = _WORDED_LINE.finditer(rest) if _LINE_WORD.search(rest) else ()
    for m in worded:  # "mod.py line 12" or "line 12 of mod.py"
        path, line = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        places.append((m.start(), path, line))
    found.extend(Frame(path, int(line), None) for _, path, line in sorted(places))
    return found[:MAX_LOCATIONS]


def without_frames(text: str) -> str:
    """``text`` with its traceback frames cut out (a frame's quoted file name is not a phrase)."""
    return _FRAME.sub(" ", text)
