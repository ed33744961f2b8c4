"""A path written in a pasted text (a traceback frame, a log line) names indexed files by the longest
tail of components they share (search/lists.py: resolve_path), however many files share its name."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from aide_tui.core.search.lists import resolve_path
from aide_tui.core.store.pathindex import PathIndex

FILES = [
    "django/core/management/__init__.py",
    "django/core/management/base.py",
    "django/core/__init__.py",
    "django/db/__init__.py",
    "django/db/models/__init__.py",
    "django/db/models/base.py",
    "Django/Contrib/Admin/__init__.py",
    "salt/modules/__init__.py",
    "salt/utils/__init__.py",
    "sympy/core/basic.py",
    "sympy/core/__init__.py",
    "vendor/management/__init__.py",
    "src/Pkg/Mod.py",
    "lib/pkg/mod.py",
    "base.py",
    "docs/base.py/readme.md",  # a folder named like the file
    "docs/base.py/xbase.py",  # ... holding a file whose name ends like it
] + [f"pkg{i}/sub/__init__.py" for i in range(200)]


def _reference(paths: list[str], written: str) -> list[str]:
    """The rule as first written, restated: the files named like the written path, those sharing the
    longest tail of components kept; a bare name must be rare (at most 3), a path must share two."""
    comps = [c for c in written.replace("\\", "/").lower().split("/") if c and c not in (".", "..")]
    if not comps:
        return []
    tails = {
        p: sum(
            1
            for _ in itertools.takewhile(
                lambda ab: ab[0] == ab[1], zip(reversed(p.lower().split("/")), reversed(comps), strict=False)
            )
        )
        for p in paths
        if p.lower().split("/")[-1] == comps[-1]
    }
    longest = max(tails.values(), default=0)
    best = sorted(p for p, n in tails.items() if n == longest)
    too_loose = longest == 1 and (len(comps) > 1 or len(best) > 3)
    return [] if not best or too_loose else best


def test_a_frame_finds_its_file_among_hundreds_that_share_its_name() -> None:
    index = PathIndex(FILES)
    frame = "/venv/lib/python3.12/site-packages/django/core/management/__init__.py"
    assert resolve_path(index, frame) == ["django/core/management/__init__.py"]
    assert resolve_path(index, "C:\\env\\Lib\\site-packages\\django\\db\\models\\base.py") == [
        "django/db/models/base.py"
    ]
    assert resolve_path(index, "/usr/lib/python3/site-packages/pkg/mod.py") == [
        "lib/pkg/mod.py",
        "src/Pkg/Mod.py",
    ]
    assert resolve_path(index, "contrib/admin/__init__.py") == ["Django/Contrib/Admin/__init__.py"]
    assert resolve_path(index, "other/__init__.py") == []  # only the name is shared, by hundreds of files
    assert resolve_path(index, "__init__.py") == []  # a bare name shared by more than three files
    assert resolve_path(index, "basic.py") == ["sympy/core/basic.py"]
    assert resolve_path(index, "base.py") == [
        "base.py",
        "django/core/management/base.py",
        "django/db/models/base.py",
    ]
    assert resolve_path(index, "management/__init__.py") == [
        "django/core/management/__init__.py",
        "vendor/management/__init__.py",
    ]


@pytest.mark.parametrize("kind", ["PathIndex", "dict of sets"])
def test_every_written_form_resolves_as_the_first_rule_did(kind: str) -> None:
    built = PathIndex(FILES)
    # the Milvus retriever passes a plain dict of the same shape
    index: Mapping[str, set[str]] = built if kind == "PathIndex" else {k: set(built[k]) for k in built}
    tails = ["", "x/", "site-packages/", "/abs/", "./", "../"]
    for path, tail in itertools.product(
        FILES[:16] + ["pkg7/sub/__init__.py", "nope/base.py", "readme.md"], tails
    ):
        comps = path.split("/")
        for start in range(len(comps)):
            written = tail + "/".join(comps[start:])
            for form in (written, written.upper(), written.replace("/", "\\")):
                assert resolve_path(index, form) == _reference(FILES, form), form
