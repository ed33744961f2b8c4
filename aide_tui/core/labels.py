"""How a definition is named in a row's label, shared by the chunkers (a chunk's symbol) and the search
side (the definition at a hit's line): a Go method by its receiver's type, ``func (*Client) Get``."""

from __future__ import annotations

import re

_TYPE_PARAMS = re.compile(r"\[[^\]]*\]")


def go_receiver_type(receiver: str) -> str:
    """The type of a Go method's receiver, without its name or type parameters (``f *FlagBase[T, C]`` →
    ``*FlagBase``): how a method's label names it (``func (*FlagBase) Apply``)."""
    words = _TYPE_PARAMS.sub("", receiver).split()
    return words[-1] if words else ""
