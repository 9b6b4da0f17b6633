"""Objects that log what they were built with.

The ImageNet example's ``ProgressMeter`` (copied into hundreds of repositories) is built from the
epoch's meters, ``progress = ProgressMeter(len(loader), [batch_time, losses, top1])``, keeps them
(``self.meters = meters``) and prints them in ``display``: ``entries += [str(m) for m in
self.meters]; print("\\t".join(entries))``. ``progress.display(i)`` logs the meters its constructor
was handed as surely as ``print(losses)`` would; the call names none of them.

``state_logged`` reads a method of such a class: which constructor parameters its log calls write
(through the attributes ``__init__`` keeps them in, and the locals built from those), and how it
logs them (``print``, a ``logging`` logger, another log call). ``state_log_call`` reads a call
``obj.m(...)``: when every binding of ``obj`` in the calling scope builds one class (of this file,
or in project mode of the project) whose method ``m`` logs kept constructor parameters, the
arguments those constructor calls handed for them. rank0-only-loss-log counts such a call as a log
of those arguments (``rules/_rank0_regions.py``, ``rules/_logged_values.py``).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.logged_helpers import constructed_method
from ddp_doctor.lint.provenance import bound_names, reads
from ddp_doctor.lint.rank0 import is_log_call, is_plain_print, is_silenceable_record
from ddp_doctor.lint.rank0_handoff import constructor_positions, kept_parameters

# (how it logs: "print" | "logger" | "log", ((constructor parameter, position or -1), ...))
StateLog = tuple[str, tuple[tuple[str, int], ...]]

_DERIVE_PASSES = 3  # entries = [...self.meters...]; line = "\t".join(entries); print(line)


def state_logged(ctx: FileContext, fn: ast.AST) -> StateLog | None:
    """What the method ``fn`` logs of its instance's constructor parameters, and how; None when it
    logs none of them (or is no method, or is ``__init__``). Read once per method (``ctx.memo``)."""
    key = (state_logged, id(fn))
    if key not in ctx.memo:
        ctx.memo[key] = _state_logged(ctx, fn)
    found: StateLog | None = ctx.memo[key]
    return found


def _state_logged(ctx: FileContext, fn: ast.AST) -> StateLog | None:
    owner = ctx.parents.get(fn)
    if (
        not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        or not isinstance(owner, ast.ClassDef)
        or fn.name == "__init__"
    ):
        return None
    kept = {f"self.{attr}": param for param, attr in kept_parameters(owner).items()}
    if not kept:
        return None
    nodes = ctx.local(fn)
    held: dict[str, set[str]] = {}  # local name -> the kept parameters its value reads
    for _ in range(_DERIVE_PASSES):
        for n in nodes:
            if not isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or n.value is None:
                continue
            params = _params_read(n.value, kept, held)
            if not params:
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for name in bound_names(t):
                    held.setdefault(name, set()).update(params)
    kinds: set[str] = set()
    logged: set[str] = set()
    for call in nodes:
        if not isinstance(call, ast.Call) or not is_log_call(call):
            continue
        params = set()
        for a in [*call.args, *(k.value for k in call.keywords)]:
            params |= _params_read(a, kept, held)
        if params:
            logged |= params
            kinds.add("print" if is_plain_print(call) else "logger" if is_silenceable_record(call) else "log")
    if not logged:
        return None
    positions = constructor_positions(owner)
    kind = next(k for k in ("print", "logger", "log") if k in kinds)
    return kind, tuple(sorted((p, positions.index(p) if p in positions else -1) for p in logged))


def _params_read(value: ast.AST, kept: dict[str, str], held: dict[str, set[str]]) -> set[str]:
    out: set[str] = set()
    for name in reads(ast.walk(value)):
        if name in kept:
            out.add(kept[name])
        out |= held.get(name, set())
    return out


def state_log_call(ctx: FileContext, call: ast.AST) -> tuple[str, list[ast.expr]] | None:
    """(how it logs, the constructor arguments it logs) for ``obj.m(...)`` when ``m`` logs what
    ``obj`` was built with; None otherwise."""
    if not isinstance(call, ast.Call) or is_log_call(call):
        return None
    # every binding of ``obj`` here builds one class (``FileContext.constructors``): its calls
    funcs = ctx.constructors(call)
    if not funcs or len({ast.dump(f) for f in funcs}) != 1:
        return None
    builds = [b for f in funcs if isinstance(b := ctx.parents.get(f), ast.Call)]
    method = constructed_method(ctx, call)  # the method of a class of this file
    if method is not None:
        found = state_logged(ctx, method)
    else:
        found = ctx.project.call_state_logged(ctx, call) if ctx.project is not None else None
    if found is None:
        return None
    kind, params = found
    args: list[ast.expr] = []
    for b in builds:
        for param, position in params:
            arg = next((k.value for k in b.keywords if k.arg == param), None)
            if (
                arg is None
                and 0 <= position < len(b.args)
                and not any(isinstance(a, ast.Starred) for a in b.args[: position + 1])
            ):
                arg = b.args[position]
            if arg is not None:
                args.append(arg)
    return (kind, args) if args else None
