"""Chunks decoded on access: a segment's metadata table plus one blob of texts, so loading an index
(or picking up a merged base in a running app) does not build ten thousand objects up front."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, overload

from aide_tui.core.model import Chunk


class ChunkTable(Sequence[Chunk]):
    """``table`` rows ``[path, start, end, language, symbol, header, defines]``; texts are
    ``blob[offsets[i]:offsets[i+1]]`` (UTF-8). Chunks are built when first read, then kept."""

    def __init__(self, table: list[list[Any]], blob: bytes, offsets: list[int]) -> None:
        self._table = table
        self._blob = blob
        self._offsets = offsets
        self._built: dict[int, Chunk] = {}
        self.paths: list[str] = [str(row[0]) for row in table]

    def __len__(self) -> int:
        return len(self._table)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self._table)
        chunk = self._built.get(i)
        if chunk is None:
            p, s, e, lang, sym, hdr, d = self._table[i]
            text = self._blob[self._offsets[i] : self._offsets[i + 1]].decode("utf-8", "surrogatepass")
            chunk = self._built[i] = Chunk(
                p, int(s), int(e), str(lang), sym, str(hdr), text, tuple(map(str, d))
            )
        return chunk

    def __iter__(self) -> Iterator[Chunk]:
        return (self[i] for i in range(len(self)))

    def defines(self, i: int) -> list[str]:
        """Names defined by chunk ``i`` without building it."""
        return [str(d) for d in self._table[i][6]]

    def start_line(self, i: int) -> int:
        return int(self._table[i][1])


def paths_of(chunks: Sequence[Chunk]) -> list[str]:
    """The path of every chunk (without building lazily decoded ones)."""
    return chunks.paths if isinstance(chunks, ChunkTable) else [c.path for c in chunks]


def defines_all(chunks: Sequence[Chunk]) -> Iterator[Sequence[str]]:
    """The names each chunk defines, in order (without building lazily decoded chunks)."""
    if isinstance(chunks, ChunkTable):
        return (row[6] for row in chunks._table)
    return (c.defines for c in chunks)


class ConcatChunks(Sequence[Chunk]):
    """Several chunk sequences read as one (global rows of an index view)."""

    def __init__(self, parts: list[Sequence[Chunk]]) -> None:
        self._parts = parts
        self._starts: list[int] = []
        n = 0
        for p in parts:
            self._starts.append(n)
            n += len(p)
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        if len(self._parts) == 1:
            return self._parts[0][i]
        k = bisect_right(self._starts, i) - 1
        return self._parts[k][i - self._starts[k]]

    def __iter__(self) -> Iterator[Chunk]:
        for p in self._parts:
            yield from p
