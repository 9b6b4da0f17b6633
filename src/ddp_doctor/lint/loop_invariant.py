"""Conditions a loop cannot change (an ``if`` whose answer is the same on every pass), and tests
that only skip a broken micro-batch (``if torch.isnan(loss).any():``).

A training loop often wraps its whole step in a test of something fixed before the loop starts —
``if mode == "train":`` (a run-epoch function shared by training and validation), ``if scheduler
is not None:`` (an optional scheduler), ``if cfg.use_amp:``. Such a test picks *whether* the body
runs in this run, not *how often*: when it holds, its body runs on every micro-step like an
unconditional statement. The accumulation rules otherwise leave every ``if`` alone (they cannot
tell how often it runs), which hid the step, the backward or the scheduler call under it.

A test is loop-invariant here only when it is not an accumulation guard (the caller's test), calls nothing, awaits
nothing, and reads no name, attribute chain or container that the loop binds or stores into
(its targets, assignments, augmented assignments, ``with ... as`` names, subscript and attribute
stores). Anything else stays conditional (precision first).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddp_doctor.lint.context import dotted

Loop = ast.For | ast.AsyncFor | ast.While
_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _stored(loop: Loop) -> set[str]:
    """Names and dotted chains the loop (re)binds or stores into, loop target included."""
    out: set[str] = set()
    roots: list[ast.AST] = [loop.target] if isinstance(loop, (ast.For, ast.AsyncFor)) else []
    roots += loop.body + loop.orelse
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
                node.ctx, (ast.Store, ast.Del)
            ):
                # ``d[k] = v`` changes what ``d`` holds; ``self.step += 1`` changes ``self.step``
                chain = dotted(node.value if isinstance(node, ast.Subscript) else node)
                if chain:
                    out.add(chain)
    return out


def invariant_test(test: ast.expr, stored: set[str]) -> bool:
    """``test`` gives the same answer on every pass of a loop that stores ``stored``."""
    for node in ast.walk(test):
        if isinstance(node, (ast.Call, ast.Await, ast.NamedExpr, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Name) and node.id in stored:
            return False
        if isinstance(node, ast.Attribute):
            chain = dotted(node)
            if chain and any(chain == s or chain.startswith(s + ".") for s in stored):
                return False
    return True


def inline_invariant(loop: Loop, is_guard: Callable[[ast.expr], bool]) -> list[ast.stmt]:
    """The loop's body with every ``if`` that has no ``else``, is not an accumulation guard
    (``is_guard``) and whose test the loop cannot change replaced by its statements, recursively:
    what runs on every pass of the loop in a run where those tests hold."""
    stored = _stored(loop)
    return list(_inline(loop.body, stored, is_guard))


def _inline(
    body: list[ast.stmt], stored: set[str], is_guard: Callable[[ast.expr], bool]
) -> Iterator[ast.stmt]:
    for stmt in body:
        if (
            isinstance(stmt, ast.If)
            and not stmt.orelse
            and not is_guard(stmt.test)
            and invariant_test(stmt.test, stored)
            # ``if args.dry_run: break``: when it holds, what follows does not run at all
            and not any(isinstance(n, _EXITS) for s in stmt.body for n in ast.walk(s))
        ):
            yield from _inline(stmt.body, stored, is_guard)
        else:
            yield stmt


def fixed_choice(loop: Loop, test: ast.expr, is_guard: Callable[[ast.expr], bool]) -> bool:
    """``test`` of an ``if``/``else`` in ``loop`` picks the same branch on every pass (a configuration
    choice, TencentPretrain's ``if args.pipeline_model_parallel_size > 1: <pipeline step> else:
    <forward; backward>``): in a run where it picks a branch, that branch runs on every pass."""
    return not is_guard(test) and invariant_test(test, _stored(loop))


_NONFINITE = frozenset({"isnan", "isinf", "isfinite"})


def tests_nonfinite(test: ast.expr) -> bool:
    """``torch.isnan(loss).any()``, ``not math.isfinite(loss.item())``: a test that skips a broken
    micro-batch. Its other branch is the micro-step of every healthy batch (MLPerf RNN-T ``if
    torch.isnan(loss).any(): print_once(...) else: loss.backward()``)."""
    return any(
        isinstance(n, ast.Call) and (dotted(n.func) or "").split(".")[-1] in _NONFINITE
        for n in ast.walk(test)
    )
