import json
import subprocess
import sys
from pathlib import Path

from aide_tui.core.blobs import blank_blobs

# letters that base64 may hold and camelCase would cut into real words (retry, policy, handler)
_FAKE_PNG = "iVBORw0KGgo" + "RetryPolicyHandler" * 400 + "AAAA=="


def _notebook(image: str) -> str:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Sensor data\n", "Read the CSV."]},
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "outputs": [
                    {"data": {"image/png": image, "text/plain": ["<Figure size 640x480>"]},
                     "metadata": {}, "output_type": "display_data"},
                    {"name": "stdout", "output_type": "stream", "text": ["rows: 1440\n"]},
                ],
                "source": ["import pandas as pd\n", "def load_sensor_frame(path):\n",
                           "    return pd.read_csv(path, parse_dates=['ts'])\n"],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    return json.dumps(nb, indent=1)


def test_notebook_images_become_a_note_and_the_cells_stay() -> None:
    text = _notebook(_FAKE_PNG)
    out = blank_blobs(text)
    assert out.count("\n") == text.count("\n")
    assert "RetryPolicy" not in out and '"image/png": "«5 KB of base64»"' in out
    for kept in ["def load_sensor_frame(path)", "rows: 1440", "<Figure size 640x480>", "# Sensor data"]:
        assert kept in out
    # older notebooks wrap the base64 with escaped line breaks inside the JSON string
    wrapped = _notebook("\n".join(_FAKE_PNG[i : i + 76] for i in range(0, len(_FAKE_PNG), 76)))
    assert "RetryPolicy" not in blank_blobs(wrapped) and "KB of base64" in blank_blobs(wrapped)


def test_data_uris_are_blanked_where_they_sit_and_short_or_plain_base64_stays() -> None:
    page = (
        "# Results\n\n![latency plot](data:image/png;base64," + _FAKE_PNG + ")\n\nThe p95 is flat.\n"
        ".logo { background: url(data:image/svg+xml;charset=utf-8;base64,PHN2Zz4=) }\n"
        "@font-face { src: url('data:font/woff2;base64," + "d09GMgABAAAAA" * 20 + "') }\n"
    )
    out = blank_blobs(page)
    assert out.splitlines()[2] == "![latency plot](data:image/png;base64,«5 KB of base64»)"
    assert "base64,PHN2Zz4=)" in out  # a short one is left alone
    assert "data:font/woff2;base64,«195 bytes of base64»')" in out
    assert "The p95 is flat." in out and out.count("\n") == page.count("\n")
    source = 'KEY = "' + "QUJD" * 60 + '"  # a fixture, not an embedded image\n'
    assert blank_blobs(source) == source


def test_an_indexed_notebook_is_found_by_its_code_not_by_its_pictures(tmp_path: Path) -> None:
    (tmp_path / "analysis.ipynb").write_text(_notebook(_FAKE_PNG))
    (tmp_path / "mod.py").write_text("def other():\n    return 1\n")

    def aide(*args: str) -> dict[str, object]:
        cmd = [sys.executable, "-m", "aide_tui", *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    assert aide("index", str(tmp_path), "--embedder", "none", "--json")["files"] == 2
    search = ("search", "--path", str(tmp_path), "--json", "--no-update", "--mode", "bm25")
    found = aide(*search, "load sensor frame")["results"]
    assert isinstance(found, list) and found and found[0]["path"] == "analysis.ipynb"
    assert aide(*search, "retry policy handler")["results"] == []
