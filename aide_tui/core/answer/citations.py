"""The ``[n]`` citations of an answer, resolved against the excerpts that were sent.

``[1]``, ``[2][3]``, ``[1, 4]`` and ``[2-3]`` count; code does not (fenced blocks, inline code, and
indexing such as ``items[1]``). A number no excerpt has is dropped and reported, never invented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from aide_tui.core.answer.prompt import Excerpt

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_GROUP = re.compile(r"\[(\d{1,4}(?:\s*(?:,|-|–)\s*\d{1,4})*)\]")
MAX_RANGE = 20  # [1-20] at most expands; a wider range is read as its two ends


@dataclass(frozen=True)
class Citation:
    """An answer's reference to excerpt ``n`` and the span that excerpt holds."""

    n: int
    path: str
    start_line: int
    end_line: int

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "path": self.path, "start_line": self.start_line, "end_line": self.end_line}


@dataclass(frozen=True)
class Citations:
    """The excerpts an answer cites (by number) and the numbers it used that no excerpt has."""

    cited: list[Citation]
    unknown: list[int]


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*,\s*", group):
        ends = [int(x) for x in re.split(r"\s*[-–]\s*", part)]
        if len(ends) == 2 and 0 <= ends[1] - ends[0] <= MAX_RANGE:
            out.extend(range(ends[0], ends[1] + 1))
        else:
            out.extend(ends)
    return out


def cited_numbers(answer: str) -> list[int]:
    """The citation numbers of ``answer`` in order of first use (code blocks and spans blanked out)."""
    text = _CODE.sub(lambda m: " " * len(m.group()), answer)
    seen: dict[int, None] = {}
    prev_end, prev_was_citation = -1, False
    for m in _GROUP.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        if before == "]" and m.start() == prev_end:
            citation = prev_was_citation  # [1][2] continues a citation, m[1][2] continues indexing
        else:
            citation = not (before.isalnum() or before in "_)]}")
        prev_end, prev_was_citation = m.end(), citation
        if citation:
            seen.update(dict.fromkeys(_numbers(m.group(1))))
    return list(seen)


def resolve(answer: str, excerpts: Sequence[Excerpt]) -> Citations:
    """The citations of ``answer`` in number order; unknown numbers sorted."""
    by_n = {e.n: e for e in excerpts}
    numbers = cited_numbers(answer)
    cited = [Citation(n, by_n[n].path, by_n[n].start_line, by_n[n].end_line) for n in sorted(numbers)
             if n in by_n]  # fmt: skip
    return Citations(cited, sorted(n for n in numbers if n not in by_n))
