"""The path index answers every lookup as the whole map built file by file would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aide_tui.core.store.pathindex import PathIndex

COMP = st.text(alphabet="abAB._-x", min_size=1, max_size=5)
PATH = st.lists(COMP, min_size=1, max_size=4).map("/".join)


def _whole_map(files: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in files:
        parts = p.lower().split("/")
        stem = parts[-1].rsplit(".", 1)[0]
        for part in {*parts[:-1], stem, parts[-1]}:
            out.setdefault(part, set()).add(p)
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(PATH, max_size=30, unique=True), st.lists(COMP, max_size=10))
def test_every_lookup_matches_the_whole_map(files: list[str], probes: list[str]) -> None:
    index, want = PathIndex(files), _whole_map(files)
    assert set(index) == set(want) and len(index) == len(want)
    for key in [*want, *probes, *(p.lower() for p in probes)]:
        assert index.get(key, set()) == want.get(key, set()), key
        assert (key in index) == (key in want)


def test_folder_file_and_stem() -> None:
    index = PathIndex(["src/Utils/io.py", "src/utils.py", "docs/utils/index.md", "Makefile"])
    assert index["utils"] == {"src/Utils/io.py", "src/utils.py", "docs/utils/index.md"}
    assert index["utils.py"] == {"src/utils.py"}
    assert index["src"] == {"src/Utils/io.py", "src/utils.py"}
    assert index["makefile"] == {"Makefile"} and "Makefile" not in index
    assert index.get("nothing") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(PATH, max_size=30, unique=True), st.lists(PATH, max_size=10))
def test_a_suffix_lookup_finds_every_file_ending_so(files: list[str], probes: list[str]) -> None:
    """``with_suffix`` (how an import finds its file) answers as a scan of every path would: the
    files equal to the tail or ending in ``/`` and the tail, exact case, sorted."""
    index = PathIndex(files)
    tails = [*probes, *files, *(p.split("/", 1)[-1] for p in files), *(p.rsplit("/", 2)[-1] for p in files)]
    for tail in tails:
        want = sorted(p for p in files if p == tail or p.endswith("/" + tail))
        assert index.with_suffix(tail) == want, tail


@settings(max_examples=200, deadline=None)
@given(st.lists(PATH, max_size=30, unique=True), st.lists(PATH, max_size=10))
def test_the_folders_ending_like_a_tail_hold_every_file_under_it(files: list[str], probes: list[str]) -> None:
    """``folders_ending`` and ``files_in`` (a Go package's files) find the files whose folder is the tail
    or ends with ``/`` and the tail, exact case, as a scan of every path would."""
    index = PathIndex(files)
    folders = [p.rsplit("/", 1)[0] for p in files if "/" in p]
    for tail in [*probes, *folders, *(f.split("/", 1)[-1] for f in folders)]:
        want = sorted(
            p
            for p in files
            if "/" in p and (p.rsplit("/", 1)[0] == tail or p.rsplit("/", 1)[0].endswith("/" + tail))
        )
        got = sorted(p for f in index.folders_ending(tail) for p in index.files_in(f))
        assert got == want, tail


@settings(max_examples=200, deadline=None)
@given(st.lists(PATH, max_size=30, unique=True), st.lists(st.tuples(COMP, COMP), max_size=10))
def test_files_by_name_and_folder_name_without_case(files: list[str], probes: list[tuple[str, str]]) -> None:
    """``named_in_folders_named`` (a written path's last two components) finds the files named so in a
    folder named so, case aside, as a scan of every path would."""
    index = PathIndex(files)
    pairs = [*probes, *((p.split("/")[-1], p.split("/")[-2]) for p in files if "/" in p)]
    for name, folder in pairs:
        name, folder = name.lower(), folder.lower()
        want = sorted(p for p in files if p.lower().split("/")[-2:] == [folder, name])
        assert sorted(index.named_in_folders_named(name, folder)) == want, (name, folder)
