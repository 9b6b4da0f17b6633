"""Facts of one def read from its own tree, no index needed: what it returns, which parameters it
trains on or iterates over epochs, whether it wraps a parameter in DDP, returns ``torch.compile``
of one or ``torch.float16``, reads a rank and a world size; whether a class's update reduces.
The project index (project_scan.py) records them in each :class:`~ddp_doctor.lint.project_summary.Summary`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from ddp_doctor.lint.context import FileContext, dotted, method, walk_local
from ddp_doctor.lint.flags import value_test
from ddp_doctor.lint.loops import backward_of
from ddp_doctor.lint.provenance import is_update_method
from ddp_doctor.lint.reductions import is_reduce

FP16_NAMES = frozenset({"torch.float16", "torch.half"})  # generated giants are not summarised


def returned_exprs(body: list[ast.AST]) -> tuple[set[int], set[str]]:
    """Ids of the returned expressions and the dotted names returned (``return model``,
    ``return model, optimizer``, ``return a if c else b``, ``return get_model()()``)."""
    returned: set[int] = set()
    returned_names: set[str] = set()
    for n in body:
        if isinstance(n, ast.Return) and n.value is not None:
            parts = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) else [n.value]
            for part in parts:
                returned.add(id(part))
                inner = part
                while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Call):
                    inner = inner.func  # ``return get_model()()``: what the factory returned
                    returned.add(id(inner))
                if isinstance(part, ast.IfExp):
                    returned |= {id(part.body), id(part.orelse)}
                if (d := dotted(part)) is not None:
                    returned_names.add(d)
    return returned, returned_names


_RANK_WORD = re.compile(r"rank|process_index", re.IGNORECASE)


_WORLD_WORD = re.compile(r"world|num_replicas|num_processes", re.IGNORECASE)


def body_reads_rank_and_world(body: list[ast.AST]) -> bool:
    """The nodes read a rank and a world size (names, attributes, calls such as ``get_rank()``)."""
    words = {
        n.id if isinstance(n, ast.Name) else n.attr for n in body if isinstance(n, (ast.Name, ast.Attribute))
    }
    return any(_RANK_WORD.search(w) for w in words) and any(_WORLD_WORD.search(w) for w in words)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[str]:
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return names[1:] if skip_self and names else names


# Calls that wrap an iterable and yield its items (a progress bar, a counter, a prefetcher).
LOADER_WRAPPERS = re.compile(r"^(tqdm|enumerate|iter|zip|cycle|islice|chain|\w*[Pp]refetcher|prefetch\w*)$")


def kept_parameters(cls: ast.ClassDef) -> tuple[list[str], dict[str, str]]:
    """The parameters of a class's ``__init__`` (``self`` not counted) and the ones it keeps on
    ``self`` as they are (``self.train_loader = train_loader``): ``self.attr`` -> parameter."""
    init = next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is None:
        return [], {}
    params = _params(init, skip_self=True)
    held: dict[str, str] = {}
    for n in ast.walk(init):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params:
            held.update((d, n.value.id) for t in n.targets if (d := dotted(t)) and d.startswith("self."))
    return params, held


def _backprop_defs(defs: Iterable[ast.AST]) -> set[str]:
    """The names of the defs among ``defs`` whose bodies run a backward."""
    return {
        f.name
        for f in defs
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(backward_of(x) for x in ast.walk(f))
    }


def _top_level_backprop_defs(ctx: FileContext) -> set[str]:
    """The file's top-level defs that run a backward, read once per file (``ctx.memo``): every
    function of the file asks, so reading them per function was quadratic in the file's defs."""
    key: tuple[object, ...] = (_top_level_backprop_defs,)
    if key not in ctx.memo:
        ctx.memo[key] = _backprop_defs(ctx.tree.body)
    found: set[str] = ctx.memo[key]
    return found


def _callee_name(node: ast.AST) -> str | None:
    """The name a call calls: ``f`` of ``f(x)``, ``step`` of ``self.step(x)``."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def trained_params_of(ctx: FileContext, node: ast.AST) -> set[str | int]:
    """Which parameters of a function (or of a class's ``__init__``) feed a training loop."""
    if isinstance(node, ast.ClassDef):
        params, held = kept_parameters(node)
        region: ast.AST = node
        watched = held
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = _params(node, skip_self=False)
        region, watched = node, {p: p for p in params}
    else:
        return set()
    if not watched:
        return set()
    # the defs that backprop, of the region or (for a function) of its file: GFNet's step loop calls
    # the module's ``train_step``, which runs ``backward``
    own_backward_fns = _backprop_defs(ast.walk(region))
    file_backward_fns = set() if isinstance(region, ast.ClassDef) else _top_level_backprop_defs(ctx)
    # a local wrapping a watched loader (CycleGAN ``train_t = tqdm(enumerate(train_dataloader))``
    # then ``for i, batch in train_t:``) draws from it
    wraps = dict(watched)
    for n in ast.walk(region):
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
            and LOADER_WRAPPERS.match((dotted(n.value.func) or "").rsplit(".", 1)[-1])
        ):
            source = next(
                (watched[d] for a in n.value.args for x in ast.walk(a) if (d := dotted(x)) in watched), None
            )
            if source is not None:
                wraps.setdefault(n.targets[0].id, source)
    out: set[str | int] = set()
    for loop in ast.walk(region):
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        body = [x for stmt in loop.body for x in ast.walk(stmt)]
        # ``for b in p``; or a step loop drawing ``next(p)`` from the iterator it was handed (GFNet's
        # ``train_k_steps_cosine(n, k, iter(DataLoader(...)), ...)``: ``batch = next(dataloader)``)
        # (the ``next`` draws first: ``for n in tqdm(range(n_0, n_0 + k))`` counts steps, it draws nothing)
        drawn: list[ast.AST] = [
            x.args[0]
            for x in body
            if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "next" and x.args
        ]
        drawn += [*ast.walk(loop.iter)] if isinstance(loop, (ast.For, ast.AsyncFor)) else []
        source = next((wraps[d] for x in drawn if (d := dotted(x)) in wraps), None)
        if source is None:
            continue
        if any(backward_of(x) for x in body) or any(
            (name := _callee_name(x)) is not None and (name in own_backward_fns or name in file_backward_fns)
            for x in body
        ):
            out |= {source, params.index(source)}
    return out


def epoch_params_of(
    ctx: FileContext,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    is_method: bool,
    unread: frozenset[int] = frozenset(),
) -> set[str | int]:
    """Parameters ``fn`` iterates (``for b in p``, ``enumerate(p)``, ``iter(p)``, ``p.__iter__()``) inside a loop
    nested in another loop of its own, or passes to a call inside a loop of its own (not in the
    header of that loop: pysot's single ``for idx, data in enumerate(train_loader)`` derives the
    epoch from ``idx`` and iterates the loader once). ``unread``: ids of calls left out as if not
    written (a ``set_epoch`` that may never run: ``_reorders``)."""
    params = _params(fn, skip_self=is_method)
    if not params:
        return set()
    out: set[str | int] = set()
    for loop in walk_local(fn):
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        # a for-loop's own header runs once: ``for i, b in enumerate(p)`` alone is one pass over ``p``
        header = set(map(id, ast.walk(loop.iter))) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
        for node in walk_local(loop):
            if node is loop or id(node) in header:
                continue
            used: list[ast.expr] = []
            if isinstance(node, (ast.For, ast.AsyncFor)):  # ``for b in p``, ``for i, b in enumerate(p)``
                used = [x for x in ast.walk(node.iter) if isinstance(x, ast.Name)]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__iter__"
            ):
                used = [
                    node.func.value
                ]  # PepFlow's ``inf_iterator``: ``iterator = iterable.__iter__()`` again
            elif isinstance(node, ast.Call) and (dotted(node.func) or "") not in _NOT_ITERATING:
                used = [*node.args, *(k.value for k in node.keywords)]  # the loader itself, handed on
            for x in used:
                if isinstance(x, ast.Name) and x.id in params:
                    out |= {x.id, params.index(x.id)}
    # a loader whose dataset or sampler the def tells each pass (``loader.dataset.shuffle(epoch)``)
    reordered = {p for p in params if p in out and _reorders(fn, p, unread)}
    return {x for x in out if (x if isinstance(x, str) else params[x]) not in reordered}


def class_epoch_params_of(cls: ast.ClassDef, unread: frozenset[int] = frozenset()) -> set[str | int]:
    """Parameters of a class's ``__init__`` that it keeps on ``self`` (``self.train_loader =
    train_loader``) and that its methods iterate again on every pass of an outer loop: inside a loop
    nested in another loop of one method, or in a method another method calls from inside a loop
    (``fit``: ``for epoch in range(n): self.train_epoch(epoch)``). Indices skip ``self``."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    params, held = kept_parameters(cls)
    # the loader's dataset or sampler told each pass (Grad-W ``self.train_dataloader.dataset.shuffle(epoch)``):
    # its order is the class's to manage
    held = {d: p for d, p in held.items() if not any(_reorders(m, d, unread) for m in methods.values())}
    if not held:
        return set()
    looped_methods = {  # methods some other method calls from inside a loop of its own
        d.split(".", 1)[1]
        for m in methods.values()
        for loop in walk_local(m)
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        for c in walk_local(loop)
        if isinstance(c, ast.Call)
        and (d := dotted(c.func)) is not None
        and d.startswith("self.")
        and d.count(".") == 1
    }
    out: set[str | int] = set()
    for name, m in methods.items():
        nested: set[int] | None = None  # ids of the nodes inside some loop of ``m`` (computed once)
        for loop in walk_local(m):
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            drawn = {d for x in ast.walk(loop.iter) if (d := dotted(x)) in held}
            if not drawn:
                continue
            if nested is None:
                nested = _inside_loops(m)
            if id(loop) in nested or name in looped_methods:
                for d in drawn:
                    out |= {held[d], params.index(held[d])}
        for d in _iterators_remade_per_pass(m, held, name in looped_methods):
            out |= {held[d], params.index(held[d])}
    return out


def _inside_loops(m: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """The ids of the nodes inside some ``for``/``while`` loop of ``m`` (its own, not nested defs')."""
    return {
        id(x)
        for a in walk_local(m)
        if isinstance(a, (ast.For, ast.AsyncFor, ast.While))
        for x in walk_local(a)
        if x is not a
    }


def _iterators_remade_per_pass(
    m: ast.FunctionDef | ast.AsyncFunctionDef, held: dict[str, str], looped: bool
) -> set[str]:
    """The kept loaders (``self.train_loader``) whose iterator ``m`` makes again (``iter(self.x)``)
    inside a loop of its own, or anywhere when another method calls ``m`` from inside a loop: a step
    loop that restarts the loader when it runs out (MGMatting's ``for step in range(total): try:
    next(data_iter) except: data_iter = iter(self.train_dataloader)``) draws it pass after pass."""
    inside = _inside_loops(m)
    return {
        d
        for c in walk_local(m)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Name)
        and c.func.id == "iter"
        and len(c.args) == 1
        and (d := dotted(c.args[0])) in held
        and (looped or id(c) in inside)
    }


def _reorders(fn: ast.AST, loader: str, unread: frozenset[int] = frozenset()) -> bool:
    """``fn`` calls a method of ``loader``'s dataset or sampler with an argument
    (``loader.dataset.shuffle(epoch)``, ``loader.batch_sampler.set_epoch(epoch)``), not one of the
    calls ``unread`` holds the ids of."""
    owners = {f"{loader}.dataset", f"{loader}.sampler", f"{loader}.batch_sampler"}
    return any(
        isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and dotted(c.func.value) in owners
        and (c.args or c.keywords)
        and id(c) not in unread
        for c in walk_local(fn)
    )


# Calls that read a loader without iterating it (``len(train_loader)`` in a progress message)
_NOT_ITERATING = frozenset({"len", "print", "isinstance", "str", "repr", "type", "id", "getattr", "hasattr"})


def assign_targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def compiled_param_of(ctx: FileContext, fn: ast.AST, method: bool) -> tuple[int, int | None] | None:
    """``(model parameter, flag parameter)`` for a function that returns ``torch.compile(p, ...)`` of
    its parameter ``p`` (also as a branch of ``a if c else p``); the flag is the other parameter its
    conditions test (VAR ``if fast == 0: return m``), None when none does. Indices skip ``self``."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if method and params:
        params = params[1:]
    model: int | None = None
    for r in ctx.local(fn):
        if not isinstance(r, ast.Return) or r.value is None:
            continue
        for part in (r.value.body, r.value.orelse) if isinstance(r.value, ast.IfExp) else (r.value,):
            if (
                isinstance(part, ast.Call)
                and ctx.call_qualname(part) == "torch.compile"
                and part.args
                and isinstance(part.args[0], ast.Name)
                and part.args[0].id in params
            ):
                model = params.index(part.args[0].id)
    if model is None:
        return None
    tests = [n.test for n in ctx.local(fn) if isinstance(n, (ast.If, ast.IfExp))]
    flags = {
        params.index(x.id)
        for t in tests
        for x in ast.walk(t)
        if isinstance(x, ast.Name) and x.id in params and params.index(x.id) != model
    }
    return model, (flags.pop() if len(flags) == 1 else None)


def is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def forwards_kwargs(fn: ast.AST, wrap: ast.Call) -> bool:
    """``wrap`` (a DDP/FSDP call in ``fn``) unpacks ``fn``'s own ``**kwargs``: a caller's keyword
    reaches the wrap (semseg_benchmark's ``convert_model(model, **kwargs)`` building
    ``DistributedDataParallel(model, device_ids=[rank], **kwargs)``)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.args.kwarg is None:
        return False
    name = fn.args.kwarg.arg
    return any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == name for k in wrap.keywords)


def wraps_parameter(ctx: FileContext, fn: ast.AST, wrap: ast.Call) -> bool:
    """The value ``wrap`` (a DDP/FSDP call in ``fn``) wraps is ``fn``'s parameter or ``self.x``, possibly
    moved or converted on the way (``model = model.cuda()``, ``m = convert_sync_batchnorm(m)``);
    False when it is a model ``fn`` built (``model = ResNet(...)``)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    a = fn.args
    params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)} - {"self", "cls"}
    target = wrap.args[0] if wrap.args else next((k.value for k in wrap.keywords if k.arg == "module"), None)
    binds = ctx.bindings(fn)
    line = wrap.lineno
    for _ in range(8):
        if target is None:
            return True
        if isinstance(target, ast.Attribute):
            return True  # ``self.model``: set elsewhere, may be the caller's
        if isinstance(target, ast.Call):  # DDP(model.to(device)), DDP(convert(model))
            target = (
                target.func.value
                if isinstance(target.func, ast.Attribute)
                else (target.args[0] if target.args else None)
            )
            continue
        if not isinstance(target, ast.Name):
            return True
        before = [b for b in binds.get(target.id, []) if b.lineno < line]
        if not before:
            return target.id in params
        last = before[-1]
        if not isinstance(last, ast.Assign):
            return True
        line = last.lineno
        value = last.value
        if isinstance(value, ast.Call):
            inner = value.func.value if isinstance(value.func, ast.Attribute) else None
            first = value.args[0] if value.args else None
            if isinstance(inner, ast.Name) and inner.id == target.id:
                target = inner  # model = model.cuda()
                continue
            if isinstance(first, ast.Name) and first.id == target.id:
                target = first  # model = convert(model)
                continue
            return False  # built here: model = ResNet(...)
        target = value
    return True


def scaled_backward(backward: ast.Call) -> bool:
    """``x.scale(loss).backward()``: the receiver of the backward is a scaler's ``scale`` call."""
    receiver = backward.func.value if isinstance(backward.func, ast.Attribute) else None
    return isinstance(receiver, ast.Call) and (method(receiver) or (None, ""))[1] == "scale"


def fp16_return(ctx: FileContext, fn: ast.AST) -> str | None:
    """The condition under which ``fn`` returns ``torch.float16``/``torch.half`` (the test of the
    innermost ``if`` around that return; "" when none), or None when it never does."""
    for node in ctx.local(fn):
        if isinstance(node, ast.Return) and node.value is not None and ctx.qualname(node.value) in FP16_NAMES:
            child: ast.AST = node
            cur = ctx.parents.get(node)
            while cur is not None and cur is not fn:
                if isinstance(cur, ast.If):
                    test = ctx.segment(cur.test)
                    return test if child in cur.body else f"not ({test})"
                child, cur = cur, ctx.parents.get(cur)
            return ""
    return None


def fp16_cast_param(
    ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, method_: bool
) -> int | None:
    """The position (``self`` not counted) of the parameter whose weights ``fn`` casts to float16:
    ``m.half()``, ``m.to(torch.float16)``, or ``m.apply(f)`` with ``f`` a def of this file whose body
    casts what it is handed (OpenAI CLIP's ``convert_weights(model)``: ``l.weight.data =
    l.weight.data.half()`` on every Linear/Conv through ``model.apply``). None when it casts none."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if method_ and params:
        params = params[1:]
    for node in ctx.local(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        base = dotted(node.func.value)
        if base not in params:
            continue
        if _fp16_cast(ctx, node):
            return params.index(base)
        if node.func.attr == "apply" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
            name = node.args[0].id
            defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
                d for d in ctx.local(fn) if isinstance(d, ast.FunctionDef) and d.name == name
            ]
            defs = defs or ctx.functions.get(name, [])
            if len(defs) == 1 and _casts_fp16(ctx, defs[0]):
                return params.index(base)
    return None


def fp16_cast_returns(
    ctx: FileContext,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    method_: bool,
    target_of: Callable[[ast.AST], str | None],
) -> tuple[tuple[str | None, str, int, frozenset[str]], ...]:
    """Casts to float16 of a model ``fn`` returns, each only under ``if <parameter> == "v":`` (CLAP's
    ``create_model(..., precision=...)``: ``if precision == "fp16": convert_weights_to_fp16(model)``
    then ``return model``): ``(helper, parameter, its position, values)``, the helper being the
    project qualname of the function handed the model (None: ``model.half()`` itself). The helper's
    own cast (``fp16_cast_param``) is checked where the summaries are complete."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if method_ and params:
        params = params[1:]
    _, returned = returned_exprs(list(ctx.local(fn)))
    out: list[tuple[str | None, str, int, frozenset[str]]] = []
    for node in ctx.local(fn):
        if not isinstance(node, ast.Call):
            continue
        helper: str | None = None
        if _fp16_cast(ctx, node):
            model = dotted(node.func.value) if isinstance(node.func, ast.Attribute) else None
        elif node.args:
            model = dotted(node.args[0])
            helper = target_of(node.func)
            if helper is None:
                continue
        else:
            continue
        if model not in returned:
            continue
        guard = _parameter_value_guard(ctx, node, fn, params)
        if guard is not None:
            out.append((helper, guard[0], params.index(guard[0]), guard[1]))
    return tuple(out)


def _parameter_value_guard(
    ctx: FileContext, node: ast.AST, fn: ast.AST, params: list[str]
) -> tuple[str, frozenset[str]] | None:
    """The innermost enclosing ``if p == "v":`` / ``if p in ("v", ...):`` on a parameter ``p``."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and child in cur.body:
            found = value_test(cur.test)
            if found is not None and found[0] in params:  # a parameter: a plain name, no dots
                return found
        child, cur = cur, ctx.parents.get(cur)
    return None


def _fp16_cast(ctx: FileContext, call: ast.Call) -> bool:
    """``x.half()`` / ``x.to(torch.float16)``: a tensor or module cast to float16."""
    if not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr == "half":
        return not call.args
    return call.func.attr == "to" and any(
        ctx.qualname(a) in FP16_NAMES for a in [*call.args, *(k.value for k in call.keywords)]
    )


def _casts_fp16(ctx: FileContext, fn: ast.AST) -> bool:
    """``fn``'s body casts a tensor or module to float16 (``.half()``, ``.to(torch.float16)``)."""
    return any(isinstance(n, ast.Call) and _fp16_cast(ctx, n) for n in ast.walk(fn))


def class_syncs_updates(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """The class's update method (``update``, ``add``, ...) reduces across ranks, directly or through
    another method of the class (``self._sync(val)`` → ``sync_tensor(val, reduce="sum")``)."""
    methods = {b.name: b for b in cls.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def reduces(fn: ast.AST, depth: int) -> bool:
        for n in ctx.local(fn):
            if not isinstance(n, ast.Call):
                continue
            name = dotted(n.func) or ""
            if is_reduce(name):
                return True
            m = method(n)
            if depth and m and m[0] == "self" and m[1] in methods and reduces(methods[m[1]], depth - 1):
                return True
        return False

    return any(reduces(fn, 1) for name, fn in methods.items() if is_update_method(name))
