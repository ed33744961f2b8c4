"""Argument parsers: the subcommands' and the TUI's (``aide-tui [PATH]``)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from aide_tui import __version__
from aide_tui.core.config import EMBEDDERS, MODES

SUBCOMMANDS = ("index", "search", "defs", "refs", "ask", "status", "serve", "mcp", "host")


class _Parser(argparse.ArgumentParser):
    """Unknown arguments are reported by the subcommand's parser, with that subcommand's usage; a bad
    value of a known option (``--limit abc``) is one line, without the usage."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = getattr(ns, "subparser", None) or self
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument "):  # argparse's words for a bad value of a known option
            self.exit(2, f"{self.prog}: {message.removeprefix('argument ')} (see {self.prog} --help)\n")
        super().error(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _root_args(p: argparse.ArgumentParser) -> None:
    """ROOT as a positional argument (the contract's form) or as ``--path``, as ``search`` takes it."""
    p.add_argument("root", nargs="?", help="workspace root (default .)")
    p.add_argument("--path", dest="path_opt", metavar="ROOT", help="the same as ROOT (as search takes it)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedder", choices=list(EMBEDDERS), help="embedding backend (static: the static tier alone)"
    )
    p.add_argument("--embedding-url", help="embedding server URL (openai/ollama)")
    p.add_argument("--embedding-model", help="model name sent to the embedding server")
    p.add_argument(
        "--allow-remote-embedder",
        action="store_true",
        default=None,
        help="allow a non-loopback embedding URL (your code is sent there)",
    )
    p.add_argument("--lock-timeout", type=float, help="seconds to wait for another indexer (default 30)")
    p.add_argument("--store", choices=["local", "milvus"], help="where the index lives (default local)")
    p.add_argument("--store-uri", help="milvus: a Milvus Lite file (*.db) or http(s)://host:port of a server")
    p.add_argument("--collection", help="milvus: the collection (share one between workspaces by naming it)")
    p.add_argument("--workspace-id", help="milvus: this workspace's id in the collection")
    p.add_argument("--read-only", action="store_true", default=None, help="never write to the store")
    p.add_argument("--max-file-kb", type=int, help="skip files larger than this (default 512)")


def _rerank_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rerank", action="store_const", const="http", default=None,
                   help="rerank the top fused hits by the [search] rerank_url server")  # fmt: skip
    p.add_argument("--allow-remote-reranker", dest="rerank_allow_remote", action="store_true", default=None,
                   help="allow a non-loopback rerank_url (your code is sent there)")  # fmt: skip


def _ask_parser(sub: Any) -> None:
    """``aide-tui ask``: a cited answer from a local model server over the search's hits."""
    p = sub.add_parser(
        "ask",
        help="answer a question about ROOT's code with a local model server, citing the code",
        description="Search ROOT's index for the question (the same pipeline as `search`), send the best "
        "hits within a token budget, each numbered with path:start-end, to a local model server "
        "(llama.cpp's llama-server, llamafile, LM Studio, vLLM: --backend openai; Ollama: --backend "
        "ollama) and stream its answer, then list the code it cites. Defaults come from [answer].",
    )
    p.set_defaults(handler=_handler("ask"), subparser=p)
    p.add_argument("question", nargs="*", help="the question")
    p.add_argument("--path", default=".", help="workspace root (default .)")
    p.add_argument("--json", action="store_true", help="print one JSON object when the answer is complete")
    p.add_argument("--backend", dest="answer_backend", choices=["openai", "ollama"],
                   help="wire format of the model server (default openai)")  # fmt: skip
    p.add_argument("--url", dest="answer_url",
                   help="model server URL (default http://127.0.0.1:8080; ollama: :11434)")  # fmt: skip
    p.add_argument("--model", dest="answer_model", help="model name sent to the server")
    p.add_argument("--limit", dest="answer_limit", type=_positive_int, help="hits sent at most (default 5)")
    p.add_argument("--max-context-tokens", dest="answer_max_context_tokens", type=_positive_int,
                   help="token budget of the hits sent (default 3000)")  # fmt: skip
    p.add_argument("--timeout", dest="answer_timeout", type=float, help="seconds for the whole answer")
    p.add_argument("--allow-remote-model", dest="answer_allow_remote", action="store_true", default=None,
                   help="allow a non-loopback model server URL (your code is sent there)")  # fmt: skip
    p.add_argument("--no-update", action="store_true", help="do not refresh the index before searching")
    p.add_argument("--wait", action="store_true", help="compute every missing vector before answering")
    _rerank_flags(p)
    _common(p)


def _handler(name: str, module_name: str | None = None) -> Any:
    """Import a subcommand's module (``<name>_cmd``, or ``<module_name>_cmd``) only when it runs."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        module = importlib.import_module(f"aide_tui.cli.{module_name or name}_cmd")
        return int(getattr(module, f"cmd_{name}")(args))

    return run


def _symbol_parsers(sub: Any) -> None:
    """``aide-tui defs`` and ``aide-tui refs``: the symbol graph of the index."""
    for name, what in (("defs", "where NAME is defined"), ("refs", "where NAME is used (calls, imports, "
                                                                  "attribute uses, names)")):  # fmt: skip
        p = sub.add_parser(
            name,
            help=f"list {what}, from ROOT's symbol graph",
            description=f"List {what}: one path:line:col:text line each (vim -q, grep-mode), or JSON. "
            "NAME may be qualified (Client.send, cli.Command). A name with several definitions is "
            'ambiguous: a note on stderr ("note" in JSON) says so. Exit 1 when nothing is found.',
        )
        p.set_defaults(handler=_handler(name, "symbols"), subparser=p, quick_exit=True)
        p.add_argument("name", help="the name (or a qualified name)")
        p.add_argument("--path", default=".", help="workspace root (default .)")
        p.add_argument("--no-server", action="store_true", help="read the index even when a host runs")
        p.add_argument("--json", action="store_true", help="one JSON object")
        p.add_argument(
            "--limit", type=_positive_int, default=500, help="locations listed at most (default 500)"
        )
        p.add_argument("--no-update", action="store_true", help="do not refresh the index first")
        p.add_argument("--wait", action="store_true", help=argparse.SUPPRESS)
        _common(p)


def build_parser() -> argparse.ArgumentParser:
    """The subcommand parser (the TUI has its own, see ``tui_parser``)."""
    parser = _Parser(
        prog="aide-tui",
        description="Offline code search for the terminal.",
        epilog="Without a subcommand, `aide-tui [PATH] [--no-watch] [--embedder ...]` opens the TUI on PATH "
        "(default .); write ./index for a folder named like a subcommand.",
    )
    parser.add_argument("--version", action="version", version=f"aide-tui {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build or incrementally update ROOT's index")
    p.set_defaults(handler=_handler("index"), subparser=p, quick_exit=True)
    _root_args(p)
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    p.add_argument("--rebuild", action="store_true", help="ignore the existing index (config is kept)")
    p.add_argument(
        "--progress", action="store_true", help="print progress events as JSON lines (for the TUI)"
    )
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("--priority-json", help=argparse.SUPPRESS)  # files to embed first (from the TUI)
    p.add_argument("--background", action="store_true", help=argparse.SUPPRESS)  # detached, low priority
    _common(p)

    p = sub.add_parser(
        "search",
        help="search ROOT's index",
        description="Search ROOT's index. Filters in the query narrow before ranking: path:GLOB (a glob, "
        "or text the path contains) and lang:NAME (python, py, ts, golang, ...). A query of filters "
        "alone lists the matching files.",
    )
    p.set_defaults(handler=_handler("search"), subparser=p, quick_exit=True)
    p.add_argument("query", nargs="*", help="query text, with optional path: and lang: filters")
    p.add_argument("--path", default=None,
                   help="workspace root (default: the query's last word when it names a folder as a "
                   "path, ./src, src/, ../proj, /abs/x or ~/x, as rg PATTERN PATH reads it; "
                   "else .)")  # fmt: skip
    p.add_argument("--limit", type=_positive_int, default=20, help="results to show, at least 1 (default 20)")
    p.add_argument(
        "--mode",
        choices=MODES,
        help="hybrid = keywords + vectors (default), bm25 = keywords only, dense = vectors only",
    )
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument(
        "--format",
        choices=["text", "json", "vimgrep", "paths"],
        help="text (default); json: one object per query; vimgrep: path:line:col:text at each hit's best "
        "line (vim -q, :cexpr, Emacs grep-mode); paths: distinct files in rank order (xargs, fzf)",
    )
    p.add_argument("--batch", help="file with one query per line ('-' = stdin)")
    p.add_argument("--max-tokens", type=_positive_int,
                   help="json: whole hits in rank order, each trimmed around its best line, while they fit "
                   "this many (estimated) tokens; the answer says tokens_used and left_out")  # fmt: skip
    p.add_argument("--prefix", action="store_true",
                   help="search as you type: the query's last word, when no space follows it, also finds "
                   "the words it begins (for fzf: --bind 'change:reload:aide-tui search --prefix --format "
                   "paths {q}')")  # fmt: skip
    p.add_argument("--no-update", action="store_true", help="do not refresh the index before searching")
    p.add_argument(
        "--wait",
        action="store_true",
        help="compute every missing vector before answering "
        "(default: a few inline, the rest in the background)",
    )
    p.add_argument("--rrf-k", type=int, help="RRF constant (default 10)")
    p.add_argument("--no-server", action="store_true", help="work in-process even when `serve` runs")
    p.add_argument(
        "--all-workspaces",
        action="store_true",
        help="milvus: search every workspace of the collection (each result says which)",
    )
    _rerank_flags(p)
    _common(p)

    _symbol_parsers(sub)
    _ask_parser(sub)

    p = sub.add_parser("status", help="show the state of ROOT's index")
    p.set_defaults(handler=_handler("status"), subparser=p, quick_exit=True)
    _root_args(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-server", action="store_true", help="read the index even when `serve` runs")
    _common(p)

    p = sub.add_parser("serve", help="keep ROOT's index warm; answer HTTP on ROOT/.aide/serve.sock")
    p.set_defaults(handler=_handler("serve"), subparser=p)
    p.add_argument("root", nargs="?", default=".")
    p.add_argument("--port", type=int, help="also listen on 127.0.0.1:PORT (Bearer token in serve.token)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address for --port (127.0.0.1 or ::1)")
    p.add_argument("--no-watch", action="store_true", help="do not watch the workspace for changes")
    _common(p)

    p = sub.add_parser("mcp", help="Model Context Protocol server over stdio (for coding agents)")
    p.set_defaults(handler=_handler("mcp"), subparser=p)
    p.add_argument("root", nargs="?", default=".")
    p.add_argument("--no-watch", action="store_true", help="do not watch the workspace for changes")
    _common(p)

    # started by `search` (detached): hosts the workspace until its work is done and nobody asks for a while
    p = sub.add_parser("host", help=argparse.SUPPRESS)
    p.set_defaults(handler=_handler("host"), subparser=p)
    p.add_argument("root", nargs="?", default=".")
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("--idle", type=float, default=None, help=argparse.SUPPRESS)
    _common(p)
    return parser


def tui_parser() -> argparse.ArgumentParser:
    """``aide-tui [PATH]``: open the app."""
    p = argparse.ArgumentParser(prog="aide-tui", description="Offline code search for the terminal.")
    p.add_argument("--version", action="version", version=f"aide-tui {__version__}")
    p.add_argument(
        "path",
        nargs="?",
        default=".",
        help="workspace (default .); subcommands: index, search, ask, status, serve, mcp",
    )
    p.add_argument("--no-watch", action="store_true", help="do not watch the workspace for changes")
    _common(p)
    return p


def flags(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Map parsed flags onto config sections (only the ones given)."""
    out: dict[str, dict[str, Any]] = {"embedding": {}, "index": {}, "search": {}, "store": {}, "answer": {}}
    pairs = [
        ("embedder", "embedding", "backend"),
        ("embedding_url", "embedding", "url"),
        ("embedding_model", "embedding", "model"),
        ("allow_remote_embedder", "embedding", "allow_remote"),
        ("lock_timeout", "index", "lock_timeout"),
        ("max_file_kb", "index", "max_file_kb"),
        ("mode", "search", "mode"),
        ("rrf_k", "search", "rrf_k"),
        ("store", "store", "backend"),
        ("store_uri", "store", "uri"),
        ("collection", "store", "collection"),
        ("workspace_id", "store", "workspace"),
        ("read_only", "store", "read_only"),
        ("rerank", "search", "rerank"),
        ("rerank_allow_remote", "search", "rerank_allow_remote"),
        *(
            (f"answer_{k}", "answer", k)
            for k in ("backend", "url", "model", "limit", "max_context_tokens", "timeout", "allow_remote")
        ),
    ]
    for attr, section, key in pairs:
        value = getattr(args, attr, None)
        if value is not None:
            out[section][key] = value
    return {k: v for k, v in out.items() if v}
