"""Command-line flags a script's behaviour hangs on: their argparse defaults, and how to name them.

Config-gated findings say which flag value triggers the bug. A test such as ``opt.sync_bn`` or
``args.sync_bn == "pytorch"`` is evaluated under the default of the matching
``parser.add_argument("--sync-bn", action="store_true")`` of the same file, when there is one
(``store_true`` defaults to False, ``store_false`` to True, else ``default=``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddp_doctor.lint.context import FileContext, dotted, keyword

UNKNOWN = object()


@dataclass(frozen=True)
class FlagTest:
    flag: str  # the attribute as written, e.g. "opt.sync_bn"
    option: str  # the command-line spelling when found, e.g. "--sync-bn", else the attribute name
    default_true: bool | None  # does the test hold under the default? None when unknown


def argparse_defaults(ctx: FileContext) -> dict[str, object]:
    """``dest -> default`` for every ``add_argument`` call of the file (literal defaults only)."""
    out: dict[str, object] = {}
    for call in ctx.of_type(ast.Call):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest_kw = keyword(call, "dest")
        long = next((o for o in options if o.startswith("--")), options[0] if options else None)
        if isinstance(dest_kw, ast.Constant) and isinstance(dest_kw.value, str):
            dest = dest_kw.value
        elif long:
            dest = long.lstrip("-").replace("-", "_")
        else:
            continue
        action = keyword(call, "action")
        default = keyword(call, "default")
        if isinstance(action, ast.Constant) and action.value == "store_true":
            value: object = False if default is None else _literal(default)
        elif isinstance(action, ast.Constant) and action.value == "store_false":
            value = True if default is None else _literal(default)
        elif default is None:
            value = None
        else:
            value = _literal(default)
        out[dest] = value
        out[f"--{dest}"] = long or dest
    return out


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def flag_test(ctx: FileContext, test: ast.expr, defaults: dict[str, object]) -> FlagTest | None:
    """The config flag ``test`` depends on (``opt.sync_bn``, ``args.x == "y"``), and whether the
    test holds under the flag's default. Conjuncts about distribution/devices are ignored."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found = [f for v in test.values if (f := flag_test(ctx, v, defaults)) is not None]
        return found[0] if len(found) == 1 else None
    negate = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negate = test.operand, True
    compare_to: object = UNKNOWN
    op_eq = True
    node: ast.AST = test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        right = test.comparators[0]
        if not isinstance(right, ast.Constant):
            return None
        node, compare_to, op_eq = test.left, right.value, isinstance(test.ops[0], ast.Eq)
    name = dotted(node)
    if name is None or "." not in name or _about_distribution(name):
        return None
    dest = name.split(".")[-1]
    option = str(defaults.get(f"--{dest}", dest))
    default = defaults.get(dest, UNKNOWN)
    holds: bool | None
    if default is UNKNOWN:
        holds = None
    elif compare_to is UNKNOWN:
        holds = bool(default)
    else:
        holds = (default == compare_to) == op_eq
    if holds is not None and negate:
        holds = not holds
    return FlagTest(name, option, holds)


def _about_distribution(name: str) -> bool:
    last = name.split(".")[-1].lower()
    return any(w in last for w in ("rank", "world", "distributed", "cuda", "gpu", "device", "ddp"))
