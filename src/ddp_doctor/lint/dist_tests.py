"""Tests that ask "is this run distributed?", by what they test rather than how they are spelled.

``if args.distributed:``, ``if dist.is_initialized():``, ``if world_size > 1:`` name it outright; a
helper answers it for its callers (nanoVLM ``def is_dist(): return dist.is_available() and
dist.is_initialized()``, then ``if is_dist(): x = dist_mean_scalar(x) else: x = x``). A function is
such a predicate when it is short and every ``return`` is a boolean test that reads the process
group's state (a comparison, a conjunction, a negation, or an ``is_*`` call); a function returning
the world size itself (``return dist.get_world_size() if is_dist() else 1``) is a number, not one.
Used by lint/provenance.py (``single_process_only``) through the file's predicates and, in project
mode, the project's (``ProjectIndex.distributed_predicates``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable

from ddp_doctor.lint.context import dotted, walk_local

DISTRIBUTED_FLAG = re.compile(r"distributed|ddp|world_size|is_initialized|multiprocessing", re.IGNORECASE)
RANK = re.compile(r"rank", re.IGNORECASE)
MAX_PREDICATE_STATEMENTS = 6  # a predicate is a short function; a long one does something else

# A name or test about the distributed run (``get_distributed_loader``, ``args.ddp``, ``world_size > 1``).
DISTRIBUTED_NAME = re.compile(
    r"distributed|(^|[._])(ddp|dist)([._]|$)|world_size|is_initialized", re.IGNORECASE
)


def negative_test(test: ast.expr) -> bool:
    """``not args.distributed``, ``world_size == 1``, ``world_size <= 1``, ``local_rank == -1``: true
    when the run is not distributed."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
            return isinstance(op, ast.Eq)
        value = right.value if isinstance(right, ast.Constant) else None
        return (
            (isinstance(op, ast.Eq) and value in (1, None, False))
            or (isinstance(op, ast.LtE) and value == 1)
            or (isinstance(op, ast.Is) and value in (None, False))
        )
    return False


def _boolean_test(value: ast.expr) -> bool:
    """``value`` is a yes/no answer about the process group, not a number or an object, nor about
    the rank (``not dist.is_initialized() or dist.get_rank() == 0`` asks "am I rank 0?")."""
    if RANK.search(ast.unparse(value)):
        return False
    return _group_test(value)


def _group_test(value: ast.expr) -> bool:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return _group_test(value.operand) or bool(DISTRIBUTED_FLAG.search(ast.unparse(value.operand)))
    if isinstance(value, (ast.Compare, ast.BoolOp)):
        return bool(DISTRIBUTED_FLAG.search(ast.unparse(value)))
    if isinstance(value, ast.Call):
        last = (dotted(value.func) or "").rsplit(".", 1)[-1]
        return last.startswith("is_") and bool(DISTRIBUTED_FLAG.search(last))
    return False


def distributed_predicates(functions: Iterable[ast.AST]) -> set[str]:
    """Names of the functions among ``functions`` whose every return says whether the run is
    distributed (``def is_dist(): return dist.is_available() and dist.is_initialized()``)."""
    out: set[str] = set()
    for fn in functions:
        if (
            not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            or len(fn.body) > MAX_PREDICATE_STATEMENTS
        ):
            continue
        returns = [n for n in walk_local(fn.body) if isinstance(n, ast.Return)]
        if returns and all(r.value is not None and _boolean_test(r.value) for r in returns):
            out.add(fn.name)
    return out


def asks_if_distributed(test: ast.expr, source: str, predicates: Collection[str] = ()) -> bool:
    """``test`` (whose text is ``source``) asks whether the run is distributed: it names the flag
    (``args.distributed``, ``world_size``, ``dist.is_initialized()``) or calls one of ``predicates``."""
    if DISTRIBUTED_FLAG.search(source):
        return True
    return any(
        isinstance(n, ast.Call) and (dotted(n.func) or "").rsplit(".", 1)[-1] in predicates
        for n in ast.walk(test)
    )
