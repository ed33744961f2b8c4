"""What kind of file a path is (source, docs, changelog, CI config...), for ranking priors and indexing.

An issue or a change description usually asks for the source file to edit. Documentation, changelogs,
translation catalogues, images stored as text, CI configuration and issue templates repeat the words
of such a text (an issue follows its template; a changelog paraphrases past issues) without being the
file to change. :func:`kind_of` names the kind from the path alone; :func:`prior` gives the score
factor for a kind unless the query is about that kind.
"""

from __future__ import annotations

import re
from functools import lru_cache

SOURCE = "source"
DOCS = "docs"
CHANGELOG = "changelog"
TRANSLATION = "translation"
IMAGE = "image"  # images stored as text (.svg)
CI = "ci"  # CI configuration, issue and pull-request templates
CONFIG = "config"  # .cfg/.ini/.toml/.yaml/.json data and settings
DATA = "data"  # tables and fixtures (.csv, .tsv, .dat)
EXAMPLE = "example"  # example scripts, benchmarks
TOOLING = "tooling"  # the project's own build and maintenance scripts (a prior only: see is_tooling)

KINDS = (SOURCE, DOCS, CHANGELOG, TRANSLATION, IMAGE, CI, CONFIG, DATA, EXAMPLE)

# kinds left out of the index by default: they are almost never what a search is for, and a single
# catalogue or drawing can hold thousands of lines of near-noise. A negated ``index.exclude`` pattern
# (``!*.svg``) brings them back.
NOT_INDEXED_BY_DEFAULT = {TRANSLATION: ("*.po", "*.pot"), IMAGE: ("*.svg",)}
_EXT_KINDS = {"po": TRANSLATION, "pot": TRANSLATION, "svg": IMAGE}  # kinds an extension decides first

# a test file or test data, by folder or name (ranking's test-file prior; defs list them last): a
# ``test``/``testing`` folder, or one of the other marks; see is_test_path, which reads a library's own
# ``test``/``testing`` package apart
_TEST_FOLDER = r"(^|/)(test|testing)/"
_OTHER_TEST_MARKS = (
    r"(^|/)(tests|specs?|__tests__|testdata)/|(^|/)test_[^/]*$|_test\.\w+$|\.(spec|test)\.\w+$|Tests?\.\w+$"
    r"|(^|/)(tests\.(py|rs)|conftest\.py)$"  # a Django app's tests.py, a Rust module's tests.rs
    r"|(^|/)(Tests?|[^/]+\.Tests?)/"  # Swift's and Pillow's Tests/, a .NET test project (Foo.Tests/)
    r"|(^|/)(__mocks__|__fixtures__)/|(^|(?<!src)/)e2e/"  # Jest's mocks and fixtures, end-to-end suites
    r"|(^|/)cypress/(e2e|integration|support|fixtures|component|plugins)/|\.cy\.\w+$"  # Cypress's
)
TEST_PATH = re.compile(f"{_TEST_FOLDER}|{_OTHER_TEST_MARKS}")
_OTHER_TEST_MARK = re.compile(_OTHER_TEST_MARKS)
# a test folder at the top or in a source root such as ``src/`` or CPython's ``Lib/`` (everything below
# it is a test); one inside a package (a library's own test package, unless its file is named as a
# test: ``test*``, ``*_test(s).py``, ``conftest.py``)
_TOP_TEST_FOLDER = re.compile(r"^((src|lib|Lib|source|python)/)?(test|testing)/")
_PACKAGE_TEST_DIR = re.compile(r"(^|/)(?!(src|lib|Lib|source|python)/)[^/]+/(test|testing)/")
_TEST_NAME = re.compile(r"(^|/)(test[^/]*|[^/]*_tests?\.pyi?|conftest\.py)$")  # testcheck.py: mypy's
_GO_TEST_FOLDER = re.compile(r"(^|/)test/")  # Go's test programs (go/test/, kubernetes's test/e2e/)


@lru_cache(maxsize=100_000)  # asked of every ranked row: the regexes took 2-4 µs a path
def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test file or test data (``TEST_PATH``), except a module of a Python
    library's own test-support package: a ``.py`` file in a ``test``/``testing`` folder nested in a
    package (``django/test/runner.py``, ``numpy/testing/_private/utils.py``, ansible's
    ``plugins/test/core.py``) that is not named like a test and bears no other test mark. A ``test``
    folder at the top or in a source root (``src/``, ``lib/``) stays a test folder, and so does every
    other language's (JavaScript keeps tests in nested ``test/`` folders under plain names, Go's
    ``test/`` holds test programs). Go's own rule makes only ``_test.go`` files tests: a Go package
    named ``testing`` (the standard library's, client-go's fakes) is source."""
    if _OTHER_TEST_MARK.search(path):
        return True
    if not TEST_PATH.search(path):
        return False
    if path.endswith(".go") and not _GO_TEST_FOLDER.search(path):
        return False
    if not path.endswith((".py", ".pyi")) or _TEST_NAME.search(path) or _TOP_TEST_FOLDER.match(path):
        return True
    return not _PACKAGE_TEST_DIR.search(path)


_DOC_EXT = frozenset("md markdown mdx rst txt adoc asciidoc rdoc tex texi org pod man 1 3 5 8".split())
_CONFIG_EXT = frozenset("cfg ini toml yaml yml json jsonc json5 conf properties env editorconfig".split())
_DATA_EXT = frozenset("csv tsv dat psv xml tab".split())
_DOC_DIRS = frozenset(
    "docs doc documentation _docs sphinx man manual guide guides tutorial tutorials".split()
)
_EXAMPLE_DIRS = frozenset(
    "examples example samples sample demo demos benchmarks benchmark bench stories".split()
)
_CHANGELOG = re.compile(
    r"^(changes|changelog|change_log|history|news|release[-_ ]?notes|releases|whatsnew|what_s_new)"
    r"([-_.].*)?$",
    re.I,
)
_CI_FILES = frozenset(
    """
    .travis.yml .gitlab-ci.yml appveyor.yml .appveyor.yml azure-pipelines.yml .cirrus.yml
    codecov.yml .codecov.yml jenkinsfile .pre-commit-config.yaml .readthedocs.yml .readthedocs.yaml
    .coveragerc .mergify.yml bitbucket-pipelines.yml
    """.split()
)
_CI_DIRS = frozenset(".github .gitlab .circleci .azure-pipelines .buildkite .ci".split())
# a project's own tooling: these folders at the top (or under a Go module's ``internal/``), these files
_TOOLING_DIRS = frozenset(
    "scripts script tools build_tools buildtools hack hacking devtools dev-tools".split()
)
_TOOLING_FILES = frozenset(
    "makefile gnumakefile make.bat justfile noxfile.py fabfile.py magefile.go rakefile".split()
)

# words that make a query "about" a kind, so its prior does not apply
_ABOUT: dict[str, frozenset[str]] = {
    DOCS: frozenset(
        "doc docs documentation docstring docstrings readme tutorial sphinx rst markdown typo".split()
    ),
    CHANGELOG: frozenset("changelog changes history release releases whatsnew news".split()),
    TRANSLATION: frozenset("translation translations translate locale locales i18n l10n gettext po".split()),
    IMAGE: frozenset("svg logo icon image".split()),
    CI: frozenset("ci workflow workflows github travis azure pipeline pipelines template pre-commit".split()),
    CONFIG: frozenset("toml yaml yml ini cfg json setup.cfg pyproject".split()),
    DATA: frozenset("csv tsv fixture fixtures dataset".split()),
    EXAMPLE: frozenset("example examples benchmark benchmarks demo gallery story stories storybook".split()),
    TOOLING: frozenset(
        "build builds building built script scripts tool tools tooling makefile lint linter linting nox "
        "tox codegen generate generated generator regenerate regenerated bump bumped hack hacking "
        "noxfile rakefile justfile fabfile magefile devtools build_tools buildtools".split()
    ),
}

# score factors for an issue or change description (file intent); source and tests are left alone
ISSUE_PRIORS: dict[str, float] = {
    DOCS: 0.5,
    CHANGELOG: 0.3,
    TRANSLATION: 0.2,
    IMAGE: 0.2,
    CI: 0.3,
    CONFIG: 0.7,
    DATA: 0.5,
    EXAMPLE: 0.6,
    TOOLING: 0.5,
}


def _ext(name: str) -> str:
    """A lower-case file name's extension ("" for none, and for a dot file such as ``.svg``)."""
    return name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else ""


@lru_cache(maxsize=100_000)
def kind_of(path: str) -> str:
    """The kind of the file at ``path`` (posix, relative to the workspace root)."""
    low = path.lower()
    parts = low.split("/")
    name = parts[-1]
    ext = _ext(name)
    dirs = parts[:-1]
    if ext in _EXT_KINDS:
        return _EXT_KINDS[ext]
    if name in _CI_FILES or not _CI_DIRS.isdisjoint(dirs):
        return CI
    if _CHANGELOG.match(name):
        return CHANGELOG
    if ext in _DOC_EXT or name in ("readme", "authors", "contributors", "license", "copying", "notice"):
        return DOCS
    if not _DOC_DIRS.isdisjoint(dirs):
        return DOCS
    if not _EXAMPLE_DIRS.isdisjoint(dirs) or ".stories." in name or ".story." in name:  # Storybook's
        return EXAMPLE
    if ext in _CONFIG_EXT:
        return CONFIG
    if ext in _DATA_EXT:
        return DATA
    return SOURCE


@lru_cache(maxsize=100_000)
def is_tooling(path: str) -> bool:
    """Whether ``path`` is the project's own build or maintenance tooling (``scripts/``, ``tools/``,
    ``hack/`` at the top, ``internal/build/`` in Go, a Makefile or a noxfile at the top). It stays a
    source file for everything but the issue prior: a name defined there is still found first."""
    parts = path.lower().split("/")
    if len(parts) == 1:
        return parts[0] in _TOOLING_FILES
    return parts[0] in _TOOLING_DIRS or (
        parts[0] == "internal" and len(parts) > 2 and (parts[1] in _TOOLING_DIRS or parts[1] == "build")
    )


def kinds_asked_about(words: set[str]) -> set[str]:
    """The kinds whose words occur in ``words`` (lower-case query words; a file name counts by its stem
    too: ``noxfile.py``)."""
    words = words | {w.split(".", 1)[0] for w in words if "." in w}
    return {kind for kind, vocab in _ABOUT.items() if words & vocab}


def prior(path: str, exempt: set[str] | frozenset[str] = frozenset(), strength: float = 1.0) -> float:
    """Score factor for ``path`` under an issue-like query; 1.0 for source and for ``exempt`` kinds.

    ``strength`` is the factor's exponent (0 = none, 1 = the factor, 2 = its square).
    """
    kind = kind_of(path)
    if kind == SOURCE and is_tooling(path):
        kind = TOOLING
    factor = ISSUE_PRIORS.get(kind)
    if factor is None or kind in exempt:
        return 1.0
    return float(factor**strength)


def not_indexed_reason(rel: str) -> str | None:
    """Why a file of a kind left out by default is not indexed (None = index it)."""
    kind = _EXT_KINDS.get(_ext(rel.rsplit("/", 1)[-1].lower()))  # told by the extension alone (hot path)
    patterns = NOT_INDEXED_BY_DEFAULT.get(kind) if kind is not None else None
    if patterns is None:
        return None
    undo = ", ".join(f"'!{p}'" for p in patterns)
    return f"{kind} file, not indexed by default (add {undo} to index.exclude to index it)"
