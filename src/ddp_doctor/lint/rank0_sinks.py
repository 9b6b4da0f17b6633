"""Log sinks that exist on rank 0 only because they are built under a rank-0 test.

``if rank == 0: writer = SummaryWriter(...)`` (else ``None``), also on ``self`` and behind a flag
the class keeps (rsl_rl's ``Logger``: ``self.disable_logs = is_distributed and gpu_global_rank !=
0``, then ``if self.log_dir is not None and not self.disable_logs: self.writer =
SummaryWriter(...)``; ``self.writer = None`` otherwise). Whatever goes through such a sink is
written by rank 0 alone, whatever method of the class writes it (``if self.writer is not None:
self.writer.add_scalar("Loss/...", value)``). One reading, shared by file mode
(``rules/rank0_only_loss_log.py``) and project mode (``project_bindings.py``), which keeps the
names project-wide.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.rank0 import (
    LOG_CALL,
    LOG_SINK,
    class_flags,
    enclosing_rank0_if,
    is_log_sink,
    is_rank0_test,
)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def guarded_sink_names(ctx: FileContext, predicates: Collection[str]) -> set[str]:
    """Last parts of the names this file binds to a new log sink inside the body of a rank-0 test
    (the class's own flags count as tests in its methods)."""
    return sink_names(ctx, predicates)[0]


def rank0_sink_classes(ctx: FileContext, predicates: Collection[str]) -> set[str]:
    """Top-level classes of the file that are writers writing on rank 0 only: a subclass of a log
    sink (Ultra-Fast-Lane-Detection's ``class DistSummaryWriter(SummaryWriter)``) whose every write
    method it overrides runs its body only under a rank-0 test (``def add_scalar(self, *args,
    **kwargs): if can_log(): super().add_scalar(*args, **kwargs)``). An instance is a rank-0 sink
    wherever it is built."""
    out: set[str] = set()
    for cls in ctx.tree.body:
        if not isinstance(cls, ast.ClassDef) or not any(LOG_SINK.search(dotted(b) or "") for b in cls.bases):
            continue
        writes = [
            f
            for f in cls.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (f.name.startswith("add_") or LOG_CALL.match(f.name))
        ]
        if writes and all(_runs_on_rank0_only(f, predicates) for f in writes):
            out.add(cls.name)
    return out


def _runs_on_rank0_only(fn: ast.FunctionDef | ast.AsyncFunctionDef, predicates: Collection[str]) -> bool:
    """The method's whole body (after its docstring) is one ``if <rank-0 test>:`` with no else."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.If)
        and not body[0].orelse
        and is_rank0_test(body[0].test, predicates)
    )


def sink_names(ctx: FileContext, predicates: Collection[str]) -> tuple[set[str], set[str]]:
    """Last parts of the names this file binds to a new log sink, (under a rank-0 test, elsewhere);
    an instance of a rank-0-only writer class of the file (:func:`rank0_sink_classes`) is guarded."""
    guarded: set[str] = set()
    everywhere: set[str] = set()
    flags: dict[int, set[str]] = {}
    own = rank0_sink_classes(ctx, predicates)
    for node in ctx.of_type(ast.Assign):
        if not is_log_sink(node.value):
            continue
        if (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in own
        ):
            guarded |= {d.split(".")[-1] for t in node.targets if (d := dotted(t))}
            continue
        cls = ctx.enclosing_method_class(node)
        local = set(predicates)
        if cls is not None:
            if id(cls) not in flags:
                flags[id(cls)] = class_flags(cls, predicates)
            local |= flags[id(cls)]
        names = {d.split(".")[-1] for t in node.targets if (d := dotted(t))}
        if enclosing_rank0_if(ctx.parents, node, _SCOPES, local) is not None:
            guarded |= names
        else:
            everywhere |= names
    return guarded, everywhere
