"""Code that runs only when training is not distributed: under ``if not args.distributed:``, in the
``else`` of ``if args.distributed:``, under ``if args.local_rank == -1:`` or in the one-process branch of
a process-count test whose other branch combines across ranks. There rank 0's value is the global one,
so a rank-0 log of it is no rank-local log.
"""

from __future__ import annotations

import ast
import re
import weakref

from ddp_doctor.lint.context import FileContext, conjuncts, dotted, parameter_names
from ddp_doctor.lint.dist_tests import asks_if_distributed, distributed_predicates
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.reductions import reducing_call


def single_process_only(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs only when training is not distributed: under ``if not args.distributed:`` /
    ``if world_size == 1:``, or in the else of ``if args.distributed:`` (apex/timm update the meter
    with the raw loss there and with the reduced one otherwise): rank 0's value is the global one."""
    child, cur = node, ctx.parents.get(node)
    inner: ast.AST = node  # the child's own child: which branch of an ``elif`` the walk came up through
    predicates: set[str] | None = None
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(cur, ast.If) and predicates is None:
            predicates = _distributed_predicates(ctx)
        if isinstance(cur, ast.If) and asks_if_distributed(cur.test, ctx.segment(cur.test), predicates or ()):
            test = _as_flag(cur.test)
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            one_process = (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.comparators[0], ast.Constant)
                and (
                    (isinstance(test.ops[0], (ast.Eq, ast.LtE)) and test.comparators[0].value == 1)
                    or (isinstance(test.ops[0], ast.Lt) and test.comparators[0].value == 2)  # world_size < 2
                )
            )
            if (negated or one_process) and child in cur.body:
                return True
            if isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and child in cur.orelse:
                return True
        if isinstance(cur, ast.If) and child in _one_process_branch(ctx, cur):
            return True
        if isinstance(cur, ast.If) and _elif_of_the_other_conjuncts(
            ctx, cur, child, inner, predicates or set()
        ):
            return True
        inner, child, cur = child, cur, ctx.parents.get(cur)
    return False


def _as_flag(test: ast.expr) -> ast.expr:
    """``args.ddp is True`` / ``== True`` read as ``args.ddp``, and ``is False`` / ``== False`` as
    ``not args.ddp`` (TAP_ASR's ``if self.config.is_use_DDP is True: ... else:``): the same test."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(right := test.comparators[0], ast.Constant)
        and isinstance(right.value, bool)
        and isinstance(test.left, (ast.Name, ast.Attribute, ast.Call))
    ):
        return test.left if right.value else ast.UnaryOp(op=ast.Not(), operand=test.left)
    return test


def _elif_of_the_other_conjuncts(
    ctx: FileContext, outer: ast.If, child: ast.AST, inner: ast.AST, predicates: set[str]
) -> bool:
    """``if use_wandb and args.distributed: <gathered> elif use_wandb: <here>`` (proVLAE): the
    ``elif`` tests exactly the other conjuncts, so its body runs only when the run is not distributed."""
    test = outer.test
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return False
    if not (outer.orelse == [child] and isinstance(child, ast.If) and inner in child.body):
        return False
    asks = [
        isinstance(v, (ast.Name, ast.Attribute, ast.Call))
        and asks_if_distributed(v, ctx.segment(v), predicates)
        for v in test.values
    ]
    if sum(asks) != 1:
        return False
    rest = [ctx.segment(v) for v, ask in zip(test.values, asks) if not ask]
    return sorted(rest) == sorted(ctx.segment(v) for v in conjuncts(child.test))


_PREDICATES: weakref.WeakKeyDictionary[ast.Module, set[str]] = weakref.WeakKeyDictionary()


def _distributed_predicates(ctx: FileContext) -> set[str]:
    """The functions of this file (and, in project mode, of the project) that answer "is this run
    distributed?" (nanoVLM ``is_dist()``): computed once per parsed file."""
    own = _PREDICATES.get(ctx.tree)
    if own is None:
        own = _PREDICATES[ctx.tree] = distributed_predicates(
            f for defs in ctx.functions.values() for f in defs
        )
    project = getattr(ctx.project, "distributed_predicates", None) or set()
    return own | project


RANK_NAME = re.compile(r"rank", re.IGNORECASE)


def _rank_unset(test: ast.expr) -> str | None:
    """``rank == -1`` → "body", ``rank != -1`` → "orelse": the branch where no launcher set a rank."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    right = test.comparators[0]
    if not (
        isinstance(right, ast.UnaryOp)
        and isinstance(right.op, ast.USub)
        and isinstance(right.operand, ast.Constant)
        and right.operand.value == 1
    ):
        return None
    if not RANK_NAME.search((dotted(test.left) or "").rsplit(".", 1)[-1]):
        return None
    if isinstance(test.ops[0], ast.Eq):
        return "body"
    return "orelse" if isinstance(test.ops[0], ast.NotEq) else None


def _one_process_branch(ctx: FileContext, node: ast.If) -> list[ast.stmt]:
    """The branch of ``node`` that runs only in a single-process run, or ``[]``:
    ``if args.local_rank == -1:`` (-1 is the launcher's "not distributed") and the ``else`` of
    ``!= -1``; and of a process-count test (``if cfg.NUM_GPU > 1:`` / ``== 1``) whose other branch
    combines across ranks (Cream ``reduced_loss = reduce_tensor(loss.data, n)`` there, the raw loss
    here): the count is the world size, and one process holds the global value."""
    test = node.test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # ``if args.local_rank == -1 and args.evaluate_during_training:``: one conjunct suffices
        one_only = any(_rank_unset(c) == "body" for c in test.values)
        return node.body if one_only else []
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return []
    unset = _rank_unset(test)
    if unset is not None:
        return node.body if unset == "body" else node.orelse
    op, right = test.ops[0], test.comparators[0]
    value = right.value if isinstance(right, ast.Constant) else None
    if (value == 1 and isinstance(op, (ast.Gt, ast.NotEq))) or (value == 2 and isinstance(op, ast.GtE)):
        many, one = node.body, node.orelse
    elif (value == 1 and isinstance(op, (ast.Eq, ast.LtE))) or (value == 2 and isinstance(op, ast.Lt)):
        many, one = node.orelse, node.body
    else:
        return []
    if any(reducing_call(ctx, x) for stmt in many for x in ast.walk(stmt)):
        return one
    return []


# gradient sync without a DDP/FSDP wrap: a model these touch is synchronised by other means
OTHER_SYNC = frozenset(
    {"all_reduce", "allreduce", "DistributedOptimizer", "broadcast_parameters", "initialize", "prepare"}
)


def trains_own_unwrapped_model(ctx: FileContext, fn: ast.AST | None, wraps: list[ast.Call]) -> bool:
    """``fn``, a top-level function, builds the model it optimises from a class (``model =
    SNGPUnet(3, n).to(device)``, every binding of it such a construction), builds the optimizer over
    that model's ``parameters()``, and wraps nothing, while the file's DDP/FSDP ``wraps`` are all in
    other functions (sngp-segmentation's ``self_training_process`` beside ``training_process``, its
    ``model = DDP(...)`` left in a string; a course lab's ``demo_gradient_accumulation`` beside its
    DDP worker): each process trains a model of its own that nothing synchronises, a single-process
    path of the file. Its loaders need no DistributedSampler and its micro-steps all-reduce nothing."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(
        ctx.parents.get(fn), ast.Module
    ):
        return False
    if not wraps or any(ctx.within(w, fn) for w in wraps):
        return False
    local = ctx.local(fn)
    if any(
        (n.attr if isinstance(n, ast.Attribute) else n.id) in OTHER_SYNC
        for n in local
        if isinstance(n, (ast.Attribute, ast.Name))
    ):
        return False
    trained = {
        name
        for n in local
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "parameters"
        and (name := dotted(n.func.value)) is not None
    }
    if not trained:
        return False
    bound = ctx.bindings(fn)
    params = set(parameter_names(fn))
    for name in trained:
        binds = bound.get(name, [])
        if name in params or "." in name or not binds:
            return False
        if not all(isinstance(b, ast.Assign) and _class_construction(ctx, b.value) for b in binds):
            return False
    return True


def _class_construction(ctx: FileContext, value: ast.expr) -> bool:
    """``Net(...)``, also moved or cast (``Net(3, n).to(device)``, ``.cuda()``): a new module of a
    class (named in CapWords), not one a helper may have wrapped."""
    built = unmoved(ctx, value)
    if not isinstance(built, ast.Call):
        return False
    name = built.func.attr if isinstance(built.func, ast.Attribute) else getattr(built.func, "id", "")
    return name[:1].isupper()
