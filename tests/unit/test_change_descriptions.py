"""Change descriptions (a commit subject, a short "fix ..." line) → the source file to edit: docs pages,
changelogs and tests that repeat the words rank below the source, the source files they describe
join the ranking, and a module set apart as code (backticks, a commit scope) names its file.

Every test indexes real files on disk and asserts what the search returns.
"""

from __future__ import annotations

from pathlib import Path

from conftest import write_workspace

from aide_tui.core.config import load_settings
from aide_tui.core.filekinds import EXAMPLE, TEST_PATH, is_test_path, kind_of, kinds_asked_about
from aide_tui.core.index.indexer import Indexer
from aide_tui.core.search import graphrank as G
from aide_tui.core.search.lists import looks_like_code
from aide_tui.core.search.query import reads_as_change
from aide_tui.core.search.rank import is_source
from aide_tui.core.search.searcher import Searcher

NO_EMBED = {"embedding": {"backend": "none"}}

FILES = {
    "pkg/__init__.py": "from .client import Client\nfrom .proxy import Proxy\n",
    "pkg/proxy.py": """
        import os


        class Proxy:
            def __init__(self, url, auth=None):
                self.url = url
                self.auth = auth


        def proxies_from_env(environ=None):
            environ = os.environ if environ is None else environ
            found = {}
            for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
                if environ.get(key):
                    found[key.lower()] = Proxy(environ[key])
            return found
    """,
    "pkg/client.py": """
        from .proxy import proxies_from_env


        class Client:
            def __init__(self, trust_env=True, timeout=5.0):
                self.timeout = timeout
                self.mounts = proxies_from_env() if trust_env else {}

            def send(self, request):
                return request
    """,
    "pkg/utils.py": """
        def normalize_header_name(name, lower=True):
            return name.lower() if lower else name


        class Timer:
            def __init__(self):
                self.started = 0.0
    """,
    "pkg/segment.py": """
        def split_lines(text):
            return text.splitlines()
    """,
    "pkg/console.py": """
        def render_segments(parts):
            return "".join(str(p) for p in parts)
    """,
    "docs/proxies.md": """
        # Proxies

        HTTPS proxies are read from the environment: set `HTTPS_PROXY` and the client uses a
        `Proxy` for every request to an https address. Environment proxies are on by default;
        `trust_env=False` turns environment proxies off. See `proxies_from_env` for the variables
        the environment proxies come from.
    """,
    "CHANGELOG.md": """
        # Changes

        ## 0.3
        - Environment proxies: HTTPS proxies from the environment are used by default.
        - Fix environment proxies for https addresses.
    """,
    "tests/test_proxies.py": """
        from pkg.proxy import proxies_from_env


        def test_environment_proxies_for_https():
            proxies = proxies_from_env({"HTTPS_PROXY": "http://proxy:3128"})
            assert proxies["https_proxy"].url == "http://proxy:3128"  # environment proxies


        def test_no_environment_proxies():
            assert proxies_from_env({}) == {}
    """,
    "internal/testdata/expected-help.txt": "usage: tool [--timeout seconds] [--proxy url]\n",
}

QUERY = "Fix environment proxies for https addresses"


def make(root: Path, files: dict[str, str] | None = None, **search: object) -> Searcher:
    write_workspace(root, FILES if files is None else files)
    settings = load_settings(root, {**NO_EMBED, "search": search})
    Indexer(root, settings).run()
    s = Searcher(root, settings)
    s.refresh()
    return s


def files_of(s: Searcher, query: str, **search: object) -> list[str]:
    s.settings = load_settings(s.root, {**NO_EMBED, "search": search})
    return list(dict.fromkeys(h.path for h in s.search(query, mode="bm25").results))


def test_docs_and_changelog_rank_below_the_source_the_change_is_in(tmp_path: Path) -> None:
    s = make(tmp_path / "ws")
    without = files_of(s, QUERY, source_weight=0, prose_kind_prior=0)
    assert without[0] == "CHANGELOG.md" and without.index("docs/proxies.md") < without.index("pkg/client.py")
    files = files_of(s, QUERY, source_weight=0)
    assert files[0] == "pkg/proxy.py"
    assert files.index("pkg/client.py") < min(files.index("docs/proxies.md"), files.index("CHANGELOG.md"))
    # the factors are squared for short prose (docs x0.25, changelogs x0.09), as for exponent 2
    score = {}
    for exponent in (0, 1, 2):
        search = {"source_weight": 0, "prose_kind_prior": exponent}
        s.settings = load_settings(s.root, {**NO_EMBED, "search": search})
        score[exponent] = {h.path: h.score for h in s.search(QUERY, mode="bm25").results}
    assert abs(score[2]["docs/proxies.md"] - 0.25 * score[0]["docs/proxies.md"]) < 1e-6
    assert abs(score[2]["CHANGELOG.md"] - 0.09 * score[0]["CHANGELOG.md"]) < 1e-6
    assert abs(score[1]["CHANGELOG.md"] - 0.3 * score[0]["CHANGELOG.md"]) < 1e-6
    assert score[2]["pkg/proxy.py"] == score[0]["pkg/proxy.py"]
    # a query about the docs keeps them
    assert files_of(s, "Fix the proxies docs page for https addresses")[0] == "docs/proxies.md"


def test_the_sources_that_pages_and_tests_describe_join_the_ranking(tmp_path: Path) -> None:
    s = make(tmp_path / "ws")
    graph = s.retriever.graph
    assert graph is not None
    # a test points at what it imports and calls; a page at the files defining the names it mentions
    pointers = [
        (1, "tests/test_proxies.py", "", True),
        (2, "docs/proxies.md", "set `HTTPS_PROXY` ... `proxies_from_env` for `Client.send`", False),
    ]
    described = G.described_files(graph, s.retriever.path_parts, pointers, is_source)
    assert set(described) == {"pkg/proxy.py", "pkg/client.py"}
    assert described["pkg/proxy.py"] > described["pkg/client.py"]
    query = "Use environment proxies by default for https"
    # the pages win without their sources (no file-kind prior here, to see the list alone)
    assert files_of(s, query, prose_kind_prior=0, source_weight=0)[:2] == ["docs/proxies.md", "CHANGELOG.md"]
    assert files_of(s, query, prose_kind_prior=0)[0] == "pkg/proxy.py"
    hit = next(h for h in s.search(query, mode="bm25").results if h.path == "pkg/proxy.py")
    assert hit.ranks.get("source") == 1
    # identifier queries never use the graph
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"source_weight": 5.0}})
    assert all("source" not in h.ranks for h in s.search("proxies_from_env", mode="bm25").results)


def test_a_module_in_backticks_or_a_commit_scope_names_its_file(tmp_path: Path) -> None:
    s = make(tmp_path / "ws")
    top = s.search("Add type annotations for instance attributes in `utils`", mode="bm25").results[0]
    assert top.path == "pkg/utils.py" and top.ranks.get("path") == 1
    top = s.search("fix(console): keep the order of parts when joining them", mode="bm25").results[0]
    assert top.path == "pkg/console.py" and top.ranks.get("path") == 1
    # a class name in backticks is not its namesake module (case as written)
    hits = s.search("Render parts in to a list of `Segment` instances joined", mode="bm25").results
    assert all("path" not in h.ranks for h in hits)


def test_testdata_is_test_input() -> None:
    assert TEST_PATH.search("internal/testdata/expected-help.txt")
    assert TEST_PATH.search("testdata/expected-fish-full.fish")
    assert not TEST_PATH.search("pkg/data.py")
    assert not is_source("internal/testdata/expected-help.txt") and is_source("pkg/proxy.py")


def test_a_librarys_own_test_package_is_source_and_test_folders_stay_tests() -> None:
    library = [
        "django/test/runner.py",
        "numpy/testing/_private/utils.py",
        "src/twisted/test/iosim.py",
        "lib/ansible/plugins/test/core.py",
        "pkg/test.py",
        "src/contest.py",
        "numpy/testing/_private/utils.pyi",  # a stub as its module
        "packages/driver/src/cypress/cy.ts",  # Cypress's own source
        "src/e2e/session.ts",
        "src/Contests/entry.py",
        "Sources/MyLib/Tester.swift",
        "go-1.19.8/src/testing/benchmark.go",  # Go's testing package: only _test.go files are tests
        "staging/src/k8s.io/client-go/testing/fixture.go",
    ]
    tests = [
        "test/helpers.py",  # a test folder at the top
        "src/test/helpers.py",  # ... or in a source root
        "Lib/test/_test_multiprocessing.py",  # CPython's tests
        "pkg/tests/helpers.py",  # in the plural
        "src/twisted/test/test_iosim.py",  # named as a test
        "pkg/test/conftest.py",
        "pkg/test/fixtures/data.json",  # not Python
        "packages/app/test/server.js",  # JavaScript's tests in nested folders under plain names
        "src/test/java/org/x/Helper.java",
        "go/test/fixedbugs/issue1.go",
        "src/testing/benchmark_test.go",
        "test/e2e/framework/util.go",
        "pkg/test/testdata/input.py",
        "polls/tests.py",  # a Django app's tests
        "library/alloc/src/vec/tests.rs",  # a Rust module's tests
        "conftest.py",
        "src/__mocks__/fs.js",  # Jest's mocks
        "cypress/e2e/login.cy.js",  # end-to-end suites
        "e2e/checkout.ts",
        "cypress/support/commands.js",
        "mypy/test/testcheck.py",  # a suite in a package's test folder, its modules named test...
        "Lib/unittest/test/testmock/testmock.py",
        "test/pkg/test/helpers.py",  # below a test folder at the top
        "Tests/MyLibTests/Fixtures.swift",  # Swift's (and Pillow's) Tests/
        "src/Shop.Tests/Helpers/OrderBuilder.cs",  # a .NET test project
    ]
    assert [p for p in library if is_test_path(p) or not is_source(p)] == []
    assert [p for p in tests if not is_test_path(p)] == []


def test_a_storybook_story_shows_a_component_as_an_example_does() -> None:
    assert kind_of("src/components/Button.stories.tsx") == EXAMPLE
    assert kind_of("src/Button.story.tsx") == kind_of("src/stories/Button.tsx") == EXAMPLE
    assert is_source("src/components/Button.tsx") and not is_source("src/components/Button.stories.tsx")
    assert EXAMPLE in kinds_asked_about({"stories", "for", "button"})


def test_a_librarys_own_test_package_weighs_as_source_in_a_search(tmp_path: Path) -> None:
    """The same module in a package's ``test`` folder and in another of its folders rank first; in the
    project's ``tests`` folder, after them (the test prior)."""
    body = """
        class RequestFactory:
            def fake_request(self, view_path, headers=None):
                return {"path": view_path, "headers": dict(headers or {})}
    """
    root = tmp_path / "ws"
    write_workspace(root, {"pkg/__init__.py": "", "pkg/test/__init__.py": "", "pkg/test/factory.py": body,
                           "pkg/web/factory.py": body, "tests/factory.py": body})  # fmt: skip
    settings = load_settings(root, NO_EMBED)
    Indexer(root, settings).run()
    hits = Searcher(root, settings).search("fake request for a view path", mode="bm25").results
    assert {h.path for h in hits[:2]} == {"pkg/test/factory.py", "pkg/web/factory.py"}
    assert hits[2].path == "tests/factory.py" and hits[2].score < hits[1].score


ISSUE = (
    "Environment proxies ignored for https addresses since the upgrade. After upgrading, requests to "
    "https addresses no longer go through the proxy configured in the environment. I set HTTPS_PROXY "
    "in my shell and in the CI template, and the project metadata pins the version. Steps: "
    "export HTTPS_PROXY, create a client, send a request to an https address. Expected: the proxy "
    "is used. Observed: a direct connection. Version 0.3, Python 3.11, Linux. Thanks for the library!"
)


def test_a_pasted_issue_puts_source_before_templates_and_config(tmp_path: Path) -> None:
    template, config = ".github/ISSUE_TEMPLATE/bug.md", "setup.cfg"
    write_workspace(
        tmp_path / "ws",
        {
            template: "Describe the bug: proxies, environment, https, upgrade, version, steps, expected, "
            "observed, Python, Linux, shell, client, request.\n",
            config: "[metadata]\nname = pkg\nversion = 0.3\n[proxy]\nhttps_proxy = environment\n",
        },
    )
    s = make(tmp_path / "ws")
    ranked, score = {}, {}
    for exponent in (0, 1, 2):
        s.settings = load_settings(s.root, {**NO_EMBED, "search": {"kind_prior": exponent}})
        hits = s.search(ISSUE, mode="bm25").results
        ranked[exponent] = list(dict.fromkeys(h.path for h in hits))
        score[exponent] = {h.path: h.score for h in hits}
    assert ranked[0][0] == template  # the template repeats the issue's words
    # the factors squared for a pasted text (issue templates x0.09, config x0.49), source untouched
    assert abs(score[2][template] - 0.09 * score[0][template]) < 1e-6
    assert abs(score[2][config] - 0.49 * score[0][config]) < 1e-6
    assert score[2]["pkg/proxy.py"] == score[0]["pkg/proxy.py"]
    # every source file the issue finds comes before the config and the template (not so at exponent 1)
    source = [p for p in ranked[2] if p.startswith("pkg/")]
    assert ranked[2][: len(source)] == source
    assert ranked[1].index(config) < ranked[1].index("pkg/__init__.py")


def test_a_commit_subject_of_three_plain_words_is_prose(tmp_path: Path) -> None:
    assert not looks_like_code("Fix environment proxies") and not looks_like_code("Remove dead code")
    assert looks_like_code("routing") and looks_like_code("proxies_from_env")
    assert looks_like_code("Proxy proxies_from_env") and looks_like_code("`Parameter` typing improvements")
    s = make(tmp_path / "ws")
    # read as prose, it gets the file-kind factors: the source before the changelog that repeats it
    files = files_of(s, "Fix environment proxies")
    assert files[0] == "pkg/proxy.py" and files.index("pkg/proxy.py") < files.index("CHANGELOG.md")
    # an identifier query is left alone: the definition first
    assert s.search("proxies_from_env", mode="bm25").results[0].path == "pkg/proxy.py"


RETRY_FILES = {
    "pkg/retry.py": """
        def wait_time(attempt):
            \"\"\"Seconds to wait before the next try: exponential backoff.\"\"\"
            return min(60, 2**attempt)
    """,
    "tests/test_retry.py": """
        def test_retry_delay_grows_with_jitter_and_backoff():
            # the retry delay doubles with backoff, jitter spreads each retry delay
            assert delays(retry=1, jitter=0) < delays(retry=2, jitter=0)  # backoff, retry delay
    """,
    **{
        f"pkg/client_{i}.py": f"""
            def send_{i}(request):
                \"\"\"Send the request; a retry uses the configured delay and backoff.\"\"\"
                return transport_{i}(request, retry=True, delay=1)
        """
        for i in range(14)
    },
}


def test_a_change_description_puts_source_before_its_tests(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", files=RETRY_FILES)
    change = "Fix the retry delay growing with backoff and jitter"

    def order() -> list[str]:
        return [h.path for h in s.search(change, limit=30).results]

    files = order()
    assert files.index("pkg/retry.py") < files.index("tests/test_retry.py")
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"prose_test_weight": 1}})
    files = order()
    assert files.index("pkg/retry.py") > files.index("tests/test_retry.py")  # the final factor orders them
    s.settings = load_settings(s.root, NO_EMBED)
    assert s.search("tests of the retry delay with jitter").results[0].path == "tests/test_retry.py"
    # what code does, not a change: it may ask for a test, which keeps the plain test prior
    described = [h.path for h in s.search("Returns the retry delay growing with backoff and jitter").results]
    assert described.index("pkg/retry.py") > described.index("tests/test_retry.py")


def test_change_descriptions() -> None:
    for text in ("Fix the retry delay", "fix(table): wrap cells", "feat!: drop py3.8", "Added a flag",
                 "Don't split bundled flags", "- remove dead code", "Chore: bump deps"):  # fmt: skip
        assert reads_as_change(text), text
    for text in ("Returns the retry delay", "Ensure that the flag is set", "Error: Invalid value for -c",
                 "L{URL.remove} removes it", "how do I add a flag", "fixture for the client",
                 "Do redirects keep the header?", "Show me where cookies are parsed", "fix_path breaks",
                 "Use of uninitialized value", "Update failed: permission denied"):  # fmt: skip
        assert not reads_as_change(text), text
    assert reads_as_change("Don\u2019t follow redirects") and reads_as_change("Do not split flags")


TOOLING_FILES = {
    "flags/parse.go": """
        package flags

        // Apply sets each flag from the arguments.
        func Apply(args []string) error {
            return checkFlags(args)
        }
    """,
    "internal/build/build.go": """
        package main

        // runParallel runs every check of the release build in parallel: vet, parse the generated
        // docs, check the flags, check the args, parse the args again, check the flags in parallel.
        func runParallel(checks []string) error {
            return runChecks(checks, "parse", "args", "flags", "parallel")
        }
    """,
}


def test_a_change_description_finds_source_before_the_projects_tooling(tmp_path: Path) -> None:
    s = make(tmp_path / "ws", files=TOOLING_FILES)
    change = "fix: parse args in parallel and check flags"
    files = list(dict.fromkeys(h.path for h in s.search(change).results))
    assert files[0] == "flags/parse.go"
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"prose_kind_prior": 0}})
    assert s.search(change).results[0].path == "internal/build/build.go"  # the prior is what orders them
    s.settings = load_settings(s.root, NO_EMBED)
    about = "the release build script runs its checks in parallel"
    assert s.search(about).results[0].path == "internal/build/build.go"
    assert s.search("runParallel").results[0].path == "internal/build/build.go"
    # a change naming a definition there, and a question (how is it built?), keep it first
    build = "internal/build/build.go"
    assert s.search("Fix runParallel checks in parallel").results[0].path == build
    assert s.search("where are flags and args checked in parallel").results[0].path == build


def test_a_spec_the_change_names_keeps_its_place(tmp_path: Path) -> None:
    files = {**RETRY_FILES, "spec/retry_spec.py": RETRY_FILES["tests/test_retry.py"]}
    del files["tests/test_retry.py"]
    s = make(tmp_path / "ws", files=files)
    change = "Fix the flaky retry delay spec with backoff and jitter"
    as_is = [h.path for h in s.search(change, limit=30).results]
    s.settings = load_settings(s.root, {**NO_EMBED, "search": {"prose_test_weight": 1}})
    assert [h.path for h in s.search(change, limit=30).results] == as_is
