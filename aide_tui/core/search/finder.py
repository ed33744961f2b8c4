"""A filter-only query (``path:cli``, ``lang:go``) lists the matching files, fuzzily as a file finder does."""

from __future__ import annotations

from aide_tui.core.languages import detect_language
from aide_tui.core.search.filters import ParsedQuery
from aide_tui.core.search.response import Hit
from aide_tui.core.search.retriever import IndexedFile, Retriever


def fuzzy_score(needle: str, path: str) -> float | None:
    """How well ``needle`` matches ``path`` as a file finder does (higher is better; None = no match).

    A substring match beats a subsequence match; a match in the file name beats one in a folder;
    shorter paths win ties.
    """
    n, p = needle.lower(), path.lower()
    name = p.rsplit("/", 1)[-1]
    if n in (p, name):
        return 1000.0 - len(p) / 100
    if p.endswith("/" + n):
        return 900.0 - len(p) / 100
    if n in name:
        return 800.0 - len(p) / 100
    if n in p:
        return 700.0 - len(p) / 100
    # subsequence: every character in order; fewer gaps and a match ending in the file name score higher
    pos, gaps, last = -1, 0, -1
    for ch in n:
        nxt = p.find(ch, pos + 1)
        if nxt < 0:
            return None
        if last >= 0 and nxt != last + 1:
            gaps += 1
        pos = last = nxt
    in_name = pos >= len(p) - len(name)
    return 500.0 - 10 * gaps + (50 if in_name else 0) - len(p) / 100


def find_files(retriever: Retriever, parsed: ParsedQuery, limit: int) -> list[Hit]:
    """The files passing the filters, best first; a plain ``path:`` value (no glob characters) is also a
    fuzzy needle, and when no path holds it the files are matched as a subsequence."""
    plain = [g for g in parsed.path_globs if not any(ch in g for ch in "*?[")]
    indexed = retriever.files()
    files = [f for f in indexed if parsed.accepts_path(f.path)]
    scored: list[tuple[float, IndexedFile]]
    if plain:
        if not files:  # nothing holds the text: fall back to a fuzzy (subsequence) match
            lang_only = ParsedQuery("", [g for g in parsed.path_globs if g not in plain], parsed.langs)
            files = [f for f in indexed if lang_only.accepts_path(f.path)]
        scored = []
        for f in files:
            per = [fuzzy_score(g, f.path) for g in plain]
            if all(v is not None for v in per):
                scored.append((sum(v for v in per if v is not None), f))
    else:
        scored = [(0.0, f) for f in files]
    scored.sort(key=lambda t: (-t[0], t[1].path, t[1].workspace))
    shown = [f for _, f in scored[:limit]]
    ends = retriever.end_lines(shown)
    return [
        Hit(
            f.path,
            1,
            end,
            1.0 / rank,
            None,
            detect_language(f.path),
            {"bm25": None, "dense": None, "path": rank},
            workspace=f.workspace,
            root=f.root,
        )  # fmt: skip
        for rank, (f, end) in enumerate(zip(shown, ends, strict=True), start=1)
    ]
