"""Mask credential-looking text before it is stored in the index (line structure is preserved)."""

from __future__ import annotations

import re

MASK = "«masked»"

# (cheap substring that must be present, pattern): the substring test keeps indexing fast
_PATTERNS = [
    ("AKIA", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),  # AWS access key id
    ("ASIA", re.compile(r"\bASIA[0-9A-Z]{16}\b")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),  # GitHub
    ("github_pat_", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b")),
    ("xox", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),  # Slack
    ("sk-", re.compile(r"\bsk-[A-Za-z0-9_-]{32,}\b")),  # OpenAI-style secret keys
    ("AIza", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),  # Google API key
    ("eyJ", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),  # JWT
]
_KEYWORDS = ("secret", "apikey", "api_key", "token", "passw", "private_key")
# key = "long literal" where the key name says it is a secret
_ASSIGNED = re.compile(
    r"""(?ix)
    \b((?:aws_)?(?:secret(?:_access)?_key|api_?key|access_?token|auth_?token|password|passwd|client_secret|private_key))
    (\s*[:=]\s*)
    (["'])([^"'\s]{12,})\3
    """
)
_BLOCK = re.compile(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.S)


def _mask_block(m: re.Match[str]) -> str:
    lines = m.group(0).split("\n")
    return "\n".join([lines[0], *([MASK] * (len(lines) - 2)), lines[-1]] if len(lines) > 1 else [MASK])


def mask_secrets(text: str) -> str:
    """Replace credential-looking spans with a marker; the number of lines never changes."""
    if "PRIVATE KEY-----" in text:
        text = _BLOCK.sub(_mask_block, text)
    for needles, pat in _PATTERNS:
        if any(n in text for n in ((needles,) if isinstance(needles, str) else needles)):
            text = pat.sub(MASK, text)
    lower = text.lower()
    if not any(k in lower for k in _KEYWORDS):
        return text
    lines = text.split("\n")
    for i, line in enumerate(lower.split("\n")):
        if ("'" in line or '"' in line) and any(k in line for k in _KEYWORDS):
            lines[i] = _ASSIGNED.sub(_mask_value, lines[i])
    return "\n".join(lines)


def _mask_value(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}{m.group(3)}"
