"""Generated output told from sources by layout and content, never by a folder's name alone.

A folder named ``build`` is Sphinx's source folder in SQLAlchemy and a build script folder in many
projects, so names decide nothing here. Two kinds of evidence do:

- **layout** (:func:`output_dir_reason`, from a folder's entry names, no reads): a build tree leaves
  marker files (``CACHEDIR.TAG``, ``CMakeCache.txt``, ``.ninja_log``, Sphinx's ``.buildinfo``...); a
  rendered docs site has ``searchindex.js`` beside ``_static/``, whose support folders
  (:func:`render_support_reason`) are copies and renders;
- **content** (:func:`content_reason`, from the text read for indexing): an HTML page that names the
  tool that rendered it or is mostly inline SVG drawings (a snapshot test's report: drawings, as an
  ``.svg`` file is), a minified or compiled script or style sheet, a source map, a data or text file
  whose first lines say it is generated and not to be edited.

Source code that says it is generated (``// Code generated ... DO NOT EDIT.``, ``@generated``) is
indexed: a protobuf message, an HTTP/2 framer bundled into Go's ``net/http`` or a deepcopy method is
defined nowhere else, and a search or ``defs`` for it must find it. What is left out is a copy of
sources that are indexed themselves (a render, a bundle, a map).

A negated ``index.exclude`` pattern (``!doc/_static/``, ``!*.html``) brings such files back.
"""

from __future__ import annotations

import re

from aide_tui.core.languages import LANGUAGES, detect_language

# marker entries of build trees: any one of them makes its folder build output
_TREE_MARKERS: dict[str, str] = {
    "CACHEDIR.TAG": "a cache folder (CACHEDIR.TAG)",
    "CMakeCache.txt": "a CMake build tree (CMakeCache.txt)",
    "CMakeFiles": "a CMake build tree (CMakeFiles/)",
    ".ninja_log": "a Ninja build tree (.ninja_log)",
    ".ninja_deps": "a Ninja build tree (.ninja_deps)",
    "meson-private": "a Meson build tree (meson-private/)",
    "meson-info": "a Meson build tree (meson-info/)",
    ".buildinfo": "Sphinx HTML output (.buildinfo)",
    "environment.pickle": "Sphinx doctrees (environment.pickle)",
    "asset-manifest.json": "a web app bundle (asset-manifest.json)",
    ".rustc_info.json": "a Cargo target folder (.rustc_info.json)",
    "maven-status": "a Maven target folder (maven-status/)",
}
# setuptools' build folder holds only these (build/lib, build/bdist.linux-x86_64, build/temp.*...)
_SETUPTOOLS = re.compile(r"(lib|lib\..+|bdist\..+|temp\..+|scripts-.+|src\..+)")
# a Gradle build folder: tmp/ beside one of these
_GRADLE = frozenset({"classes", "intermediates", "kotlin", "libs", "test-results", "generated", "reports"})

# a rendered docs site (Sphinx, with or without .buildinfo): searchindex.js beside _static/
RENDER_SUPPORT = frozenset({"_static", "_sources", "_modules", "_images", "_downloads", "searchindex.js",
                            "objects.inv", ".doctrees"})  # fmt: skip


def output_dir_reason(name: str, entries: frozenset[str] | set[str]) -> str | None:
    """Why the folder ``name`` with these entry names is build output (None: walk it)."""
    for marker, what in _TREE_MARKERS.items():
        if marker in entries:
            return f"build output: {what}"
    if name == "build" and entries and all(_SETUPTOOLS.fullmatch(e) for e in entries):
        return "build output: a setuptools build folder (lib/, bdist.*/, temp.*/)"
    if name == "build" and "tmp" in entries and entries & _GRADLE:
        return "build output: a Gradle build folder (tmp/, classes/...)"
    return None


def is_render_root(entries: frozenset[str] | set[str]) -> bool:
    """A folder holding a rendered docs site (its search index beside its static files)."""
    return "searchindex.js" in entries and "_static" in entries


def render_support_reason(name: str) -> str | None:
    """Why an entry of a rendered docs site's root is generated (None: judge it on its own)."""
    if name in RENDER_SUPPORT:
        return "generated: support files of a rendered docs site (searchindex.js beside _static/)"
    return None


# -- content -----------------------------------------------------------------------------------------

_HTML_EXT = ("html", "htm", "xhtml")
_SCRIPT_EXT = ("js", "mjs", "cjs", "css")
_HTML_TOOL = re.compile(
    r"<meta\s+name=[\"']generator[\"']\s+content=[\"']([^\"'<>]{1,60})"
    r"|(?:created|generated|built)\s+(?:using|by|with)\s+(?:<a\b[^>]{0,300}>\s*)?"
    r"(sphinx|docutils|doxygen|mkdocs|jsdoc|typedoc|pdoc|javadoc|coverage\.py|rustdoc|godoc)\b",
    re.IGNORECASE,
)
_SVG_ELEMENT = re.compile(r"<svg\b.*?</svg\s*>", re.IGNORECASE | re.DOTALL)
DRAWN_PAGE_CHARS = 32 * 1024  # a smaller page with drawings is a page with icons
DRAWN_SHARE = 0.5  # an HTML page whose characters are this much inline SVG is drawings (a test report)
_SOURCE_MAP_LINK = re.compile(r"^\s*(?://|/\*)\s*[#@]\s*source(?:Mapping)?URL=", re.MULTILINE)
_SOURCE_MAP = re.compile(r'\s*\{\s*"version"\s*:\s*3\b')
_SAYS_GENERATED = re.compile(r"\bgenerated\b|\bautogenerated\b|@generated\b", re.IGNORECASE)
_DO_NOT_EDIT = re.compile(
    r"do\s+not\s+(?:edit|modify)|don'?t\s+(?:edit|modify)|edits\s+will\s+be\s+lost|changes\s+(?:made\s+)?to\s+"
    r"this\s+file\s+will\s+be\s+(?:lost|overwritten)",
    re.IGNORECASE,
)
_GO_GENERATED = re.compile(r"^// Code generated .* DO NOT EDIT\.$", re.MULTILINE)
_MARKED_GENERATED = re.compile(r"^\W{0,4}@generated\b", re.MULTILINE)  # Meta's tools, Buck, Relay
MINIFIED_LINE = 110  # average characters a line from which a script is minified (GitHub linguist's rule)
MINIFIED_MIN_CHARS = 2048  # a short one-line script is a script, not a bundle
HEAD_LINES = 10  # a "generated, do not edit" banner is in a file's first lines
TABLE_SHARE = 0.5  # generated code whose characters are this much number literals is a data table
_NUMBER = re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?)")
# languages whose generated files are indexed all the same: the code a developer calls and reads
# (protobuf messages, Go's h2_bundle.go, deepcopy and stringer output) is defined only there
GENERATED_CODE_KEPT = frozenset(LANGUAGES) - {"text", "markdown", "yaml", "toml", "json"}


def content_reason(rel: str, text: str) -> str | None:
    """Why a file with this text is generated output (None: index it)."""
    name = rel.rsplit("/", 1)[-1].lower()
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext in _HTML_EXT:
        m = _HTML_TOOL.search(text[:8192]) or _HTML_TOOL.search(text[-20_000:])  # the head, the footer
        if m:
            tool = (m.group(1) or m.group(2)).strip()
            return f"generated: an HTML page rendered by {tool}"
        if len(text) >= DRAWN_PAGE_CHARS and "<svg" in text.lower():
            drawn = sum(m.end() - m.start() for m in _SVG_ELEMENT.finditer(text))
            if drawn >= DRAWN_SHARE * len(text):  # like an .svg file, drawings, not text
                return f"generated: an HTML page of drawings ({100 * drawn // len(text)} % inline SVG)"
    elif ext in _SCRIPT_EXT and len(text) >= MINIFIED_MIN_CHARS:
        lines = text.count("\n") + 1
        if len(text) / lines > MINIFIED_LINE:
            return f"generated: minified ({len(text) // lines} characters a line)"
        if _SOURCE_MAP_LINK.search(text[-2000:]):
            return "generated: compiled output (it links a source map)"
    elif (
        ext == "map"
        and text.lstrip()[:40].replace(" ", "").startswith('{"version":3')
        and '"mappings"' in text
    ):
        return "generated: a source map"
    head = "\n".join(text[:4000].splitlines()[:HEAD_LINES])
    if _GO_GENERATED.search(head) or _MARKED_GENERATED.search(head):
        why = "generated: its first lines say so"
    elif _SAYS_GENERATED.search(head) and _DO_NOT_EDIT.search(head):
        why = "generated: its first lines say so (do not edit)"
    else:
        return None
    if detect_language(rel) in GENERATED_CODE_KEPT:  # generated source code (see the module's doc) ...
        if numbers_share(text) < TABLE_SHARE:
            return None
        return "generated: a table of numbers"  # ... but not Unicode tables, lexers' serialized states
    return why


def numbers_share(text: str) -> float:
    """The share of a text's non-blank characters (its first 64 KB) that are number literals."""
    part = text[:65536]
    chars = len(part) - sum(part.count(c) for c in " \t\r\n")
    return sum(len(m) for m in _NUMBER.findall(part)) / chars if chars else 0.0
