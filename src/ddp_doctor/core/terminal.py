"""Make text from the user's run safe to print: control characters become visible escapes.

Parameter and module names, paths, argv and records come from the user's run or script; printed
raw, an ESC sequence in them sets the window title, clears the screen or hides output, and a
bidirectional override reorders what the reader sees. :func:`safe` turns every such character
into a visible ``\\x1b`` / ``\\u202e`` escape. Newlines and tabs are kept unless ``oneline``.
Used by the text report, lint output and CLI messages (``cli_common.fail``); HTML output escapes
with ``html.escape`` instead, JSON with ``json.dumps`` and :func:`safe_json` (C1 controls, bidi).
"""

from __future__ import annotations

import re

# C0 controls except \t and \n, DEL, C1 controls, and the Unicode bidi / isolate overrides.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONELINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, *, oneline: bool = False) -> str:
    """``str(text)`` with control characters replaced by visible escapes."""
    return (_UNSAFE_ONELINE if oneline else _UNSAFE).sub(_visible, str(text))


# json.dumps(ensure_ascii=False) escapes C0 controls but leaves DEL, C1 controls (U+009B is CSI)
# and bidi overrides raw; they can only occur inside JSON strings, where \uXXXX is the same value.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_json(text: str) -> str:
    """JSON text from ``json.dumps(..., ensure_ascii=False)`` with nothing a terminal acts on: DEL, C1
    controls and bidi overrides become ``\\uXXXX`` escapes (the same JSON value)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
