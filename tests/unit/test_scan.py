import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aide_tui.core.index.scan import Scanner, read_text


def _w(root: Path, rel: str, data: str | bytes = "x = 1\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def _files(root: Path, **kw: object) -> list[str]:
    return [f.rel for f in Scanner(root, **kw).scan().files]  # type: ignore[arg-type]


def test_nested_gitignore_negation_and_aideignore(tmp_path: Path) -> None:
    _w(tmp_path, ".gitignore", "*.log\nsecret_dir/\n")
    _w(tmp_path, "a.py")
    _w(tmp_path, "debug.log", "log")
    _w(tmp_path, "secret_dir/x.py")
    _w(tmp_path, "pkg/.gitignore", "!keep.log\ngenerated.py\n")
    _w(tmp_path, "pkg/keep.log", "kept")
    _w(tmp_path, "pkg/drop.log", "dropped")
    _w(tmp_path, "pkg/generated.py")
    _w(tmp_path, "pkg/mod.py")
    _w(tmp_path, "other/generated.py")
    _w(tmp_path, ".aideignore", "other/\n")
    files = _files(tmp_path)
    assert "a.py" in files and "pkg/mod.py" in files and "pkg/keep.log" in files
    for gone in ["debug.log", "secret_dir/x.py", "pkg/drop.log", "pkg/generated.py", "other/generated.py"]:
        assert gone not in files


def test_default_excludes_binaries_and_caps(tmp_path: Path) -> None:
    for d in [".git", "node_modules", "__pycache__", "dist", "target", ".aide"]:  # build: test_generated.py
        _w(tmp_path, f"{d}/f.py")
    _w(tmp_path, "myenv/pyvenv.cfg", "home = /usr")
    _w(tmp_path, "myenv/lib/site.py")
    _w(tmp_path, "package-lock.json", "{}")
    _w(tmp_path, "app.min.js", "var a=1")
    _w(tmp_path, "logo.png", b"\x89PNG")
    _w(tmp_path, "big.py", "x" * 2048)
    _w(tmp_path, "ok.py")
    res = Scanner(tmp_path, max_file_bytes=1024).scan()
    assert [f.rel for f in res.files] == ["ok.py"]
    assert res.skipped["big.py"].startswith("over size cap")
    assert res.skipped["logo.png"] == "binary extension"


def test_sensitive_files_skipped_by_default(tmp_path: Path) -> None:
    for name in [".env", ".env.local", "id_rsa", "server.pem", ".netrc", "deploy.key"]:
        _w(tmp_path, name, "SECRET=1")
    _w(tmp_path, "main.py")
    assert _files(tmp_path) == ["main.py"]
    assert ".env" in _files(tmp_path, include_sensitive=True)


def test_symlinks_never_leave_root_and_loops_terminate(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _w(outside, "leak.py", "password = 1")
    root = tmp_path / "root"
    _w(root, "real/mod.py")
    os.symlink(outside, root / "escape_dir")
    os.symlink(outside / "leak.py", root / "escape_file.py")
    os.symlink(root / "real", root / "real" / "loop")  # loop back into itself
    os.symlink(root / "real" / "mod.py", root / "alias.py")  # inside root: fine
    os.symlink(root / "nowhere", root / "dangling.py")
    res = Scanner(root).scan()
    files = [f.rel for f in res.files]
    assert files == ["alias.py", "real/mod.py"]
    assert "leaves the workspace" in res.skipped["escape_dir"]
    assert "leaves the workspace" in res.skipped["escape_file.py"]


def test_read_text_binary_invalid_utf8_and_vanished(tmp_path: Path) -> None:
    assert read_text(str(_w(tmp_path, "b.txt", b"abc\0def")), 1000)[2] == "binary (NUL bytes)"
    text, _, why = read_text(str(_w(tmp_path, "l1.py", b"caf\xe9 = 1\n")), 1000)
    assert why is None and text == "caf\ufffd = 1\n"
    assert "vanished" in (read_text(str(tmp_path / "gone.py"), 1000)[2] or "")


_PDF_WITH_METADATA = (
    b"%PDF-1.5\n1 0 obj\n<</Metadata 2 0 R/Type/Catalog>>\nendobj\n2 0 obj\n<</Subtype/XML>>stream\n"
    + b"<x:xmpmeta><rdf:Description>logo request options stream timeout</rdf:Description></x:xmpmeta>\n" * 40
)


def test_drawings_and_pdfs_under_any_name_are_not_text(tmp_path: Path) -> None:
    # an Illustrator file is a PDF whose first kilobytes are readable XMP metadata (got's media/logo.ai
    # ranked first for three of its change descriptions); a PDF renamed .dat is the same bytes
    _w(tmp_path, "media/logo.ai", _PDF_WITH_METADATA)
    _w(tmp_path, "media/logo.eps", "%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n")
    _w(tmp_path, "data/report.dat", _PDF_WITH_METADATA)
    _w(tmp_path, "docs/pdf.md", "%PDF- is how a PDF starts; this page is text.\n")
    _w(tmp_path, "src/options.py", "timeout = 1\n")
    res = Scanner(tmp_path).scan()
    assert res.skipped["media/logo.ai"] == "binary extension"
    assert res.skipped["media/logo.eps"] == "binary extension"
    assert [f.rel for f in res.files] == ["data/report.dat", "docs/pdf.md", "src/options.py"]
    assert read_text(str(tmp_path / "data/report.dat"), 10**6) == (None, None, "binary (a PDF document)")
    assert read_text(str(tmp_path / "docs/pdf.md"), 10**6)[2] is None
    out = subprocess.run(
        [sys.executable, "-m", "aide_tui", "index", str(tmp_path), "--embedder", "none", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    reasons = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert reasons["data/report.dat"] == "binary (a PDF document)" and summary["files"] == 2


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root + setpriv")
def test_unreadable_files_and_dirs_as_unprivileged_user() -> None:
    import shutil
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="aide-perm-"))  # pytest's tmp dirs are root-only
    request_cleanup = tmp_path
    root = tmp_path / "ws"
    _w(root, "ok.py")
    _w(root, "locked.py")
    _w(root, "closed/inner.py")
    os.chmod(root / "locked.py", 0o000)
    os.chmod(root / "closed", 0o000)
    for p in [tmp_path, root]:
        os.chmod(p, 0o755)
    os.chmod(root / "ok.py", 0o644)
    code = (
        "import sys, json; from aide_tui.core.index.scan import Scanner, read_text\n"
        f"res = Scanner({str(root)!r}).scan()\n"
        "reads = {f.rel: read_text(f.abs, 10**6)[2] for f in res.files}\n"
        "print(json.dumps({'files': [f.rel for f in res.files], 'reads': reads, 'errors': res.errors}))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)}, timeout=60,
    )  # fmt: skip
    shutil.rmtree(request_cleanup, ignore_errors=True)
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    assert "closed" in got["errors"] and "cannot list" in got["errors"]["closed"]
    assert got["reads"]["ok.py"] is None
    assert got["reads"]["locked.py"].startswith("unreadable")
