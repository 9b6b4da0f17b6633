"""Which code runs on rank 0 only, and which calls log: shared by rank0-only-loss-log and project mode.

A test is a rank-0 test when it is true on (at most) one rank: ``rank == 0``, ``RANK in {-1, 0}``
(-1 = not distributed), ``dist.get_rank() == 0``, ``master_process``, ``is_main_process()``,
``fabric.is_global_zero``; ``a and <rank-0 test>``; and ``not <flag> or <rank-0 test>``
(llama-recipes: ``if not enable_fsdp or rank == 0`` is rank 0 whenever training is sharded).
Spellings live in ``lint/idioms.py``.
"""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.context import dotted
from ddp_doctor.lint.idioms import MAIN_FLAG, RANK0_FUNCTION, RANK0_MEMBERS, RANK0_METHODS, RANK_NAME

LOG_CALL = re.compile(
    r"^(print|log|info|debug|warning|log_metrics?|log_dict|add_scalars?|set_postfix(_str)?|"
    r"set_description|write|log_every)$"
)
LOG_ATTRS = frozenset({"desc", "postfix"})  # tqdm: ``pbar.desc = f"... {loss}"``


def is_log_call(call: ast.Call) -> bool:
    name = dotted(call.func)
    return bool(name and LOG_CALL.match(name.split(".")[-1]))


def is_rank0_log_call(call: ast.Call) -> bool:
    """A call that logs on rank 0 only by itself (``fabric.print``, ``print0``, ``print_rank_0``)."""
    name = dotted(call.func)
    if not name:
        return False
    receiver, _, last = name.rpartition(".")
    if receiver:
        methods = RANK0_METHODS.get(receiver.split(".")[-1].lower())
        if methods is not None and last in methods:
            return True
    return bool(RANK0_FUNCTION.match(last))


def _mentions_rank(node: ast.AST) -> bool:
    text = " ".join(d for n in ast.walk(node) if (d := dotted(n)) is not None)
    text += " " + " ".join(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )
    return bool(RANK_NAME.search(text))


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _negated_flag(node: ast.AST) -> bool:
    """``not flag`` / ``flag is None`` / ``rank == -1``: true when not distributed."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        right = node.comparators[0]
        if isinstance(node.ops[0], ast.Is) and isinstance(right, ast.Constant) and right.value is None:
            return True
        if isinstance(node.ops[0], ast.Eq) and _int(right) == -1:
            return True
    return False


def is_rank0_test(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And):
            return any(is_rank0_test(v) for v in test.values)
        rank0 = [v for v in test.values if is_rank0_test(v)]
        return bool(rank0) and all(v in rank0 or _negated_flag(v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.Eq):
            return any(_int(b) == 0 and _mentions_rank(a) for a, b in ((left, right), (right, left)))
        if isinstance(op, ast.In) and isinstance(right, (ast.Set, ast.List, ast.Tuple)):
            values = {_int(e) for e in right.elts}
            return 0 in values and values <= RANK0_MEMBERS and _mentions_rank(left)
        return isinstance(op, ast.LtE) and _int(right) == 0 and _mentions_rank(left)  # rank <= 0
    target = test.func if isinstance(test, ast.Call) else test
    name = dotted(target)
    return bool(name and MAIN_FLAG.match(name.split(".")[-1]))


def enclosing_rank0_if(
    parents: dict[ast.AST, ast.AST], node: ast.AST, scopes: tuple[type[ast.AST], ...]
) -> ast.If | None:
    """The innermost ``if <rank-0 test>:`` whose body (not else) holds ``node``, searched up to the
    nearest enclosing node of a ``scopes`` type."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, scopes):
        if isinstance(cur, ast.If) and child in cur.body and is_rank0_test(cur.test):
            return cur
        child, cur = cur, parents.get(cur)
    return None
