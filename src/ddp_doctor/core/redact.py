"""Secrets never reach a run directory or a report: the one definition of "looks like a secret".

Used for the manifest's `command` and `env` (launch/launcher.py, probe/attach.py) and again when a
report shows a command (analysis/diagnose.py: a run directory written by an older version or by
hand is redacted too). The patterns are documented in docs/run-format.md ("Secrets").

A *name* (environment variable, command-line flag, `key=value` override) is secret-looking when
one of its parts, split at `_`, `-`, `.` and lower→upper case changes, is one of SECRET_PARTS, or
the whole name, letters only and upper-cased, contains one of SECRET_SUBSTRINGS:

    NCCL_PWD, TORCH_CREDS, ACCELERATE_API_TOK, HF_TOKEN, --api-key, --hf-token, --password,
    --secret, --token, wandb.api_key=..., apiKey, MY_SERVICE_AUTH ...

A *value* is redacted wherever it appears in a command when
* it follows a secret-looking flag: `--api-key X` (X redacted) or `--hf-token=X`;
* it is the value of a secret-looking `key=value` / `key:value` argument (Hydra/OmegaConf style);
* it carries URL credentials: `https://user:PASSWORD@host` keeps the user, hides the password;
* it has the shape of a well-known token (TOKEN_SHAPES: Hugging Face `hf_`, OpenAI `sk-`, GitHub
  `ghp_`/`github_pat_`, Slack `xox?-`, AWS `AKIA`, JWTs), whatever flag it follows.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
# Whole parts of a name: short words that would match too much as substrings.
SECRET_PARTS = frozenset(
    {"tok", "token", "tokens", "key", "keys", "pw", "pwd", "pass", "passwd", "password", "passphrase"}
    | {"secret", "secrets", "cred", "creds", "credential", "credentials", "auth", "authorization"}
    | {"cookie", "cookies", "signature", "privkey", "bearer", "apikey", "accesskey", "secretkey"}
)
# Substrings of the upper-cased letters of a name (catches APIKEY, HFTOKEN, DBPASSWORD, ...).
SECRET_SUBSTRINGS = ("TOKEN", "SECRET", "PASSW", "PASSPHRASE", "CREDENTIAL", "APIKEY", "PRIVATEKEY", "AUTH")
# Well-known credential formats, whatever text they appear in. The set follows the rule set of a
# maintained scanner (Yelp's detect-secrets 1.5 plugins: AWS, GitHub, GitLab, Slack, Stripe, npm,
# PyPI, SendGrid, Twilio, Telegram, Discord, OpenAI, JWT, private keys, basic auth), re-written
# here from each vendor's documented token format; docs/run-format.md ("Secrets") says why the
# scanner itself is not a dependency.
TOKEN_SHAPES = re.compile(
    r"(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|npm_[A-Za-z0-9]{36}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|(?:AC|SK)[0-9a-f]{32}|AIza[0-9A-Za-z_-]{35}"
    r"|\b[0-9]{8,10}:AA[0-9A-Za-z_-]{33}\b|[MN][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"
    r"|-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|$))"
)
# `Authorization: Bearer X`, `Proxy-Authorization=Basic X`, a bare `Bearer X`: the credential goes.
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)(?P<scheme>(?:bearer|basic|token|digest|negotiate)\s+)?"
    r"(?P<cred>[^\s\"',;}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<head>\b(?:bearer|basic)\s+)(?P<cred>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
# URL query parameters that carry a credential: S3 presigned `X-Amz-Signature`/`X-Amz-Credential`/
# `X-Amz-Security-Token`, Azure SAS `sig`, OAuth `access_token`, `token`, `key`, `code`, ...
_QUERY_PARAM = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z][\w.-]*)=)(?P<value>[^&#\s\"']+)")
_QUERY_SECRET_NAMES = frozenset(
    {"sig", "code", "key", "client_secret", "x-goog-signature", "x-goog-credential"}
)
# `password = "hunter2"`, `"api_key": "abc"`, `token: abc` in free text (exception messages,
# JSON arguments): a secret-looking name, `=` or `:`, then the value (quoted or up to a space).
_TEXT_KEY_VALUE = re.compile(
    r"(?P<key>[A-Za-z_][\w.-]*)(?P<sep>[\"']?\s*[=:]\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;)}\]\"'&]+)"
)
# A 40-hex W&B API key is told from a git commit only by its context: a text that speaks of a key.
_HEX40 = re.compile(r"\b[0-9a-f]{40}\b")
_KEY_CONTEXT = re.compile(r"(?i)wandb|w&b|api[\s_-]?key|token|secret")
# Short flags whose value is a secret: `-p PASSWORD` (mysql, sshpass, docker login; a number, a
# port, is kept), `-u user:password` (curl: the part after the colon).
_SHORT_SECRET_FLAGS = frozenset({"-p"})
_USER_PASS_FLAGS = frozenset({"-u", "--user", "--proxy-user"})
# Values shorter than this are not collected as known secrets: replacing "1" or "abc" everywhere
# in a text would destroy it and protect nothing.
MIN_KNOWN_SECRET = 6
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_KEY_VALUE = re.compile(r"^(?P<key>[+~]*[A-Za-z_][\w.\-/]*)(?P<sep>[=:])(?P<value>.*)$", re.DOTALL)


def is_secret_name(name: str) -> bool:
    """True when `name` (an env var, a flag without its dashes, a config key) looks like a secret."""
    parts = [p.lower() for chunk in re.split(r"[_\-.\s/]+", name) for p in _PARTS.findall(chunk)]
    if any(p in SECRET_PARTS for p in parts):
        return True
    letters = re.sub(r"[^A-Za-z]", "", name).upper()
    return any(s in letters for s in SECRET_SUBSTRINGS)


def redact_value(value: str) -> str:
    """`value` with URL passwords, credential query parameters, authorization headers and
    well-known token shapes replaced by REDACTED."""
    value = _AUTH_HEADER.sub(lambda m: f"{m['head']}{m['scheme'] or ''}{REDACTED}", value)
    value = _BEARER.sub(lambda m: f"{m['head']}{REDACTED}", value)
    value = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", value)
    value = _QUERY_PARAM.sub(_query_param, value)
    value = TOKEN_SHAPES.sub(REDACTED, value)
    return _HEX40.sub(REDACTED, value) if _KEY_CONTEXT.search(value) else value


def _query_param(m: re.Match[str]) -> str:
    name = m["name"]
    if name.lower() in _QUERY_SECRET_NAMES or is_secret_name(name):
        return f"{m['head']}{REDACTED}"
    return m.group(0)


def redact_text(text: str, known: Iterable[str] = ()) -> str:
    """Free text the run produced (an exception message, a warning, a logged key): every value
    `redact_value` hides, `name=value` / `"name": "value"` pairs with a secret-looking name, and
    each of the `known` secrets (known_secrets: the command's own) wherever it appears."""
    for secret in sorted({k for k in known if len(k) >= MIN_KNOWN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = redact_value(text)
    return _TEXT_KEY_VALUE.sub(_text_pair, text)


def _text_pair(m: re.Match[str]) -> str:
    value = m["value"]
    if (
        not is_secret_name(m["key"])
        or REDACTED in value
        or value.startswith("//")  # `https://...` is a URL, not a `https:` key
        or m.string.startswith(" " + REDACTED, m.end())  # `Authorization: Bearer <redacted>`
        or _is_number(value)  # "max tokens: 2048" in an error message is a count, not a key
    ):
        return m.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{m['key']}{m['sep']}{quote}{REDACTED}{quote}"


def known_secrets(argv: Iterable[Any], environ: Mapping[str, str]) -> set[str]:
    """The secret values a command carries: those redact_argv hides in `argv`, and the values of
    secret-named environment variables (WANDB_API_KEY, HF_TOKEN, ...). The probe replaces each of
    them in free text it records, so an exception quoting the key never writes it to disk."""
    args = [a for a in argv if isinstance(a, str)]
    found = {v for k, v in environ.items() if is_secret_name(k) and isinstance(v, str)}
    for arg, hidden in zip(args, redact_argv(args), strict=True):
        if hidden == REDACTED:  # the value after `--api-key`, `-p`, or a token on its own
            found.add(arg)
            continue
        for sep in "=:":  # `--hf-token=X`, `wandb.api_key=X`, `-u user:X`
            head, _, value = arg.partition(sep)
            if value and hidden == f"{head}{sep}{REDACTED}":
                found.add(value.strip())
    return {s for s in found if len(s) >= MIN_KNOWN_SECRET}


def redact_argv(argv: Iterable[Any]) -> list[Any]:
    """A command line with every secret-looking value replaced (non-strings are kept as they are)."""
    out: list[Any] = []
    # what to hide of the next argument: "all", "unless-number" (`-p 22` is a port), "password"
    # (`-u user:PASSWORD`)
    hide_next: str | None = None
    for arg in argv:
        if not isinstance(arg, str):
            out.append(arg)
            hide_next = None
            continue
        if hide_next is not None and not (arg.startswith("-") and len(arg) > 1):
            if hide_next == "all" or (hide_next == "unless-number" and not _is_number(arg)):
                out.append(REDACTED)
            elif hide_next == "unless-number":
                out.append(arg)
            else:
                out.append(re.sub(r"^([^:]*):.+$", rf"\1:{REDACTED}", arg) if ":" in arg else arg)
            hide_next = None
            continue
        hide_next = None
        name, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and len(arg) > 1 and not _is_number(arg) and not re.search(r"\s", name):
            if is_secret_name(name):
                if eq:
                    out.append(arg if _is_count(name, value) else f"{arg.split('=', 1)[0]}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = "unless-number" if _is_count(name, "0") else "all"
                continue
            if not eq and arg in _SHORT_SECRET_FLAGS:
                out.append(arg)
                hide_next = "unless-number"
                continue
            if not eq and arg in _USER_PASS_FLAGS:
                out.append(arg)
                hide_next = "password"
                continue
            if eq:  # `--header=Authorization: Bearer X`: the flag stays, its value is free text
                out.append(f"{arg.split('=', 1)[0]}={redact_text(value)}")
                continue
        else:
            match = _KEY_VALUE.match(arg)
            if match and "://" not in arg[: match.end("sep") + 2] and is_secret_name(match["key"]):
                keep = _is_count(match["key"], match["value"])
                out.append(arg if keep else f"{match['key']}{match['sep']}{REDACTED}")
                continue
        out.append(redact_text(arg))
    return out


@functools.lru_cache(maxsize=1)
def _own_secrets() -> frozenset[str]:
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    return frozenset(known_secrets(argv, dict(os.environ)))


def redact_recorded(text: str) -> str:
    """Free text this process records (an exception, a probe error, a logged key): redact_text
    with this process's own command-line and environment secrets as the known ones."""
    return redact_text(text, _own_secrets())


def redact_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without secret-looking names, and with secret-shaped values redacted."""
    return {k: redact_value(v) for k, v in environ.items() if not is_secret_name(k)}


# `max_tokens=2048`, `--num-tokens 512`: a "token" name that counts tokens, with a number.
_COUNT_PARTS = frozenset({"tokens", "max", "min", "num", "n", "len", "length", "size", "count", "per"})


def _is_count(name: str, value: str) -> bool:
    parts = {p.lower() for chunk in re.split(r"[_\-.\s/]+", name) for p in _PARTS.findall(chunk)}
    return bool(parts & _COUNT_PARTS) and _is_number(value)


def _is_number(arg: str) -> bool:
    try:
        float(arg)
    except ValueError:
        return False
    return True
