"""BERT WordPiece tokenizer in pure Python, matching HuggingFace ``tokenizers`` (BertNormalizer +
BertPreTokenizer + WordPiece + [CLS]/[SEP] template) for uncased and cased vocabularies."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from itertools import chain
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

# Rust's char::is_whitespace (Unicode White_Space); \v, \f, \x85 and \x1c-\x1f are control chars there.
_WHITESPACE = frozenset(" \t\n\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B)
)
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# ASCII fast path: control chars other than \t \n \r are deleted; everything else is alnum/punct/space.
_ASCII_DELETE = {c: None for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]}
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
_ASCII_WORD_CASED_RE = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\s]")
_MAX_CACHE = 500_000


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def load_vocab(path: str | Path) -> dict[str, int]:
    """Read a vocab.txt (one token per line, id = line number)."""
    vocab: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            token = line.rstrip("\n").rstrip("\r")
            vocab.setdefault(token, i)
    return vocab


class _WordCache(dict[str, list[int]]):
    """word -> ids, computed on a miss (kept while there is room): hits cost no Python call."""

    def __init__(self, compute: Callable[[str], list[int]]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, word: str) -> list[int]:
        ids = self._compute(word)
        if len(self) < _MAX_CACHE:
            self[word] = ids
        return ids


class WordPieceTokenizer:
    """Greedy longest-match-first WordPiece with BERT basic tokenization; caches word -> ids."""

    def __init__(
        self,
        vocab: dict[str, int],
        lowercase: bool = True,
        strip_accents: bool | None = None,
        tokenize_chinese_chars: bool = True,
        max_input_chars_per_word: int = 100,
    ) -> None:
        self.vocab = vocab
        self.lowercase = lowercase
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.max_chars = max_input_chars_per_word
        try:
            self.unk_id = vocab["[UNK]"]
            self.cls_id = vocab["[CLS]"]
            self.sep_id = vocab["[SEP]"]
        except KeyError as exc:
            raise ValueError(f"vocabulary lacks the special token {exc.args[0]}") from None
        self.pad_id = vocab.get("[PAD]", 0)
        self._specials = {t: vocab[t] for t in SPECIAL_TOKENS if t in vocab}
        self._word_cache = _WordCache(self._wordpiece)
        self._char_cache: dict[str, str] = {}
        self._ascii_re = _ASCII_WORD_RE if lowercase else _ASCII_WORD_CASED_RE

    @classmethod
    def from_file(cls, vocab_path: str | Path, **kwargs: object) -> WordPieceTokenizer:
        """Build from a vocab.txt path."""
        return cls(load_vocab(vocab_path), **kwargs)  # type: ignore[arg-type]

    # -- normalisation + pre-tokenisation ---------------------------------------------------------
    def _norm_char(self, ch: str) -> str:
        """Normalise one char and pad punctuation/CJK with spaces (cached)."""
        out = self._char_cache.get(ch)
        if out is not None:
            return out
        cp = ord(ch)
        if ch in _WHITESPACE:
            out = " "
        elif cp == 0 or cp == 0xFFFD or unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Co", "Cs"):
            out = ""
        else:
            s = ch
            if self.tokenize_chinese_chars and _is_cjk(cp):
                s = " " + s + " "
            if self.strip_accents:
                s = "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
            if self.lowercase:
                s = s.lower()
            out = "".join(" " + c + " " if _is_punct(c) else c for c in s)
        if len(self._char_cache) < _MAX_CACHE:
            self._char_cache[ch] = out
        return out

    def _words(self, text: str) -> list[str]:
        if text.isascii():
            text = text.translate(_ASCII_DELETE)
            if self.lowercase:
                text = text.lower()
            return self._ascii_re.findall(text)
        norm = self._norm_char
        return "".join([norm(c) for c in text]).split()

    # -- wordpiece --------------------------------------------------------------------------------
    def _wordpiece(self, word: str) -> list[int]:
        """Greedy longest-match-first pieces of one word ([UNK] alone when none or too long)."""
        vocab = self.vocab
        n = len(word)
        if n > self.max_chars:
            return [self.unk_id]
        ids: list[int] = []
        start = 0
        while start < n:
            end = n
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self.unk_id]
            ids.append(found)
            start = end
        return ids

    def _segment_ids(self, text: str, out: list[int], limit: int) -> None:
        """Append the ids of ``text``'s words; at least the first ``limit - len(out)`` of them (each word
        gives one id or more, so the words past that many cannot count)."""
        words = self._words(text)
        room = limit - len(out)
        if len(words) > room:
            del words[max(0, room) :]
        out.extend(chain.from_iterable(map(self._word_cache.__getitem__, words)))

    def tokenize_ids(self, text: str, limit: int | None = None) -> list[int]:
        """Word-piece ids of ``text`` without [CLS]/[SEP], stopping once ``limit`` ids are reached."""
        lim = limit if limit is not None else 1 << 62
        out: list[int] = []
        if "[" in text and _SPECIAL_RE.search(text):
            for i, part in enumerate(_SPECIAL_RE.split(text)):
                if i % 2:
                    special = self._specials.get(part)
                    if special is not None:
                        out.append(special)
                    else:
                        self._segment_ids(part, out, lim)
                elif part:
                    self._segment_ids(part, out, lim)
                if len(out) >= lim:
                    break
        else:
            self._segment_ids(text, out, lim)
        return out[:lim] if limit is not None else out

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """[CLS] + ids + [SEP], truncated so the total is at most ``max_length``."""
        limit = None if max_length is None else max(0, max_length - 2)
        return [self.cls_id, *self.tokenize_ids(text, limit), self.sep_id]

    def encode_batch(self, texts: Iterable[str], max_length: int | None = None) -> list[list[int]]:
        """Encode several texts."""
        return [self.encode(t, max_length) for t in texts]

    def count_tokens(self, text: str) -> int:
        """Number of ids ``encode`` would produce without truncation (incl. [CLS]/[SEP])."""
        return len(self.tokenize_ids(text)) + 2
