"""Embedded binary data blanked out of text before it is chunked (line structure is preserved).

A Jupyter notebook stores each plot it shows as base64 inside its JSON (``"image/png": "iVBOR..."``),
and HTML, CSS, Markdown and SVG files inline images and fonts as ``data:`` URIs. Such a run is tens of
kilobytes of letters that the tokenizer would cut into thousands of made-up terms (``Load``, ``Rx``,
``Tim`` at camelCase boundaries), that phrase and trigram lists would store, and that the encoders
would read as if it were text. Each run becomes a short note of its size; everything around it,
including the notebook's code cells and their text outputs, is kept. Both rules sit behind a cheap
substring test, so ordinary source files pay two ``in`` checks.
"""

from __future__ import annotations

import re

MIN_BLOB_CHARS = 100  # shorter runs are left alone (a digest, a small icon is harmless)

# base64 inside one line: letters, digits, + and /, JSON's escaped line breaks (``\n``) and padding
_RUN = rf"(?:[A-Za-z0-9+/]|\\n){{{MIN_BLOB_CHARS},}}=*(?:\\n)?"
_DATA_URI = re.compile(rf"(data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,)({_RUN})")
_NOTEBOOK_IMAGE = re.compile(rf'("(?:image|application)/[\w.+-]+"\s*:\s*")({_RUN})(?=")')


def _note(m: re.Match[str]) -> str:
    size = len(m.group(2)) * 3 // 4
    return m.group(1) + (f"«{size // 1024} KB of base64»" if size >= 1024 else f"«{size} bytes of base64»")


def blank_blobs(text: str) -> str:
    """``text`` with every long base64 run of a ``data:`` URI or a notebook's image output replaced by
    a note of its size (no line is added or removed)."""
    if "base64," in text:
        text = _DATA_URI.sub(_note, text)
    if '"image/' in text or '"application/' in text:
        text = _NOTEBOOK_IMAGE.sub(_note, text)
    return text
