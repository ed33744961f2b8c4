"""A chunk's enrichment header as stored: without the file and symbol lines a row already holds.

Every header begins ``file: <path>``, most go on ``\\nsymbol: <symbol>`` (see chunk/chunker.py); a
segment stores each chunk's and piece's path and symbol beside it, so those lines are kept once, not in
every row (on a 5.9M-line tree they were about half of the rows' metadata). A stored header is the text
as it was when it does not begin that way, or ``[1, rest]`` (``file: <path>`` + rest) or ``[2, rest]``
(``file: <path>\\nsymbol: <symbol>`` + rest).
"""

from __future__ import annotations

SYMBOL_CHARS = 160  # the header's symbol line holds at most this many characters (chunker.py)


def _symbol_line(symbol: str) -> str:
    return "\nsymbol: " + (symbol if len(symbol) <= SYMBOL_CHARS else symbol[: SYMBOL_CHARS - 3] + "...")


def packed_header(header: str, path: str, symbol: str | None) -> str | list[object]:
    """``header`` as stored in a row of ``path`` whose symbol is ``symbol``."""
    file_line = "file: " + path
    if not header.startswith(file_line):
        return header
    if symbol and header.startswith(_symbol_line(symbol), len(file_line)):
        return [2, header[len(file_line) + len(_symbol_line(symbol)) :]]
    return [1, header[len(file_line) :]]


def unpacked_header(stored: object, path: str, symbol: str | None) -> str | None:
    """The header a row stored (None when ``stored`` is not one :func:`packed_header` writes)."""
    if isinstance(stored, str):
        return stored
    if not (isinstance(stored, list) and len(stored) == 2 and isinstance(stored[1], str)):
        return None
    kind, rest = stored[0], str(stored[1])
    if kind == 1:
        return "file: " + path + rest
    if kind == 2 and symbol:
        return "file: " + path + _symbol_line(symbol) + rest
    return None
