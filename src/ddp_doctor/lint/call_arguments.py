"""Which arguments the project's calls pass to a function (project mode, fact ``call_arguments``).

A count that is a parameter with a default of 1 (MetaICL ``def do_train(self, ...,
gradient_accumulation_steps=1)``) makes a loop an accumulation loop only when some caller passes
another value. ``record`` keeps, for every call in a file, the positions and keyword names it
passes, keyed by the callee's project qualname and, for ``obj.name(...)``, by ``.name`` (any class's
method of that name: a caller of another class's ``do_train`` that passes the count counts too).
``*args``/``**kwargs`` and a callee handed on as a value (``partial(f, ...)``, ``Engine(step)``)
record ``*``: anything may be passed. ``never_passed`` answers for one parameter once every file
is recorded: True only when at least one call was seen and none can have passed it. Constructions
are keyed by the class's qualname: a flag ``__init__`` stores on ``self`` from a parameter with a false
default (kpgt's ``self.ddp = ddp``) stays false where no construction passes it, no subclass exists
and nothing sets the attribute from outside (``.ddp=``, recorded too). A call whose value is
used (anything but a bare expression statement) records ``->`` too: ``result_discarded`` answers
whether every call seen throws the function's result away (pretrain-300M's
``manager.init_training(model, optimizer)``, whose returned DDP wrap nothing keeps).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from ddp_doctor.lint.context import FileContext, conjuncts, dotted, init_of, param_defaults, positional_params

ANY = "*"
USED = "->"  # some call keeps the callee's result (not a bare expression statement)
Passed = dict[str, set[int | str]]


def record(ctx: FileContext, target: Callable[[ast.AST], str | None], into: Passed) -> None:
    """Add this file's calls (and callees handed on as values) to ``into``; and, under ``.name=``, the
    attributes it sets on objects other than ``self`` (``trainer.ddp = True``: a flag a constructor
    default left false may be turned on from outside the class)."""
    set_targets: list[ast.expr] = [t for a in ctx.of_type(ast.Assign) for t in a.targets]
    set_targets += [a.target for a in ctx.of_type(ast.AugAssign)]
    set_targets += [a.target for a in ctx.of_type(ast.AnnAssign)]
    for t in set_targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name) and n.value.id == "self"):
                into.setdefault(f".{n.attr}=", set()).add(ANY)
    for call in ctx.calls_named("setattr"):  # ``setattr(trainer, "ddp", True)``; a computed name: any
        name = call.args[1] if len(call.args) > 1 else None
        spelled = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else "*"
        into.setdefault(f".{spelled}=", set()).add(ANY)
    for call in ctx.of_type(ast.Call):
        passed: set[int | str] = set(range(len(call.args)))
        passed |= {k.arg for k in call.keywords if k.arg is not None}
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            passed.add(ANY)
        if not isinstance(ctx.parents.get(call), ast.Expr):
            passed.add(USED)
        for key in _keys(call.func, target):
            into.setdefault(key, set()).update(passed)
        for value in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(value, (ast.Name, ast.Attribute)):  # ``partial(f, accum=4)``, a callback
                for key in _keys(value, target):
                    into.setdefault(key, set()).add(ANY)


def _keys(func: ast.AST, target: Callable[[ast.AST], str | None]) -> list[str]:
    keys = [f".{func.attr}"] if isinstance(func, ast.Attribute) else []
    resolved = target(func)
    return [*keys, resolved] if resolved else keys


def never_passed(
    passed: Passed, fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, in_class: bool, name: str
) -> bool:
    """Calls of ``fn`` were seen and none passes its parameter ``name`` (by keyword or position)."""
    params = positional_params(fn, bound=in_class)
    keys = [f".{fn.name}"] if in_class else [f"{module}.{fn.name}", f".{fn.name}"]
    seen = [passed[k] for k in keys if k in passed]
    if not seen:
        return False
    given = set().union(*seen)
    if ANY in given or name in given:
        return False
    return name not in params or params.index(name) not in given


def result_discarded(
    passed: Passed, fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, in_class: bool
) -> bool:
    """Calls of ``fn`` were seen, each a bare expression statement (``obj.setup(model)``), and
    ``fn`` is never handed on as a value: what it returns reaches no caller."""
    keys = [f".{fn.name}"] if in_class else [f"{module}.{fn.name}", f".{fn.name}"]
    seen = [passed[k] for k in keys if k in passed]
    if not seen:
        return False
    given = set().union(*seen)
    return ANY not in given and USED not in given


def never_constructed_with(
    passed: Passed, init: ast.FunctionDef | ast.AsyncFunctionDef, cls: str, name: str
) -> bool:
    """Constructions of the class ``cls`` (its qualname) were seen and none passes ``name``, a
    parameter of its ``__init__`` (by keyword or position)."""
    if cls not in passed:
        return False  # (a call ``x.Trainer(...)`` alone may build another module's class)
    short = "." + cls.rsplit(".", 1)[-1]  # constructions the scan could not resolve, by class name
    given = set().union(*(passed[k] for k in (cls, short) if k in passed))
    if ANY in given or name in given:
        return False
    params = positional_params(init, bound=True)
    return name not in params or params.index(name) not in given


ConstructorFlag = tuple[ast.ClassDef, ast.FunctionDef | ast.AsyncFunctionDef, str, str]


def constructor_flag(ctx: FileContext, test: ast.expr) -> ConstructorFlag | None:
    """``self.ddp`` read in a method of a top-level class whose only binding of that attribute is
    ``self.ddp = ddp`` at the top of its ``__init__``, ``ddp`` a parameter there with a constant
    default that ``__init__`` never rebinds (kpgt's ``Trainer(..., ddp=False, ...)``): the attribute
    holds what the constructions pass, or that default. ``(class, __init__, parameter, attribute)``;
    None for anything else (also a class that sets attributes by ``setattr``/``__dict__``)."""
    if not (isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self"):
        return None
    fn = ctx.enclosing_function(test)
    cls = ctx.parents.get(fn) if fn is not None else None
    if not isinstance(cls, ast.ClassDef) or not isinstance(ctx.parents.get(cls), ast.Module):
        return None
    init = init_of(cls)
    if init is None:
        return None
    sets: list[ast.stmt] = []
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "cls")
        ):
            return None  # attributes set by name; instances built by the class itself (unseen arguments)
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return None
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        if any(
            isinstance(t, ast.Attribute) and dotted(t) == f"self.{test.attr}"
            for tg in targets
            for t in ast.walk(tg)
        ):
            sets.append(node)  # type: ignore[arg-type]  # an Assign/AugAssign/AnnAssign
    if len(sets) != 1 or not isinstance(only := sets[0], ast.Assign) or only not in init.body:
        return None
    param = only.value
    if len(only.targets) != 1 or not isinstance(param, ast.Name):
        return None
    default = param_defaults(init).get(param.id)
    if not isinstance(default, ast.Constant) or ctx.bindings(init).get(param.id):
        return None
    return cls, init, param.id, test.attr


def constructor_guard(ctx: FileContext, node: ast.AST) -> ConstructorFlag | None:
    """The flag of ``if self.ddp:`` (also one operand of an ``and``) that ``node`` sits under in its
    function, when ``self.ddp`` is a constructor parameter stored once (``constructor_flag``) whose
    default is false: the block runs only where a construction passes it. None otherwise."""
    fn = ctx.enclosing_function(node)
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and child in cur.body:
            for t in conjuncts(cur.test):
                flag = constructor_flag(ctx, t)
                default = param_defaults(flag[1]).get(flag[2]) if flag is not None else None
                if flag is not None and isinstance(default, ast.Constant) and not default.value:
                    return flag
        child, cur = cur, ctx.parents.get(cur)
    return None


def dead_by_constructor_default(ctx: FileContext, node: ast.AST) -> str | None:
    """(project mode) ``node`` sits under ``if self.ddp:`` (``constructor_guard``), and the project
    constructs the class, never passes that parameter, never subclasses the class and sets that
    attribute on no object from outside: kpgt's ``Trainer.fit`` guards
    ``train_loader.sampler.set_epoch(epoch)`` with ``if self.ddp:``, and its script builds
    ``Trainer(...)`` without ``ddp=``. The block never runs; the attribute's spelling, or None."""
    project = ctx.project
    if project is None or ctx.module is None:
        return None
    flag = constructor_guard(ctx, node)
    if flag is None:
        return None
    cls, init, param, attr = flag
    return (
        f"self.{attr}"
        if project.never_constructed_with(f"{ctx.module}.{cls.name}", init, param, attr)
        else None
    )


def dead_unless_passed(ctx: FileContext, node: ast.AST) -> str | None:
    """(project mode) ``node`` sits under ``if writer is not None:`` (or ``if writer:``, also one
    operand of an ``and``) where ``writer`` is a parameter of the enclosing function that defaults to
    None, is never rebound there, and that no call of the project passes (UFDN-ReID's ``do_train(...,
    writer=None)``, called without it): the block never runs. The parameter's name, or None."""
    fn = ctx.enclosing_function(node)
    if ctx.project is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and child in cur.body:
            tests = (
                cur.test.values
                if isinstance(cur.test, ast.BoolOp) and isinstance(cur.test.op, ast.And)
                else [cur.test]
            )
            for t in tests:
                name = _tested_name(t)
                default = left_at_default(ctx, fn, name) if name else None
                if name is not None and isinstance(default, ast.Constant) and default.value is None:
                    return name
        child, cur = cur, ctx.parents.get(cur)
    return None


def fixed_by_defaults(ctx: FileContext, test: ast.expr) -> str | None:
    """(project mode) ``test`` reads nothing but parameters of its function that every run leaves at a
    constant default (``left_at_default``): ``if rank == 0:`` in pangu-pytorch's ``def train(...,
    rank=0)``, which the launch script calls without ``rank``. The test has the same value in every
    process, whatever that process's rank. The first such parameter's name, or None."""
    fn = ctx.enclosing_function(test)
    values = _defaults_read(ctx, fn, test)
    if values:
        return next(iter(values))
    # ``if self.master:`` where every instance keeps the constructor's default (lavse's ``Trainer(...,
    # master=True)``, built without ``master``): the same value in every process
    attr = test.attr if isinstance(test, ast.Attribute) and dotted(test.value) == "self" else None
    if attr is not None and isinstance(_attribute_default(ctx, fn, attr), ast.Constant):
        return f"self.{attr}"
    return None


def _attribute_default(ctx: FileContext, fn: ast.AST, attr: str) -> ast.expr | None:
    """(project mode) ``self.<attr>`` read in a method ``fn``: the constant default of the
    ``__init__`` parameter the class sets it from, when every instance holds that default: the
    file sets ``<obj>.<attr>`` once, in ``__init__``, to the bare parameter (never rebound there),
    and the project builds the class but no construction passes the parameter (``never_constructed_with``)."""
    project, cls = ctx.project, ctx.parents.get(fn)
    if project is None or ctx.module is None or not isinstance(cls, ast.ClassDef):
        return None
    init = init_of(cls)
    stores = [x for x in ctx.of_type(ast.Attribute) if x.attr == attr and isinstance(x.ctx, ast.Store)]
    store = ctx.parents.get(stores[0]) if len(stores) == 1 else None
    if (
        init is None
        or not isinstance(store, ast.Assign)
        or ctx.enclosing_function(store) is not init
        or len(store.targets) != 1
        or dotted(store.targets[0]) != f"self.{attr}"
        or not isinstance(store.value, ast.Name)
    ):
        return None
    param = store.value.id
    default = param_defaults(init).get(param)
    if default is None or ctx.bindings(init).get(param):
        return None
    return default if project.never_constructed_with(f"{ctx.module}.{cls.name}", init, param, attr) else None


def _defaults_read(ctx: FileContext, fn: ast.AST, test: ast.expr) -> dict[str, object] | None:
    """The constant default of each name ``test`` reads, in reading order, when it reads only names
    and each is a parameter of ``fn`` every run leaves at a constant default; None otherwise."""
    names = [n for n in ast.walk(test) if isinstance(n, ast.Name)]
    if not names or any(isinstance(n, (ast.Call, ast.Attribute, ast.Subscript)) for n in ast.walk(test)):
        return None
    values: dict[str, object] = {}
    for n in names:
        default = left_at_default(ctx, fn, n.id)
        if not isinstance(default, ast.Constant):
            return None
        values.setdefault(n.id, default.value)
    return values


def skipped_by_defaults(ctx: FileContext, node: ast.AST) -> bool:
    """(project mode) ``node`` sits in a branch of an ``if`` (of its function) whose test reads only
    parameters every run leaves at a constant default (``fixed_by_defaults``) and, with those
    defaults, picks the other branch: kl-nn's ``def load_model(..., GPUs=1)`` with ``if GPUs > 1:
    model = DDP(model)``, called without ``GPUs``. The branch never runs."""
    fn = ctx.enclosing_function(node)
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        values = (
            _defaults_read(ctx, fn, cur.test) if isinstance(cur, ast.If) and child is not cur.test else None
        )
        if isinstance(cur, ast.If) and values:
            held = _truth(cur.test, values)
            if held is not None and held is not (child in cur.body):
                return True
        child, cur = cur, ctx.parents.get(cur)
    return False


COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


def _truth(test: ast.expr, values: Mapping[str, object]) -> bool | None:
    """Whether ``test`` (names, constants, comparisons, ``not``/``and``/``or``) holds with ``values``
    for its names; None for anything else."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.Name):
        return bool(values[test.id]) if test.id in values else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, values)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [_truth(v, values) for v in test.values]
        if any(p is None for p in parts):
            return None
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in COMPARE:
        sides = [test.left, test.comparators[0]]
        known: list[object] = []
        for x in sides:
            if isinstance(x, ast.Constant):
                known.append(x.value)
            elif isinstance(x, ast.Name) and x.id in values:
                known.append(values[x.id])
            else:
                return None
        a, b = known
        try:
            return bool(COMPARE[type(test.ops[0])](a, b))
        except TypeError:  # ``None > 1``: not decided here
            return None
    return None


def left_at_default(ctx: FileContext, fn: ast.AST, name: str) -> ast.expr | None:
    """(project mode) The default of ``fn``'s parameter ``name`` when that is what every run of
    ``fn`` sees: never rebound in its body, and some call of ``fn`` is seen in the project but none
    passes it (``never_passed``). None otherwise (or in file mode)."""
    project = ctx.project
    if project is None or ctx.module is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    default = param_defaults(fn).get(name)
    if default is None or ctx.bindings(fn).get(name):
        return None
    in_class = isinstance(ctx.parents.get(fn), ast.ClassDef)
    return default if project.never_passed(fn, ctx.module, in_class, name) else None


def _tested_name(test: ast.expr) -> str | None:
    """``x`` of ``x is not None`` / ``x``."""
    if isinstance(test, ast.Name):
        return test.id
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.id
    return None
