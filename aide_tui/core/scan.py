"""Which files to index: ignore rules, size cap, binaries, secrets, and the symlink jail."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".aide", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
        "dist", "build", "target", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", "vendor",
        "third_party", "bower_components", ".next", ".gradle", ".eggs", "site-packages", ".cache",
    }
)  # fmt: skip

LOCK_FILES = frozenset(
    {
        "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock", "Pipfile.lock",
        "Gemfile.lock", "composer.lock", "go.sum", "uv.lock", "bun.lockb", "flake.lock", "mix.lock",
    }
)  # fmt: skip

BINARY_EXTENSIONS = frozenset(
    """
    png jpg jpeg gif bmp ico webp tiff psd svgz heic avif
    zip tar gz tgz bz2 xz zst 7z rar jar war ear whl egg
    pdf doc docx xls xlsx ppt pptx odt
    so dll dylib exe bin o a lib obj class pyc pyo pyd wasm dex
    ttf otf woff woff2 eot
    mp3 mp4 wav flac ogg avi mov mkv webm m4a
    sqlite sqlite3 db npy npz pkl pickle parquet feather h5 hdf5 onnx pt pth safetensors ckpt
    iso img dmg deb rpm msi
    """.split()
)

SENSITIVE_PATTERNS = [
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
    "id_rsa", "id_rsa.*", "id_dsa", "id_dsa.*", "id_ecdsa", "id_ecdsa.*", "id_ed25519", "id_ed25519.*",
    ".netrc", "_netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc", ".htpasswd",
    "credentials", "credentials.json", "*.gpg", "secring.*",
]  # fmt: skip

MINIFIED_SUFFIXES = (".min.js", ".min.css", ".min.mjs", ".bundle.js", ".js.map", ".css.map")


@dataclass(frozen=True)
class FileEntry:
    """A candidate file: its posix path relative to the root, absolute path, size and mtime."""

    rel: str
    abs: str
    size: int
    mtime_ns: int


@dataclass
class ScanResult:
    """Files to index plus what was skipped and why (path → reason)."""

    files: list[FileEntry] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _load_ignore(dir_abs: str, names: tuple[str, ...]) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in names:
        try:
            with open(os.path.join(dir_abs, name), encoding="utf-8", errors="replace") as fh:
                lines.extend(fh.read().splitlines())
        except OSError:
            continue
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


class Scanner:
    """Walks a workspace root; ``scan()`` returns the files to index."""

    def __init__(
        self,
        root: Path,
        max_file_bytes: int = 512 * 1024,
        extra_excludes: tuple[str, ...] = (),
        include_sensitive: bool = False,
    ) -> None:
        self.root = os.path.realpath(root)
        self.max_file_bytes = max_file_bytes
        self.extra = pathspec.GitIgnoreSpec.from_lines(list(extra_excludes)) if extra_excludes else None
        self.sensitive = None if include_sensitive else pathspec.GitIgnoreSpec.from_lines(SENSITIVE_PATTERNS)
        self._spec_cache: dict[str, pathspec.GitIgnoreSpec | None] = {}

    # -- rules -------------------------------------------------------------------------------------

    def _ignored(self, rel: str, is_dir: bool, specs: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
        """Git semantics: the deepest .gitignore with a matching pattern decides."""
        decision: bool | None = None
        for base, spec in specs:
            sub = rel[len(base) + 1 :] if base else rel
            if is_dir:
                sub += "/"
            res = spec.check_file(sub)
            if res.include is not None:
                decision = res.include
        if self.extra is not None:
            res = self.extra.check_file(rel + "/" if is_dir else rel)
            if res.include is not None:
                decision = res.include
        return bool(decision)

    def file_skip_reason(self, rel: str, size: int) -> str | None:
        """Why a file is not indexed by name or size alone (None = index it)."""
        name = rel.rsplit("/", 1)[-1]
        if name in LOCK_FILES:
            return "lock file"
        low = name.lower()
        if low.endswith(MINIFIED_SUFFIXES):
            return "minified bundle"
        ext = low.rsplit(".", 1)[-1] if "." in low else ""
        if ext in BINARY_EXTENSIONS:
            return "binary extension"
        if self.sensitive is not None and self.sensitive.match_file(name):
            return "sensitive file (set index.include_sensitive to index it)"
        if size > self.max_file_bytes:
            return f"over size cap ({size // 1024} KB > {self.max_file_bytes // 1024} KB)"
        return None

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether a path (posix, relative to the root) would be left out by the walk's ignore rules."""
        parts = rel.split("/")
        if any(p in DEFAULT_EXCLUDED_DIRS for p in (parts if is_dir else parts[:-1])):
            return True
        specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = self._spec_cache.get(base)
            if spec is None and base not in self._spec_cache:
                spec = self._spec_cache[base] = _load_ignore(
                    os.path.join(self.root, base), (".gitignore", ".aideignore")
                )
            if spec is not None:
                specs.append((base, spec))
            if depth < len(parts) - 1 and self._ignored("/".join(parts[: depth + 1]), True, specs):
                return True
        return self._ignored(rel, is_dir, specs)

    def _inside_root(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    # -- walk --------------------------------------------------------------------------------------

    def scan(self) -> ScanResult:
        """Walk the root and classify every file."""
        result = ScanResult()
        root_specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        visited: set[tuple[int, int]] = set()
        try:
            st = os.stat(self.root)
            visited.add((st.st_dev, st.st_ino))
        except OSError as exc:
            result.errors["."] = f"cannot read workspace root: {exc.strerror or exc}"
            return result
        for entry in self._walk(self.root, "", root_specs, visited, result):
            result.files.append(entry)
        result.files.sort(key=lambda e: e.rel)
        return result

    def _walk(
        self,
        dir_abs: str,
        dir_rel: str,
        specs: list[tuple[str, pathspec.GitIgnoreSpec]],
        visited: set[tuple[int, int]],
        result: ScanResult,
    ) -> Iterator[FileEntry]:
        spec = _load_ignore(dir_abs, (".gitignore", ".aideignore"))
        if spec is not None:
            specs = [*specs, (dir_rel, spec)]
        try:
            with os.scandir(dir_abs) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            result.errors[dir_rel or "."] = f"cannot list directory: {exc.strerror or exc}"
            return
        for de in entries:
            try:
                de.name.encode("utf-8")
            except UnicodeEncodeError:
                result.skipped[os.fsencode(de.name).decode("utf-8", "replace")] = "file name is not UTF-8"
                continue
            rel = f"{dir_rel}/{de.name}" if dir_rel else de.name
            try:
                is_link = de.is_symlink()
                st = os.stat(de.path) if is_link else de.stat(follow_symlinks=False)
            except OSError as exc:
                result.skipped[rel] = "broken symlink" if de.is_symlink() else f"cannot stat: {exc.strerror}"
                continue
            if is_link and not self._inside_root(os.path.realpath(de.path)):
                result.skipped[rel] = "symlink leaves the workspace (not followed)"
                continue
            if stat.S_ISDIR(st.st_mode):
                if de.name in DEFAULT_EXCLUDED_DIRS or self._ignored(rel, True, specs):
                    continue
                if os.path.exists(os.path.join(de.path, "pyvenv.cfg")):
                    continue  # a virtualenv under any name
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    continue  # symlink loop or a second way into a directory already walked
                visited.add(key)
                yield from self._walk(de.path, rel, specs, visited, result)
            elif stat.S_ISREG(st.st_mode):
                if self._ignored(rel, False, specs):
                    continue
                reason = self.file_skip_reason(rel, st.st_size)
                if reason:
                    result.skipped[rel] = reason
                    continue
                yield FileEntry(rel=rel, abs=de.path, size=st.st_size, mtime_ns=st.st_mtime_ns)


def read_text(path: str, max_bytes: int) -> tuple[str | None, bytes | None, str | None]:
    """Read a file as text: (text, raw bytes, None) or (None, None, reason it was skipped)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        return None, None, "vanished before it could be read"
    except OSError as exc:
        return None, None, f"unreadable: {exc.strerror or exc}"
    if len(raw) > max_bytes:
        return None, None, f"over size cap (> {max_bytes // 1024} KB)"
    if b"\0" in raw[:8192]:
        return None, None, "binary (NUL bytes)"
    return raw.decode("utf-8", errors="replace"), raw, None
