"""A Jupyter notebook read as the code its cells hold, line for line with the file.

An ``.ipynb`` file is JSON: each cell's source is a list of quoted, escaped strings, one per line,
between metadata and outputs. Chunked as JSON, a function defined in a notebook is no definition, its
words carry quotes, ``\\n`` and commas, and the outputs (tables, logs, tracebacks) crowd the code.
:func:`cells_view` rewrites the file into what a developer reads: every source line decoded on the
line where the file stores it, a markdown cell as comments, a magic (``%time``, ``!pip``, a ``%%bash``
cell) commented out, and everything else blank. Line numbers stay the file's, so a hit, the preview
and ``vim +N`` land on the cell line, and the code chunker, the symbol graph and the encoders see code.

A notebook whose JSON is not laid out one source line per line (minified, or source as one string
holding several lines) is left to the JSON chunker: the view is checked against the parsed cells.
"""

from __future__ import annotations

import json
import re

# the notebook's kernel language → the chunker's language (others are chunked as plain text)
_KERNELS = {"python": "python", "python3": "python", "ipython": "python", "javascript": "javascript",
            "typescript": "typescript", "go": "go", "rust": "rust", "java": "java", "kotlin": "kotlin",
            "c++": "cpp", "cpp": "cpp", "c": "c", "c#": "csharp", "ruby": "ruby", "swift": "swift",
            "scala": "scala", "dart": "dart", "lua": "lua", "bash": "shell"}  # fmt: skip
_COMMENT = {"python": "# ", "ruby": "# ", "shell": "# ", "lua": "-- "}  # every other language above uses //
_CELL_TYPE = re.compile(r'^(\s*)"cell_type"\s*:\s*"(\w+)"')
_SOURCE = re.compile(r'^(\s*)"source"\s*:(.*)$')
# a line magic (``%time``, ``%%timeit``) or a shell escape (``!pip``), not ``!= b`` or ``% b`` continuing
# an expression from the line above
_MAGIC = re.compile(r"\s*(?:%{1,2}[A-Za-z]|!(?!=))")
# cell magics whose body is Python (only their first line is commented); any other (``%%bash``,
# ``%%html``, ``%%writefile``) holds another language and is commented whole
_PYTHON_CELL_MAGICS = frozenset("time timeit capture prun debug memit px".split())


def is_notebook(path: str) -> bool:
    """Whether ``path`` names a Jupyter notebook."""
    return path.lower().endswith(".ipynb")


def kernel_language(nb: dict[str, object]) -> str:
    """The chunker language of a parsed notebook's kernel (``"python"`` when it does not say)."""
    meta = nb.get("metadata")
    name = ""
    if isinstance(meta, dict):
        info, spec = meta.get("language_info"), meta.get("kernelspec")
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            name = info["name"]
        elif isinstance(spec, dict) and isinstance(spec.get("language"), str):
            name = spec["language"]
    return _KERNELS.get(name.lower(), "text") if name else "python"


def _decoded(item: str) -> str | None:
    """One JSON string of a source list (``"x = 1\\n",``) as its text without the line break."""
    item = item.strip().removesuffix(",").rstrip()
    if len(item) < 2 or item[0] != '"' or item[-1] != '"':
        return None
    try:
        s = json.loads(item)
    except ValueError:
        return None
    return s.removesuffix("\n") if isinstance(s, str) else None


def _cell_texts(nb: dict[str, object]) -> list[tuple[str, str]] | None:
    """(cell type, source) of every cell, or None when the JSON is not a notebook."""
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        if not isinstance(cell, dict):
            return None
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        if not isinstance(src, str):
            return None
        out.append((str(cell.get("cell_type", "")), src))
    return out


def cells_view(text: str) -> tuple[str, str] | None:
    """(language, view) of a notebook's text: the cells' source lines decoded where the file keeps
    them, markdown and magics as comments, every other line blank (as many lines as ``text``).
    None when ``text`` is no notebook or its layout does not keep one source line per line."""
    try:
        nb = json.loads(text)
    except ValueError:
        return None
    if not isinstance(nb, dict):
        return None
    expected = _cell_texts(nb)
    if expected is None:
        return None
    language = kernel_language(nb)
    comment = _COMMENT.get(language, "// ") if language != "text" else ""
    lines = text.split("\n")
    view = [""] * len(lines)
    found: list[tuple[str, str]] = []
    cell_indent, cell_type = None, ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _CELL_TYPE.match(line)
        if m:
            cell_indent, cell_type = m.group(1), m.group(2)
        m = _SOURCE.match(line)
        if m is None or m.group(1) != cell_indent:
            i += 1
            continue
        rest = m.group(2).strip()
        rows: list[tuple[int, str]] = []
        if rest.startswith("["):
            if rest.removesuffix(",").rstrip() not in ("[", "[]"):
                return None  # a list on one line: not one source line per line
            j = i + 1
            while rest == "[" and j < len(lines) and lines[j].strip() not in ("]", "],"):
                s = _decoded(lines[j])
                if s is None or "\n" in s:
                    return None
                rows.append((j, s))
                j += 1
            i = j if rest == "[" else i  # on the list's closing line (an empty list closes on its own)
        else:
            s = _decoded(rest)
            if s is None or "\n" in s:
                return None
            rows.append((i, s))
        found.append((cell_type, "".join(s + "\n" for _, s in rows)))
        _write_cell(view, rows, cell_type, comment)
        cell_indent = None
        i += 1
    if [(t, s.removesuffix("\n")) for t, s in found] != [(t, s.removesuffix("\n")) for t, s in expected]:
        return None
    return language, "\n".join(view)


def _write_cell(view: list[str], rows: list[tuple[int, str]], cell_type: str, comment: str) -> None:
    """Put one cell's decoded lines into ``view``: code as it is, other cells and magics commented."""
    cell_magic = re.match(r"%%(\w+)", rows[0][1]) if rows else None
    whole = cell_type != "code" or bool(cell_magic and cell_magic.group(1) not in _PYTHON_CELL_MAGICS)
    for n, s in rows:
        s = s.replace("\r", "")
        if whole or (comment == "# " and _MAGIC.match(s)):
            view[n] = comment + s if s.strip() else ""
        else:
            view[n] = s
