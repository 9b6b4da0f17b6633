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

import re
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
TOKEN_SHAPES = re.compile(
    r"(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+)"
)
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
    """`value` with URL passwords and well-known token shapes replaced by REDACTED."""
    value = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", value)
    return TOKEN_SHAPES.sub(REDACTED, value)


def redact_argv(argv: Iterable[Any]) -> list[Any]:
    """A command line with every secret-looking value replaced (non-strings are kept as they are)."""
    out: list[Any] = []
    hide_next = False
    for arg in argv:
        if not isinstance(arg, str):
            out.append(arg)
            hide_next = False
            continue
        if hide_next and not arg.startswith("-"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if arg.startswith("-") and len(arg) > 1 and not _is_number(arg):
            name, eq, _ = arg.lstrip("-").partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{arg.split('=', 1)[0]}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
        else:
            match = _KEY_VALUE.match(arg)
            if match and "://" not in arg[: match.end("sep") + 2] and is_secret_name(match["key"]):
                out.append(f"{match['key']}{match['sep']}{REDACTED}")
                continue
        out.append(redact_value(arg))
    return out


def redact_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without secret-looking names, and with secret-shaped values redacted."""
    return {k: redact_value(v) for k, v in environ.items() if not is_secret_name(k)}


def _is_number(arg: str) -> bool:
    try:
        float(arg)
    except ValueError:
        return False
    return True
