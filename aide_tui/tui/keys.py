"""The one table of keys: it drives the key routing, the footer, the help screen and the palette.

``where`` says when a command's keys act:

- ``any``: wherever the focus is on the main screen, the query box included (ctrl, F-keys, arrows);
- ``browse``: while the results list or the preview has focus. Any other printable key typed there
  goes to the query, as in fzf, so typing never triggers a command by surprise.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Command:
    """One command: its keys (Textual names), the screen action and how it is documented."""

    keys: str
    action: str
    label: str
    help: str
    where: str = "any"  # any | browse
    show: bool = True  # in the footer
    display: str | None = None  # how the keys are written in the footer and help
    palette: str | None = None  # command palette title (None: not in the palette)

    @property
    def key_list(self) -> list[str]:
        return [k.strip() for k in self.keys.split(",") if k.strip()]


# fmt: off
COMMANDS: tuple[Command, ...] = (
    Command("ctrl+q", "quit", "quit", "quit (the query joins the history)", show=False, display="^q"),
    Command("down,ctrl+n,ctrl+j", "move(1)", "select", "next result (preview focused: scroll down)",
            display="↓ ^n"),
    Command("j", "move(1)", "down", "next result", where="browse", show=False),
    Command("up,ctrl+k", "move(-1)", "select",
            "previous result (preview focused: scroll up; on an empty query: previous queries)",
            show=False, display="↑ ^k"),
    Command("k", "move(-1)", "up", "previous result", where="browse", show=False),
    Command("pagedown", "page(1)", "page", "page down (list or preview)", show=False, display="PgDn"),
    Command("pageup", "page(-1)", "page", "page up (list or preview)", show=False, display="PgUp"),
    Command("enter", "enter", "preview", "focus the preview (the query joins the history)", display="⏎"),
    Command("escape", "escape", "query", "back to the query (leaves history recall)", show=False,
            display="esc"),
    Command("slash", "focus_query", "query", "back to the query", where="browse", show=False, display="/"),
    Command("e", "open_editor", "edit", "open $VISUAL/$EDITOR at the line the preview shows",
            where="browse", palette="Open in editor"),
    Command("y", "copy_location", "copy", "copy path:line of the line the preview shows (OSC 52)",
            where="browse", palette="Copy location"),
    Command("n", "next_match(1)", "match", "next query-term match in the preview", where="browse"),
    Command("N", "next_match(-1)", "match", "previous query-term match in the preview", where="browse",
            show=False),
    Command("f2", "cycle_mode", "mode", "search mode: hybrid → bm25 → dense (remembered)",
            palette="Search mode: cycle"),
    Command("m", "cycle_mode", "mode", "search mode", where="browse", show=False),
    Command("f6", "toggle_scope", "scope",
            "search this workspace / every workspace of the shared collection (Milvus store)",
            show=False, palette="Scope: this workspace / all workspaces"),
    Command("a", "toggle_scope", "scope", "this workspace / all workspaces", where="browse", show=False),
    Command("f3", "toggle_preview", "layout", "hide / show the preview; the list gets the width (remembered)",
            palette="Layout: toggle preview"),
    Command("p", "toggle_preview", "layout", "hide / show the preview", where="browse", show=False),
    Command("ctrl+r", "history", "history", "search previous queries", display="^r", palette="History"),
    Command("f4", "write_results", "write",
            "write the results as vimgrep lines to a file (vim :cfile) and copy them (OSC 52)",
            palette="Write results (vimgrep)"),
    Command("w", "write_results", "write", "write the results (vimgrep)", where="browse", show=False),
    Command("f5", "reindex", "reindex", "update the index now", palette="Reindex now"),
    Command("R", "rebuild", "rebuild", "rebuild the index from scratch (asks first)", where="browse",
            show=False, palette="Rebuild index from scratch"),
    Command("f1", "help", "help", "this help", display="F1", palette="Help: keys"),
    Command("question_mark", "help", "help", "this help", where="browse", show=False, display="?"),
)
# fmt: on

# Keys the screen routes itself (in the order they arrive), by where they act.
ANY_KEYS: dict[str, Command] = {k: c for c in COMMANDS if c.where == "any" for k in c.key_list}
BROWSE_KEYS: dict[str, Command] = {k: c for c in COMMANDS if c.where == "browse" for k in c.key_list}
BROWSE_ACTIONS = frozenset(c.action for c in COMMANDS if c.where == "browse") - frozenset(
    c.action for c in COMMANDS if c.where == "any"
)

SHARED_STORE_ACTIONS = frozenset({"toggle_scope"})  # their letters go to the query without a Milvus store

_DISPLAY = {"down": "↓", "up": "↑", "enter": "⏎", "escape": "esc", "question_mark": "?", "slash": "/"}


def key_display(command: Command) -> str:
    """How the command's keys are written (``^q``, ``F2``, ``↑ ^k``)."""
    if command.display:
        return command.display
    out = []
    for key in command.key_list:
        if key.startswith("ctrl+"):
            out.append("^" + key[5:])
        elif key.startswith("f") and key[1:].isdigit():
            out.append(key.upper())
        else:
            out.append(_DISPLAY.get(key, key))
    return " ".join(out)


def bindings() -> list[Binding]:
    """Screen bindings from the table (the footer shows these; the screen routes the keys itself)."""
    out = []
    for c in COMMANDS:
        out.append(
            Binding(c.keys, c.action, c.label, show=c.show, key_display=key_display(c) if c.show else None)
        )
    return out


def help_rows() -> list[tuple[str, str]]:
    """(keys, what) for the help screen: one row per action, in table order, its list/preview-only
    letters after its everywhere keys."""
    rows = [
        ("type", 'search as you type: path:GLOB lang:NAME "phrase"'),
        ("letters", "commands while the list or the preview has focus (e y n N j k m a p w R ? /); "
         "any other letter goes to the query"),
    ]  # fmt: skip
    by_action: dict[str, list[Command]] = {}
    for c in COMMANDS:
        by_action.setdefault(c.action, []).append(c)
    for group in by_action.values():
        anywhere = " ".join(key_display(c) for c in group if c.where == "any")
        browse = " ".join(key_display(c) for c in group if c.where == "browse")
        keys = f"{anywhere} {browse}".strip()
        rows.append((keys, group[0].help))
    rows.append(("^p", "command palette (every action, themes)"))
    rows.append(("mouse", "click a row to select it; the wheel scrolls the pane under the pointer"))
    return rows
