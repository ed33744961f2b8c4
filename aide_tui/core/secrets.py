"""Mask credential-looking text before it is stored in the index (line structure is preserved).

Three kinds of rule, each behind a cheap substring test so ordinary files pay little:

- tokens recognisable by their shape alone (vendor prefixes such as ``glpat-``, ``sk_live_``,
  ``npm_``, ``hf_``, AWS key ids, JWTs) and private key blocks, masked wherever they appear;
- passwords inside URLs (``postgres://user:PASSWORD@host``);
- values assigned to a credential-named key (``password``, ``*_secret``, ``*_token``,
  ``api_key``, ``client-key-data``, docker ``auth``...), in code, JSON, YAML, INI and .env
  lines. Quoted values are masked readily; unquoted ones only where the line is a plain
  ``KEY=value`` / ``key: value`` setting and the value does not look like code
  (``password = request.form["password"]`` and ``token = self._next_token()`` stay).

The token shapes follow the formats documented by the vendors and collected in gitleaks' default
rule set (github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT); the regexes here are our own.
"""

from __future__ import annotations

import math
import re
from collections import Counter

MASK = "«masked»"

# -- tokens recognisable by shape -------------------------------------------------------------------
# (substrings of which one must be present, pattern); a group named "v" is masked alone, else the match.
_TOKENS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}"),
    ),
    (
        ("glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-"),
        re.compile(r"\bgl(?:pat|dt|ptt|rt|soat|cbt|ft|imt|agent|oas|ffct)-[0-9A-Za-z_-]{20,}"),
    ),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    (("hooks.slack.com",), re.compile(r"hooks\.slack\.com/(?:services|workflows)/(?P<v>[A-Za-z0-9_/]{20,})")),
    (("discord",), re.compile(r"discord(?:app)?\.com/api/webhooks/\d+/(?P<v>[\w-]{20,})")),
    (("sk-",), re.compile(r"\bsk-[A-Za-z0-9_-]{32,}")),  # OpenAI, Anthropic
    (("k_live_", "k_test_", "k_prod_"), re.compile(r"\b[rs]k_(?:live|test|prod)_[0-9A-Za-z]{10,}")),  # Stripe
    (("whsec_",), re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}")),
    (("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),  # Google API key
    (("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),  # JWT
    (("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    (("pypi-",), re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    (("SK",), re.compile(r"\bSK[0-9a-fA-F]{32}\b")),  # Twilio API key
    (("SG.",), re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{40,50}")),  # SendGrid
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),  # Hugging Face
    (("Key=",), re.compile(r"(?:Account|SharedAccess)Key=(?P<v>[A-Za-z0-9+/]{40,}={0,2})")),  # Azure
    (("shp",), re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),  # Shopify
    (("_v1_",), re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),  # DigitalOcean
    (("dapi",), re.compile(r"\bdapi[a-f0-9]{32}(?:-\d)?\b")),  # Databricks
    (("sq0",), re.compile(r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,}")),  # Square
    (("AGE-SECRET-KEY-",), re.compile(r"AGE-SECRET-KEY-1[0-9A-Z]{58}")),
    ((":AA",), re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b")),  # Telegram bot
    (("ATATT3",), re.compile(r"\bATATT3[A-Za-z0-9_=-]{100,}")),  # Atlassian
]

# -- private key blocks (PEM, OpenSSH, PGP), also on one line inside JSON strings --------------------
_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----")
_BLOCK_SPAN = 64 * 1024  # an END further away than this belongs to something else
_KEY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{16,}|=[A-Za-z0-9+/]{4}|[A-Za-z-]+: .*|)[ \t]*(?:\n|\Z)")

# -- URL credentials: scheme://user:PASSWORD@host ---------------------------------------------------
_URL_CRED = re.compile(r"(://[^\s:/?#@\"'<>]*:)([^\s/?#@\"'<>]+)@")  # anchored on "://": fast

# -- assignments to credential-named keys -------------------------------------------------------------
_ASSIGN = re.compile(  # matched against the lower-cased text (ten times faster than re.I)
    r"""(?x)
    (?P<word>pass(?:word|wd|phrase)?|pwd|secret|token|key|auth|credentials?|key-data|certificate-data)
    (?P<kq>["']?)
    [ \t]*(?P<op>:=|=>|=(?!=)|:(?![:/]))[ \t]*
    (?P<val>"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;]+)
    """
)
_BEARER = re.compile(r"\b(?:Bearer|Basic|Token)\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_LINE_START = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?[\"']?$")
_CODE_VALUE = re.compile(r"[()\[\]{}]|^[$%@!&|>*<]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_BASE64ISH = re.compile(r"^(?=.*[0-9+/=])[A-Za-z0-9+/=_.-]{12,}$")  # base64 has digits or +/=
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_.~:-]+$")
_PLACEHOLDER = re.compile(
    r"""(?ix)^(?:
        <[^>]*> | \$\{?[\w.]*\}? | \$\(.*\) | \{\{.*\}\} | %\(?\w*\)?s? | \#\{.*\} | @\w+@
        | x{3,} | \*{3,} | \.{3,} | -+ | _+
        | (?:your|my|some|the)[-_ ](?-i:[a-z_ -]*|[A-Z_ -]*) | .*[-_ ]here
        | (?:example|placeholder|dummy|sample|redacted|fake)\b.*
        | changeme | change[-_]me | none | null | nil | true | false | undefined | todo | tbd | secret
        | password | passwd | pass | pwd | token | str | string | int | bytes | bool | any | optional
        | [^A-Za-z0-9]* | .*%[sdr].* | .*\{\w*\}.* | arn:.* | \w+://.*
    )$"""
)
_NAME_LIKE = re.compile(r"[A-Za-z_]+[0-9]*")  # db_password, userPassword, password2: a variable's name
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_TYPE_WORDS = frozenset(
    "str string int bytes bool boolean number any optional none null nil true false".split()
)
_KEY_QUALIFIERS = frozenset(
    "api secret access private auth signing encryption master account client app session consumer "
    "license webhook deploy service storage subscription".split()
)


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def looks_random(value: str) -> bool:
    """A token-like string: long, mixed character classes, high entropy, no spaces."""
    if len(value) < 12 or not _TOKEN_CHARS.match(value):
        return False
    classes = sum(
        (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
    )
    return classes >= 2 and any(c.isdigit() for c in value) and _entropy(value) >= 3.0


def looks_random_punctuated(value: str) -> bool:
    """A generated secret drawn from letters, digits and punctuation (Django's SECRET_KEY alphabet
    has ``!@#$%^&*(-_=+)``): long, no spaces, digits and punctuation, high entropy."""
    if len(value) < 16 or any(c.isspace() for c in value) or not value.isprintable():
        return False
    has = (any(c.isalpha() for c in value), any(c.isdigit() for c in value),
           any(not c.isalnum() for c in value))  # fmt: skip
    return all(has) and _entropy(value) >= 3.5


def _key_kind(key: str) -> str | None:
    """'password', 'secret' (qualified: api_key, client_secret), 'bare' (token, secret), 'blob'
    (docker auth, kubeconfig *-data) or None for a key that does not name a credential."""
    last = key.rsplit(".", 1)[-1]
    words = [w for w in re.split(r"[_\-\s]+", _CAMEL.sub("_", last).lower()) if w]
    if not words:
        return None
    lw, pw = words[-1], (words[-2] if len(words) > 1 else "")
    if "public" in words or lw.startswith("public"):
        return None  # publicKeyToken, public_key: not secrets
    if lw in ("password", "passwd", "pwd", "passphrase", "pass") or lw.endswith(("password", "passwd")):
        return "password"
    if lw == "data" and pw in ("key", "certificate"):
        return "blob"
    if lw == "auth":
        return "blob"
    if lw in ("secret", "token", "credential", "credentials"):
        return "secret" if pw else "bare"
    if lw.endswith(("token", "secret")) and lw not in ("token", "secret"):
        return "secret"  # authtoken, apitoken, clientsecret
    if lw == "key" and pw in _KEY_QUALIFIERS or lw in ("apikey", "secretkey", "accesskey", "privatekey"):
        return "secret"
    return None


def _plain_setting(text: str, m: re.Match[str], key_start: int) -> bool:
    """``KEY=value`` / ``key: value`` alone on its line (a trailing comment allowed)."""
    line_start = text.rfind("\n", 0, key_start) + 1
    rest_end = text.find("\n", m.end())
    rest = text[m.end() : len(text) if rest_end < 0 else rest_end].strip()
    return (
        m.group("op") in ("=", ":")
        and _LINE_START.match(text, line_start, key_start) is not None
        and (not rest or rest.startswith(("#", "//", ";")))
    )


def _shell_env(text: str, m: re.Match[str], key_start: int) -> bool:
    """A shell variable set for one command: ``PGPASSWORD=... pg_dump``, ``docker run -e KEY=...``
    (an upper-case name right against ``=`` and its value, after whitespace or at a line start)."""
    before = text[key_start - 1] if key_start else "\n"
    return (
        before in " \t\n"
        and text[m.end("word") : m.start("val")] == "="
        and _ENV_NAME.fullmatch(text[key_start : m.end("word")]) is not None
    )


def _assignment_mask(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The span of ``text`` to mask for an ``_ASSIGN`` match ``m`` (found in the lower-cased text)."""
    start, word_end = m.span("word")
    key_start = start
    while key_start > max(0, start - 80) and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
        key_start -= 1
    key = text[key_start:word_end]
    if text[max(0, key_start - 2) : key_start] == "::":
        return None  # a type name such as AWS::IAM::AccessKey, not a setting
    kind = _key_kind(key)
    if kind is None:
        return None
    val = text[m.start("val") : m.end("val")]
    quoted = val[0] in "\"'`"
    inner = val[1:-1] if quoted else val
    if not inner or len(inner) > 500 or MASK in inner or _PLACEHOLDER.match(inner):
        return None
    low = inner.lower()
    named = kind != "blob" and any(w in low for w in ("pass", "secret", "token"))
    if named and (" " in inner or not quoted and _NAME_LIKE.fullmatch(inner)):
        return None  # names a variable (db_password) or asks for one ("Enter password")
    if kind == "blob":
        ok = _BASE64ISH.match(inner) is not None and _CODE_VALUE.search(inner) is None
    elif quoted:
        if kind == "password":
            ok = 3 <= len(inner) <= 200 and inner.count(" ") <= 2
        elif kind == "secret":  # api_key = "...": a token has digits (pagination names do not)
            ok = len(inner) >= 8 and _TOKEN_CHARS.match(inner) is not None and any(c.isdigit() for c in inner)
            ok = ok or looks_random_punctuated(inner)
        else:
            ok = looks_random(inner) or looks_random_punctuated(inner)
    else:
        plain = (
            (_plain_setting(text, m, key_start) or _shell_env(text, m, key_start))
            and _CODE_VALUE.search(inner) is None
            and low not in _TYPE_WORDS
        )
        if not plain:
            ok = False
        elif kind == "password":
            ok = len(inner) >= 4
        else:
            ok = looks_random(inner) and len(inner) >= 16
    if not ok:
        return None
    s, e = m.span("val")
    return (s + 1, e - 1) if quoted else (s, e)


def _mask_group(m: re.Match[str]) -> str:
    if "v" in m.re.groupindex and m.group("v") is not None:
        s, e = m.span("v")
        return m.group(0)[: s - m.start()] + MASK + m.group(0)[e - m.start() :]
    return MASK


def _mask_lines(body: str) -> str:
    """Mask every non-blank line of ``body`` (its first and last part may share a line with the
    BEGIN/END markers); one line without newlines (a JSON string with \\n escapes) becomes one mask."""
    lines = body.split("\n")
    if len(lines) == 1:
        return MASK if body else body
    inner = (MASK if line.strip() else line for line in lines[1:-1])
    return "\n".join([lines[0] and MASK, *inner, lines[-1] and MASK])


def _mask_blocks(text: str) -> str:
    """Mask the body of each private key block, keeping its BEGIN/END lines and the line count.

    Without an END marker (a truncated key, or code that only mentions the header) only the lines
    right after the header that look like key material are masked.
    """
    out: list[str] = []
    pos = 0
    for m in _BEGIN.finditer(text):
        if m.start() < pos:
            continue  # inside a block already masked
        out.append(text[pos : m.end()])
        end_marker = f"-----END {m.group(1)}PRIVATE KEY{m.group(2)}-----"
        end = text.find(end_marker, m.end(), m.end() + _BLOCK_SPAN)
        if end >= 0:
            out.append(_mask_lines(text[m.end() : end]))
            pos = end
            continue
        stop = m.end()
        nl = text.find("\n", stop)
        if nl < 0 or text[stop:nl].strip():
            pos = stop  # the header is followed by other text on its line: not a key file
            continue
        stop = nl + 1
        while stop < len(text) and (k := _KEY_LINE.match(text, stop)) is not None and k.end() > stop:
            stop = k.end()
        seg = text[m.end() : stop]
        body = seg.rstrip("\n")
        out.append(_mask_lines(body) + seg[len(body) :])
        pos = stop
    out.append(text[pos:])
    return "".join(out)


def _mask_url(m: re.Match[str]) -> str:
    if m.group(2)[0] in "$<{%[" or _PLACEHOLDER.match(m.group(2)):
        return m.group(0)  # ${DB_PASSWORD}, <password>, {{ pass }}, user:password@ in docs
    return f"{m.group(1)}{MASK}@"


_LONG_WORD = 15  # every token shape is at least this long without whitespace


def mask_secrets(text: str) -> str:
    """Replace credential-looking spans with a marker; the number of lines never changes."""
    if "PRIVATE KEY" in text:
        text = _mask_blocks(text)
    # every token shape is at least 15 characters without whitespace: look for the vendor prefixes
    # in the long words only (a fraction of the text), then run the pattern over the whole text
    long_words = "\n".join([w for w in text.split() if len(w) >= _LONG_WORD])  # 2.4x a regex scan
    for needles, pat in _TOKENS:
        if any(n in long_words for n in needles):
            text = pat.sub(_mask_group, text)
    if "://" in long_words and "@" in long_words:
        text = _URL_CRED.sub(_mask_url, text)
    if ("Bearer " in text or "Basic " in text or "Token " in text) and _BEARER.search(text):
        text = _BEARER.sub(lambda m: _mask_group(m) if looks_random(m.group("v")) else m.group(0), text)
    lower = text.lower()
    if len(lower) != len(text):  # a few characters change length when lower-cased: keep those as they are
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    spans = [sp for m in _ASSIGN.finditer(lower) if (sp := _assignment_mask(text, m)) is not None]
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in spans:
        parts += [text[pos:start], MASK]
        pos = end
    return "".join([*parts, text[pos:]])
