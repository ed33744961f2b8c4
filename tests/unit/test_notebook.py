import json
import subprocess
import sys
from pathlib import Path

from aide_tui.core.chunk.chunker import chunk_file
from aide_tui.core.notebook import cells_view


def _notebook(kernel: str = "python", indent: int | None = 1) -> str:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {},
             "source": ["# Sales forecast\n", "Read the *ledger* first."]},
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "outputs": [{"name": "stdout", "output_type": "stream",
                             "text": ["quarterly_overflow_warning\n", "rows: 1440\n"]}],
                "source": ["%matplotlib inline\n", "import pandas as pd\n", "\n", "def load_ledger(path):\n",
                           "    \"\"\"Read the ledger CSV with its dates parsed.\"\"\"\n",
                           "    return pd.read_csv(path, parse_dates=[\"day\"])\n"],
            },
            {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
             "source": ["%%bash\n", "ls -l data/"]},
            {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [],
             "source": ["class SeasonalForecaster:\n", "    def fit(self, frame):\n",
                        "        return frame.rolling(7).mean()"]},
        ],
        "metadata": {"kernelspec": {"display_name": kernel, "language": kernel, "name": kernel},
                     "language_info": {"name": kernel}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    return json.dumps(nb, indent=indent)


def test_the_view_keeps_every_source_line_where_the_file_has_it() -> None:
    text = _notebook()
    view = cells_view(text)
    assert view is not None
    language, code = view
    assert language == "python"
    file_lines, view_lines = text.split("\n"), code.split("\n")
    assert len(view_lines) == len(file_lines)
    shown = {n: v for n, v in enumerate(view_lines) if v}
    for n, v in shown.items():  # each shown line is the decoded JSON string on that very line
        decoded = json.loads(file_lines[n].strip().rstrip(",")).removesuffix("\n")
        assert v in (decoded, "# " + decoded)
    assert list(shown.values()) == [
        "# # Sales forecast", "# Read the *ledger* first.", "# %matplotlib inline", "import pandas as pd",
        "def load_ledger(path):", '    """Read the ledger CSV with its dates parsed."""',
        '    return pd.read_csv(path, parse_dates=["day"])', "# %%bash", "# ls -l data/",
        "class SeasonalForecaster:", "    def fit(self, frame):", "        return frame.rolling(7).mean()",
    ]  # fmt: skip
    assert "quarterly_overflow_warning" not in code  # outputs are not the notebook's code


def test_a_notebook_is_chunked_as_code_with_its_definitions() -> None:
    text = _notebook()
    chunks = chunk_file("analysis.ipynb", text)
    assert {c.language for c in chunks} == {"python"}
    defined = [name for c in chunks for name in c.defines]
    assert defined == ["load_ledger", "SeasonalForecaster", "fit"]
    head = next(c for c in chunks if "load_ledger" in c.defines)
    assert text.split("\n")[head.start_line - 1].strip().startswith(('"# Sales forecast', '"%matplotlib'))
    assert "def load_ledger(path):" in head.text and '\\n",' not in head.text


def test_layouts_the_view_cannot_follow_stay_json() -> None:
    minified = _notebook(indent=None)  # one line: no line to put a cell's code on
    assert cells_view(minified) is None
    assert {c.language for c in chunk_file("analysis.ipynb", minified)} == {"json"}
    joined = json.loads(_notebook())
    joined["cells"][1]["source"] = "".join(joined["cells"][1]["source"])  # several lines in one string
    assert cells_view(json.dumps(joined, indent=1)) is None
    for broken in ["", "{", "[1, 2]", '{"cells": 3}', '{"cells": [{"source": 7}]}', "\x00\x01"]:
        assert cells_view(broken) is None
        chunk_file("broken.ipynb", broken)  # never raises
    r_kernel = cells_view(_notebook(kernel="R"))
    assert r_kernel is not None and r_kernel[0] == "text" and "def load_ledger(path):" in r_kernel[1]


def test_an_indexed_notebook_answers_defs_at_its_cell_line(tmp_path: Path) -> None:
    text = _notebook()
    (tmp_path / "forecast.ipynb").write_text(text)
    (tmp_path / "mod.py").write_text("def other():\n    return 1\n")

    def aide(*args: str) -> dict[str, object]:
        cmd = [sys.executable, "-m", "aide_tui", *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    assert aide("index", str(tmp_path), "--embedder", "none", "--json")["files"] == 2
    defs = aide("defs", "--path", str(tmp_path), "--json", "--no-update", "SeasonalForecaster")
    head = '"class SeasonalForecaster:\\n",'
    line = next(n for n, ln in enumerate(text.split("\n"), 1) if ln.strip() == head)
    assert [(d["path"], d["line"]) for d in defs["definitions"]] == [("forecast.ipynb", line)]
    search = ("search", "--path", str(tmp_path), "--json", "--no-update", "--mode", "bm25")
    found = aide(*search, "load ledger")["results"]
    assert isinstance(found, list) and found[0]["path"] == "forecast.ipynb"
    assert found[0]["symbol"] == "def load_ledger"
    assert aide(*search, "quarterly_overflow_warning")["results"] == []
    # lang:python takes the notebook (its cells are Python); lang:go does not
    assert [h["path"] for h in aide(*search, "lang:python SeasonalForecaster")["results"]] == [
        "forecast.ipynb"
    ]
    assert aide(*search, "lang:go SeasonalForecaster")["results"] == []


def test_a_timed_cell_is_code_and_an_expression_going_on_is_no_magic() -> None:
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [],
             "source": ["%%time\n", "def train_model(frame):\n", "    return (frame.size\n",
                        "        != 0)\n", "ratio = (7\n", "         % 3)\n", "!pip install numpy"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": []},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%%bash\n", "echo done"]},
            {"cell_type": "code", "metadata": {}, "outputs": [],
             "source": ["def score():\n", "    return 1"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    view = cells_view(json.dumps(nb, indent=1))
    assert view is not None
    shown = [line for line in view[1].split("\n") if line]
    assert shown == ["# %%time", "def train_model(frame):", "    return (frame.size", "        != 0)",
                     "ratio = (7", "         % 3)", "# !pip install numpy", "# %%bash", "# echo done",
                     "def score():", "    return 1"]  # fmt: skip
    defined = [d for c in chunk_file("nb.ipynb", json.dumps(nb, indent=1)) for d in c.defines]
    assert "train_model" in defined and "score" in defined


def test_the_preview_shows_a_notebooks_cells_as_code(tmp_path: Path) -> None:
    """The preview read the file from disk, so a notebook hit showed its JSON (quoted, escaped lines
    between metadata) although the chunk was its code; it shows the cells' view, lexed as the kernel's
    language, on the file's own line numbers."""
    from rich.style import Style

    from aide_tui.core.search.response import Hit
    from aide_tui.tui.widgets.preview import PreviewStyles, render_preview

    text = _notebook()
    (tmp_path / "forecast.ipynb").write_text(text)
    chunk = next(c for c in chunk_file("forecast.ipynb", text, 1500) if "load_ledger" in c.text)
    hit = Hit(path="forecast.ipynb", start_line=chunk.start_line, end_line=chunk.end_line, score=1.0,
              symbol=chunk.symbol, language=chunk.language, ranks={}, query_terms=["ledger"],
              text=chunk.text)  # fmt: skip
    plain = Style()
    data = render_preview(tmp_path, hit, PreviewStyles(plain, plain, plain, plain))
    shown = ["".join(seg.text for seg in line) for line in data.lines]
    assert data.from_disk
    assert any(line.rstrip().endswith("def load_ledger(path):") for line in shown), shown
    assert not any('"source"' in line or '\\n",' in line for line in shown), shown
