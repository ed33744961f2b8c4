"""Which language a file is written in, from its name (shared by the chunkers and query filters)."""

from __future__ import annotations

_EXT: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".vue": "javascript", ".svelte": "javascript", ".astro": "javascript",  # their scripts; markup as is
    ".swift": "swift", ".scala": "scala", ".sc": "scala", ".dart": "dart", ".lua": "lua",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".cs": "csharp",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".ru": "ruby",
    ".php": "php", ".phtml": "php",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ksh": "shell",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".json": "json", ".jsonc": "json", ".json5": "json", ".ipynb": "json",
}  # fmt: skip
_NAMES: dict[str, str] = {
    "rakefile": "ruby", "gemfile": "ruby", "guardfile": "ruby", "vagrantfile": "ruby", "podfile": "ruby",
    ".bashrc": "shell", ".bash_profile": "shell", ".zshrc": "shell", ".profile": "shell", "pipfile": "toml",
    "cargo.lock": "toml", "poetry.lock": "toml", "uv.lock": "toml",
}  # fmt: skip


def detect_language(path: str) -> str:
    """Language of ``path`` from its file name or extension; ``"text"`` when unknown."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name in _NAMES:
        return _NAMES[name]
    dot = name.rfind(".")
    return _EXT.get(name[dot:], "text") if dot > 0 or (dot == 0 and name.count(".") > 1) else "text"


LANGUAGES = tuple(sorted({*_EXT.values(), *_NAMES.values(), "text"}))

# a name whose files are chunked as either: a .h writing C++ as C++, a notebook as its cells' code
_ALSO: dict[str, frozenset[str]] = {".h": frozenset({"cpp"}), ".ipynb": frozenset({"python"})}


def path_languages(path: str) -> frozenset[str]:
    """Every language a file of this name may be chunked as: :func:`detect_language`'s, and for a ``.h``
    C++ too (a header that writes C++), for a notebook Python (its cells)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return frozenset({detect_language(path), *(_ALSO.get(name[dot:], ()) if dot > 0 else ())})
