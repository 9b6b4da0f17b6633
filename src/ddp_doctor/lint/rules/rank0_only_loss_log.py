"""rank0-only-loss-log: the training loss is logged from rank 0 without a cross-rank reduction.

Each rank's loss is the mean over its own micro-batch; rank 0's value alone has about
sqrt(world size) times the standard deviation of the global mean, so the curve looks unstable
when the training is not (the global loss is ``all_reduce(loss) / world_size``). Flagged when, in
one function, a logging call (print, logger.*, wandb/TensorBoard/tqdm style) under a rank-0
guard (``rank == 0``, ``dist.get_rank() == 0``, ``master_process``, ``is_main_process``) logs a
value derived from the tensor passed to backward (or returned by a same-file helper that runs
backward) with no all-reduce/gather/reduce call on the way. nanoGPT's rank-0 ``lossf`` print is
such a case (it is rank 0's loss, as its comment says).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.loops import LoopFacts, backward_of
from ddp_doctor.lint.rules.base import Rule, Violation

REDUCE_CALL = re.compile(r"(all_?reduce|reduce|gather|average|sync)", re.IGNORECASE)
LOG_CALL = re.compile(
    r"^(print|log|info|debug|warning|log_metrics?|log_dict|add_scalars?|set_postfix(_str)?|"
    r"set_description|write)$"
)
RANK_NAME = re.compile(r"rank", re.IGNORECASE)
MAIN_FLAG = re.compile(
    r"^(is_)?(master|main)(_process|_rank)?$|^is_rank_?(zero|0)$|^is_global_zero$|^rank_?(zero|0)$",
    re.IGNORECASE,
)
TAINT_PASSES = 3  # assignment chains like loss -> lossf -> running_loss


class Rank0OnlyLossLog(Rule):
    id = "rank0-only-loss-log"
    required = (("backward",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if not self.applies(ctx):
            return
        backward_scopes = {
            id(ctx.enclosing_function(n)): ctx.enclosing_function(n)
            for n in ctx.of_type(ast.Attribute)
            if n.attr == "backward"
        }
        returns_loss = {key for key, fn in backward_scopes.items() if _tainted(ctx, fn, set())[1]}
        scopes = dict(backward_scopes)
        for n in ctx.of_type(ast.Call) if returns_loss else ():  # callers of helpers returning the local loss
            if id(ctx.helper(n)) in returns_loss:
                scope = ctx.enclosing_function(n)
                scopes[id(scope)] = scope
        for scope in scopes.values():
            tainted, _ = _tainted(ctx, scope, returns_loss)
            if not tainted:
                continue
            for guard in ctx.local(scope):
                if not isinstance(guard, ast.If) or not _is_rank0(guard.test):
                    continue
                for node in ctx.local(guard):
                    if isinstance(node, ast.Call) and _is_log(node):
                        names = {
                            n.id
                            for a in [*node.args, *(k.value for k in node.keywords)]
                            for n in ast.walk(a)
                            if isinstance(n, ast.Name)
                        }
                        hit = sorted(names & tainted)
                        if hit:
                            yield self.violation(
                                node,
                                f"`{hit[0]}` is logged under the rank-0 check at line {guard.lineno} without an "
                                "all-reduce: it is rank 0's local loss, noisier than the global one.",
                                f"`{hit[0]}` 在第 {guard.lineno} 行的 rank 0 判断下被记录，但没有 all-reduce：它只是 rank 0 的本地损失。",
                                guard_line=guard.lineno,
                                value=hit[0],
                            )


def _tainted(ctx: FileContext, scope: ast.AST, returns_loss: set[int]) -> tuple[set[str], bool]:
    """Names holding the local training loss in ``scope``, and whether ``scope`` returns one."""
    nodes = ctx.local(scope)
    reduced: set[str] = set()
    tainted: set[str] = set()
    flows: list[tuple[set[str], set[str]]] = []  # (names read, names written) of non-reducing assignments
    for n in nodes:
        if isinstance(n, ast.Call):
            if REDUCE_CALL.search((dotted(n.func) or "").split(".")[-1]):  # in place: dist.all_reduce(t)
                reduced |= {x.id for a in n.args[:1] for x in ast.walk(a) if isinstance(x, ast.Name)}
            bw = backward_of(n)
            if bw is not None and bw.root is not None:
                tainted |= _loss_names(bw.root)
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            written = {x.id for t in targets for x in ctx.local(t) if type(x) is ast.Name}
            if isinstance(n.value, ast.Call):
                fn = ctx.helper(n.value)
                if fn is not None and id(fn) in returns_loss:
                    tainted |= written
            value_nodes = ctx.local(n.value)
            if not any(
                type(x) is ast.Call and REDUCE_CALL.search((dotted(x.func) or "").split(".")[-1])
                for x in value_nodes
            ):
                flows.append(({x.id for x in value_nodes if type(x) is ast.Name}, written))
    tainted -= reduced
    if tainted:
        for _ in range(TAINT_PASSES):
            for read, written in flows:
                if read & tainted:
                    tainted |= written - reduced
    returns = bool(tainted) and any(
        isinstance(r, ast.Return)
        and r.value is not None
        and any(isinstance(x, ast.Name) and x.id in tainted for x in ast.walk(r.value))
        for r in nodes
    )
    return tainted, returns


def _loss_names(root: ast.AST) -> set[str]:
    """Names in a backward root, leaving out divisors and factors (``loss / accum`` → {loss})."""
    if isinstance(root, ast.BinOp):
        return _loss_names(root.left)
    if isinstance(root, ast.Name):
        return {root.id}
    return {
        n.id
        for n in ast.walk(root)
        if isinstance(n, ast.Name)
        and not any(isinstance(p, ast.BinOp) and n in ast.walk(p.right) for p in ast.walk(root))
    }


def _is_log(call: ast.Call) -> bool:
    name = dotted(call.func)
    return bool(name and LOG_CALL.match(name.split(".")[-1]))


def _is_rank0(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_is_rank0(v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]
        for a, b in ((left, right), (right, left)):
            if isinstance(b, ast.Constant) and b.value == 0 and not isinstance(b.value, bool):
                text = (
                    " ".join(d for n in ast.walk(a) if (d := dotted(n)) is not None)
                    + " "
                    + " ".join(
                        n.value
                        for n in ast.walk(a)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    )
                )
                if RANK_NAME.search(text):
                    return True
        return False
    target = test.func if isinstance(test, ast.Call) else test
    name = dotted(target)
    return bool(name and MAIN_FLAG.match(name.split(".")[-1]))
