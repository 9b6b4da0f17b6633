"""Attributes of ``self`` that a class's log calls write, and a method's stores into them.

A logger class often keeps what it is handed and writes it later: gmflow's ``Logger.push(metrics)``
adds each value into ``self.running_loss``, and ``print_training_status`` (called every
``summary_freq`` pushes) writes ``self.running_loss[k] / self.summary_freq`` with
``summary_writer.add_scalar``. ``push`` logs its ``metrics`` parameter as surely as if it called
``add_scalar`` on it; the write is only deferred. ``parameters_logged`` (project_log_facts.py)
counts a store of a parameter into such an attribute as a log of that parameter.

Only attributes the class's own log calls read (directly, or through a loop over them: ``for k in
self.running_loss: writer.add_scalar(k, self.running_loss[k])``) count; an attribute read by no log
call (a best value kept for early stopping, a buffer handed back to the caller) is not a log.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.provenance import bound_names, loop_aliases, reads

# Calls that put a value into a container attribute (``self.losses.append(loss)``,
# ``self.meters[k].update(v)``, ``self.hist.extend(vals)``).
FILLING = frozenset({"append", "extend", "update", "add", "insert", "setdefault"})

IsLog = Callable[[ast.Call], bool]


def logged_self_attributes(ctx: FileContext, cls: ast.ClassDef, is_log: IsLog) -> frozenset[str]:
    """``self.x`` names that a log call in one of ``cls``'s own methods reads (``is_log`` decides
    what a log call is); cached on ``ctx`` per class and predicate."""
    cache = ctx.memo
    key = (logged_self_attributes, id(cls), is_log)
    if key not in cache:
        out: set[str] = set()
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for call in ctx.local(fn):
                if isinstance(call, ast.Call) and is_log(call):
                    names = reads(
                        x for a in [*call.args, *(k.value for k in call.keywords)] for x in ast.walk(a)
                    )
                    names |= loop_aliases(ctx, call, names)
                    out |= {n for n in names if n.startswith("self.")}
        cache[key] = frozenset(out)
    found: frozenset[str] = cache[key]
    return found


def stores_into(nodes: list[ast.AST], attrs: frozenset[str]) -> Iterator[tuple[ast.AST, list[ast.expr]]]:
    """(node, the values it stores) for each statement or call among ``nodes`` that puts a value into
    one of ``attrs``: ``self.x = v``, ``self.x[k] += v``, ``self.x.append(v)``, ``self.x[k].update(v)``."""
    if not attrs:
        return
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(n in attrs for t in targets for n in bound_names(t)):
                yield node, [node.value]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in FILLING
            and any(n in attrs for n in bound_names(node.func.value))
        ):
            yield node, [*node.args, *(k.value for k in node.keywords)]
