"""rank0-only-loss-log: the training loss is logged from rank 0 without a cross-rank reduction.

Each rank's loss is the mean over its own micro-batch; rank 0's value alone has about
sqrt(world size) times the standard deviation of the global mean, so the curve looks unstable
when the training is not (the global loss is ``all_reduce(loss) / world_size``). Flagged when, in
one function, a value derived from the tensor passed to backward (or returned by a helper that
runs backward), with no all-reduce/gather/reduce on the way, is logged on rank 0 only:

- by a logging call (print, logger.*, wandb/TensorBoard/tqdm style, ``pbar.desc = ...``) under a
  rank-0 test (``lint/rank0.py``: ``rank == 0``, ``RANK in {-1, 0}``, ``not fsdp or rank == 0`` ...);
- by a call that logs on rank 0 by itself (``fabric.print``, ``fabric.log_dict``,
  ``accelerator.print``, ``print0``/``print_rank_0``, a project function that only logs under a
  rank-0 test);
- through an object that exists on rank 0 only (``writer = SummaryWriter() if rank == 0 else None``,
  also built in another file in project mode).

Derived values follow assignments, the other outputs of the loss call (``loss, items =
criterion(...)``), and metric objects updated with them (``meter.update(loss.item())``) unless the
object syncs (torchmetrics ``compute()`` with the default ``sync_on_compute=True``). A logged name
whose latest binding before the log is not the training value (a validation loop under
``torch.no_grad()`` reusing ``loss``) is not flagged. nanoGPT's rank-0 ``lossf`` print is a case.

Also rank 0 only: the plain ``logger.info(...)`` calls of a project whose logging configuration
silences the other ranks (``lint/rank0.py`` ``silences_other_ranks``: MSN/I-JEPA ``setLevel(ERROR)``
off rank 0, YOLOX's loguru sink added on rank 0 only), a tqdm bar built with ``disable=not
is_main_process``, and Lightning's ``self.log``/``self.log_dict`` without ``sync_dist=True`` in
``training_step`` (the logger runs on rank 0; the epoch aggregate is rank 0's own mean), where the
loss is what ``training_step`` returns. Names that say they hold something else (``acc``,
``top1``, ``prob``, ``lr``, ``grad_norm``) are never the loss, even when they come out of the same
call. The message says what the value is: the loss itself, a meter or running sum fed with it, or
a value computed from it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.idioms import SYNC_ON_COMPUTE
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rank0 import (
    LOG_ATTRS,
    enclosing_rank0_if,
    is_log_call,
    is_logger_call,
    is_not_rank0_test,
    is_rank0_log_call,
    is_rank0_test,
    rank0_predicates,
    silences_other_ranks,
)
from ddp_doctor.lint.rules.base import Rule, Violation

REDUCE_WORDS = frozenset({"reduce", "allreduce", "gather", "allgather", "average", "sync", "synchronize"})
NOT_REDUCE_WORDS = frozenset({"batchnorm", "bn", "convert", "time", "timer"})
TAINT_PASSES = 3  # assignment chains like loss -> lossf -> running_loss
UPDATE_METHODS = frozenset({"update", "append", "add", "extend", "add_", "__call__"})
NO_GRAD = re.compile(r"(no_grad|inference_mode|evaluate|eval)", re.IGNORECASE)
# Names that say what they hold, and it is not the training loss: accuracies, probabilities, rates,
# norms, validation/evaluation values.
NOT_A_LOSS = re.compile(
    r"^(acc\w*|\w*_acc\w*|top_?\d\w*|prec\w*|recall\w*|f1\w*|iou\w*|miou\w*|auc\w*|\w*prob\w*|p|"
    r"\w*_p|\w*_score|score\w*|correct\w*|\w*_lr|lr\w*|learning_rate|\w*grad_norm\w*|\w*_norm|"
    r"\w*ratio\w*|\w*_time|\w*temperature\w*|\w*_temp|(val|valid|eval|test)_\w*)$",
    re.IGNORECASE,
)
# Names of a loss call's other outputs that carry loss values (YOLO ``loss_items``, taming
# ``log_dict_ae``, ``stats``); other outputs (``mean_path_length``, ``report``) are something else.
LOSS_CARRIER = re.compile(r"loss|log|stat|metric|item|dict|terms|parts", re.IGNORECASE)
# A test that is true only when not distributed: ``not args.distributed``, ``world_size == 1``.
DISTRIBUTED_FLAG = re.compile(r"distributed|ddp|world_size|is_initialized|multiprocessing", re.IGNORECASE)
LIGHTNING_STEP = "training_step"
LIGHTNING_LOG = frozenset({"log", "log_dict"})


class Rank0OnlyLossLog(Rule):
    id = "rank0-only-loss-log"
    flagged = (
        "a logging call (print, logger, wandb, TensorBoard, tqdm) under a rank-0 guard (by what it "
        "tests; see above), a rank-0-only call or object, a logger the logging setup silences off "
        "rank 0, or Lightning `self.log` without `sync_dist=True` in `training_step`, logs a value "
        "derived from the backward tensor (or from a same-file helper that returns it; in Lightning, "
        "what `training_step` returns) with no all-reduce/gather/reduce on the way; the message names"
        " the value and its kind"
    )
    not_flagged = (
        "all-reduced or `reduce_mean`-style helper values, every rank logging, validation losses, "
        "accuracies/probabilities/lr/val metrics, `sync_dist=True` / `rank_zero_only=True`"
    )
    required = (("backward", "scaler", "loss_scaler", "log", "log_dict"),)  # log: Lightning self.log

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        backward_scopes: dict[int, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module] = {}
        for n in ctx.of_type(ast.Call):
            if facts.backward(n):
                scope = ctx.enclosing_function(n)
                backward_scopes[id(scope)] = scope
        lightning = _lightning_steps(ctx)
        for key, step in lightning.items():
            backward_scopes[key] = step
        returns_loss = {
            key for key, fn in backward_scopes.items() if _tainted(ctx, facts, fn, set(), lightning).returns
        }
        scopes = dict(backward_scopes)
        for n in ctx.of_type(ast.Call) if returns_loss else ():  # callers of helpers returning the local loss
            if id(ctx.helper(n)) in returns_loss:
                scope = ctx.enclosing_function(n)
                scopes[id(scope)] = scope
        predicates = rank0_predicates(ctx.tree)
        quiet = silences_other_ranks(ctx.tree, predicates)
        if ctx.project is not None:
            predicates |= ctx.project.rank0_predicates
            quiet |= ctx.project.silences_other_ranks
        rank0_objects = _rank0_objects(ctx, predicates)
        seen: set[int] = set()
        for scope in scopes.values():
            taint = _tainted(ctx, facts, scope, returns_loss, lightning)
            tainted = taint.names
            if not tainted:
                continue
            # the scope's own logs, and those of closures defined in it (MSN's ``def log_stats():``
            # inside the training loop reads the loop's meters)
            regions = [scope] + [
                f for f in ctx.local(scope) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            logs = [
                item
                for region in regions
                for item in _rank0_logs(
                    ctx, region, rank0_objects, predicates, quiet, id(region) in lightning
                )
            ]
            for node, guard, how in logs:
                if id(node) in seen:
                    continue
                values = _logged_values(node)
                names = {n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name)}
                hit = sorted(
                    n for n in names & tainted if _training_binding(ctx, facts, scope, n, node, taint)
                )
                if not hit:
                    continue
                seen.add(id(node))
                name = min(hit, key=lambda h: (_kind(h, taint).en != "the loss", h))
                kind = _kind(name, taint)
                if guard is not None:
                    where = Text(
                        f"under the rank-0 check at line {guard.lineno}",
                        f"在第 {guard.lineno} 行的 rank 0 判断下",
                    )
                else:
                    where = how
                yield self.violation(
                    node,
                    Text(
                        f"`{name}` ({kind.en}) is logged {where.en} with no all-reduce on the way: it is rank 0's "
                        "local value, noisier than the global loss.",
                        f"`{name}`（{kind.zh}）{where.zh}被记录，途中没有 all-reduce：它只是 rank 0 的本地值。",
                    ),
                    guard_line=guard.lineno if guard is not None else None,
                    value=name,
                    value_kind=kind.en,
                )


def _kind(name: str, taint: Taint) -> Text:
    """What the logged name holds, in words: the value is named in the message."""
    if name in taint.roots:
        return Text("the loss", "损失本身")
    if name in taint.updates:
        return Text("a meter fed with the loss", "用损失更新的计量器")
    return Text("a value computed from the loss", "由损失计算出的值")


def _lightning_steps(ctx: FileContext) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Lightning ``training_step`` methods (of a class with a base): Lightning runs backward on
    what they return."""
    if LIGHTNING_STEP not in ctx.functions:
        return {}
    out: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for fn in ctx.functions.get(LIGHTNING_STEP, []):
        owner = ctx.parents.get(fn)
        if isinstance(owner, ast.ClassDef) and owner.bases:
            out[id(fn)] = fn
    return out


def _rank0_objects(ctx: FileContext, predicates: set[str]) -> set[str]:
    """Last parts of names bound only on rank 0, in this file or (project mode) anywhere; and
    progress bars shown on rank 0 only (``tqdm(..., disable=not accelerator.is_main_process)``)."""
    out: set[str] = set(ctx.project.rank0_objects) if ctx.project is not None else set()
    for node in ctx.of_type(ast.Assign):
        value = node.value
        rank0_only = (
            isinstance(value, ast.IfExp)
            and isinstance(value.orelse, ast.Constant)
            and value.orelse.value is None
            and is_rank0_test(value.test, predicates)
            and isinstance(value.body, ast.Call)
        )
        if rank0_only or (isinstance(value, ast.Call) and _disabled_off_rank0(value, predicates)):
            out |= {d.split(".")[-1] for t in node.targets if (d := dotted(t))}
    for with_node in ctx.of_type(ast.With):
        for item in with_node.items:
            expr, var = item.context_expr, item.optional_vars
            if isinstance(expr, ast.Call) and var is not None and _disabled_off_rank0(expr, predicates):
                out |= {d.split(".")[-1] for d in [dotted(var)] if d}
    return out


def _disabled_off_rank0(call: ast.Call, predicates: set[str]) -> bool:
    flag = keyword(call, "disable")
    return flag is not None and is_not_rank0_test(flag, predicates)


def _rank0_logs(
    ctx: FileContext,
    scope: ast.AST,
    rank0_objects: set[str],
    predicates: set[str],
    quiet: bool,
    lightning: bool,
) -> Iterator[tuple[ast.AST, ast.If | None, Text]]:
    """(log node, its rank-0 guard or None, how it is rank 0 only) for every rank-0-only log in ``scope``."""
    for node in ctx.local(scope):
        if isinstance(node, ast.Call):
            guard = _guard(ctx, node, predicates)
            if guard is not None and is_log_call(node):
                yield node, guard, Text("", "")
                continue
            if is_rank0_log_call(node):
                yield node, None, Text("by a call that runs on rank 0 only", "由仅在 rank 0 执行的调用")
                continue
            m = method(node)
            if (
                m
                and m[0]
                and m[0].split(".")[-1] in rank0_objects
                and m[1] not in ("close", "flush", "finish")
            ):
                yield (
                    node,
                    None,
                    Text(f"through `{m[0]}` (it exists on rank 0 only)", f"通过仅存在于 rank 0 的 `{m[0]}`"),
                )
                continue
            if quiet and is_logger_call(node):
                yield (
                    node,
                    None,
                    Text(
                        "by a logger that the logging setup silences on other ranks",
                        "由日志配置只在 rank 0 输出的记录器",
                    ),
                )
                continue
            if lightning and m is not None and m[0] == "self" and m[1] in LIGHTNING_LOG and _not_synced(node):
                yield (
                    node,
                    None,
                    Text(
                        "by Lightning's `self.log` without `sync_dist=True` (rank 0 writes it; epoch means stay per rank)",
                        "由未设 `sync_dist=True` 的 Lightning `self.log`（只由 rank 0 写出，epoch 平均也不跨 rank）",
                    ),
                )
                continue
            if ctx.project is not None:
                summary = ctx.project.summary_for(ctx, node.func)
                if summary is not None and summary.logs_rank0:
                    yield node, None, Text("by a call that runs on rank 0 only", "由仅在 rank 0 执行的调用")
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr in LOG_ATTRS for t in node.targets
        ):
            guard = _guard(ctx, node, predicates)
            if guard is not None:
                yield node, guard, Text("", "")


def _not_synced(call: ast.Call) -> bool:
    """``self.log(...)`` that neither all-reduces (``sync_dist=True``) nor is a rank-zero-only value
    by choice (``rank_zero_only=True`` says the author knows)."""
    for name in ("sync_dist", "rank_zero_only"):
        flag = keyword(call, name)
        if flag is not None and not (isinstance(flag, ast.Constant) and flag.value is False):
            return False
    return not any(k.arg is None for k in call.keywords)  # **kwargs may carry sync_dist


def _guard(ctx: FileContext, node: ast.AST, predicates: set[str]) -> ast.If | None:
    return enclosing_rank0_if(
        ctx.parents, node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda), predicates
    )


def _logged_values(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Call):
        return [*node.args, *(k.value for k in node.keywords)]
    if isinstance(node, ast.Assign):
        return [node.value]
    return []


def _training_binding(
    ctx: FileContext, facts: LoopFacts, scope: ast.AST, name: str, at: ast.AST, taint: Taint
) -> bool:
    """The latest binding of ``name`` before ``at`` holds the training value: a plain assignment
    reads a tainted name, and it is not in an evaluation-only region (a ``with torch.no_grad()``
    block or a loop that never backprops, while the log is outside it)."""
    line = getattr(at, "lineno", 0)
    before = [b for b in ctx.bindings(scope).get(name, []) if b.lineno < line]
    if not before:
        return True
    binding = before[-1]
    if isinstance(binding, ast.Assign) and any(
        isinstance(x, ast.Name) and x.id in taint.gathered for x in ast.walk(binding.value)
    ):
        return False  # rebound from gathered values: ``loss = sum(all_gather(loss)) / n``
    updated = any(binding.lineno < u < line for u in taint.updates.get(name, ()))
    if (
        name not in taint.roots
        and not updated
        and isinstance(binding, ast.Assign)
        and len(binding.targets) == 1
        and isinstance(binding.targets[0], ast.Name)
        and not any(isinstance(x, ast.Name) and x.id in taint.names for x in ast.walk(binding.value))
        and not (isinstance(binding.value, ast.Call) and ctx.helper(binding.value) is not None)
    ):
        return False  # rebound to something else (val metrics reusing the name `metrics`)
    cur = ctx.parents.get(binding)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
            NO_GRAD.search(
                dotted(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr) or ""
            )
            for i in cur.items
        ):
            return _inside(ctx, at, cur)
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)) and not facts.has_backward(cur.body):
            return _inside(ctx, at, cur)
        cur = ctx.parents.get(cur)
    return True


def _inside(ctx: FileContext, node: ast.AST, region: ast.AST) -> bool:
    return ctx.position(region) <= ctx.position(node) < ctx.subtree_end(region)


@dataclass(frozen=True)
class Taint:
    names: set[str]  # names holding the local training loss
    returns: bool  # the scope returns one of them
    roots: set[str]  # names backward runs on
    updates: dict[str, list[int]]  # object name -> lines of ``obj.update(<value>)``-style calls
    gathered: set[str]  # names assigned from a reduce/gather call (``parts = all_gather(loss)``)


def _tainted(  # noqa: PLR0915 - one walk over the scope collects roots, reductions, meter updates and flows in statement order; the fixed points below read them together
    ctx: FileContext,
    facts: LoopFacts,
    scope: ast.AST,
    returns_loss: set[int],
    lightning: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
) -> Taint:
    """Names holding the local training loss in ``scope``, and whether ``scope`` returns one."""
    nodes = ctx.local(scope)
    reduced: set[str] = set()
    tainted: set[str] = set()
    synced_metrics: set[str] = set()
    roots: set[str] = set()  # the names backward runs on: their own binding is the forward
    updates: dict[str, list[int]] = {}
    gathered: set[str] = set()
    if lightning and id(scope) in lightning:  # Lightning runs backward on what training_step returns
        for r in nodes:
            if isinstance(r, ast.Return) and r.value is not None:
                value = r.value
                if isinstance(value, ast.Dict):  # return {"loss": loss, ...}
                    value = next(
                        (
                            v
                            for k, v in zip(value.keys, value.values)
                            if isinstance(k, ast.Constant) and k.value == "loss"
                        ),
                        ast.Constant(None),
                    )
                roots |= _loss_names(value)
        tainted |= roots
    all_flows: list[tuple[set[str], set[str]]] = []
    flows: list[tuple[set[str], set[str]]] = []  # (names read, names written) of non-reducing assignments
    for n in nodes:
        if isinstance(n, ast.Call):
            name = dotted(n.func) or ""
            if _is_reduce(name) and isinstance(ctx.parents.get(n), ast.Expr):
                # in place (a statement): dist.all_reduce(t), meter.synchronize_between_processes()
                reduced |= {x.id for a in n.args[:1] for x in ast.walk(a) if isinstance(x, ast.Name)}
                reduced |= _iterated_containers(ctx, n)  # for v in stats.values(): all_reduce(v)
                if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
                    reduced.add(n.func.value.id)  # metric_logger.synchronize_between_processes()
            bw = facts.backward(n)
            if bw is not None and bw.root is not None:
                names = _loss_names(bw.root)
                names |= _scaled_from(ctx, scope, names)  # with amp.scale_loss(loss, opt) as scaled_loss
                tainted |= names
                roots |= names
            m = method(n)
            if (
                m
                and m[0]
                and "." not in m[0]
                and m[1] in UPDATE_METHODS
                and n.args + n.keywords
                and not _single_process_only(ctx, n)
            ):
                # meter.update(loss.item()) / losses.append(loss): the object now holds the loss
                read = {x.id for a in _logged_values(n) for x in ast.walk(a) if isinstance(x, ast.Name)}
                flows.append((read, {m[0]}))
                updates.setdefault(m[0], []).append(n.lineno)
        elif (
            isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and n.value is not None
            and not _single_process_only(ctx, n)
        ):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            written = {x.id for t in targets for x in _bound_names(t)}
            if isinstance(n.value, ast.Call):
                fn = ctx.helper(n.value)
                if fn is not None and id(fn) in returns_loss:
                    tainted |= written
                if _synced_metric(ctx, n.value):
                    synced_metrics |= written
                if any(isinstance(t, ast.Tuple) for t in targets):
                    # loss, loss_items = criterion(...): the other outputs that say they hold loss
                    # values share the loss's fate (not ``mean_path_length`` or ``report``)
                    flows.append((written, {w for w in written if LOSS_CARRIER.search(w)}))
            value_nodes = ctx.local(n.value)
            if any(type(x) is ast.Call and _is_reduce(dotted(x.func) or "") for x in value_nodes):
                gathered |= written
            all_flows.append(({x.id for x in value_nodes if type(x) is ast.Name}, written))
            if not any(
                type(x) is ast.Call and (_is_reduce(dotted(x.func) or "") or _compute_of(x) in synced_metrics)
                for x in value_nodes
            ):
                flows.append(({x.id for x in value_nodes if type(x) is ast.Name}, written))
    for _ in range(TAINT_PASSES if gathered else 0):
        for read, written in all_flows:
            if read & gathered:
                gathered |= written
    tainted -= reduced
    tainted = {t for t in tainted if t in roots or not NOT_A_LOSS.match(t)}
    if tainted:
        flows = [(read, written - synced_metrics) for read, written in flows]
        for _ in range(TAINT_PASSES):
            for read, written in flows:
                if read & tainted:
                    tainted |= {w for w in written - reduced if not NOT_A_LOSS.match(w)}
    returns = bool(tainted) and any(
        isinstance(r, ast.Return)
        and r.value is not None
        and any(isinstance(x, ast.Name) and x.id in tainted for x in ast.walk(r.value))
        for r in nodes
    )
    return Taint(tainted, returns, roots, updates, gathered)


def _single_process_only(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs only when training is not distributed: under ``if not args.distributed:`` /
    ``if world_size == 1:``, or in the else of ``if args.distributed:`` (apex/timm update the meter
    with the raw loss there and with the reduced one otherwise): rank 0's value is the global one."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(cur, ast.If) and DISTRIBUTED_FLAG.search(ctx.segment(cur.test)):
            test = cur.test
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            one_process = (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Eq, ast.LtE))
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value == 1
            )
            if (negated or one_process) and child in cur.body:
                return True
            if isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and child in cur.orelse:
                return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _iterated_containers(ctx: FileContext, call: ast.Call) -> set[str]:
    """``for v in stats.values(): dist.all_reduce(v)``: reducing the loop variable reduces ``stats``."""
    arg = call.args[0] if call.args else None
    if not isinstance(arg, ast.Name):
        return set()
    cur = ctx.parents.get(call)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.For) and isinstance(cur.target, ast.Name) and cur.target.id == arg.id:
            it = (
                cur.iter.func.value
                if isinstance(cur.iter, ast.Call) and isinstance(cur.iter.func, ast.Attribute)
                else cur.iter
            )
            return {d} if (d := dotted(it)) and "." not in d else set()
        cur = ctx.parents.get(cur)
    return set()


def _scaled_from(ctx: FileContext, scope: ast.AST, names: set[str]) -> set[str]:
    """The loss behind a scaled alias: ``with amp.scale_loss(loss, optimizer) as scaled_loss:``."""
    out: set[str] = set()
    for n in ctx.local(scope):
        if isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                var = item.optional_vars
                if isinstance(var, ast.Name) and var.id in names and isinstance(item.context_expr, ast.Call):
                    out |= {a.id for a in item.context_expr.args[:1] if isinstance(a, ast.Name)}
    return out


def _is_reduce(name: str) -> bool:
    """A call that combines values across ranks, by its last name's words (``all_reduce``,
    ``reduce_dict``, ``all_gather``, ``synchronize_between_processes``; not ``convert_sync_batchnorm``
    nor ``time_sync``)."""
    words = set(name.split(".")[-1].lower().split("_"))
    return bool(words & REDUCE_WORDS) and not words & NOT_REDUCE_WORDS


def _bound_names(target: ast.AST) -> Iterator[ast.Name]:
    """Names a target binds: ``x``, ``a, (b, *c)``, and the container of ``stats["loss"] = ...``
    (it now holds the value) — not the base of ``obj.attr = ...``."""
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        yield target.value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _bound_names(e)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _synced_metric(ctx: FileContext, call: ast.Call) -> bool:
    """A torchmetrics-style metric that all-reduces in ``compute()`` (``sync_on_compute`` not False)."""
    flag = keyword(call, SYNC_ON_COMPUTE)
    if flag is not None:
        return not (isinstance(flag, ast.Constant) and flag.value is False)
    qual = ctx.call_qualname(call) or ""
    return qual.startswith(("torchmetrics.", "lightning.", "pytorch_lightning.")) and "Metric" in qual


def _compute_of(call: ast.Call) -> str | None:
    m = method(call)
    return m[0] if m and m[1] == "compute" else None


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
