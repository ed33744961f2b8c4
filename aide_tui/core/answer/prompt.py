"""The prompt of an answer: up to K hits within a token budget, each numbered with ``path:start-end``.

Deterministic: the same question and hits give the same messages. Tokens are estimated, not counted
(the server's tokenizer is unknown here): one per :data:`CHARS_PER_TOKEN` characters, which
over-counts code for the usual BPE vocabularies, so a budget is not exceeded in practice. Secrets
are masked again in what is sent (the index already holds masked text; this also covers the question).

Nothing from the workspace can write the prompt's structure (the excerpt headers, their fences, the
question line, the chat template's turns): a path or symbol is shown on its header line with its
control characters and line breaks escaped (``\n``, ``\r``, ``\u2028`` ...), code goes inside a fence
longer than any run of backticks in it, a language name is kept only when it is a plain word, and the
spellings chat templates give special meaning (``<|im_end|>``, ``<｜User｜>``, ``<start_of_turn>``,
``[INST]`` ...) get a zero-width space after their first character wherever they occur, so a server
that reads special tokens in message text does not end the turn or open a new one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aide_tui.core.secrets import mask_secrets
from aide_tui.core.textsafe import printable
from aide_tui.core.tokens import CHARS_PER_TOKEN, estimate_tokens

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens", "build_prompt", "select_excerpts"]
MIN_TRIMMED_TOKENS = 64  # a hit cut to fit the budget keeps at least this much, else it is left out

SYSTEM = (
    "You answer questions about a code base. Use only the numbered excerpts in the user's message. "
    "Cite every excerpt you rely on by its number in square brackets, like [1] or [2][3], right after "
    "the statement it supports. Never cite a number that is not listed. If the excerpts do not answer "
    "the question, say so. Be concise."
)


class HitLike(Protocol):
    """What a search result must offer to become an excerpt (``Hit`` of the search pipeline)."""

    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str | None
    language: str

    def to_json(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class Excerpt:
    """A hit as sent to the model: its number, its (possibly trimmed) span and its masked text."""

    n: int
    path: str
    start_line: int
    end_line: int
    text: str
    hit: Any  # the search result it came from
    trimmed: bool = False

    @property
    def label(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_json(self) -> dict[str, object]:
        """The hit's contract object with the lines actually sent and its number."""
        out = dict(self.hit.to_json())
        out.update(n=self.n, start_line=self.start_line, end_line=self.end_line)
        return out


@dataclass(frozen=True)
class Prompt:
    """The messages to send and what went into them."""

    messages: list[dict[str, str]]
    excerpts: list[Excerpt]
    context_tokens: int  # estimated tokens of the excerpt blocks (counted against the budget)
    budget: int
    left_out: int  # candidate hits with text that did not fit the budget

    @property
    def prompt_tokens(self) -> int:
        """Estimated tokens of all messages."""
        return sum(estimate_tokens(m["content"]) for m in self.messages)


_PLAIN_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
# the first character of a chat template's control spelling: ChatML, Llama 3, Phi, Qwen and GPT-OSS
# (<|...|>), DeepSeek (<｜...｜>), Gemma (<start_of_turn>, <end_of_turn>), Llama 2 and Mistral ([INST],
# <<SYS>>, [SYSTEM_PROMPT], [AVAILABLE_TOOLS], [TOOL_CALLS]); a zero-width space goes after it
_TEMPLATE_MARK = re.compile(
    r"<(?=[|｜])|<(?=(?:start|end)_of_turn>)|<(?=<SYS>>)|<(?=/SYS>>)"
    r"|\[(?=/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\])"
)
ZWSP = "\u200b"


def defused(text: str) -> str:
    """``text`` with every chat template control spelling broken by a zero-width space (see above)."""
    return _TEMPLATE_MARK.sub(lambda m: m.group() + ZWSP, text)


def one_line(text: str) -> str:
    """A name from the workspace (a path, a symbol) as one line of the prompt: control characters and
    line breaks escaped, template spellings broken."""
    return printable(defused(text))


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def format_excerpt(n: int, path: str, start: int, end: int, symbol: str | None, language: str,
                   text: str) -> str:  # fmt: skip
    """One numbered excerpt block: ``[n] path:start-end (symbol)`` and the fenced code; nothing in the
    path, symbol, language or code can end the block or start another line of the prompt."""
    code = defused(text.rstrip("\n"))
    fence = _fence(code)
    head = f"[{n}] {one_line(path)}:{start}-{end}" + (f" ({one_line(symbol)})" if symbol else "")
    lang = language if language != "text" and _PLAIN_LANGUAGE.fullmatch(language or "") else ""
    return f"{head}\n{fence}{lang}\n{code}\n{fence}"


def _trim(n: int, hit: HitLike, text: str, room: int) -> Excerpt | None:
    """The longest leading part of ``hit`` (whole lines) whose block fits ``room`` tokens, if any
    worth sending."""
    lines = text.split("\n")
    lo, hi = 0, len(lines)  # binary search on the number of lines kept
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = "\n".join(lines[:mid])
        block = format_excerpt(n, hit.path, hit.start_line, hit.start_line + mid - 1, hit.symbol,
                               hit.language, part)  # fmt: skip
        if estimate_tokens(block) <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    part = "\n".join(lines[:lo])
    if estimate_tokens(part) < MIN_TRIMMED_TOKENS:
        return None
    return Excerpt(n, hit.path, hit.start_line, hit.start_line + lo - 1, part, hit, trimmed=True)


def select_excerpts(hits: Sequence[HitLike], limit: int, budget: int) -> tuple[list[Excerpt], int, int]:
    """(excerpts, their estimated tokens, hits left out): hits in rank order, at most ``limit``, while
    their blocks fit ``budget`` tokens. A hit too big for what is left is cut to whole lines when at
    least :data:`MIN_TRIMMED_TOKENS` of it fit, else skipped for a smaller one further down."""
    chosen: list[Excerpt] = []
    used = left_out = 0
    for hit in hits:
        if len(chosen) >= limit:
            break
        text = mask_secrets(hit.text or "")
        if not text.strip():
            continue  # a file-finder row, or an empty chunk: nothing to show the model
        n = len(chosen) + 1
        block = format_excerpt(n, hit.path, hit.start_line, hit.end_line, hit.symbol, hit.language, text)
        cost = estimate_tokens(block)
        if used + cost <= budget:
            chosen.append(Excerpt(n, hit.path, hit.start_line, hit.end_line, text, hit))
            used += cost
            continue
        cut = _trim(n, hit, text, budget - used)
        if cut is None:
            left_out += 1
            continue
        chosen.append(cut)
        used += estimate_tokens(_block(cut))
    return chosen, used, left_out


def _block(e: Excerpt) -> str:
    return format_excerpt(e.n, e.path, e.start_line, e.end_line, e.hit.symbol, e.hit.language, e.text)


def build_prompt(question: str, hits: Sequence[HitLike], limit: int, budget: int) -> Prompt:
    """The chat messages for ``question`` over the best ``hits`` (see :func:`select_excerpts`)."""
    excerpts, used, left_out = select_excerpts(hits, limit, budget)
    blocks = "\n\n".join(_block(e) for e in excerpts)
    user = f"Excerpts from the code base:\n\n{blocks}\n\nQuestion: {mask_secrets(question.strip())}"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    return Prompt(messages, excerpts, used, budget, left_out)
