"""Shared plumbing for the chunkers: per-line analysis of a file and the unit tree node."""

from __future__ import annotations

from dataclasses import dataclass, field

# bump when chunk or piece boundaries or headers change: indexes rebuild
# 2: a function is a dense piece of its own (pieces no longer pack small functions together)
# 3: JS/TS functions and classes assigned to members and exports are units (app.listen = function ...)
# 4: base64 images and data: URIs blanked (core/blobs.py)
# 5: a notebook is chunked as its cells' code (core/notebook.py); Swift, Scala, Dart and Lua have units;
#    Vue, Svelte and Astro files are chunked as their scripts; Vue's option objects hold methods
# 6: JS/TS and Lua functions declared in a function's body are definitions; those inside a wrapper that
#    is no unit (an IIFE, a UMD factory, a callback) are units; a C/C++ prototype or forward declaration
#    defines nothing (its definition has the body); C++ type aliases (using X = ...) are definitions;
#    a .h that writes C++ is chunked as C++; every name of a Swift "case a, b" line is a member
# 7: a class's member declarations stay definitions, typedef aliases and constructors with initializer
#    lines too (their initializers define nothing); nested JS definitions must read as declarations (not
#    JSX text, handlers on other objects)
# 8: an out-of-line C++ template member (Stack<T>::push) is an anchor; a JS arrow function whose body
#    starts on the next line holds it; names bound under ``if __name__ == "__main__":`` define nothing
CHUNKER_VERSION = "8"


@dataclass(slots=True, eq=False)
class Unit:
    """A structural unit (function, class, heading section, config key) with 0-based inclusive lines.

    ``head`` is the defining line (``def``/``class``/heading), ``start`` includes leading comments and
    decorators, ``end`` is the last line of the unit.
    """

    head: int
    end: int
    kind: str
    name: str
    label: str  # how the unit appears in a symbol chain, e.g. "class Client"
    start: int = -1
    container: bool = False  # may hold member units (class, impl, module, section ...)
    define: bool = True  # whether ``name`` goes into Chunk.defines
    owner: str = ""  # the object a JS member is assigned to ("app" of ``app.listen = function``)
    children: list[Unit] = field(default_factory=list)
    # functions and classes declared in this unit's body (a JS closure's helpers): definitions the
    # chunk holding them records, not units of their own (chunk boundaries do not follow them)
    nested: list[Unit] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.start < 0 or self.start > self.head:
            self.start = self.head


class Src:
    """A file split into lines plus the cheap per-line facts every chunker needs."""

    __slots__ = ("raw", "lines", "n", "blank", "indent", "cum", "text")

    def __init__(self, text: str) -> None:
        self.raw: list[str] = text.split("\n")
        # Analysis copy: a trailing "\r" (CRLF files) is dropped; ``raw`` stays byte-faithful for Chunk.text.
        self.lines: list[str] = [ln[:-1] if ln.endswith("\r") else ln for ln in self.raw]
        self.n = len(self.lines)
        self.text = "\n".join(self.lines)
        blank: list[bool] = []
        indent: list[int] = []
        cum = [0]
        total = 0
        for ln in self.lines:
            stripped = ln.lstrip()
            if not stripped:
                blank.append(True)
                indent.append(0)
                cum.append(total)
                continue
            blank.append(False)
            lead = ln[: len(ln) - len(stripped)]
            indent.append(len(lead.expandtabs(4)) if "\t" in lead else len(lead))
            total += len("".join(stripped.split()))
            cum.append(total)
        self.blank = blank
        self.indent = indent
        self.cum = cum

    def size(self, lo: int, hi: int) -> int:
        """Non-whitespace characters in lines ``lo..hi`` (inclusive, 0-based)."""
        return self.cum[hi + 1] - self.cum[lo]

    def trim(self, lo: int, hi: int) -> tuple[int, int]:
        """Shrink ``lo..hi`` so that it starts and ends on non-blank lines (lo > hi when all blank)."""
        blank = self.blank
        while lo <= hi and blank[lo]:
            lo += 1
        while hi >= lo and blank[hi]:
            hi -= 1
        return lo, hi
