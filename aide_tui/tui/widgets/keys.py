"""Keys that act on the selected hit (the query box consumes them while it has focus), and their help."""

from __future__ import annotations

from textual.binding import Binding, BindingType

BROWSE_BINDINGS: list[BindingType] = [
    Binding("slash", "app.focus_query", "query", key_display="/", show=False),
    Binding("e", "app.open_editor", "edit"),
    Binding("y", "app.copy_location", "copy"),
    Binding("m", "app.cycle_mode", "mode"),
    Binding("r", "app.reindex", "reindex"),
    Binding("R", "app.rebuild", "rebuild"),
    Binding("question_mark", "app.help", "help", key_display="?"),
    Binding("q", "app.quit", "quit"),
]

# (keys, what they do) for the help screen; the single source of the key documentation.
KEY_HELP: list[tuple[str, str]] = [
    ("type", "search as you type (path:GLOB and lang:NAME filter results)"),
    ("↑ ↓  ctrl+n ctrl+j / ctrl+k", "move the selection"),
    ("PgUp PgDn Home End", "move the selection (results list)"),
    ("enter", "focus the preview"),
    ("escape", "back to the query"),
    ("/", "back to the query (list or preview focused)"),
    ("e", "open the hit in $EDITOR at its line"),
    ("y", "copy path:line to the clipboard (OSC 52)"),
    ("m", "cycle search mode: hybrid / bm25 / dense"),
    ("r", "reindex now"),
    ("R", "rebuild the index from scratch (config kept)"),
    ("? / F1", "this help"),
    ("ctrl+p", "command palette (every action)"),
    ("q / ctrl+q", "quit"),
]
