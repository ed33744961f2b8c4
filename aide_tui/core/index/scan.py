"""Which files to index: ignore rules, size cap, binaries, secrets, generated output, and the symlink jail."""

from __future__ import annotations

import codecs
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from aide_tui.core.config import Settings
from aide_tui.core.filekinds import not_indexed_reason
from aide_tui.core.index.generated import (
    content_reason,
    is_render_root,
    output_dir_reason,
    render_support_reason,
)

DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".aide", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
        "dist", "target", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", "vendor",
        "third_party", "bower_components", ".next", ".gradle", ".eggs", "site-packages", ".cache",
    }
)  # fmt: skip
# ``build`` is not among them: Sphinx projects keep their sources in ``doc/build``; build trees are told
# by their layout instead (generated.py).

# State and version-control folders: never indexed nor served in any letter case (``.AIDE`` is ``.aide``
# on a case-insensitive file system, and holds the index and the server's token).
PRIVATE_DIRS = frozenset({".aide", ".git", ".hg", ".svn"})


def excluded_dir(name: str) -> bool:
    """A folder the walk never enters, whatever the ignore files say."""
    return name in DEFAULT_EXCLUDED_DIRS or name.lower() in PRIVATE_DIRS


LOCK_FILES = frozenset(
    {
        "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock", "Pipfile.lock",
        "Gemfile.lock", "composer.lock", "go.sum", "uv.lock", "bun.lockb", "flake.lock", "mix.lock",
    }
)  # fmt: skip

BINARY_EXTENSIONS = frozenset(
    """
    png jpg jpeg gif bmp ico webp tiff psd psb svgz heic avif xcf
    ai eps sketch fig indd
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
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
    "id_rsa", "id_rsa.*", "id_dsa", "id_dsa.*", "id_ecdsa", "id_ecdsa.*", "id_ed25519", "id_ed25519.*",
    ".netrc", "_netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc", ".htpasswd",
    "credentials", "credentials.json", "*.gpg", "secring.*",
    # infrastructure state and variables, container and cluster credentials, VPN profiles
    "*.tfvars", "*.tfvars.json", "*.tfstate", "*.tfstate.*", ".dockercfg", "kubeconfig", "*.kubeconfig",
    ".s3cfg", ".boto", "*.ovpn",
]  # fmt: skip

# File names only (no "/"), so one regular expression tests them all (pathspec's per-pattern loop cost
# more than the rest of a no-op reindex on a 7,000-file tree). Case-insensitive: ``.ENV`` and
# ``server.KEY`` hold the same secrets, and on a case-insensitive file system they are the same file.
_SENSITIVE_NAME = re.compile(
    "|".join(f"(?:{fnmatch.translate(p)})" for p in SENSITIVE_PATTERNS), re.IGNORECASE
)

# Credential files recognised by their folder as well as their name (matched against the path's end).
SENSITIVE_PATH_SUFFIXES = ("/.docker/config.json", "/.kube/config", "/.aws/credentials", "/.aws/config")

MINIFIED_SUFFIXES = (".min.js", ".min.css", ".min.mjs", ".bundle.js", ".js.map", ".css.map")


@dataclass(frozen=True)
class FileEntry:
    """A candidate file: its posix path relative to the root, absolute path, size and mtime.

    ``dev``/``ino`` identify the file the scanner saw (the target for ``link``, a symlink inside
    the root that the scanner followed); :func:`read_entry` reads only that same file.
    """

    rel: str
    abs: str
    size: int
    mtime_ns: int
    dev: int  # required: an entry without the scanned identity would read as "a different file"
    ino: int
    link: bool = False


@dataclass
class ScanResult:
    """Files to index plus what was skipped and why (path → reason), and ignore-file warnings."""

    files: list[FileEntry] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def compile_ignore(lines: list[str], source: str, warnings: list[str]) -> pathspec.GitIgnoreSpec | None:
    """Compile gitignore lines; a line that is not a valid pattern is skipped with a warning, as git does.

    ``source`` names the file (or setting) in the warning; line numbers count from 1.
    """
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - GitIgnorePatternError, re.error, ...: find the bad lines
        pass
    patterns: list[Any] = []  # the pattern class differs between pathspec versions
    for n, line in enumerate(lines, 1):
        try:
            patterns.extend(pathspec.GitIgnoreSpec.from_lines([line]).patterns)
        except Exception as exc:  # noqa: BLE001 - any failure of one line costs only that line
            why = f" ({exc.msg})" if isinstance(exc, re.error) else ""
            warnings.append(f"{source}:{n}: ignoring invalid pattern {line!r}{why}")
    return pathspec.GitIgnoreSpec(patterns) if patterns else None


def _load_ignore(
    dir_abs: str, dir_rel: str, names: tuple[str, ...], warnings: list[str]
) -> pathspec.GitIgnoreSpec | None:
    """The merged rules of the ignore files ``names`` in one folder (later files take precedence)."""
    specs: list[pathspec.GitIgnoreSpec] = []
    for name in names:
        try:
            with open(os.path.join(dir_abs, name), encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        spec = compile_ignore(lines, f"{dir_rel}/{name}" if dir_rel else name, warnings)
        if spec is not None:
            specs.append(spec)
    if len(specs) <= 1:
        return specs[0] if specs else None
    return pathspec.GitIgnoreSpec([p for spec in specs for p in spec.patterns])


def hard_link_reason(nlink: int, allowed: bool) -> str | None:
    """Why a file with ``nlink`` names is neither indexed nor served (None: it may be).

    A second name can be made for any file its maker may read (``ln ~/.ssh/id_rsa notes.txt``), and
    nothing on the path tells it from the original: no symlink to refuse, no other inode. Sources in a
    workspace rarely have two names (the tools that hard-link, package stores and ``git clone --local``'s
    objects, live in folders never indexed), so the default is to skip; ``index.include_hard_links``
    (user config only) opts in. The scan, the watcher and ``read_span`` all ask this one rule.
    """
    if nlink > 1 and not allowed:
        return (
            f"a hard link ({nlink} names; another may be outside the workspace): "
            "set index.include_hard_links to index it"
        )
    return None


def _special_kind(mode: int) -> str | None:
    """A short name for a file type that is neither a regular file nor a folder (None for those)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "special file"


class Scanner:
    """Walks a workspace root; ``scan()`` returns the files to index."""

    def __init__(
        self,
        root: Path,
        max_file_bytes: int = 512 * 1024,
        extra_excludes: tuple[str, ...] = (),
        include_sensitive: bool = False,
        include_hard_links: bool = False,
    ) -> None:
        self.root = os.path.realpath(root)
        self.include_hard_links = include_hard_links
        self.max_file_bytes = max_file_bytes
        self.warnings: list[str] = []  # invalid ignore patterns (file:line), in the order met
        self.extra = compile_ignore(list(extra_excludes), "index.exclude", self.warnings)
        self.sensitive = None if include_sensitive else _SENSITIVE_NAME
        self._spec_cache: dict[str, pathspec.GitIgnoreSpec | None] = {}

    @classmethod
    def from_settings(cls, root: Path, settings: Settings) -> Scanner:
        """The scanner of a workspace's ``[index]`` settings (the indexer, the watcher and read_span
        apply the same rules)."""
        s = settings.index
        return cls(root, s.max_file_kb * 1024, tuple(s.exclude), s.include_sensitive, s.include_hard_links)

    # -- rules -------------------------------------------------------------------------------------

    def stat_skip_reason(self, rel: str, st: os.stat_result) -> str | None:
        """Why the regular file ``rel`` with this stat is not indexed nor served: its name and size
        (:meth:`file_skip_reason`), then its link count (:func:`hard_link_reason`). None = index it."""
        return self.file_skip_reason(rel, st.st_size) or hard_link_reason(
            st.st_nlink, self.include_hard_links
        )

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
        kind_reason = not_indexed_reason(rel)
        if kind_reason and not self.negated(rel):
            return kind_reason  # a kind not indexed by default, unless index.exclude negates it ("!*.svg")
        if self.sensitive is not None and (
            self.sensitive.fullmatch(name) or ("/" + rel).lower().endswith(SENSITIVE_PATH_SUFFIXES)
        ):
            return "sensitive file (set index.include_sensitive to index it)"
        if size > self.max_file_bytes:
            return f"over size cap ({size // 1024} KB > {self.max_file_bytes // 1024} KB)"
        return None

    def negated(self, rel: str, is_dir: bool = False) -> bool:
        """Whether a negated ``index.exclude`` pattern (``!*.svg``, ``!doc/_static/``) names the path:
        the user's way back in for what the default rules leave out."""
        return self.extra is not None and self.extra.check_file(rel + "/" if is_dir else rel).include is False

    def content_skip_reason(self, rel: str, text: str) -> str | None:
        """Why a file read for indexing is left out for its content (generated output), unless
        ``index.exclude`` negates it. None = index it."""
        reason = content_reason(rel, text)
        return None if reason is None or self.negated(rel) else reason

    def dir_skip_reason(self, rel: str, names: frozenset[str] | set[str]) -> str | None:
        """Why the folder at ``rel`` (not the root), whose entries are ``names``, is not walked: build
        output by its layout, unless ``index.exclude`` negates it. None = walk it."""
        reason = output_dir_reason(rel.rsplit("/", 1)[-1], names)
        return None if reason is None or self.negated(rel, True) else reason

    def layout_skip_reason(self, rel: str) -> str | None:
        """Why the file at ``rel`` lies in generated output by the layout of the folders above it
        (a build tree, a rendered docs site's support files); the walk decides this as it goes."""
        parts = rel.split("/")
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            try:
                names = set(os.listdir(os.path.join(self.root, folder)))
            except OSError:
                names = set()
            if depth and (why := self.dir_skip_reason(folder, names)):
                return why
            sub = "/".join(parts[: depth + 1])
            if is_render_root(names) and (why := self._support_reason(sub, depth < len(parts) - 1)):
                return why
        return None

    def _support_reason(self, rel: str, is_dir: bool) -> str | None:
        """Why an entry of a rendered docs site's root is generated, unless ``index.exclude`` negates it."""
        why = render_support_reason(rel.rsplit("/", 1)[-1])
        return None if why is None or self.negated(rel, is_dir) else why

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether a path (posix, relative to the root) would be left out by the walk's ignore rules."""
        parts = rel.split("/")
        if any(excluded_dir(p) for p in (parts if is_dir else parts[:-1])):
            return True
        specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = self._spec_cache.get(base)
            if spec is None and base not in self._spec_cache:
                spec = self._spec_cache[base] = _load_ignore(
                    os.path.join(self.root, base), base, (".gitignore", ".aideignore"), self.warnings
                )
            if spec is not None:
                specs.append((base, spec))
            if depth < len(parts) - 1 and self._ignored("/".join(parts[: depth + 1]), True, specs):
                return True
        return self._ignored(rel, is_dir, specs)

    def path_skip_reason(self, rel: str, size: int) -> str | None:
        """Why a scan would not index the file at ``rel`` (posix, relative to the root), from its path
        and size alone: an excluded folder, an ignore rule (``.gitignore``, ``.aideignore``,
        ``index.exclude``), a virtualenv, then :meth:`file_skip_reason`. None = it would be indexed.

        For callers that meet one path rather than walk the tree (``read_span``); the walk applies the
        same rules as it goes. Symlinks are the caller's business (the walk follows in-root ones).
        """
        parts = rel.split("/")
        excluded = next((p for p in parts[:-1] if excluded_dir(p)), None)
        if excluded is not None:
            return f"inside {excluded}/, which is never indexed"
        if self.is_ignored(rel):
            return "ignored by .gitignore, .aideignore or index.exclude"
        for depth in range(1, len(parts)):
            if os.path.exists(os.path.join(self.root, *parts[:depth], "pyvenv.cfg")):
                return "inside a virtualenv"
        return self.layout_skip_reason(rel) or self.file_skip_reason(rel, size)

    def _inside_root(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    # -- walk --------------------------------------------------------------------------------------

    def scan(self) -> ScanResult:
        """Walk the root and classify every file.

        The walk is iterative (an explicit stack of folders), so any nesting depth works.
        """
        result = ScanResult()
        visited: set[tuple[int, int]] = set()
        try:
            st = os.stat(self.root)
            visited.add((st.st_dev, st.st_ino))
        except OSError as exc:
            result.errors["."] = f"cannot read workspace root: {exc.strerror or exc}"
            return result
        # (absolute folder, its path relative to the root, the ignore specs of its parents)
        stack: list[tuple[str, str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [(self.root, "", [])]
        while stack:
            dir_abs, dir_rel, specs = stack.pop()
            subdirs = self._scan_dir(dir_abs, dir_rel, specs, visited, result)
            stack.extend(reversed(subdirs))  # depth-first in name order, like the recursive walk was
        result.files.sort(key=lambda e: e.rel)
        result.warnings = list(self.warnings)
        return result

    def _walks_into(
        self,
        de: os.DirEntry[str],
        rel: str,
        st: os.stat_result,
        specs: list[tuple[str, pathspec.GitIgnoreSpec]],
        render_root: bool,
        visited: set[tuple[int, int]],
        result: ScanResult,
    ) -> bool:
        """Whether the walk enters the subfolder ``rel`` (a support folder of a rendered docs site is
        recorded in ``result.skipped``; excluded, ignored and virtualenv folders are passed over)."""
        if excluded_dir(de.name) or self._ignored(rel, True, specs):
            return False
        if render_root and (why := self._support_reason(rel, True)):
            result.skipped[rel + "/"] = why
            return False
        if os.path.exists(os.path.join(de.path, "pyvenv.cfg")):
            return False  # a virtualenv under any name
        key = (st.st_dev, st.st_ino)
        if key in visited:
            return False  # symlink loop or a second way into a directory already walked
        visited.add(key)
        return True

    def _scan_dir(
        self,
        dir_abs: str,
        dir_rel: str,
        specs: list[tuple[str, pathspec.GitIgnoreSpec]],
        visited: set[tuple[int, int]],
        result: ScanResult,
    ) -> list[tuple[str, str, list[tuple[str, pathspec.GitIgnoreSpec]]]]:
        """Classify one folder's entries into ``result``; return its subfolders to walk."""
        try:
            with os.scandir(dir_abs) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            result.errors[dir_rel or "."] = f"cannot list directory: {exc.strerror or exc}"
            return []
        names = frozenset(e.name for e in entries)
        if dir_rel and (why := self.dir_skip_reason(dir_rel, names)):
            result.skipped[dir_rel + "/"] = why  # one row for the tree: it is never walked
            return []
        render_root = is_render_root(names)
        present = tuple(e.name for e in entries if e.name in (".gitignore", ".aideignore"))
        spec = _load_ignore(dir_abs, dir_rel, present, self.warnings) if present else None
        if spec is not None:
            specs = [*specs, (dir_rel, spec)]
        subdirs = []
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
                if self._walks_into(de, rel, st, specs, render_root, visited, result):
                    subdirs.append((de.path, rel, specs))
            elif stat.S_ISREG(st.st_mode):
                if self._ignored(rel, False, specs):
                    continue
                reason = self.stat_skip_reason(rel, st) or (
                    self._support_reason(rel, False) if render_root else None
                )
                if reason:
                    result.skipped[rel] = reason
                    continue
                result.files.append(
                    FileEntry(rel, de.path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino, is_link)
                )
            elif not self._ignored(rel, False, specs):
                result.skipped[rel] = f"{_special_kind(st.st_mode)}, not a regular file"
        return subdirs


# -- reading -----------------------------------------------------------------------------------------

_BOMS = (  # longest first: the UTF-32 LE BOM starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


# a PDF under any name (an Illustrator ``.ai`` is one): its first bytes are text, a header line and
# kilobytes of XMP metadata, but its body is compressed streams and drawing commands
_PDF_HEADER = re.compile(rb"%PDF-\d\.\d")


def decode_text(raw: bytes) -> tuple[str | None, str | None]:
    """Bytes of a file to (text, None) or (None, reason it is not text).

    A byte-order mark selects UTF-8, UTF-16 or UTF-32 (and is dropped); without one the bytes are
    UTF-8, invalid sequences replaced with U+FFFD, and NUL bytes in the first 8 KB mean binary, as
    does a PDF's signature.
    """
    if _PDF_HEADER.match(raw):
        return None, "binary (a PDF document)"
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            text = raw[len(bom) :].decode(codec, errors="replace")
            if "\0" in text[:8192]:
                return None, "binary (NUL characters)"
            return text, None
    if b"\0" in raw[:8192]:
        return None, "binary (NUL bytes)"
    return raw.decode("utf-8", errors="replace"), None


def read_text(path: str, max_bytes: int) -> tuple[str | None, bytes | None, str | None]:
    """Read a file as text: (text, raw bytes, None) or (None, None, reason it was skipped).

    Follows symlinks and trusts the path: for files found by a scan use :func:`read_entry`.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        return None, None, "vanished before it could be read"
    except OSError as exc:
        return None, None, f"unreadable: {exc.strerror or exc}"
    if len(raw) > max_bytes:
        return None, None, f"over size cap (> {max_bytes // 1024} KB)"
    text, why = decode_text(raw)
    return (text, raw, None) if text is not None else (None, None, why)


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


# bump when decode_text or generated.content_reason judge differently: stored verdicts are taken again
VERDICT_RULES = "4"  # 3: generated source code is indexed, unless a table of numbers; 4: pages of drawings


class ContentVerdict(str):
    """A reason a file is left out that its bytes decided (binary, generated, grown past the cap): the
    same size and mtime give the same verdict, so a later run need not read the file again."""


def read_entry(
    entry: FileEntry, max_bytes: int, content_rule: Callable[[str, str], str | None] | None = None
) -> tuple[str | None, bytes | None, str | None]:
    """Read a scanned file as text, but only if it is still the regular file the scan saw.

    The path is opened without following a final symlink (unless the scan itself followed an in-root
    symlink there) and without blocking (a FIFO put in its place cannot hang the indexer); the open
    descriptor must be a regular file with the device and inode recorded by the scan, so a file
    swapped for a symlink to ``/etc/passwd``, a FIFO or anything else is skipped with a reason.
    ``content_rule(rel, text)`` (:meth:`Scanner.content_skip_reason`) may leave the text out for what
    it holds. Returns (text, raw bytes, None) or (None, None, reason).
    """
    flags = _OPEN_FLAGS if entry.link else _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(entry.abs, flags)
    except FileNotFoundError:
        return None, None, "vanished before it could be read"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, None, "changed between scan and read (now a symlink)"
        if exc.errno == errno.ENXIO:  # a socket (or a FIFO without a writer on some systems)
            return None, None, "changed between scan and read (now a socket or FIFO)"
        return None, None, f"unreadable: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        kind = _special_kind(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            kind = "directory"
        if kind is not None:
            return None, None, f"changed between scan and read (now a {kind})"
        if (st.st_dev, st.st_ino) != (entry.dev, entry.ino):
            return None, None, "changed between scan and read (now a different file)"
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
    except OSError as exc:
        return None, None, f"unreadable: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        return None, None, ContentVerdict(f"over size cap (> {max_bytes // 1024} KB)")
    text, why = decode_text(raw)
    if text is None:
        return None, None, ContentVerdict(why or "not text")
    why = content_rule(entry.rel, text) if content_rule is not None else None
    return (text, raw, None) if why is None else (None, None, ContentVerdict(why))
