"""A chunk's enrichment header as stored: without the file and symbol lines a row already holds.

Every header begins ``file: <path>``, most go on ``\\nsymbol: <symbol>`` (model.header_head); a
segment stores each chunk's and piece's path and symbol beside it, so those lines are kept once, not in
every row (on a 5.9M-line tree they were about half of the rows' metadata). A stored header is the text
as it was when it does not begin that way, or ``[1, rest]`` (``file: <path>`` + rest) or ``[2, rest]``
(``file: <path>\\nsymbol: <symbol>`` + rest).
"""

from __future__ import annotations

from aide_tui.core.model import header_head


def packed_header(header: str, path: str, symbol: str | None) -> str | list[object]:
    """``header`` as stored in a row of ``path`` whose symbol is ``symbol``."""
    with_symbol, file_only = header_head(path, symbol), header_head(path, None)
    if symbol and header.startswith(with_symbol):
        return [2, header[len(with_symbol) :]]
    if header.startswith(file_only):
        return [1, header[len(file_only) :]]
    return header


def unpacked_header(stored: object, path: str, symbol: str | None) -> str | None:
    """The header a row stored (None when ``stored`` is not one :func:`packed_header` writes)."""
    if isinstance(stored, str):
        return stored
    if not (isinstance(stored, list) and len(stored) == 2 and isinstance(stored[1], str)):
        return None
    kind, rest = stored[0], str(stored[1])
    if kind == 1 or (kind == 2 and symbol):
        return header_head(path, symbol if kind == 2 else None) + rest
    return None
