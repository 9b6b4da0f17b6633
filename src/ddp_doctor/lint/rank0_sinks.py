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
from ddp_doctor.lint.rank0 import class_flags, enclosing_rank0_if, is_log_sink

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def guarded_sink_names(ctx: FileContext, predicates: Collection[str]) -> set[str]:
    """Last parts of the names this file binds to a new log sink inside the body of a rank-0 test
    (the class's own flags count as tests in its methods)."""
    return sink_names(ctx, predicates)[0]


def sink_names(ctx: FileContext, predicates: Collection[str]) -> tuple[set[str], set[str]]:
    """Last parts of the names this file binds to a new log sink, (under a rank-0 test, elsewhere)."""
    guarded: set[str] = set()
    everywhere: set[str] = set()
    flags: dict[int, set[str]] = {}
    for node in ctx.of_type(ast.Assign):
        if not is_log_sink(node.value):
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
