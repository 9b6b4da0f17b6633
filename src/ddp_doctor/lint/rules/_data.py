"""Shared by the data-order rules: which names hold a DataLoader and which loops iterate it."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from ddp_doctor.lint.context import FileContext, dotted, holder, parameter_names, positional_params
from ddp_doctor.lint.loops import LOOPS, LoopFacts
from ddp_doctor.lint.samplers import DATALOADER

# A loader named for evaluation (``dl_valid``, ``val_loader``, ``test_dl``, ``dataloader_validate``
# with the verb, Sherpa3D): it trains no step, so
# neither the order it is drawn in (set-epoch-missing) nor which rank draws what (sampler-missing)
# changes the training, even when a shared ``epoch(model, train)`` pass runs backward on its other loader.
EVALUATION_LOADER = re.compile(
    r"(^|_)(val|valid|validate|validation|test|eval|evaluation|dev)(_|$|loader|dl)", re.IGNORECASE
)


def evaluation_loader(names: set[str]) -> bool:
    """Every name of the loader says it is for evaluation."""
    return bool(names) and all(EVALUATION_LOADER.search(_last_part(n)) for n in names)


def _last_part(name: str) -> str:
    """``val_loader`` of ``self.val_loader``; the key of a dict entry (``val`` of ``loaders['val']``)."""
    last = name.rsplit(".", 1)[-1]
    return last.rsplit("[", 1)[-1].strip("[]'\"") if last.endswith("]") else last


def bound_names(ctx: FileContext, value: ast.AST) -> set[str]:
    """Names that end up holding ``value``: ``x = value``, or ``x = f()`` where ``f`` returns it."""
    names: set[str] = set()
    # ``RandomSampler(ds) if args.local_rank == -1 else DistributedSampler(ds)``: the name holds it
    # whenever that branch runs
    value, parent = holder(ctx, value)
    if isinstance(parent, ast.DictComp) and value is parent.value:
        # ``loaders = {x: DataLoader(ds[x], ...) for x in ["train", "val"]}``: one entry per key
        assign = ctx.parents.get(parent)
        if isinstance(assign, ast.Assign) and isinstance(parent.key, ast.Name):
            keys = ctx.literal_keys(parent.key)
            names |= {f"{d}[{k!r}]" for t in assign.targets if (d := dotted(t)) for k in keys}
    elif isinstance(parent, ast.Dict) and isinstance(assign := ctx.parents.get(parent), ast.Assign):
        # ``loaders = {"train": DataLoader(...)}``: the entry holds it, read as ``loaders["train"]``
        entry = parent.keys[parent.values.index(value)] if value in parent.values else None
        if isinstance(entry, ast.Constant) and isinstance(entry.value, str) and entry.value.isidentifier():
            names |= {f"{d}[{entry.value!r}]" for t in assign.targets if (d := dotted(t))}
    elif isinstance(parent, ast.Tuple) and isinstance(ctx.parents.get(parent), ast.Assign):
        # ``train_sampler, shuffle = DistributedSampler(trainset), False`` (flowtron): the target in
        # the same position of a tuple of the same length holds it
        assign = ctx.parents.get(parent)
        assert isinstance(assign, ast.Assign)
        at = parent.elts.index(value) if value in parent.elts else -1
        for t in assign.targets:
            if (
                at >= 0
                and isinstance(t, ast.Tuple)
                and len(t.elts) == len(parent.elts)
                and (d := dotted(t.elts[at])) is not None
            ):
                names.add(d)
    elif isinstance(parent, ast.Assign) and parent.value is value:
        names |= {d for t in parent.targets if (d := dotted(t))}
    elif isinstance(parent, ast.Return):
        fn = ctx.enclosing_function(parent)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            flag = guarding_parameter(ctx, fn, parent)
            for node in ctx.of_type(ast.Assign):
                if isinstance(node.value, ast.Call) and ctx.helper(node.value) is fn:
                    if flag is not None and passes_off(fn, node.value, flag):
                        continue  # this call never reaches that ``return``
                    names |= {d for t in node.targets if (d := dotted(t))}
    return names


def guarding_parameter(
    ctx: FileContext,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    node: ast.AST,
    accept: Callable[[ast.Name], bool] | None = None,
) -> str | None:
    """The parameter ``p`` of ``fn`` named by the innermost ``if p:`` of ``fn`` whose body holds
    ``node`` (and whose test ``accept`` takes, when given): ``val_mode`` for the ``return`` of
    ``def create_loader(ds, val_mode=False): if val_mode: return DataLoader(ds, shuffle=False)``."""
    params = set(parameter_names(fn))
    child: ast.AST = node
    cur = ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if (
            isinstance(cur, ast.If)
            and child in cur.body
            and isinstance(cur.test, ast.Name)
            and cur.test.id in params
            and (accept is None or accept(cur.test))
        ):
            return cur.test.id
        child, cur = cur, ctx.parents.get(cur)
    return None


def passes_off(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, param: str) -> bool:
    """``call`` gives ``fn``'s parameter ``param`` a literal False/None/0, written or by default."""
    value = _passed(fn, call, param)
    return isinstance(value, ast.Constant) and value.value in (False, None, 0)


def _passed(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, param: str) -> ast.expr | None:
    """What ``call`` gives ``fn``'s parameter ``param``, written or by default (None when unknown:
    ``*args``/``**kwargs``, or no default)."""
    value: ast.expr | None = next((k.value for k in call.keywords if k.arg == param), None)
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    positional = positional_params(fn, bound=isinstance(call.func, ast.Attribute))
    if value is None and param in positional and positional.index(param) < len(call.args):
        value = call.args[positional.index(param)]
    if value is None:  # not passed: the default
        args = [*fn.args.posonlyargs, *fn.args.args]
        defaults = dict(
            zip([a.arg for a in args][len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True)
        )
        defaults |= {
            a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None
        }
        value = defaults.get(param)
    return value


def unreached_branch(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs only in the branch of an ``if``/``elif`` testing a parameter of its def against
    literals (``if type == "shakespeare":``, ``elif name in ("cifar", "svhn"):``), and every call of
    that def in the file gives the parameter another literal, written or by default: a builder
    dispatching on a dataset name whose calls all pick another branch (LLM_Train's
    ``load_dataset(local_rank, type="main_run")`` never builds the ``"shakespeare"`` branch's
    DistributedSampler). A def the file never calls, or a call passing anything else, may reach it."""
    fn = ctx.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    tested = _branch_literals(ctx, node, fn)
    if not tested:
        return False
    calls = [c for c in ctx.of_type(ast.Call) if ctx.helper(c) is fn]
    if not calls:
        return False
    rebound = set(ctx.bindings(fn))
    for param, values in tested.items():
        if param in rebound:
            continue  # ``type = type.lower()``: the tested value is not the one passed
        passed = [_passed(fn, c, param) for c in calls]
        if all(isinstance(v, ast.Constant) and v.value not in values for v in passed):
            return True
    return False


def _branch_literals(
    ctx: FileContext, node: ast.AST, fn: ast.FunctionDef | ast.AsyncFunctionDef
) -> dict[str, set[object]]:
    """``{parameter: the literals it equals}`` for each enclosing ``if p == "x":`` / ``if p in ("x",
    "y"):`` of ``fn`` whose body holds ``node``."""
    params = set(parameter_names(fn))
    out: dict[str, set[object]] = {}
    child: ast.AST = node
    cur = ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and child in cur.body:
            test = cur.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.left, ast.Name)
                and test.left.id in params
            ):
                right = test.comparators[0]
                if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant):
                    out.setdefault(test.left.id, set()).add(right.value)
                elif (
                    isinstance(test.ops[0], ast.In)
                    and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                    and all(isinstance(e, ast.Constant) for e in right.elts)
                ):
                    out.setdefault(test.left.id, set()).update(
                        e.value for e in right.elts if isinstance(e, ast.Constant)
                    )
        child, cur = cur, ctx.parents.get(cur)
    return out


def _aliases(ctx: FileContext, names: set[str]) -> set[str]:
    """Add names assigned from an expression over ``names`` (``it = iter(loader)``), one level."""
    out = set(names)
    for node in ctx.of_type(ast.Assign):
        if any(dotted(n) in names for n in ast.walk(node.value)):
            out |= {d for t in node.targets if (d := dotted(t))}
    return out


def loops_iterating(
    ctx: FileContext, names: set[str], follow_aliases: bool = True
) -> Iterator[ast.For | ast.AsyncFor | ast.While]:
    """Loops that draw batches from one of ``names``: ``for b in names``/``enumerate(...)``/``next(it)``.
    An alias (``pbar = tqdm(val_loader)``) counts only in the function that binds it: doctr's
    ``evaluate`` and ``fit_one_epoch`` both name their bar ``pbar``, and the validation loader's
    bar is not the one the training loop iterates."""
    if not names:
        return
    scoped = _scoped_aliases(ctx, names) if follow_aliases else {}

    def drawn(name: str | None, loop: ast.AST) -> bool:
        if name in names:
            return True
        scopes = scoped.get(name or "")
        return scopes is not None and (None in scopes or id(ctx.enclosing_function(loop)) in scopes)

    for loop in ctx.of_type(ast.For) + ctx.of_type(ast.AsyncFor) + ctx.of_type(ast.While):
        if (
            isinstance(loop, (ast.For, ast.AsyncFor))
            and any(drawn(d, loop) for n in ast.walk(loop.iter) for d in ctx.names_of(n))
            or any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "next"
                and n.args
                and drawn(dotted(n.args[0]), loop)
                for n in ctx.local(loop)
            )
        ):
            yield loop


def _scoped_aliases(ctx: FileContext, names: set[str]) -> dict[str, set[int | None]]:
    """Names assigned from an expression over ``names`` (``it = iter(loader)``), one level, with the
    functions (by id) whose local they are; ``None``: an attribute (``self.it``) or a module-level
    name, seen everywhere."""
    out: dict[str, set[int | None]] = {}
    for node in ctx.of_type(ast.Assign):
        if any(dotted(n) in names for n in ast.walk(node.value)):
            for t in node.targets:
                if (d := dotted(t)) is not None and d not in names:
                    scope = ctx.enclosing_function(node)
                    # a module-level alias (``train_iter = iter(loader)``) is read by every function
                    local = isinstance(t, ast.Name) and not isinstance(scope, ast.Module)
                    where = id(scope) if local else None
                    out.setdefault(d, set()).add(where)
    return out


def trains_on(facts: LoopFacts, names: set[str], source: ast.AST | None = None) -> bool:
    """Some loop that backprops iterates one of ``names`` (in project mode: or the names are handed
    to project code that trains on that argument, in another file). With ``source`` (the value the
    names were bound to), a loop that every one of the names reaches only after a rebinding is not
    drawing from it (``rebound_before``)."""
    if any(
        facts.has_backward(loop.body)
        for loop in loops_iterating(facts.ctx, names)
        if source is None
        or not (
            _drawn_after_rebinding(facts.ctx, source, loop, names)
            or _own_binding(facts.ctx, source, loop, names)
        )
    ):
        return True
    project = facts.ctx.project
    if project is None or not names:
        return False
    handed = _aliases(facts.ctx, names)
    # a local name is handed on by calls of its own function (``inference()``'s ``train_loader`` is
    # not the one ``main()`` hands to ``train(...)``)
    fn = _locals_of(facts.ctx, source, names) if source is not None else None
    calls = (
        [c for c in facts.ctx.local(fn) if isinstance(c, ast.Call)]
        if fn is not None
        else facts.ctx.of_type(ast.Call)
    )
    return any(
        project.trains_on_argument(facts.ctx, c, handed)
        and (source is None or not rebound_before(facts.ctx, source, c, names))
        for c in calls
    )


def _locals_of(
    ctx: FileContext, source: ast.AST, names: set[str]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function ``source`` is bound in when every one of ``names`` is a local of it; None for
    module-level code, or names that the function does not bind (the callers of a builder that returns
    the loader bind their own)."""
    fn = ctx.enclosing_function(source)
    if isinstance(fn, ast.Module) or not all(n in ctx.bindings(fn) for n in names):
        return None
    return fn


def _own_binding(ctx: FileContext, source: ast.AST, loop: ast.AST, names: set[str]) -> bool:
    """The loop is in another function whose name for the loader is not the one ``source`` was bound
    to: it binds the name itself (an ``inference()`` with its own ``train_loader = DataLoader(...)``
    beside the ``main()`` that trains on another), or takes it as a parameter that no call of
    ``source``'s function hands the name to (``def train(model, train_loader)`` that ``inference()``
    never calls)."""
    fn = _locals_of(ctx, source, names)
    other = ctx.enclosing_function(loop)
    if fn is None or other is fn or isinstance(other, ast.Module):
        return False  # (None: module-level names, or bound by the callers of a builder returning it)
    params = set(parameter_names(other))
    # its own: every binding there builds it from what the function has, not from a parameter
    # (so-vits-svc's ``train_loader, eval_loader = loaders`` unpacks what the caller handed)
    own = {
        n
        for n, binds in ctx.bindings(other).items()
        if all(
            isinstance(b, ast.Assign)
            and not any(isinstance(x, ast.Name) and x.id in params for x in ast.walk(b.value))
            for b in binds
        )
    }
    handed = {
        dotted(a)
        for c in ctx.local(fn)
        if isinstance(c, ast.Call) and (dotted(c.func) or "").rsplit(".", 1)[-1] == other.name
        for a in [*c.args, *(k.value for k in c.keywords)]
    }
    return all(
        "." not in n and ((n in own and n not in params) or (n in params and n not in handed)) for n in names
    )


def _drawn_after_rebinding(
    ctx: FileContext, source: ast.AST, loop: ast.For | ast.AsyncFor | ast.While, names: set[str]
) -> bool:
    """The loop reaches the names only after a rebinding (``rebound_before``). A loop of another
    function (``def train(train_queue, ...)``) reaches them through the calls of ``source``'s function
    that hand one of them on: when every such call comes after a rebinding (DARTS binds a plain loader to
    ``train_queue``, rebinds it to the sampled one, and only then calls ``train(train_queue, ...)``), the
    loop never draws from ``source``."""
    fn = ctx.enclosing_function(source)
    if ctx.enclosing_function(loop) is fn:
        return rebound_before(ctx, source, loop, names)
    handing = [
        c
        for c in ctx.local(fn)
        if isinstance(c, ast.Call)
        and any(isinstance(a, ast.Name) and a.id in names for a in [*c.args, *(k.value for k in c.keywords)])
    ]
    return bool(handing) and all(rebound_before(ctx, source, c, names) for c in handing)


def rebound_before(
    ctx: FileContext, source: ast.AST, loop: ast.For | ast.AsyncFor | ast.While | ast.Call, names: set[str]
) -> bool:
    """Each of ``names`` (plain local names bound to ``source`` in ``loop``'s function) is assigned
    again after that binding and before ``loop`` (or the call that hands the names on), by a statement
    of a block that holds it: on
    every path to the loop the name holds the newer value (mri_dm binds ``data_loader`` to a
    preprocessing loader on local rank 0, deletes it, and rebinds ``data_loader`` to the sampled
    training loader before the epoch loop)."""
    fn = ctx.enclosing_function(source)
    if ctx.enclosing_function(loop) is not fn or not names or any("." in n for n in names):
        return False
    bound_at = ctx.parents.get(source)
    if not isinstance(bound_at, ast.Assign):
        return False
    blocks: list[list[ast.stmt]] = []  # the statement lists that hold the loop (or a block around it)
    child: ast.AST = loop
    while child is not fn:
        holder = ctx.parents.get(child)
        if holder is None:
            return False
        blocks += [
            b
            for field in ("body", "orelse", "finalbody", "handlers")
            if isinstance(b := getattr(holder, field, None), list) and child in b
        ]
        child = holder
    end = bound_at.end_lineno or bound_at.lineno
    for name in names:
        if not any(
            isinstance(n, ast.Assign)
            and n is not bound_at
            and end < n.lineno < loop.lineno
            and any(n in b for b in blocks)
            and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            and not _wraps_itself(ctx, n.value, name)
            for n in ctx.local(fn)
        ):
            return False
    return True


def _wraps_itself(ctx: FileContext, value: ast.expr, name: str) -> bool:
    """``train_loader = sample_data(train_loader)`` (also ``tqdm(train_loader)``, ``cycle(...)``): the
    new value is made from the loader itself, handed whole to a call that is not another DataLoader,
    so drawing from it draws the same loader's batches; it is not a rebinding to other data."""
    return (
        isinstance(value, ast.Call)
        and ctx.call_qualname(value) != DATALOADER
        and any(isinstance(a, ast.Name) and a.id == name for a in value.args)
    )


def loops_around(
    ctx: FileContext, node: ast.AST, *, through_lambdas: bool = True
) -> Iterator[ast.For | ast.AsyncFor | ast.While]:
    """The loops enclosing ``node`` in its own function, innermost first (a lambda's body is part of
    the function around it unless ``through_lambdas`` is off)."""
    stop: tuple[type[ast.AST], ...] = (ast.FunctionDef, ast.AsyncFunctionDef)
    if not through_lambdas:
        stop = (*stop, ast.Lambda)
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, stop):
        if isinstance(cur, LOOPS):
            yield cur
        cur = ctx.parents.get(cur)


def enclosing_loop(ctx: FileContext, node: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
    return next(loops_around(ctx, node), None)


def bound_here_only_to(ctx: FileContext, node: ast.AST, name: str, other: Callable[[ast.expr], bool]) -> bool:
    """The function around ``node`` binds the plain name ``name`` itself, and only by assignments of
    values ``other`` accepts: there ``name`` is that function's own local, whatever another function
    binds under the same name. Two helpers of one file that each build ``train_sampler =
    DistributedSampler(ds)`` and ``dataloader = DataLoader(ds, sampler=train_sampler)`` (greenlet/mllm's
    ``create_dataloader_iter`` and an unused ``create_dataloader``) hold two loaders, not one."""
    fn = ctx.enclosing_function(node)
    if isinstance(fn, ast.Module) or not name.isidentifier() or name in parameter_names(fn):
        return False
    binds = ctx.bindings(fn).get(name, [])
    return bool(binds) and all(
        isinstance(b, ast.Assign)
        and len(b.targets) == 1
        and isinstance(b.targets[0], ast.Name)
        and other(b.value)
        for b in binds
    )
