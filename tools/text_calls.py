"""Rewrite the old bilingual call shapes into ``catalog.Text`` (issue 23: one shape for en/zh text).

Before, a sentence in both languages travelled as two positional strings (``confirmed(fid, en, zh)``,
``self.violation(node, en, zh)``, ``Cause(key, score, en, zh)``, ``coverage(n, of, basis, basis_zh)``,
``rule(en, zh, source)``) or a tuple (``spec(..., ("title", "标题"), ...)``). Now every such
parameter is one :class:`ddp_doctor.core.catalog.Text`. This script inserts the ``Text(...)`` around
the old arguments of those calls in the files it is given (idempotent: an argument that already is a
``Text(...)`` call is left alone), so a branch that added checks or rules the old way can run it on
its files after merging main:

    python tools/text_calls.py $(git diff --name-only main... -- '*.py')

then ``ruff format`` the files and add ``Text`` to their ``ddp_doctor.core.catalog`` import
(mypy names any call it missed: a ``str`` where ``Text`` is expected).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# call name -> index of the English argument (the Chinese one follows it); only for calls with
# at least min_args positional arguments, so a same-named function of another signature is skipped.
PAIRS: dict[str, tuple[int, int]] = {
    "confirmed": (1, 3),
    "ruled_out": (1, 3),
    "observed": (1, 3),
    "not_measured": (1, 3),
    "inconclusive": (1, 3),
    "coverage": (2, 4),
    "Cause": (2, 4),
    "setting_differs": (1, 3),
    "setting_factor": (1, 3),
    "violation": (1, 3),
    "rule": (0, 3),
}
# call name -> positions of (en, zh) tuple arguments
TUPLES: dict[str, tuple[int, ...]] = {"spec": (3, 4, 5, 6), "hypothesis": (1,)}
# modules whose functions these are (a file must import one of them, or be one of them)
OWNERS = (
    "ddp_doctor.analysis.make",
    "ddp_doctor.compare.causes",
    "ddp_doctor.lint.rules.base",
    "ddp_doctor.core.catalog.model",
)


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) == "Text"


def _concerned(tree: ast.Module, path: Path) -> bool:
    """The file defines or imports one of the rewritten functions."""
    module = ".".join(path.with_suffix("").parts)
    if any(module.endswith(m) for m in OWNERS):
        return True
    return any(isinstance(n, ast.ImportFrom) and n.module in OWNERS for n in ast.walk(tree))


def rewrite(source: str, path: Path = Path("x.py")) -> str:
    tree = ast.parse(source)
    if not _concerned(tree, path):
        return source
    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col  # ast columns are UTF-8 byte offsets

    inserts: list[tuple[int, bytes]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        args = node.args
        if any(isinstance(a, ast.Starred) for a in args):
            continue
        if name in PAIRS:
            i, min_args = PAIRS[name]
            if name == "violation" and not isinstance(node.func, ast.Attribute):
                continue
            if len(args) < min_args or _is_text(args[i]):
                continue
            en, zh = args[i], args[i + 1]
            if isinstance(en, ast.Tuple) or isinstance(zh, ast.Tuple):
                continue
            inserts.append((at(en.lineno, en.col_offset), b"Text("))
            inserts.append((at(zh.end_lineno or zh.lineno, zh.end_col_offset or 0), b")"))
        elif name in TUPLES:
            for i in TUPLES[name]:
                if i < len(args) and isinstance(args[i], ast.Tuple) and len(args[i].elts) == 2:
                    t = args[i]
                    if data[at(t.lineno, t.col_offset) : at(t.lineno, t.col_offset) + 1] == b"(":
                        inserts.append((at(t.lineno, t.col_offset), b"Text"))
        # keyword forms: unset=("a", "b") of setting_differs
        for kw in node.keywords:
            if name == "setting_differs" and kw.arg == "unset" and isinstance(kw.value, ast.Tuple):
                v = kw.value
                inserts.append((at(v.lineno, v.col_offset), b"Text"))
    if not inserts:
        return source
    for offset, text in sorted(inserts, key=lambda x: x[0], reverse=True):
        data = data[:offset] + text + data[offset:]
    return data.decode("utf-8")


def main(argv: list[str]) -> int:
    changed = 0
    for arg in argv:
        path = Path(arg)
        if path.suffix != ".py" or not path.is_file():
            continue
        old = path.read_text(encoding="utf-8")
        new = rewrite(old, path)
        if new != old:
            path.write_text(new, encoding="utf-8")
            changed += 1
            print(f"rewrote {path}")
    print(f"{changed} file(s) rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
