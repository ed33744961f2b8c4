"""Release numbers a query asks for (``what changed in 0.18.0``, ``v2.3.1``, ``changelog 8.1``), the
files that hold release notes, and whether a chunk heads a release's notes.

The index has no term for a release number: its parts are digits, and single digits are no terms
(``2.3.1`` has none at all). So a number asked for is looked for as written, as a whole number (not
inside ``12.3.10``), like a quoted span, among the chunks of the release-notes files as well as those
the query's words find; a chunk where the number starts a line (a heading: ``## [2.3.1] - 2024-01-02``,
``Version 2.3.1``, ``v2.3.1 (date)``) comes before one that only mentions it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# x.y.z (up to four parts) with an optional pre-release tail; x.y only with a ``v`` or a release word
VERSION = re.compile(
    r"(?<![\w.])([vV]?)(\d+\.\d+(?:\.\d+){0,2}(?:[-.]?(?:a|b|rc|dev|post|alpha|beta|pre)\.?\d*)?)(?![\w]|\.\d)"
)
# where a whole number ends: not a longer one (``2.3.10``), nor one with a pre-release or build tail
# (``0.13.0.dev2``, ``2.0.0-beta.1``, ``1.2.3+local``), which is another release
_ENDS = r"(?!\w|[.\-+~][A-Za-z0-9])"
MAX_VERSION_QUERY_WORDS = 6  # a release number in a longer text (an issue's) is mentioned, not asked for
RELEASE_WORDS = frozenset(
    "changelog changelogs changes changed release released releases version versions notes news history"
    " what's whats new".split()
)
# files and folders whose names say they hold release notes (a stem or a folder name, lower case)
RELEASE_NOTE_NAMES = (
    "changelog", "changes", "history", "news", "releases", "release-notes", "release_notes", "whatsnew",
    "changelog.d", "newsfragments",
)  # fmt: skip
MAX_RELEASE_NOTE_FILES = 32  # files read whole for a number without a term (a folder's first ones)


def asked_versions(text: str) -> list[str]:
    """The release numbers ``text`` asks for, as written without a leading ``v`` (empty for a longer
    text, or an x.y number without a ``v`` or a release word: ``timeout 0.5`` asks for no release)."""
    words = text.split()
    if len(words) > MAX_VERSION_QUERY_WORDS:
        return []
    release = any(w.lower().strip("?,.:;!") in RELEASE_WORDS for w in words)
    found = []
    for m in VERSION.finditer(text):
        number = m.group(2)
        if number.count(".") >= 2 or m.group(1) or release:
            found.append(number)
    return list(dict.fromkeys(found))


def version_pattern(number: str) -> re.Pattern[str]:
    """``number`` as a whole release number in a text (any case, ``v`` before it or not); not a link
    reference's label (``[2.3.1]: https://...``: a changelog's list of compare links holds every
    number) nor inside a URL (``compare/v2.3.0...v2.3.1``)."""
    return re.compile(rf"(?<![\w./])v?{re.escape(number)}{_ENDS}(?!\]:)", re.IGNORECASE)


def heading_pattern(number: str) -> re.Pattern[str]:
    """A heading of ``number``'s notes: a line that starts with it (after heading marks, ``[``, ``v``,
    ``Version`` or ``Release``; not a link reference ``[2.3.1]: https://...``), a Markdown heading that
    names it (``## Twisted 24.10.0``), or an underlined one (``Twisted 24.10.0 (2024-10-28)`` over
    ``=====``)."""
    num = rf"(?<![\w./])v?{re.escape(number)}{_ENDS}"
    return re.compile(
        rf"^[\s#=*\-\[]*(?:(?:version|release)\s+)?{num}(?!\]:)"
        rf"|^#+[^\n]{{0,60}}?{num}"
        rf"|^[^\n]{{0,60}}?{num}[^\n]*\n[=\-~^*]{{3,}}[ \t]*$",
        re.IGNORECASE | re.MULTILINE,
    )


def release_note_files(path_parts: Mapping[str, Iterable[str]]) -> list[str]:
    """The indexed files named like release notes (``CHANGELOG.md``, ``CHANGES.rst``, ``HISTORY``), then
    those in a folder so named (``docs/releases/*``, ``changelog.d/*``), at most
    ``MAX_RELEASE_NOTE_FILES``."""
    named: dict[str, None] = {}
    under: dict[str, None] = {}
    for name in RELEASE_NOTE_NAMES:
        for path in sorted(path_parts.get(name, ())):
            stem = path.rsplit("/", 1)[-1].lower()
            (named if stem == name or stem.startswith(name + ".") else under)[path] = None
    return [*named, *(p for p in under if p not in named)][:MAX_RELEASE_NOTE_FILES]


def heads_release(text: str, numbers: Iterable[str]) -> bool:
    """Whether a line of ``text`` heads the notes of one of the release ``numbers``."""
    return any(heading_pattern(n).search(text) for n in numbers)
