"""Unit detection for documents and config: Markdown headings, YAML/TOML/JSON top-level keys and tables."""

from __future__ import annotations

import re
from collections.abc import Callable

from aide_tui.core.chunk.base import Src, Unit
from aide_tui.core.chunk.code import Scan, build_tree, tokens_rx

Found = tuple[list[Unit], list[tuple[int, str]], Callable[[int], bool]]

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-{2,})\s*$")
_CLOSING_HASHES = re.compile(r"\s+#+\s*$")


def _never(_j: int) -> bool:
    return False


def _hash_comment(src: Src) -> Callable[[int], bool]:
    lines = src.lines
    return lambda j: lines[j].lstrip().startswith("#")


def markdown_units(src: Src) -> Found:
    """Heading sections (ATX and setext), nested by level; fenced code blocks are skipped."""
    lines, blank, n = src.lines, src.blank, src.n
    heads: list[tuple[int, int, str]] = []
    i0 = 0
    if n and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, min(n, 200)):
            if lines[j].strip() in ("---", "..."):
                i0 = j + 1
                break
    fence = ""
    for i in range(i0, n):
        s = lines[i]
        if fence:
            st = s.strip()
            if st.startswith(fence) and not st.strip(fence[0]):
                fence = ""
            continue
        m = _FENCE.match(s)
        if m:
            fence = m.group(1)
            continue
        m = _ATX.match(s)
        if m:
            text = _CLOSING_HASHES.sub("", m.group(2) or "").strip()
            heads.append((i, len(m.group(1)), text))
            continue
        m = _SETEXT.match(s)
        if m and i > i0 and not blank[i - 1] and (not heads or heads[-1][0] != i - 1):
            prev = lines[i - 1]
            if src.indent[i - 1] < 4 and not prev.lstrip().startswith(("-", "*", "+", ">", "|", "<")):
                heads.append((i - 1, 1 if m.group(1)[0] == "=" else 2, prev.strip()))
    items: list[tuple[Unit, bool]] = []
    for k, (line, level, text) in enumerate(heads):
        end = n - 1
        for line2, level2, _ in heads[k + 1 :]:
            if level2 <= level:
                end = line2 - 1
                break
        _, end = src.trim(line, end)
        label = f"{'#' * level} {text}".rstrip()
        items.append(
            (
                Unit(
                    head=line,
                    end=max(end, line),
                    kind="#" * level,
                    name=text,
                    label=label,
                    container=True,
                    define=bool(text),
                ),
                False,
            )
        )
    return build_tree(items, None), [], _never


_YAML_KEY = re.compile(
    r"^(?P<ind>[ ]*)(?!-\s|-$|#|---|\.\.\.)(?P<name>\"[^\"]*\"|'[^']*'|[^\s#:\"'{}\[\],&*!|>%@`][^#:]*?)"
    r"\s*:(?:\s|$)"
)


def yaml_units(src: Src) -> Found:
    """Top-level keys (defined) with their second-level keys as members for splitting."""
    lines, blank, indent, n = src.lines, src.blank, src.indent, src.n
    is_comment = _hash_comment(src)
    anchors: list[tuple[int, str, bool]] = []
    top = False
    child_ind = -1
    for i in range(n):
        if blank[i] or is_comment(i):
            continue
        m = _YAML_KEY.match(lines[i])
        if indent[i] == 0:
            top = m is not None
            child_ind = -1
            if m:
                anchors.append((i, m.group("name").strip("\"'"), True))
            continue
        if top:
            if child_ind < 0:
                child_ind = indent[i]
            if m and indent[i] == child_ind:
                anchors.append((i, m.group("name").strip("\"'"), False))
    items: list[tuple[Unit, bool]] = []
    for i, name, is_top in anchors:
        ind = indent[i]
        last = i
        for j in range(i + 1, n):
            if blank[j] or is_comment(j):
                continue
            if indent[j] < ind or (indent[j] == ind and not lines[j].lstrip().startswith("-")):
                break
            last = j
        items.append(
            (
                Unit(head=i, end=last, kind="key", name=name, label=name, container=is_top, define=is_top),
                False,
            )
        )
    return build_tree(items, None), [], is_comment


_TOML_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\]\s][^\]]*?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(
    r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'))*\s*="
)


def toml_units(src: Src) -> Found:
    """Tables / arrays of tables, plus root keys before the first table."""
    sc = Scan(src.text, src.n, tokens_rx("toml"))
    lines, blank, n = src.lines, src.blank, src.n
    is_comment = _hash_comment(src)
    tables: list[tuple[int, str, str]] = []
    keys: list[tuple[int, str]] = []
    for i in range(n):
        if blank[i] or sc.lit_at[i] or sc.depth_at[i]:
            continue
        m = _TOML_TABLE.match(lines[i])
        if m:
            tables.append((i, m.group(2).strip(), m.group(1)))
        elif not tables:
            km = _TOML_KEY.match(lines[i])
            if km:
                keys.append((i, lines[i].split("=", 1)[0].strip()))
    items: list[tuple[Unit, bool]] = []
    for i, name in keys:
        last = i
        for j in range(i + 1, n):
            if blank[j]:
                continue
            if not (sc.lit_at[j] or sc.depth_at[j]):
                break
            last = j
        items.append((Unit(head=i, end=last, kind="key", name=name, label=name), False))
    for k, (i, name, br) in enumerate(tables):
        end = tables[k + 1][0] - 1 if k + 1 < len(tables) else n - 1
        while end > i and (blank[end] or is_comment(end)):
            end -= 1
        label = f"{br}{name}{']' * len(br)}"
        items.append((Unit(head=i, end=end, kind="table", name=name, label=label), False))
    items.sort(key=lambda it: it[0].head)
    return build_tree(items, None), [], is_comment


_JSON_KEY = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:')


def json_units(src: Src) -> Found:
    """Keys of the root object (defined), with the keys of their object values as members for splitting."""
    sc = Scan(src.text, src.n, tokens_rx("json"))
    lines, blank, n = src.lines, src.blank, src.n
    first = next((ln.lstrip() for ln in lines if ln.strip()), "")
    if not first.startswith("{"):
        return [], [], _never
    items: list[tuple[Unit, bool]] = []
    for i in range(n):
        d = sc.depth_at[i]
        if blank[i] or sc.lit_at[i] or d not in (1, 2):
            continue
        m = _JSON_KEY.match(lines[i])
        if not m:
            continue
        last = i
        for j in range(i + 1, n):
            if blank[j]:
                continue
            if sc.depth_at[j] <= d:
                break
            last = j
        name = m.group(1)
        items.append(
            (
                Unit(head=i, end=last, kind="key", name=name, label=name, container=d == 1, define=d == 1),
                False,
            )
        )
    return build_tree(items, sc.depth_at, root_depth=1), [], _never
