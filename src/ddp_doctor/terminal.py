"""Make text from the user's run safe to print: control characters become visible escapes.

Parameter and module names, paths, argv and records come from the user's run or script; printed
raw, an ESC sequence in them sets the window title, clears the screen or hides output, and a
bidirectional override reorders what the reader sees. :func:`safe` turns every such character
into a visible ``\\x1b`` / ``\\u202e`` escape. Newlines and tabs are kept unless ``oneline``.
Used by the text report, lint output and CLI messages (``cli_common.fail``); HTML output escapes
with ``html.escape`` instead, JSON with ``json.dumps``.
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
