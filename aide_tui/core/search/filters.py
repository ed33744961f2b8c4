"""``path:GLOB`` and ``lang:NAME`` filters: split out of the query text, checked against a path."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from aide_tui.core.errors import QueryError
from aide_tui.core.languages import LANGUAGES, path_languages

_FILTER = re.compile(r"(?:^|\s)(path|lang):(\S+)")

LANGUAGE_ALIASES = {
    "py": "python", "python3": "python", "py3": "python", "js": "javascript", "node": "javascript",
    "jsx": "javascript", "ecmascript": "javascript", "ts": "typescript", "tsx": "typescript",
    "rs": "rust", "golang": "go", "yml": "yaml", "md": "markdown", "sh": "shell", "bash": "shell",
    "zsh": "shell", "rb": "ruby", "cs": "csharp", "c#": "csharp", "c++": "cpp", "cxx": "cpp",
    "hpp": "cpp", "kt": "kotlin", "txt": "text", "plain": "text", "jsonc": "json",
}  # fmt: skip


@dataclass
class ParsedQuery:
    """Free text plus ``path:GLOB`` / ``lang:NAME`` filters (language names already canonical)."""

    text: str
    path_globs: list[str]
    langs: list[str]
    error: str | None = None  # why the filters cannot be used (unknown lang:); the search answers nothing

    @property
    def has_filters(self) -> bool:
        return bool(self.path_globs or self.langs)

    def accepts_path(self, path: str) -> bool:
        """Whether a file passes the filters (its language detected from its name; a ``.h`` header is
        C's or C++'s, so either filter takes it; ``lang:python`` takes a notebook)."""
        if self.langs and path_languages(path).isdisjoint(self.langs):
            return False
        return self._globs_accept(path)

    def accepts(self, path: str, language: str) -> bool:
        """Whether a chunk of ``language`` in file ``path`` passes the filters."""
        if self.langs and language not in self.langs:
            return False
        return self._globs_accept(path)

    def _globs_accept(self, path: str) -> bool:
        return not self.path_globs or any(glob_match(path, g) for g in self.path_globs)


def glob_match(path: str, glob: str) -> bool:
    """``path:`` semantics: a glob matches the path, a tail of it or a folder; plain text is a substring."""
    if any(ch in glob for ch in "*?["):
        return (
            fnmatch.fnmatch(path, glob)
            or fnmatch.fnmatch(path, f"*/{glob}")
            or fnmatch.fnmatch(path, f"{glob}/*")
        )
    return glob in path


def canonical_language(name: str) -> str:
    """``py`` → ``python``; raises QueryError listing the valid names for an unknown one."""
    low = name.lower()
    low = LANGUAGE_ALIASES.get(low, low)
    if low not in LANGUAGES:
        raise QueryError(
            f"unknown language {name!r} in lang: (valid: {', '.join(LANGUAGES)}; aliases: "
            f"{', '.join(sorted(LANGUAGE_ALIASES))})"
        )
    return low


def parse_query(query: str) -> ParsedQuery:
    """Split filters out of the query text. Never raises: an unknown ``lang:`` name sets ``error``."""
    globs: list[str] = []
    langs: list[str] = []
    error: str | None = None
    for kind, value in _FILTER.findall(query):
        if kind == "path":
            globs.append(value)
            continue
        for v in value.split(","):
            if not v:
                continue
            try:
                langs.append(canonical_language(v))
            except QueryError as exc:
                error = error or str(exc)
    text = _FILTER.sub(" ", query).strip()
    return ParsedQuery(text, globs, list(dict.fromkeys(langs)), error)
