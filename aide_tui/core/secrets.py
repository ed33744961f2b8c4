"""Mask credential-looking text before it is stored in the index (line structure is preserved)."""

from __future__ import annotations

import re

MASK = "«masked»"

_PATTERNS = [
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\bsk-[A-Za-z0-9_-]{32,}\b"),  # OpenAI-style secret keys
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),  # JWT
]
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
    for pat in _PATTERNS:
        text = pat.sub(MASK, text)
    return _ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}{m.group(3)}", text)
