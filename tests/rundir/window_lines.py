"""Random rank-file windows and where their step lines begin, by a plain split into lines: the
reference the tests of rollup_read's cuts (`_cut`, `_span_cut`, `_nth_step_start`) compare against."""

from __future__ import annotations

import numpy as np


def random_window(seed: int, steps: int = 100) -> bytes:
    """``steps`` step lines of random lengths (up to 4 KB) with `sampler` records of random lengths
    between about a fifth of them: lines longer and shorter than any guess of the bytes needed."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(steps):
        if rng.random() < 0.2:
            lines.append(b'{"kind":"sampler","x":"' + b"y" * int(rng.integers(0, 3000)) + b'"}\n')
        lines.append(b'{"kind":"step","step":%d,"pad":"%s"}\n' % (i, b"z" * int(rng.integers(0, 4000))))
    return b"".join(lines)


def step_starts(chunk: bytes, at_line_start: bool = True) -> list[int]:
    """Where the step lines of ``chunk`` begin (the first line counts only when the chunk begins a
    line)."""
    out, at = [], 0
    for i, line in enumerate(chunk.split(b"\n")):
        if (i or at_line_start) and line.startswith(b'{"kind":"step",'):
            out.append(at)
        at += len(line) + 1
    return out
