"""Logging facts of one def read from its own tree: which parameters its log calls write, whether
every log call sits under a rank-0 test, whether it is a rank-0-only decorator. The project index
(project_scan.py) records them for rank0-only-loss-log.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, keyword, positional_params
from ddp_doctor.lint.logged_attributes import logged_self_attributes, stores_into
from ddp_doctor.lint.provenance import alarm, bound_names, loop_aliases, reads

# Methods that read a tensor's whole value (``"loss %.4f" % loss.item()`` logs the loss itself).
_WHOLE_VALUE_METHODS = frozenset({"item", "detach", "cpu", "float", "mean", "tolist", "numpy", "clone"})


def _whole_reads(value: ast.AST) -> set[str]:
    """Names ``value`` reads as a whole: not only as the container of an item or attribute it picks
    (``d["k"]``, ``d.get("k")``, ``d.k``); ``loss.item()`` reads all of ``loss``."""
    picked = {
        id(x.value)
        for x in ast.walk(value)
        if isinstance(x, (ast.Subscript, ast.Attribute))
        and isinstance(x.value, ast.Name)
        and not (isinstance(x, ast.Attribute) and x.attr in _WHOLE_VALUE_METHODS)
    }
    return {x.id for x in ast.walk(value) if isinstance(x, ast.Name) and id(x) not in picked}


def parameters_logged(
    ctx: FileContext, fn: ast.AST, depth: int = 2
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(parameters its log calls write, its positional parameters): ``print``, ``writer.add_scalar``
    ... of a parameter, also through a loop over it (``for k, v in kwargs.items():
    self.writer.add_scalar(k, v)``), and through a same-file helper that logs what it is handed
    (vilbert ``tbLogger.step_train(..., loss, ...)`` -> ``self.linePlot(stepId, loss, ...)`` ->
    ``self.logger.add_scalar(..., val, step)``; ``depth`` helpers deep). Not ``f.write(...)``
    (llm.c ``write_state`` dumps tensors) unless ``f`` was opened to append: a log file."""
    from ddp_doctor.lint.logged_helpers import helper_logged_args
    from ddp_doctor.lint.rank0 import is_log_call

    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return (), ()
    a = fn.args
    positional = positional_params(fn)
    named = {x.arg: x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    if a.vararg is not None:
        named[a.vararg.arg] = "*" + a.vararg.arg
    if a.kwarg is not None:
        named[a.kwarg.arg] = "**" + a.kwarg.arg
    named.pop("self", None)
    named.pop("cls", None)
    nodes = ctx.local(fn)
    if not named or len(nodes) > 400:
        return (), tuple(positional)
    logged: set[str] = set()
    # ``msg = ...`` and ``msg += " | loss %.4f" % loss.item()`` (PepFlow ``log_losses``) both write ``msg``
    writes = [
        (
            n.value,
            {
                t
                for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                for t in bound_names(target)
            },
        )
        for n in nodes
        if isinstance(n, (ast.Assign, ast.AugAssign))
    ]
    assigns = [(reads(ast.walk(value)), written) for value, written in writes]
    wholes = [(_whole_reads(value), written) for value, written in writes]
    # a method that keeps what it is handed in an attribute its class's log calls write (gmflow
    # ``Logger.push``: ``self.running_loss[key] += metrics[key]``, written by another method)
    owner = ctx.parents.get(fn)
    stored = (
        {id(node): values for node, values in stores_into(nodes, logged_self_attributes(ctx, owner, _is_log))}
        if isinstance(owner, ast.ClassDef) and fn.name != "__init__"
        else {}
    )
    for call in nodes:
        handed = (
            helper_logged_args(ctx, call, fn, lambda h: parameters_logged(ctx, h, depth - 1))
            if depth > 0 and isinstance(call, ast.Call) and not is_log_call(call)
            else None
        ) or stored.get(id(call))
        if handed:
            args = handed
        elif isinstance(call, ast.Call) and (_is_log(call) or _appends_to_log(ctx, call)):
            args = [*call.args, *(k.value for k in call.keywords)]
        else:
            continue
        names = reads(x for v in args for x in ast.walk(v))
        names |= loop_aliases(ctx, call, names)
        for n in named:
            derived = {n}  # and what is computed from it (``overflow = check(loss.item())``)
            for _ in range(2):
                for read, written in assigns:
                    if read & derived:
                        derived |= written
            # the parameter or a message built from all of it (ColBERT ``print_message(*s)``:
            # ``s = " ".join(...)``, ``msg = "[...] {}".format(s)``, ``print(msg)``); not an item
            # picked out of it (wenet's ``step = info_dict.get("step")`` is not the loss)
            whole = {n}
            for _ in range(2):
                for read, written in wholes:
                    if read & whole:
                        whole |= written
            if n not in names and not (names & whole):
                continue
            if not alarm(ctx, call, derived):  # ``if loss > 12: print(loss)`` warns, it does not log
                logged.add(named[n])
    return tuple(sorted(logged)), tuple(positional)


def written_file_mode(ctx: FileContext, call: ast.Call) -> str | None:
    """The mode ``f`` was opened in, for ``f.write(...)``: of the innermost ``with open(...) as f``
    holding the call, or else of the latest ``f = open(...)`` before it; None when unknown."""
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name):
        return None
    name = call.func.value.id
    cur = ctx.parents.get(call)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.With, ast.AsyncWith)):
            for item in cur.items:
                if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name:
                    return _open_mode(item.context_expr)
        cur = ctx.parents.get(cur)
    scope = ctx.enclosing_function(call)
    before = [b for b in ctx.bindings(scope).get(name, []) if b.lineno < call.lineno]
    return _open_mode(before[-1].value) if before and isinstance(before[-1], ast.Assign) else None


def _open_mode(expr: ast.AST) -> str | None:
    if not (isinstance(expr, ast.Call) and (dotted(expr.func) or "").split(".")[-1] == "open"):
        return None
    mode = keyword(expr, "mode") or (expr.args[1] if len(expr.args) > 1 else None)
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def _appends_to_log(ctx: FileContext, call: ast.Call) -> bool:
    """``f.write(...)`` to a file opened to append (``with open(log_path, "a") as f:``): a log file
    that grows with each call (UIA's ``write_train_logs(epoch, step, loss_val, lr, filename)``), not
    a state dumped (llm.c ``write_state`` opens its file "wb")."""
    mode = written_file_mode(ctx, call) if _writes_file(call) else None
    return mode is not None and "a" in mode


def _is_log(call: ast.Call) -> bool:
    from ddp_doctor.lint.rank0 import is_log_call

    return is_log_call(call) and not _writes_file(call)


def _writes_file(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "write"


def rank0_if(ctx: FileContext, node: ast.AST) -> ast.If | None:
    """The ``if <rank-0 test>:`` whose body (not else) holds ``node``, in the same function."""
    from ddp_doctor.lint.rank0 import enclosing_rank0_if

    return enclosing_rank0_if(ctx.parents, node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def is_rank0_decorator(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``fn(func)`` defines a wrapper that calls ``func`` only under a rank-0 test and returns it
    (``def master_only(func): def wrapper(*a, **k): if rank == 0: return func(*a, **k)``)."""
    params = [a.arg for a in fn.args.args]
    if not params:
        return False
    for inner in fn.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        returned = any(
            isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == inner.name
            for r in fn.body
        )
        calls = [
            c
            for c in ctx.local(inner)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == params[0]
        ]
        if returned and calls and all(rank0_if(ctx, c) is not None for c in calls):
            return True
    return False


def has_log_call(ctx: FileContext, fn: ast.AST) -> bool:
    from ddp_doctor.lint.rank0 import is_log_call

    return any(isinstance(n, ast.Call) and is_log_call(n) for n in ctx.local(fn))


def logs_rank0_only(ctx: FileContext, fn: ast.AST) -> bool:
    """A small function whose every log call sits under a rank-0 test (``def print0(*a): if rank == 0:
    print(*a)``) or logs on rank 0 by itself (``def print(self, msg): return
    self.accelerator.print(msg)``): calling it logs on rank 0 only."""
    from ddp_doctor.lint.accelerate_sinks import main_process_only_call
    from ddp_doctor.lint.rank0 import is_log_call, is_rank0_log_call

    nodes = ctx.local(fn)
    if len(nodes) > 200:
        return False
    logs = [n for n in nodes if isinstance(n, ast.Call) and is_log_call(n)]
    return bool(logs) and all(
        rank0_if(ctx, n) is not None or is_rank0_log_call(n) or main_process_only_call(ctx, n) for n in logs
    )


def logs_inside(ctx: FileContext, fn: ast.AST) -> bool:
    """A function that tests the rank itself around its logs and does more than log (ECG-Bench's
    ``train_dev_break(enabled, batch, loss_value)``: prints under ``if is_main():``, then broadcasts
    and returns a flag): its own file reports the log of what it is handed, inside it, so a call of
    it is no second finding. Not a rank-0 printer (``print0``, a body that is one rank-0 test around
    log calls only, DBNet's ``logger_info``): the calls of those are the logs."""
    from ddp_doctor.lint.idioms import RANK0_FUNCTION
    from ddp_doctor.lint.rank0 import is_log_call, is_rank0_test

    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or RANK0_FUNCTION.match(fn.name):
        return False
    logs = [n for n in ctx.local(fn) if isinstance(n, ast.Call) and is_log_call(n)]
    if not logs or any(rank0_if(ctx, n) is None for n in logs):
        return False
    body = [
        s
        for s in fn.body
        if not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
    ]
    printer = (
        len(body) == 1
        and isinstance(body[0], ast.If)
        and is_rank0_test(body[0].test)
        and all(
            isinstance(x, ast.Expr) and isinstance(x.value, ast.Call) and is_log_call(x.value)
            for x in body[0].body
        )
    )
    return not printer
