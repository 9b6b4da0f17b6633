"""accelerate's main-process-only sinks, by what a call resolves to rather than what it is called:
``Accelerator.print``/``log`` (``if self.is_local_main_process: print(...)``) on any name bound to
``accelerate.Accelerator(...)`` (``acc = Accelerator()``, ``self.acc = Accelerator()``, an alias of
either), and the records of a logger from ``accelerate.logging.get_logger`` (its ``MultiProcessAdapter``
logs on the main process only unless the call passes ``main_process_only=False``).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, keyword
from ddp_doctor.lint.idioms import (
    ACCELERATOR_CLASS,
    MAIN_PROCESS_LOGGER_FACTORY,
    MAIN_PROCESS_LOGGER_RECORDS,
    RANK0_METHODS,
)


def _bound_objects(ctx: FileContext) -> tuple[frozenset[str], frozenset[str]]:
    """(names bound to an ``Accelerator``, names bound to an accelerate logger) in this file: dotted
    targets of an assignment from the constructor, and plain aliases of those (``acc = self.accelerator``).
    A name bound elsewhere in the file to something else counts for neither."""
    key: tuple[object, ...] = (_bound_objects,)
    if key in ctx.memo:
        return ctx.memo[key]  # type: ignore[no-any-return]
    kinds: dict[str, set[str]] = {}
    aliases: list[tuple[str, str]] = []
    if ctx.mentions("Accelerator", "get_logger"):
        for node in ctx.of_type(ast.Assign):
            targets = [d for t in node.targets if (d := dotted(t))]
            value = node.value
            if isinstance(value, ast.Call):
                q = ctx.call_qualname(value)
                kind = (
                    "accelerator"
                    if q == ACCELERATOR_CLASS
                    else "logger"
                    if q == MAIN_PROCESS_LOGGER_FACTORY
                    else "other"
                )
            elif (src := dotted(value)) is not None:
                aliases += [(t, src) for t in targets]
                continue
            else:
                kind = "other"
            for t in targets:
                kinds.setdefault(t, set()).add(kind)
        for target, src in aliases:  # one level of aliasing: ``acc = self.accelerator``
            kinds.setdefault(target, set()).update(kinds.get(src, {"other"}))
    out = (
        frozenset(n for n, k in kinds.items() if k == {"accelerator"}),
        frozenset(n for n, k in kinds.items() if k == {"logger"}),
    )
    ctx.memo[key] = out
    return out


def main_process_only_call(ctx: FileContext, call: ast.Call) -> bool:
    """``acc.print(...)`` on a name bound to ``Accelerator(...)``, or ``logger.info(...)`` on a logger
    from ``accelerate.logging.get_logger`` without ``main_process_only=False``: logs on the main process only."""
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = dotted(call.func.value)
    if receiver is None:
        return False
    accelerators, loggers = _bound_objects(ctx)
    last = call.func.attr
    if receiver in accelerators:
        return last in RANK0_METHODS["accelerator"]
    if receiver in loggers and last in MAIN_PROCESS_LOGGER_RECORDS:
        flag = keyword(call, "main_process_only")
        return flag is None or (isinstance(flag, ast.Constant) and flag.value is True)
    return False


def accelerate_prepare(ctx: FileContext, call: ast.AST) -> bool:
    """``accelerator.prepare(...)``: a ``prepare`` call on a receiver named for an accelerator
    (``self.accelerator``, ``accel``), or on any name bound to ``Accelerator(...)`` (BDML's
    ``accelerate = Accelerator(...)``; ``accelerate.prepare(train_loader, ...)``)."""
    if not (
        isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "prepare"
    ):
        return False
    receiver = dotted(call.func.value)
    if receiver is None:
        return False
    return "accelerator" in receiver.lower() or receiver in _bound_objects(ctx)[0]
