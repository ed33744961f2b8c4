"""Plain data shared by every pipeline stage."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of one file, the unit of retrieval.

    ``text`` is the code exactly as in the file (lines ``start_line``..``end_line``, 1-based, inclusive);
    ``header`` is the enrichment (path + symbol signature) used for BM25 and embedding, never shown as code.
    """

    path: str  # posix path relative to the workspace root
    start_line: int
    end_line: int
    language: str
    symbol: str | None  # enclosing symbol chain, e.g. "class Client > def send"
    header: str
    text: str
    # Names defined in this chunk (functions, classes, keys, headings): feeds the symbol lookup.
    defines: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        """Stable id: identical for an identical re-chunk of an unchanged file."""
        h = hashlib.sha1(f"{self.path}\0{self.start_line}\0{self.end_line}\0{self.text}".encode())
        return h.hexdigest()[:16]

    @property
    def embed_key(self) -> str:
        """Embedding-cache key: independent of path and position, so renames and moves hit the cache."""
        return hashlib.sha256(f"{self.symbol or ''}\0{self.text}".encode()).hexdigest()[:32]

    @property
    def embed_text(self) -> str:
        """What the embedder sees: enrichment header, then the code."""
        return f"{self.header}\n{self.text}" if self.header else self.text
