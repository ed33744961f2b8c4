"""The one table of keys: each command's binding id, default keys, help text and palette title.

Textual dispatches every key from this table. ``where`` says which bindings a command becomes:

- ``any``: a priority binding of the main screen, acting wherever the focus is (the query box
  included) at the moment the key arrives: ctrl keys, F-keys, arrows;
- ``browse``: a binding of the results list and of the preview body (see :func:`browse_bindings`). A
  printable key typed there that no binding takes goes to the query, as in fzf, so typing never
  triggers a command by surprise;
- ``ask``: a priority binding of the ask screen (``ask`` itself, F7, opens and closes it).

The binding ids are the names a user's ``[keys]`` table remaps (``help = "f10"``); the app applies them
with ``App.set_keymap``. The help screen and the palette show the keys in effect after the keymap.
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from textual.binding import Binding, BindingsMap

from aide_tui.core.errors import ConfigError


@dataclass(frozen=True)
class Command:
    """One command: its binding id, its default keys (Textual names), the action and its docs."""

    id: str
    keys: str
    action: str
    label: str
    help: str
    where: str = "any"  # any | browse | ask
    show: bool = True  # in the footer
    palette: str | None = None  # command palette title (None: not in the palette)

    @property
    def key_list(self) -> list[str]:
        return normalized(self.keys)


# fmt: off
COMMANDS: tuple[Command, ...] = (
    Command("quit", "ctrl+q", "app.quit", "quit", "quit (the query joins the history)"),
    Command("clear", "ctrl+c", "clear_or_quit", "clear", "clear the query; on an empty query: quit (as fzf)",
            show=False),
    Command("down", "down,ctrl+n,ctrl+j", "move(1)", "select", "next result (preview focused: scroll down)"),
    Command("browse.down", "j", "move(1)", "down", "next result", where="browse", show=False),
    Command("up", "up,ctrl+k", "move(-1)", "select",
            "previous result (preview focused: scroll up; on an empty query: previous queries)", show=False),
    Command("browse.up", "k", "move(-1)", "up", "previous result", where="browse", show=False),
    Command("page_down", "pagedown", "page(1)", "page", "page down (list or preview)", show=False),
    Command("page_up", "pageup", "page(-1)", "page", "page up (list or preview)", show=False),
    Command("preview", "enter", "enter", "preview", "focus the preview (the query joins the history)",
            show=False),
    Command("query", "escape", "escape", "query", "back to the query (leaves history recall)", show=False),
    Command("browse.query", "slash", "focus('#query')", "query", "back to the query", where="browse",
            show=False),
    Command("browse.clear", "ctrl+u", "clear_query", "clear",
            "clear the query (in the query box: delete to the start)", where="browse", show=False),
    Command("edit", "e", "open_editor", "edit", "open $VISUAL/$EDITOR at the line the preview shows",
            where="browse", palette="Open in editor"),
    Command("copy", "y", "copy_location", "copy", "copy path:line of the line the preview shows (OSC 52)",
            where="browse", palette="Copy location"),
    Command("next_match", "n", "next_match(1)", "match", "next query-term match in the preview",
            where="browse"),
    Command("previous_match", "N", "next_match(-1)", "match", "previous query-term match in the preview",
            where="browse", show=False),
    Command("definition", "d", "definition", "def",
            "go to the definition of the name on the line the preview shows (several: listed)",
            where="browse", palette="Go to definition"),
    Command("references", "r", "references", "refs",
            "list the references of that name (path:line rows; the preview shows each)", where="browse",
            palette="Find references"),
    Command("back", "ctrl+o", "back", "back", "back to the list before d / r (its cursor and preview)",
            show=False, palette="Back (before go to definition / references)"),
    Command("browse.back", "backspace", "back", "back", "back", where="browse", show=False),
    Command("mode", "f2", "cycle_mode", "mode", "search mode: hybrid → bm25 → dense (remembered)",
            palette="Search mode: cycle"),
    Command("browse.mode", "m", "cycle_mode", "mode", "search mode", where="browse", show=False),
    Command("scope", "f6", "toggle_scope", "scope",
            "search this workspace / every workspace of the shared collection (Milvus store)",
            show=False, palette="Scope: this workspace / all workspaces"),
    Command("browse.scope", "a", "toggle_scope(True)", "scope", "this workspace / all workspaces",
            where="browse", show=False),
    Command("layout", "f3", "toggle('preview_visible')", "layout",
            "hide / show the preview; the list gets the width (remembered)",
            palette="Layout: toggle preview"),
    Command("browse.layout", "p", "toggle('preview_visible')", "layout", "hide / show the preview",
            where="browse", show=False),
    Command("history", "ctrl+r", "history", "history", "search previous queries", palette="History"),
    Command("write", "f4", "write_results", "write",
            "write the results as vimgrep lines to a file (vim :cfile) and copy them (OSC 52)",
            palette="Write results (vimgrep)"),
    Command("browse.write", "w", "write_results", "write", "write the results (vimgrep)", where="browse",
            show=False),
    Command("reindex", "f5", "reindex", "reindex", "update the index now", palette="Reindex now"),
    Command("rebuild", "R", "rebuild", "rebuild", "rebuild the index from scratch (asks first)",
            where="browse", show=False, palette="Rebuild index from scratch"),
    Command("ask", "f7", "ask", "ask", "ask the code: a cited answer from your model server (F7 again: back)",
            palette="Ask the code (cited answer)"),
    Command("help", "f1", "help", "help", "this help", palette="Help: keys"),
    Command("browse.help", "question_mark", "help", "help", "this help", where="browse", show=False),
    Command("ask.stop", "escape", "stop", "stop", "ask: stop the answer; once it is done, back to the search",
            where="ask"),
    Command("ask.down", "down,ctrl+n", "move(1)", "citation",
            "ask: next citation (the preview shows its lines)", where="ask"),
    Command("ask.up", "up,ctrl+k", "move(-1)", "citation", "ask: previous citation", where="ask", show=False),
)
# fmt: on

COMMAND_IDS: tuple[str, ...] = tuple(c.id for c in COMMANDS)
BY_ID: dict[str, Command] = {c.id: c for c in COMMANDS}
SHARED_STORE_ACTIONS = frozenset({"toggle_scope"})  # offered only with a shared (Milvus) store

_SHOWN = {"down": "↓", "up": "↑", "enter": "⏎", "escape": "esc", "question_mark": "?", "slash": "/",
          "pagedown": "PgDn", "pageup": "PgUp", "space": "space"}  # fmt: skip


def normalized(keys: str) -> list[str]:
    """``keys`` (comma-separated) as Textual names them (``?`` → ``question_mark``)."""
    return [b.key for b in Binding.make_bindings([Binding(keys, "noop")])]


PRINTABLE_NAMES = frozenset(
    normalized(",".join(c for c in string.punctuation if c != ",")) + ["space", "comma"]
)


def is_printable_key(key: str) -> bool:
    """Whether ``key`` (a normalised name) types a character (``a``, ``N``, ``question_mark``)."""
    return "+" not in key and (len(key) == 1 or key in PRINTABLE_NAMES)


def key_display(key: str) -> str:
    """How one key is written in the footer, the help and the palette (``^q``, ``F2``, ``↑``, ``?``)."""
    if key.startswith("ctrl+") and len(key) == 6:
        return "^" + key[5:]
    if key.startswith("f") and key[1:].isdigit():
        return key.upper()
    return _SHOWN.get(key, key)


def keys_display(keys: list[str]) -> str:
    return " ".join(key_display(k) for k in keys)


def _binding(c: Command, action: str, *, priority: bool) -> Binding:
    display = keys_display(c.key_list[:2]) if c.show else None
    return Binding(c.keys, action, c.label, show=c.show, key_display=display, priority=priority, id=c.id)


def screen_bindings() -> list[Binding]:
    """The main screen's bindings: the ``any`` commands, as priority bindings (they act when the key
    arrives, before the focused query box could take ctrl+k or enter for itself)."""
    return [_binding(c, c.action, priority=True) for c in COMMANDS if c.where == "any"]


def browse_bindings() -> list[Binding]:
    """The results list's and the preview body's bindings: the ``browse`` letters, acting on the screen."""
    return [_binding(c, f"screen.{c.action}", priority=False) for c in COMMANDS if c.where == "browse"]


def ask_bindings() -> list[Binding]:
    """The ask screen's bindings (priority, like the main screen's), F7 (back) included."""
    return [_binding(c, c.action, priority=True) for c in COMMANDS if c.where == "ask" or c.id == "ask"]


def live_keys(keymap: Mapping[str, str]) -> dict[str, list[str]]:
    """Each command's keys as Textual binds them after ``keymap`` (the same ``apply_keymap``)."""
    out: dict[str, list[str]] = {c.id: [] for c in COMMANDS}
    for bindings in (screen_bindings(), browse_bindings(), ask_bindings()):
        live = BindingsMap(bindings)
        live.apply_keymap(dict(keymap))
        for key, bound in live.key_to_bindings.items():
            for b in bound:
                if b.id in out and key not in out[b.id]:
                    out[b.id].append(key)
    return out


def help_rows(keys_of: Callable[[Command], list[str]]) -> list[tuple[str, str]]:
    """(keys, what) for the help screen: one row per action, in table order, its list/preview-only
    letters after its everywhere keys; ``keys_of`` gives a command's keys in effect."""
    letters = " ".join(
        keys_display([k for k in keys_of(c) if is_printable_key(k)]) for c in COMMANDS if c.where == "browse"
    ).split()
    rows = [
        ("type", 'search as you type: path:GLOB lang:NAME "phrase"'),
        ("letters", f"commands while the list or the preview has focus ({' '.join(letters)}); "
         "any other letter goes to the query"),
    ]  # fmt: skip
    by_action: dict[tuple[bool, str], list[Command]] = {}
    for c in COMMANDS:
        by_action.setdefault((c.where == "ask", c.action.removesuffix("(True)")), []).append(c)
    for group in by_action.values():
        anywhere = " ".join(keys_display(keys_of(c)) for c in group if c.where != "browse")
        browse = " ".join(keys_display(keys_of(c)) for c in group if c.where == "browse")
        keys = f"{anywhere} {browse}".strip() or "(unbound)"
        rows.append((keys, group[0].help))
    rows.append(("^p", "command palette (every action, themes)"))
    rows.append(("mouse", "click a row to select it; the wheel scrolls the pane under the pointer"))
    return rows


def check_keymap(keymap: Mapping[str, str]) -> dict[str, str]:
    """The user's ``[keys]`` table checked against this table: ids must exist, an everywhere command
    may not take a printable key (it would steal that letter from the query), and no key may do two
    things. Returns the keymap with normalised keys; ConfigError names what is wrong."""
    out: dict[str, str] = {}
    for bid, keys in keymap.items():
        command = BY_ID.get(bid)
        if command is None:
            hint = difflib.get_close_matches(bid, COMMAND_IDS, n=1)
            did = f" (did you mean {hint[0]}?)" if hint else ""
            raise ConfigError(f"[keys]: unknown id {bid!r}{did}; valid ids: {', '.join(COMMAND_IDS)}")
        names = normalized(keys)
        letters = [k for k in names if is_printable_key(k)]
        if command.where != "browse" and letters:
            raise ConfigError(
                f"[keys] {bid} = {keys!r}: {letters[0]!r} types a letter; a key that acts everywhere needs "
                "a modifier or a function key (ctrl+…, f1…); letters fit the browse.* ids"
            )
        out[bid] = ",".join(names)
    for screen in ("search", "ask"):  # each screen's keys are its own
        taken: dict[str, str] = {}
        for c in COMMANDS:
            if (c.where == "ask") != (screen == "ask") and c.id != "ask":
                continue
            for key in normalized(out.get(c.id, c.keys)):
                other = taken.setdefault(key, c.id)
                if other != c.id:
                    raise ConfigError(f"[keys]: {key_display(key)} is bound to both {other} and {c.id}")
    return out
