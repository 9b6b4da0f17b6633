"""Command-line flags a script's behaviour hangs on: their argparse defaults, and how to name them.

Config-gated findings say which flag value triggers the bug. A test such as ``opt.sync_bn`` or
``args.sync_bn == "pytorch"`` is evaluated under the default of the matching
``parser.add_argument("--sync-bn", action="store_true")`` of the same file, when there is one
(``store_true`` defaults to False, ``store_false`` to True, else ``default=``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddp_doctor.lint.context import FileContext, dotted, is_main_guard, keyword

UNKNOWN = object()


@dataclass(frozen=True)
class FlagTest:
    flag: str  # the attribute as written, e.g. "opt.sync_bn"
    option: str  # the command-line spelling when found, e.g. "--sync-bn", else the attribute name
    default_true: bool | None  # does the test hold under the default? None when unknown
    value: object = UNKNOWN  # the constant a comparison tests against (``args.sync_bn == "pytorch"``)
    equal: bool = True  # ``==`` (True) or ``!=``
    negated: bool = False  # ``not args.x`` / ``args.x is False``: the test holds with the flag off


def argparse_defaults(ctx: FileContext) -> dict[str, object]:
    """``dest -> default`` for every ``add_argument`` call of the file (literal defaults only)."""
    out: dict[str, object] = {}
    for call in ctx.of_type(ast.Call):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        long = _spelling(call, short=True)
        dest = _dest(call, long)
        if dest is None:
            continue
        action = keyword(call, "action")
        default = keyword(call, "default")
        if isinstance(action, ast.Constant) and action.value == "store_true":
            value: object = False if default is None else literal(default)
        elif isinstance(action, ast.Constant) and action.value == "store_false":
            value = True if default is None else literal(default)
        elif default is None:
            value = None
        else:
            value = literal(default)
        if dest in out:
            continue  # ``--sync_bn`` / ``--no_sync_bn`` on one dest: argparse gives it the first one's default
        out[dest] = value
        out[f"--{dest}"] = long or dest
    # ``parser.set_defaults(find_unused_params=False)`` overrides what the options declare
    for call in ctx.of_type(ast.Call):
        if isinstance(call.func, ast.Attribute) and call.func.attr == "set_defaults":
            for k in call.keywords:
                if k.arg is not None:
                    out[k.arg] = literal(k.value)
    return out


def argparse_choices(ctx: FileContext) -> dict[str, frozenset[str]]:
    """``dest -> choices`` for every ``add_argument(..., choices=[literal strings])`` of the file."""
    out: dict[str, frozenset[str]] = {}
    for call in ctx.of_type(ast.Call):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        choices = keyword(call, "choices")
        if not isinstance(choices, (ast.List, ast.Tuple, ast.Set)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in choices.elts
        ):
            continue
        options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest_kw = keyword(call, "dest")
        long = next((o for o in options if o.startswith("--")), None)
        if isinstance(dest_kw, ast.Constant) and isinstance(dest_kw.value, str):
            dest = dest_kw.value
        elif long:
            dest = long.lstrip("-").replace("-", "_")
        else:
            continue
        out[dest] = frozenset(
            e.value for e in choices.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        )
    return out


def bool_typed_options(ctx: FileContext) -> set[str]:
    """The dests of the file's ``add_argument(..., type=bool)`` options: argparse hands ``bool`` the
    command-line string, so any non-empty value (``--find_unused_parameters False`` too) is True."""
    out: set[str] = set()
    for call in ctx.of_type(ast.Call):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        kind = keyword(call, "type")
        if not (isinstance(kind, ast.Name) and kind.id == "bool"):
            continue
        dest = _dest(call, _spelling(call, short=False))
        if dest is not None:
            out.add(dest)
    return out


def _spelling(call: ast.Call, short: bool) -> str | None:
    """The option string an ``add_argument`` call is known by: its first ``--long`` one, else (with
    ``short``) its first string."""
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return next((o for o in options if o.startswith("--")), options[0] if short and options else None)


def _dest(call: ast.Call, spelling: str | None) -> str | None:
    """The attribute an ``add_argument`` call stores into: its ``dest=``, else ``spelling`` with the
    dashes stripped and inner ``-`` turned into ``_`` (argparse's rule)."""
    dest_kw = keyword(call, "dest")
    if isinstance(dest_kw, ast.Constant) and isinstance(dest_kw.value, str):
        return dest_kw.value
    return spelling.lstrip("-").replace("-", "_") if spelling else None


def module_defaults(ctx: FileContext) -> dict[str, object]:
    """Module-level configuration variables (nanoGPT style: ``compile = True`` at the top of the
    script, overridden from the command line by a configurator): name -> literal value."""
    out: dict[str, object] = {}
    for stmt in _module_statements(ctx.tree):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = literal(stmt.value)
            if value is not UNKNOWN:
                out[stmt.targets[0].id] = value
    return out


def _module_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module's own statements, with the body of ``if __name__ == "__main__":``: a script's
    settings block written there (``sync_bn = False`` above the training code) binds module
    globals all the same."""
    out: list[ast.stmt] = []
    for stmt in tree.body:
        out.append(stmt)
        if isinstance(stmt, ast.If) and is_main_guard(stmt.test):
            out.extend(stmt.body)
    return out


def all_defaults(ctx: FileContext) -> dict[str, object]:
    """argparse defaults plus module-level configuration variables (``name`` keys prefixed ``=``)
    and, in project mode, the defaults of the project's Python configuration (yacs ``_C.A.B = v``)."""
    out = argparse_defaults(ctx)
    out.update({f"={k}": v for k, v in module_defaults(ctx).items()})
    project = ctx.project
    if project is not None:  # a yacs-style config of the project (``_C.BN.NORM_TYPE = "batchnorm"``)
        for key, value in project.config_defaults.items():
            known, value = project.config_default(key)
            if known:
                out.setdefault(key, value)
    return out


def literal(node: ast.AST) -> object:
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
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and isinstance(test.comparators[0].value, bool)
    ):
        # ``args.compile is True`` (birder spells every switch so): the flag itself, or its negation
        negate ^= (test.comparators[0].value is True) == isinstance(test.ops[0], ast.IsNot)
        test = node = test.left
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        right = test.comparators[0]
        value = right.value if isinstance(right, ast.Constant) else literal(right)  # ``== -1``
        if value is UNKNOWN or isinstance(value, (list, dict, set, tuple)):
            return None
        node, compare_to, op_eq = test.left, value, isinstance(test.ops[0], ast.Eq)
    name = dotted(node)
    if name is None or _about_distribution(name):
        return None
    if "." not in name:  # a bare name is configuration only when the module sets it (nanoGPT)
        if f"={name}" not in defaults:
            # or a local bound once to a test of one (LightLM ``use_compile = self.config.use_compile
            # and self.device.type == "cuda"``, then ``if use_compile:``)
            local = _local_flag(ctx, node, name, defaults) if compare_to is UNKNOWN else None
            if local is None:
                return None
            return _negation(local) if negate else local
        option, default = name, defaults[f"={name}"]
    else:
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
    test_of = FlagTest(name, option, holds, compare_to, op_eq)
    return _negation(test_of) if negate else test_of


def _negation(test: FlagTest) -> FlagTest:
    """``not <test>``: holds under the default when the test does not; a comparison flips its
    operator, a truth test its reading (``not args.compile``: the branch runs with ``--compile`` off)."""
    holds = None if test.default_true is None else not test.default_true
    if test.value is not UNKNOWN:
        return FlagTest(test.flag, test.option, holds, test.value, not test.equal, test.negated)
    return FlagTest(test.flag, test.option, holds, test.value, test.equal, not test.negated)


def describe(test: FlagTest, bug_when_true: bool) -> str:
    """Human text for the flag value that triggers a bug, e.g. ``--sync-bn off (the default)``,
    ``--precision == 'fp16' (the default)``."""
    default = (
        "" if test.default_true is None else " (the default)" if test.default_true == bug_when_true else ""
    )
    if test.value is not UNKNOWN:  # ``args.precision == "fp16"``: name the value, not on/off
        op = "==" if test.equal == bug_when_true else "!="
        return f"{test.option} {op} {test.value!r}{default}"
    value = "on" if bug_when_true != test.negated else "off"
    return f"{test.option} {value}{default}"


def gate_of(ctx: FileContext, node: ast.AST, defaults: dict[str, object] | None = None) -> str | None:
    """The config flag under which ``node`` runs, from the innermost enclosing ``if`` on a flag in
    its function; None when no enclosing ``if`` tests a configuration flag."""
    defaults = all_defaults(ctx) if defaults is None else defaults
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(
        cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module, ast.Lambda)
    ):
        if isinstance(cur, (ast.If, ast.IfExp)) and child is not cur.test:
            test = flag_test(ctx, cur.test, defaults)
            if test is not None:
                return describe(test, child in cur.body if isinstance(cur, ast.If) else child is cur.body)
        if isinstance(cur, ast.Dict) and child in cur.values:
            chosen = _chosen_by(ctx, cur, child, defaults)
            if chosen is not None:
                return chosen
        child, cur = cur, ctx.parents.get(cur)
    return None


def _chosen_by(ctx: FileContext, table: ast.Dict, value: ast.AST, defaults: dict[str, object]) -> str | None:
    """``{"bf16": a, "fp16": b}[args.mixed_precision]``: ``b`` is what runs when the flag is "fp16"
    (``--mixed-precision == 'fp16'``); None when the table is not indexed by a configuration flag."""
    parent = ctx.parents.get(table)
    if not isinstance(parent, ast.Subscript) or parent.value is not table:
        return None
    key = table.keys[table.values.index(value)]  # type: ignore[arg-type]
    if not isinstance(key, ast.Constant):
        return None
    test = flag_test(ctx, parent.slice, defaults)
    if test is None or test.value is not UNKNOWN:
        return None
    name = test.flag
    default = defaults.get(f"={name}" if "." not in name else name.split(".")[-1], UNKNOWN)
    holds = None if default is UNKNOWN else default == key.value
    return describe(FlagTest(test.flag, test.option, holds, key.value, True), True)


def _local_flag(ctx: FileContext, node: ast.AST, name: str, defaults: dict[str, object]) -> FlagTest | None:
    """The flag test a local name holds: its one binding in the function is a test of a configuration
    flag (conjuncts about devices and versions aside)."""
    scope = ctx.enclosing_function(node)
    if isinstance(scope, ast.Module):
        return None
    binds = ctx.bindings(scope).get(name, [])
    if len(binds) != 1 or not isinstance(bound := binds[0], ast.Assign) or len(bound.targets) != 1:
        return None
    if not isinstance(bound.targets[0], ast.Name) or isinstance(bound.value, ast.Name):
        return None
    return flag_test(ctx, bound.value, defaults)


def _about_distribution(name: str) -> bool:
    words = ("rank", "world", "distributed", "cuda", "gpu", "device", "ddp")
    last = name.split(".")[-1].lower()
    # ``self.device.type == "cuda"``: about the device, whatever its last attribute is called
    return any(w in last for w in words) or any(p.lower() in ("device", "cuda") for p in name.split(".")[:-1])


def value_test(test: ast.AST | None) -> tuple[str, frozenset[str]] | None:
    """``opt == "v"`` / ``opt in ("v", "w")`` (``opt`` a dotted name): (opt, values): the
    values of an option a test picks (a scaler built for them, a cast made under them)."""
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.In))
    ):
        return None
    name = dotted(test.left)
    right = test.comparators[0]
    values = [right] if isinstance(test.ops[0], ast.Eq) else getattr(right, "elts", [])
    literals = {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    if name is None or not literals or len(literals) != len(values):
        return None
    return name, frozenset(literals)
