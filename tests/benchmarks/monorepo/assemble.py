#!/usr/bin/env python3
"""Assemble the monorepo benchmark's workspace (issue 29) from pinned registry sources (a script, not a test).

    python tests/benchmarks/monorepo/assemble.py /work/mono/ws [--cache /work/mono/cache] [--force]

About 6 million lines in Python, Go, Rust, JavaScript and TypeScript, with their docs, YAML and JSON, one
folder per package under the workspace:

- PyPI sdists (``pip download --no-deps --no-binary NAME NAME==VERSION``): sympy, Django (its docs and
  tests; its .po catalogues are left out of the index by default), nova, ansible-core, Twisted;
- npm tarballs (``npm pack NAME@VERSION``): three (JavaScript), eslint and webpack (JavaScript, .d.ts),
  lodash, effect and @effect/platform (TypeScript sources), rxjs (TypeScript), typescript (its lib .d.ts;
  its multi-megabyte compiler bundles are over the index's size cap);
- Debian packages (``apt-get download NAME=VERSION``, bookworm; run ``apt-get update`` once first):
  golang-1.19-src (Go's standard library, without ``cmd/``, the toolchain) and rust-src (Rust's
  ``library/``, the standard library, and ``compiler/``).

Every archive is checked against the sha256 pinned below before it is unpacked; a rerun verifies the
cached archives and reuses them, and leaves a package folder that is already there (and whose archive
hash matches the one recorded in ``MONOREPO.json``) as it is. Symlinks and special files in the archives
are not unpacked. The script prints the lines and bytes per language, for all unpacked files and for
the files aide-tui's scanner takes with the default settings (the size cap, binaries, .po and .svg out),
and writes them to ``MONOREPO.json`` at the workspace root (bench_monorepo.py reads it).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MANIFEST = "MONOREPO.json"
TIMEOUT = 900  # seconds for one download

sys.path.insert(0, str(REPO))
try:  # the checkout's own rules for the "indexed" columns; the script runs without them too
    from aide_tui.core.index.scan import Scanner
    from aide_tui.core.languages import detect_language
except ImportError:  # pragma: no cover - another checkout layout
    Scanner = None  # type: ignore[assignment,misc]
    detect_language = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Source:
    """One pinned archive: where it comes from, its file name in the cache, and what to unpack."""

    kind: str  # pypi | npm | deb
    spec: str  # NAME==VERSION (pypi), NAME@VERSION (npm), NAME=VERSION (deb)
    filename: str  # the archive as the client saves it
    sha256: str
    folder: str  # the package's folder in the workspace
    take: tuple[str, ...] = ()  # deb: the archive paths unpacked (each becomes a subfolder, or the root)
    drop: tuple[str, ...] = field(default=())  # paths under the folder left out


SOURCES = (
    Source("pypi", "sympy==1.13.3", "sympy-1.13.3.tar.gz",
           "b27fd2c6530e0ab39e275fc9b683895367e51d5da91baa8d3d64db2565fec4d9", "sympy-1.13.3"),
    Source("pypi", "Django==5.1.3", "Django-5.1.3.tar.gz",
           "c0fa0e619c39325a169208caef234f90baa925227032ad3f44842ba14d75234a", "django-5.1.3"),
    Source("pypi", "nova==30.0.0", "nova-30.0.0.tar.gz",
           "0afc47aca19a957ffd14c1555f5e019b8eec8e0a903607d55fa39d7f620c82a4", "nova-30.0.0"),
    Source("pypi", "ansible-core==2.17.6", "ansible_core-2.17.6.tar.gz",
           "3e53970b7cebfe2adb39b711c1e2f8bbfcbedac828da51dc0357a19070638e95", "ansible-core-2.17.6"),
    Source("pypi", "Twisted==24.10.0", "twisted-24.10.0.tar.gz",
           "02951299672595fea0f70fa2d5f7b5e3d56836157eda68859a6ad6492d36756e", "twisted-24.10.0"),
    Source("npm", "three@0.170.0", "three-0.170.0.tgz",
           "4a608a355dcaba72e0e5383cdc814303f5b6060b43c238cdf6932dceb699238d", "three-0.170.0"),
    Source("npm", "eslint@9.15.0", "eslint-9.15.0.tgz",
           "8a400a3c6ac4cadaed2d7c2656ca4ac2d98722ddaf5d8e615670b72557b4e77e", "eslint-9.15.0"),
    Source("npm", "webpack@5.96.1", "webpack-5.96.1.tgz",
           "0f6b03262c764b8ed22edc182bed56ba8671b0ac272b187f2bb44e087aa4f04e", "webpack-5.96.1"),
    Source("npm", "lodash@4.17.21", "lodash-4.17.21.tgz",
           "6a087ac9e5702a0c9d60fbcd48696012646ec8df1491dea472b150e79fcaf804", "lodash-4.17.21"),
    Source("npm", "effect@3.10.15", "effect-3.10.15.tgz",
           "16b5bc3c68102d5a9d7b3bdd82649fd863e139f5f7cb2ab2ff42414f423fac63", "effect-3.10.15"),
    Source("npm", "@effect/platform@0.69.25", "effect-platform-0.69.25.tgz",
           "6f2bcbcaa9863caf474cbfd4b525249a185a70104632df50557e8750d3a0fdc1", "effect-platform-0.69.25"),
    Source("npm", "rxjs@7.8.1", "rxjs-7.8.1.tgz",
           "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149", "rxjs-7.8.1"),
    Source("npm", "typescript@5.6.3", "typescript-5.6.3.tgz",
           "ef67f8d8ad895858024b7339d3e34bf112cae3c5db1f538c3079038b17ae30fa", "typescript-5.6.3"),
    Source("deb", "golang-1.19-src=1.19.8-2", "golang-1.19-src_1.19.8-2_all.deb",
           "2dfa82fe4f08f4e0193c532e561af4c91871f5235608f04f2bb8d57bb288df5a", "go-1.19.8",
           take=("usr/share/go-1.19/src",), drop=("cmd",)),
    Source("deb", "rust-src=1.63.0+dfsg1-2", "rust-src_1.63.0+dfsg1-2_all.deb",
           "410b8c6d464cabbe5fb3154ab8c3d374980dd597fbe7e3b7bb3ed8dd1bf11e25", "rust-1.63.0",
           take=("usr/src/rustc-1.63.0/library", "usr/src/rustc-1.63.0/compiler")),
)  # fmt: skip

# language of a file for the line table (aide-tui's own detect_language is used when it imports)
_EXT = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".sh": "shell",
    ".md": "markdown",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
}


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(src: Source, cache: Path) -> Path:
    """The verified archive in ``cache``: reused when its hash matches, else fetched with the registry's
    own client (once more if a cached copy is damaged)."""
    target = cache / src.filename
    if target.exists():
        if sha256_of(target) == src.sha256:
            return target
        say(f"{src.filename}: cached copy has the wrong sha256, fetching it again")
        target.unlink()
    name, _, version = src.spec.partition({"pypi": "==", "npm": "@", "deb": "="}[src.kind])
    if src.kind == "npm":
        name, _, version = src.spec.rpartition("@")
    if src.kind == "pypi":
        # --no-binary NAME (not :all:): the sdist itself, while its build backend may come as a wheel
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            name,
            "-d",
            str(cache),
            src.spec,
        ]
    elif src.kind == "npm":
        cmd = ["npm", "pack", "--silent", "--pack-destination", str(cache), src.spec]
    else:
        cmd = ["apt-get", "download", "-q", src.spec]
    say(f"fetching {src.spec}: {' '.join(cmd)}")
    try:
        out = subprocess.run(cmd, cwd=cache, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except FileNotFoundError:
        raise SystemExit(f"{src.spec}: {cmd[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{src.spec}: {cmd[0]} did not finish in {TIMEOUT} s") from None
    if out.returncode != 0 or not target.exists():
        hint = " (run apt-get update first)" if src.kind == "deb" else ""
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-5:])
        raise SystemExit(f"{src.spec}: could not fetch {src.filename}{hint}:\n{tail}")
    got = sha256_of(target)
    if got != src.sha256:
        raise SystemExit(f"{src.filename}: sha256 {got}, pinned {src.sha256}: not unpacked")
    return target


def _deb_data(path: Path) -> tarfile.TarFile:
    """The data.tar.* member of a .deb (an ar archive) as an open tar file."""
    with path.open("rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"{path.name}: not a .deb (ar) archive")
        while header := f.read(60):
            name = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58].decode().strip())
            body = f.read(size)
            if size % 2:
                f.read(1)
            if name.startswith("data.tar"):
                return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
    raise SystemExit(f"{path.name}: no data.tar member")


def _members(tar: tarfile.TarFile, src: Source) -> list[tuple[tarfile.TarInfo, str]]:
    """(member, path inside the package folder) for each regular file to unpack."""
    out: list[tuple[tarfile.TarInfo, str]] = []
    names = [m for m in tar.getmembers() if m.isfile()]
    if src.kind == "deb":
        for m in names:
            path = m.name.lstrip("./")
            for take in src.take:
                if path.startswith(take + "/"):
                    sub = path[len(take) + 1 :]
                    out.append((m, sub if len(src.take) == 1 else f"{take.rsplit('/', 1)[-1]}/{sub}"))
    else:  # an sdist or npm tarball: one top folder (package/ for npm), stripped
        for m in names:
            top, _, rest = m.name.lstrip("./").partition("/")
            if rest:
                out.append((m, rest))
    drops = tuple(d.rstrip("/") + "/" for d in src.drop)
    return [(m, p) for m, p in out if not p.startswith(drops) and ".." not in p.split("/")]


def unpack(src: Source, archive: Path, ws: Path) -> None:
    """Unpack into ``ws/<folder>`` through a temporary folder renamed at the end (no half package)."""
    final = ws / src.folder
    tmp = ws / f".unpacking-{src.folder}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(final, ignore_errors=True)
    with _deb_data(archive) if src.kind == "deb" else tarfile.open(archive, "r:*") as tar:
        members = _members(tar, src)
        if not members:
            raise SystemExit(f"{archive.name}: nothing to unpack (take={src.take})")
        for member, rel in members:
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            f = tar.extractfile(member)
            assert f is not None
            with dest.open("wb") as out:
                shutil.copyfileobj(f, out)
            os.utime(dest, (member.mtime, member.mtime))
    tmp.rename(final)


def language(rel: str) -> str:
    if detect_language is not None:
        return str(detect_language(rel))
    return _EXT.get(os.path.splitext(rel)[1].lower(), "text")


def indexed_files(folder: Path) -> set[str] | None:
    """Relative paths aide-tui's scanner takes with the default settings (None: aide-tui not importable)."""
    if Scanner is None:
        return None
    return {e.rel for e in Scanner(folder).scan().files}


def count(ws: Path, folders: list[str]) -> dict[str, dict[str, dict[str, int]]]:
    """{package: {language: {files, lines, bytes, indexed_files, indexed_lines, indexed_bytes}}}."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for name in folders:
        folder = ws / name
        taken = indexed_files(folder)
        table: dict[str, Counter[str]] = {}
        for dirpath, _, files in os.walk(folder):
            for fn in files:
                path = Path(dirpath) / fn
                rel = path.relative_to(folder).as_posix()
                data = path.read_bytes()
                binary = b"\0" in data[:8192]
                row = table.setdefault("binary" if binary else language(rel), Counter())
                lines = 0 if binary else data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
                row.update(files=1, lines=lines, bytes=len(data))
                if taken is not None and rel in taken and not binary:
                    row.update(indexed_files=1, indexed_lines=lines, indexed_bytes=len(data))
        out[name] = {lang: dict(c) for lang, c in sorted(table.items())}
    return out


def report(counts: dict[str, dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """Print per-package and per-language tables; the per-language totals."""
    keys = ("files", "lines", "bytes", "indexed_files", "indexed_lines", "indexed_bytes")
    by_lang: dict[str, Counter[str]] = {}
    print(f"{'package':28} {'files':>7} {'lines':>11} {'MB':>7} | {'indexed lines':>13} {'MB':>7}")
    for pkg, langs in counts.items():
        tot: Counter[str] = Counter()
        for lang, row in langs.items():
            tot.update(row)
            by_lang.setdefault(lang, Counter()).update(row)
        print(
            f"{pkg:28} {tot['files']:>7,} {tot['lines']:>11,} {tot['bytes'] / 1e6:>7.1f} | "
            f"{tot['indexed_lines']:>13,} {tot['indexed_bytes'] / 1e6:>7.1f}"
        )
    print()
    print(f"{'language':28} {'files':>7} {'lines':>11} {'MB':>7} | {'indexed lines':>13} {'MB':>7}")
    total: Counter[str] = Counter()
    for lang, row in sorted(by_lang.items(), key=lambda kv: -kv[1]["lines"]):
        total.update(row)
        print(
            f"{lang:28} {row['files']:>7,} {row['lines']:>11,} {row['bytes'] / 1e6:>7.1f} | "
            f"{row['indexed_lines']:>13,} {row['indexed_bytes'] / 1e6:>7.1f}"
        )
    print(
        f"{'total':28} {total['files']:>7,} {total['lines']:>11,} {total['bytes'] / 1e6:>7.1f} | "
        f"{total['indexed_lines']:>13,} {total['indexed_bytes'] / 1e6:>7.1f}"
    )
    return {lang: {k: row[k] for k in keys} for lang, row in by_lang.items()} | {
        "total": {k: total[k] for k in keys}
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", type=Path, help="folder to assemble into (e.g. /work/mono/ws)")
    ap.add_argument("--cache", type=Path, help="download cache (default: WORKSPACE/../cache)")
    ap.add_argument("--force", action="store_true", help="unpack every package again")
    args = ap.parse_args(argv)
    ws = args.workspace.resolve()
    cache = (args.cache or ws.parent / "cache").resolve()
    ws.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    manifest_path = ws / MANIFEST
    try:
        before = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        before = {}
    have = {p["folder"]: p["sha256"] for p in before.get("packages", [])}
    t0 = time.monotonic()
    for src in SOURCES:
        archive = download(src, cache)
        if not args.force and have.get(src.folder) == src.sha256 and (ws / src.folder).is_dir():
            continue
        say(f"unpacking {src.filename} -> {src.folder}/")
        unpack(src, archive, ws)
    wanted = {s.folder for s in SOURCES}
    strays = sorted(p.name for p in ws.iterdir() if p.is_dir() and p.name not in wanted and p.name != ".aide")
    if strays:
        say(f"note: folders not from this script in {ws}: {', '.join(strays)} (left as they are)")
    counts = count(ws, [s.folder for s in SOURCES])
    languages = report(counts)
    manifest = {
        "what": "aide-tui monorepo benchmark workspace (tests/benchmarks/monorepo/assemble.py)",
        "packages": [
            {
                "kind": s.kind,
                "spec": s.spec,
                "file": s.filename,
                "sha256": s.sha256,
                "folder": s.folder,
                "take": list(s.take),
                "drop": list(s.drop),
                "languages": counts[s.folder],
            }
            for s in SOURCES
        ],
        "languages": languages,
    }
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    os.replace(tmp, manifest_path)
    say(f"assembled {ws} in {time.monotonic() - t0:.0f} s (cache {cache})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
