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
  rank-0 test, or one behind a project decorator whose wrapper calls it on rank 0 only:
  ``@master_only``);
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
from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.idioms import RANK0_FUNCTION
from ddp_doctor.lint.logged_helpers import constructed_method
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.project import parameters_logged
from ddp_doctor.lint.provenance import LossFlow, Taint, alarm, loop_aliases, reads, single_process_only
from ddp_doctor.lint.rank0 import (
    LOG_ATTRS,
    bound_argument,
    class_flags,
    enclosing_rank0_if,
    is_log_call,
    is_logger_call,
    is_not_rank0_test,
    is_plain_print,
    is_rank0_log_call,
    is_rank0_test,
    rank0_locals,
    rank0_parameters,
    rank0_predicates,
    silenced_stdout,
    silences_other_ranks,
)
from ddp_doctor.lint.rank0_handoff import unpacked_rank0
from ddp_doctor.lint.rank0_sinks import sink_names
from ddp_doctor.lint.rules.base import Rule, Violation
from ddp_doctor.lint.rules.sampler_missing import DISTRIBUTED_WORDS

NO_GRAD = re.compile(r"(no_grad|inference_mode|evaluate|eval)", re.IGNORECASE)
LIGHTNING_LOG = frozenset({"log", "log_dict"})
# What a validation loop iterates, and the forward it runs.
DATA_NAME = re.compile(r"load|data|batch|val|eval|test|sample|iter", re.IGNORECASE)
FORWARD_NAME = re.compile(r"(model|net|engine|ddp|fsdp|module|encoder|decoder|forward)$", re.IGNORECASE)


class Rank0OnlyLossLog(Rule):
    id = "rank0-only-loss-log"
    project_facts = frozenset({"rank0_logging", "loss_flow"})
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
        "accuracies/probabilities/lr/val metrics, `sync_dist=True` / `rank_zero_only=True`, values "
        "read where one process runs (`if args.local_rank == -1:`, the raw branch of `if n_gpu > 1: "
        "reduce`), a rank-0 writer's other calls after it was fed the loss"
    )
    required = (("backward", "scaler", "loss_scaler", "log", "log_dict"),)  # log: Lightning self.log
    # project mode: the loss may come from a project function (``logs = model.current_log()``)
    required_in_project = required

    def project_words(self, project: Any) -> tuple[str, ...]:
        return project.loss_returning_names()  # type: ignore[no-any-return]  # ProjectIndex

    def applies(self, ctx: FileContext) -> bool:
        # project mode: a file may define what other files backprop (a loss module's ``forward``,
        # ViLT's objective functions) without naming any of the words above
        # (or be handed the loss by code of another file: rsl_rl's ``Logger.log(..., loss_dict, ...)``),
        # and a Lightning ``training_step`` is backpropagated by the framework (0.x: its ``'log'`` dict)
        return (
            super().applies(ctx)
            or "training_step" in ctx.functions
            or (
                ctx.project is not None
                and (bool(ctx.project.backpropagated_defs(ctx)) or bool(ctx.project.handed_params(ctx)))
            )
        )

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        found = [
            (v, call)
            for v, call, node in self._check(ctx, facts)
            # a base-class method every project subclass overrides never runs (Amphion's
            # ``TTSTrainer._train_epoch``): what it would log is no event of the run
            if ctx.project is None or not ctx.project.dead_override_base(ctx, ctx.enclosing_function(node))
        ]
        # one logging event, one finding, where the rank-0 test is: a call of a def of this file
        # that logs what it is handed is reported inside that def when the def tests the rank
        # itself (seed-vc ``self._log_training_progress(epoch, i, loss, ...)``, whose body runs
        # under ``is_main_process``), and at the call when the call is the guarded one and the
        # def is rank 0's only through its callers (``if is_master(): print_step(step, loss)``)
        inner: dict[int, list[Violation]] = {}
        for v, call in found:
            fn = (ctx.helper(call) or constructed_method(ctx, call)) if call is not None else None
            end = getattr(fn, "end_lineno", None)
            if fn is not None and end is not None:
                inner[id(v)] = [w for w, _ in found if w is not v and fn.lineno <= w.line <= end]
        dropped: set[int] = set()
        for v, _ in found:
            calls_into = inner.get(id(v))
            if not calls_into:
                continue
            if _guarded(v) and not any(_guarded(w) for w in calls_into):
                dropped |= {id(w) for w in calls_into}
            else:
                dropped.add(id(v))
        for v, _ in found:
            if id(v) not in dropped:
                yield v

    def _check(
        self, ctx: FileContext, facts: LoopFacts
    ) -> Iterator[tuple[Violation, ast.Call | None, ast.AST]]:
        flow = LossFlow(ctx, facts)
        if not flow.taints:
            return
        predicates = rank0_predicates(ctx.tree, [f for defs in ctx.functions.values() for f in defs])
        quiet = silences_other_ranks(ctx.tree, predicates, ctx.parents)
        if ctx.project is not None:
            predicates |= ctx.project.rank0_predicates
            quiet |= ctx.project.silences_logging(ctx.module, _configures_logging(ctx))
        rank0_objects = _rank0_objects(ctx, predicates)
        # ``sys.stdout = open(os.devnull, "w")`` off rank 0: this file's prints show rank 0's values
        silencer = silenced_stdout(ctx.of_type(ast.Assign), ctx.parents, predicates)
        stdout = None if silencer is None else ("", silencer.lineno)
        if stdout is None and ctx.project is not None:
            # ``builtins.print`` replaced off rank 0 by code this module reaches (MAE/DeiT
            # ``setup_for_distributed`` in ``util/misc.py``)
            found = ctx.project.silences_print(ctx.module)
            # only in a file that runs under a process group: a single-process script importing the
            # same utilities never calls the code that replaces ``print`` (TabPFN's style search)
            if found is not None and (
                ctx.imports_module("torch.distributed") or ctx.mentions(*DISTRIBUTED_WORDS, "rank")
            ):
                stdout = (found[0], found[1])
        seen: set[int] = set()
        for key, scope in flow.scopes.items():
            taint = flow.taints[key]
            if not taint.names:
                continue
            # the scope's own logs, and those of closures defined in it (MSN's ``def log_stats():``
            # inside the training loop reads the loop's meters)
            regions = [scope] + [
                f for f in ctx.local(scope) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            logs = [
                item
                for region in regions
                for local in [
                    predicates
                    | _rank0_flags(ctx, region, predicates)
                    | rank0_locals(region, ctx.local(region), predicates, ctx.parents)
                    | _handed_flags(ctx, region)
                    | _own_class_flags(ctx, region, predicates)
                ]
                for item in _rank0_logs(
                    ctx,
                    region,
                    rank0_objects | _bars_off_rank0(ctx, region, local),
                    local,
                    quiet,
                    _lightning_receivers(ctx, flow, region),
                    stdout,
                    ctx.project is not None and ctx.project.rank0_called(ctx, region),
                )
            ]
            for node, guard, how in logs:
                if id(node) in seen or single_process_only(ctx, node):
                    continue  # (a log of the single-process run: ``if args.local_rank == -1:``)
                values = _logged_values(ctx, node, rank0_objects)
                names = reads((x for v in values for x in ast.walk(v)), taint.fields)
                names |= loop_aliases(ctx, node, names)
                hit = sorted(
                    n
                    for n in names & taint.names
                    if _training_binding(flow, scope, n, node, taint)
                    and not _fields_rebound_uncoupled(ctx, scope, n, values, node, taint)
                )
                if not hit or alarm(ctx, node, taint.names - set(taint.updates), taint.fields):
                    continue  # not the loss, or a warning that fires on its value (``if loss > 12:``)
                if set(hit) <= taint.params and _inside_rank0_printer(ctx, node):
                    continue  # ``def print0(s): if master_process: print(s)``: its callers' calls are the logs
                seen.add(id(node))
                # the loss itself first, then a name that says it is a loss (`total_loss` before `nan_share`)
                name = min(hit, key=lambda h: (_kind(h, taint).en != "the loss", "loss" not in h.lower(), h))
                kind = _kind(name, taint)
                if guard is not None:
                    where = Text(
                        f"under the rank-0 check at line {guard.lineno}",
                        f"在第 {guard.lineno} 行的 rank 0 判断下",
                    )
                else:
                    where = how
                yield (
                    self.violation(
                        node,
                        Text(
                            f"`{name}` ({kind.en}) is logged {where.en} with no all-reduce on the way: it is "
                            "rank 0's local value, noisier than the global loss.",
                            f"`{name}`（{kind.zh}）{where.zh}被记录，途中没有 all-reduce：它只是 rank 0 的本地值。",
                        ),
                        guard_line=guard.lineno if guard is not None else None,
                        value=name,
                        value_kind=kind.en,
                    ),
                    node if isinstance(node, ast.Call) and not is_log_call(node) else None,
                    node,
                )


def _guarded(v: Violation) -> bool:
    """The finding's log sits under a rank-0 test of its own function."""
    return v.evidence.get("guard_line") is not None


def _configures_logging(ctx: FileContext) -> bool:
    """The file calls ``logging.basicConfig`` itself."""
    return ctx.mentions("basicConfig") and any(
        isinstance(c.func, ast.Attribute) and c.func.attr == "basicConfig" for c in ctx.of_type(ast.Call)
    )


def _kind(name: str, taint: Taint) -> Text:
    """What the logged name holds, in words: the value is named in the message."""
    if name in taint.roots:
        return Text("the loss", "损失本身")
    if name in taint.updates:
        return Text("a meter fed with the loss", "用损失更新的计量器")
    if name in taint.terms:
        return Text("a term of the loss", "损失的一项")
    if name in taint.carriers:
        return Text("a container the loss is read from", "存放损失的容器")
    if name in taint.params:
        return Text("a parameter the training code passes the loss in", "训练代码传入损失的参数")
    return Text("a value computed from the loss", "由损失计算出的值")


def _rank0_objects(ctx: FileContext, predicates: set[str]) -> set[str]:
    """Last parts of names bound only on rank 0, in this file or (project mode) anywhere; and
    progress bars shown on rank 0 only (``tqdm(..., disable=not accelerator.is_main_process)``)."""
    out: set[str] = set(ctx.project.rank0_objects) if ctx.project is not None else set()
    guarded, own = sink_names(ctx, predicates)  # (``if rank == 0: writer = SummaryWriter()``)
    # a spelling this file binds to a writer of its own on every rank is this file's object, not the
    # rank-0 one of another script of the project (CleanRL: ppo.py beside ppo_atari_multigpu.py)
    out = (out | guarded) - own
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


def _bars_off_rank0(ctx: FileContext, region: ast.AST, predicates: set[str]) -> set[str]:
    """Progress bars ``region`` builds hidden off rank 0 by one of its own flags
    (``with tqdm(..., disable=not enable) as t:`` where ``enable`` is a rank-0 parameter)."""
    out: set[str] = set()
    for node in ctx.local(region):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                expr, var = item.context_expr, item.optional_vars
                if isinstance(expr, ast.Call) and var is not None and _disabled_off_rank0(expr, predicates):
                    out |= {d.split(".")[-1] for d in [dotted(var)] if d}
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _disabled_off_rank0(node.value, predicates)
        ):
            out |= {d.split(".")[-1] for t in node.targets if (d := dotted(t))}
    return out


def _rank0_flags(ctx: FileContext, fn: ast.AST, predicates: set[str]) -> set[str]:
    """Parameters of ``fn`` that every call of it in this file binds to a rank-0 test: a module-level
    function called by its (unique) name, or a method called as ``self.name(...)`` in its class."""
    if (
        not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        or len(ctx.functions.get(fn.name, [])) != 1
    ):
        return set()
    owner = ctx.parents.get(fn)
    if owner is ctx.tree:
        calls = [c for c in ctx.calls_named(fn.name) if isinstance(c.func, ast.Name)]
    elif isinstance(owner, ast.ClassDef):
        calls = [
            c
            for c in ctx.calls_named(fn.name)
            if dotted(c.func) == f"self.{fn.name}" and _inside(ctx, c, owner)
        ]
    else:
        return set()
    # calls that cannot reach the backward (``run_epoch(model, val_loader, crit, None, ...)`` when
    # backward runs under ``if optimizer:``) log no training loss: only the training calls decide
    switches = _backward_switches(ctx, fn)
    training = [
        c
        for c in calls
        if not any(
            isinstance(v, ast.Constant) and v.value in (None, False, 0)
            for p in switches
            if (v := bound_argument(fn, c, p)) is not None
        )
    ]
    # a caller's own flag counts (speechbrain ``enable = progressbar and if_main_process()`` handed
    # to ``self._fit_train(..., enable=enable)``)
    return (
        set.intersection(
            *(
                rank0_parameters(fn, [c], predicates | rank0_locals(f, ctx.local(f), predicates))
                for c in training
                for f in [ctx.enclosing_function(c)]
            )
        )
        if training
        else set()
    )


def _handed_flags(ctx: FileContext, region: ast.AST) -> set[str]:
    """(project) Rank-0 tests that reach ``region`` from elsewhere: names it unpacks from a project
    function's returned tuple (``device, is_logger = setup(config)``), and, in a method, the
    ``self.<attr>`` its class keeps from a constructor argument that every construction in the
    project binds to a rank-0 test (neuraloperator ``Trainer(..., verbose=... and is_logger)``)."""
    project = ctx.project
    if project is None or not isinstance(region, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    out = unpacked_rank0(ctx.local(region), lambda call: project.call_rank0_positions(ctx, call))
    owner = ctx.method_owner(region)
    if owner is not None:
        out |= project.rank0_attributes(ctx, owner)
        out |= project.rank0_method_params(ctx, region)  # every call of its name binds them to one
    return out


def _own_class_flags(ctx: FileContext, region: ast.AST, predicates: set[str]) -> set[str]:
    """In a method, the flags its class keeps (``self.disable_logs = is_distributed and rank != 0``)."""
    owner = ctx.parents.get(region)
    if isinstance(region, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(owner, ast.ClassDef):
        return class_flags(owner, predicates)
    return set()


def _inside_rank0_printer(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` is in the body of a function that is itself a rank-0 log call by its name (``print0``,
    ``print_rank_0``): each call of it that logs the loss is reported where it is made."""
    fn = ctx.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return bool(RANK0_FUNCTION.match(fn.name)) or _forwards_to_rank0_log(fn)


def _forwards_to_rank0_log(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``def print(self, msg): return self.accelerator.print(msg)``: the whole body hands its
    arguments to a call that logs on rank 0 by itself; the wrapper is the log call of its callers."""
    body = [
        s
        for s in fn.body
        if not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
    ]
    if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)):
        return False
    value = body[0].value
    return isinstance(value, ast.Call) and is_rank0_log_call(value)


def _backward_switches(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters of ``fn`` that every backward of it runs under (``if optimizer:`` ... ``loss.backward()``)."""
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    out: set[str] | None = None
    for node in ctx.local(fn):
        if not (isinstance(node, ast.Attribute) and node.attr == "backward"):
            continue
        tests: set[str] = set()
        child: ast.AST = node
        cur = ctx.parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, ast.If) and child in cur.body and isinstance(cur.test, ast.Name):
                tests.add(cur.test.id)
            child, cur = cur, ctx.parents.get(cur)
        out = tests & params if out is None else out & tests
    return out or set()


def _disabled_off_rank0(call: ast.Call, predicates: set[str]) -> bool:
    flag = keyword(call, "disable")
    return flag is not None and is_not_rank0_test(flag, predicates)


def _rank0_logs(
    ctx: FileContext,
    scope: ast.AST,
    rank0_objects: set[str],
    predicates: set[str],
    quiet: bool,
    lightning: set[str],
    stdout: tuple[str, int] | None = None,  # (module, line) of the silencing; module "" for this file
    rank0_called: bool = False,
) -> Iterator[tuple[ast.AST, ast.If | None, Text]]:
    """(log node, its rank-0 guard or None, how it is rank 0 only) for every rank-0-only log in ``scope``;
    ``rank0_called``: the project calls ``scope`` under rank-0 tests only."""
    name = getattr(scope, "name", "")
    for node in ctx.local(scope):
        if isinstance(node, ast.Call):
            if _saves_to_file(ctx, node):
                continue  # ``fout.write(yaml.dump(info_dict))``: a file saved, not a log
            if rank0_called and is_log_call(node):
                yield (
                    node,
                    None,
                    Text(
                        f"in `{name}`, which the project calls on rank 0 only",
                        f"在项目只在 rank 0 调用的 `{name}` 中",
                    ),
                )
                continue
            guard = _guard(ctx, node, predicates)
            if guard is not None and (
                is_log_call(node)
                or (ctx.project is not None and ctx.project.call_logged_args(ctx, node) is not None)
                or helper_logged_args(ctx, node)
            ):
                yield node, guard, Text("", "")
                continue
            if is_rank0_log_call(node) or (
                (fn := ctx.helper(node)) is not None
                and _forwards_to_rank0_log(fn)
                and helper_logged_args(ctx, node)
            ):
                # (or a same-file wrapper that only forwards to one: ``self.print(msg)``)
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
            handed = _writer_argument(ctx, node, rank0_objects)
            if handed is not None:
                yield (
                    node,
                    None,
                    Text(
                        f"by handing `{handed}` (it exists on rank 0 only) to `{dotted(node.func)}`",
                        f"通过把仅存在于 rank 0 的 `{handed}` 交给 `{dotted(node.func)}`",
                    ),
                )
                continue
            if stdout is not None and is_plain_print(node):
                yield (
                    node,
                    None,
                    Text(
                        f"by `print` while standard output is silenced on the other ranks "
                        f"({stdout[0] + ', ' if stdout[0] else ''}line {stdout[1]})",
                        f"由 `print`（{stdout[0] + ' ' if stdout[0] else ''}第 {stdout[1]} 行已让其他 rank 的标准输出静默）",
                    ),
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
            if m is not None and m[0] in lightning and m[1] in LIGHTNING_LOG and _not_synced(node):
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
        elif (
            isinstance(node, ast.Dict)
            and "self" in lightning
            and name == "training_step"
            and _log_entry(node)
        ):
            yield (
                node,
                None,
                Text(
                    "in the `'log'` dict `training_step` returns (Lightning 0.x: rank 0's logger writes it)",
                    "在 `training_step` 返回的 `'log'` 字典中（Lightning 0.x：由 rank 0 的记录器写出）",
                ),
            )


LIGHTNING_LOG_KEYS = frozenset({"log", "progress_bar"})


def _log_entry(node: ast.Dict) -> ast.expr | None:
    """The ``"log"`` (or ``"progress_bar"``) entry of a dict: what Lightning 0.x hands its loggers."""
    return next(
        (
            v
            for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and k.value in LIGHTNING_LOG_KEYS
        ),
        None,
    )


def _lightning_receivers(ctx: FileContext, flow: LossFlow, region: ast.AST) -> set[str]:
    """Names that are a Lightning module in ``region``: ``self`` in a method of one, and (project
    mode) a parameter a Lightning module passes itself to (ViLT ``compute_mlm(pl_module, batch)``)."""
    out = {"self"} if flow.in_lightning_module(region) else set()
    if ctx.project is not None:
        out |= ctx.project.lightning_params(ctx, region)
    return out


def _saves_to_file(ctx: FileContext, call: ast.Call) -> bool:
    """``f.write(...)`` where ``f`` is a file opened to save a snapshot (``with open(p, "w") as f:``,
    the innermost such ``with`` or else the latest ``f = open(...)``): a state saved (wenet's
    ``yaml.dump(info_dict)``), not a log. A file opened to append (yolov7's ``open(results_file,
    "a")``) is a log that grows every epoch."""
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name):
        return False
    name = call.func.value.id
    cur = ctx.parents.get(call)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.With, ast.AsyncWith)):
            for item in cur.items:
                if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name:
                    return _opens(item.context_expr)
        cur = ctx.parents.get(cur)
    scope = ctx.enclosing_function(call)
    before = [b for b in ctx.bindings(scope).get(name, []) if b.lineno < call.lineno]
    return bool(before) and isinstance(before[-1], ast.Assign) and _opens(before[-1].value)


def _opens(expr: ast.AST) -> bool:
    if not (isinstance(expr, ast.Call) and (dotted(expr.func) or "").split(".")[-1] == "open"):
        return False
    mode = keyword(expr, "mode") or (expr.args[1] if len(expr.args) > 1 else None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "w" in mode.value


def _writer_argument(ctx: FileContext, call: ast.Call, rank0_objects: set[str]) -> str | None:
    """A rank-0-only writer handed to a call as an argument (icefall ``loss_info.write_summary(tb_writer,
    "train/current_", step)``): what the call writes, it writes on rank 0 only. Not a log call itself,
    nor code the analysis reads (a helper of the file or a project function: its own logs decide)."""
    if is_log_call(call) or ctx.helper(call) is not None:
        return None
    if ctx.project is not None and ctx.project.summary_for(ctx, call.func) is not None:
        return None
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        name = dotted(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
        if name and name.split(".")[-1] in rank0_objects:
            return name
    return None


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


def helper_logged_args(ctx: FileContext, call: ast.Call, depth: int = 2) -> list[ast.expr]:
    """The arguments of ``call`` that the same-file helper it runs logs: directly (``print``,
    ``tracker.log(logs)``), or by handing them to another same-file helper that does (sd-scripts
    ``self.epoch_logging(accelerator, logs, ...)`` → ``self.accelerator_logging(...)`` → ``tracker.log``)."""
    fn = ctx.helper(call) or constructed_method(ctx, call)
    if fn is None:
        return []
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    logged = {p.lstrip("*") for p in parameters_logged(ctx, fn)[0]}
    if depth:
        for inner in ctx.local(fn):
            if isinstance(inner, ast.Call) and not is_log_call(inner):
                handed = helper_logged_args(ctx, inner, depth - 1)
                logged |= reads(x for a in handed for x in ast.walk(a)) & set(params)
    return [a for p in params if p in logged and (a := bound_argument(fn, call, p)) is not None]


# A log's own label that says the value is a validation one: ``'cv/{}'.format(name)`` as a
# TensorBoard tag, ``"val/loss"`` as a dict key, ``f"... cv_loss {x}"`` / ``"val loss %.3f"`` before
# the placeholder that receives it.
VALIDATION_LABEL = re.compile(
    r"(^|[^A-Za-z0-9])(val|valid|validation|cv|eval|evaluation|test)([^A-Za-z0-9]|$)", re.IGNORECASE
)
TAG_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram", "log_metric"})
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]")


def _unlabelled(value: ast.AST) -> list[ast.AST]:
    """The parts of a logged expression its own labels do not call validation values."""
    if isinstance(value, ast.JoinedStr):
        if _opens_with_validation(value.values[0] if value.values else None):
            return []  # ``f"valid -- epoch: {epoch}, loss: {v}"``: the whole message is a validation report
        out: list[ast.AST] = []
        label = ""
        for part in value.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                label = part.value
            elif not VALIDATION_LABEL.search(label):
                out.append(part)
        return out
    template, args = _template(value)
    if template is not None:
        if _opens_with_validation(ast.Constant(template)):
            return []
        labels, start = [], 0  # the text just before each placeholder
        for m in _PLACEHOLDER.finditer(template):
            labels.append(template[start : m.start()])
            start = m.end()
        return [a for i, a in enumerate(args) if not (i < len(labels) and VALIDATION_LABEL.search(labels[i]))]
    if isinstance(value, ast.Dict):
        return [
            v
            for k, v in zip(value.keys, value.values)
            if not (
                isinstance(k, ast.Constant) and isinstance(k.value, str) and VALIDATION_LABEL.match(k.value)
            )
        ]
    return [value]


def _opens_with_validation(part: ast.AST | None) -> bool:
    """A message whose opening words say it reports validation (``"valid -- epoch: ..."``, ``"Eval
    loss ..."``): every value it carries is a validation one, whatever label precedes each."""
    return (
        isinstance(part, ast.Constant)
        and isinstance(part.value, str)
        and bool(VALIDATION_LABEL.match(part.value.lstrip(" [(|-=*#>:\n\t")))
    )


def _template(value: ast.AST) -> tuple[str | None, list[ast.expr]]:
    """``"..." % (a, b)`` / ``"...".format(a, b)``: the template and its positional values."""
    if (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Mod)
        and isinstance(value.left, ast.Constant)
        and isinstance(value.left.value, str)
    ):
        right = value.right
        return value.left.value, list(right.elts) if isinstance(right, ast.Tuple) else [right]
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "format"
        and isinstance(value.func.value, ast.Constant)
        and isinstance(value.func.value.value, str)
        and not value.keywords
        and not any(isinstance(a, ast.Starred) for a in value.args)
    ):
        return value.func.value.value, list(value.args)
    return None, []


def _tag_says_validation(call: ast.Call) -> bool:
    """``writer.add_scalar('cv/{}'.format(name), v, step)``: the tag names a validation value."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in TAG_METHODS and call.args):
        return False
    tag = call.args[0]
    text = (
        tag.value
        if isinstance(tag, ast.Constant) and isinstance(tag.value, str)
        else _template(tag)[0]
        or (
            tag.values[0].value
            if isinstance(tag, ast.JoinedStr) and tag.values and isinstance(tag.values[0], ast.Constant)
            else None
        )
    )
    return isinstance(text, str) and bool(VALIDATION_LABEL.match(text))


def _logged_values(
    ctx: FileContext, node: ast.AST, sinks: set[str] | frozenset[str] = frozenset()
) -> list[ast.AST]:
    values = _raw_logged_values(ctx, node, sinks)
    if isinstance(node, ast.Call) and _tag_says_validation(node):
        return []
    return [part for v in values for part in _unlabelled(v)]


def _raw_logged_values(ctx: FileContext, node: ast.AST, sinks: set[str] | frozenset[str]) -> list[ast.AST]:
    if isinstance(node, ast.Call):
        if not is_log_call(node) and (handed := helper_logged_args(ctx, node)):
            return list(handed)
        if ctx.project is not None and not is_log_call(node):
            found = ctx.project.call_logged_args(ctx, node)  # project logger: the arguments it writes
            if found is not None:
                return list(found)
        receiver = [node.func.value] if isinstance(node.func, ast.Attribute) and not is_log_call(node) else []
        if receiver and (dotted(receiver[0]) or "").split(".")[-1] in sinks:
            # a writer that exists on rank 0 only is where values go, not a value: what
            # ``log_writer.update(lr=lr)`` logs is ``lr``, even after ``log_writer.update(loss=loss)``
            receiver = []
        return [*receiver, *node.args, *(k.value for k in node.keywords)]  # ``meter.write_summary(writer)``
    if isinstance(node, ast.Assign):
        return [node.value]
    if isinstance(node, ast.Dict) and (entry := _log_entry(node)) is not None:
        return [entry]
    return []


def _training_binding(
    flow: LossFlow, scope: ast.AST, name: str, at: ast.AST, taint: Taint, depth: int = 2
) -> bool:
    """The latest binding of ``name`` before ``at`` holds the training value: a plain assignment
    reads a tainted name whose own latest binding holds it (``depth`` levels: sd-scripts rebinds
    ``avr_loss`` and ``logs`` to validation values after using them for the training loss), and it
    is not in an evaluation-only region (a ``with torch.no_grad()`` block or a loop over data that
    never backprops, while the log is outside it)."""
    ctx = flow.ctx
    line = getattr(at, "lineno", 0)
    before = [b for b in ctx.bindings(scope).get(name, []) if b.lineno < line]
    if not before:
        return True
    # ``rs["valid"] = evaluate(...)`` stores one item: the container still holds what the item
    # stores since its latest whole binding put in it (``rs["train"] = run_epoch(...)``)
    last = max((i for i, b in enumerate(before) if not _item_store(b, name)), default=-1)
    candidates = before[max(last, 0) :]
    return any(_holds_training_value(flow, scope, name, b, at, taint, depth) for b in candidates)


def _holds_training_value(
    flow: LossFlow, scope: ast.AST, name: str, binding: ast.AST, at: ast.AST, taint: Taint, depth: int
) -> bool:
    ctx = flow.ctx
    line = getattr(at, "lineno", 0)
    if isinstance(binding, ast.Assign) and any(
        isinstance(x, ast.Name) and x.id in taint.gathered for x in ast.walk(binding.value)
    ):
        return False  # rebound from gathered values: ``loss = sum(all_gather(loss)) / n``
    bound_at = getattr(binding, "lineno", 0)
    if _item_store(binding, name) and isinstance(binding, ast.Assign):
        # ``opt_metrics["mode"] = "opt"``: an item that does not read the loss leaves the container
        # with what its whole binding put in it (MACE's LBFGS branch: a helper's all-reduced loss)
        stored = binding.value
        read = reads(ast.walk(stored), taint.fields)
        read |= loop_aliases(ctx, binding, read)  # ``for k, v in loss_dict.items(): logs[k] = v``
        if not read & taint.names and not (
            isinstance(stored, ast.Call)
            and (ctx.helper(stored) is not None or flow.call_shape(stored) is not None)
        ):
            return False
    updated = any(bound_at < u < line for u in taint.updates.get(name, ()))
    if (
        isinstance(binding, ast.Assign)
        and isinstance(binding.targets[0], ast.Tuple)
        and isinstance(binding.value, ast.Call)
        and ctx.helper(binding.value) is not None
        and flow.call_shape(binding.value) is None
        and not updated
    ):
        # ``_, opt_metrics = take_step_lbfgs(...)``: a same-file helper none of whose results is the
        # local loss (MACE's LBFGS step all-reduces it) rebinds the name the other branch's
        # ``take_step`` filled with it
        return False
    value = (
        binding.value
        if isinstance(binding, ast.Assign)
        and len(binding.targets) == 1
        and isinstance(binding.targets[0], ast.Name)
        else binding.value
        if isinstance(binding, ast.AnnAssign) and isinstance(binding.target, ast.Name)
        else None
    )
    if (
        name not in taint.roots | taint.terms | taint.carriers
        and not updated
        and value is not None
        and not any(
            depth == 0 or _training_binding(flow, scope, n, binding, taint, depth - 1)
            for n in reads(ast.walk(value)) & taint.names
        )
        and not (
            isinstance(value, ast.Call)
            and (ctx.helper(value) is not None or flow.call_shape(value) is not None)
        )
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
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)) and _evaluation_loop(flow, cur, taint):
            return _inside(ctx, at, cur)
        cur = ctx.parents.get(cur)
    return True


def _fields_rebound_uncoupled(
    ctx: FileContext, scope: ast.AST, name: str, values: list[ast.AST], at: ast.AST, taint: Taint
) -> bool:
    """Every read of ``name`` in the logged ``values`` is a field (``losses.avg``) that the scope set,
    before the log, from values that are not the local loss: 3D-ResNets all-reduces the meter's sum
    and count and stores ``losses.avg = loss_sum.item() / loss_count.item()`` before the rank-0
    ``epoch_logger.log({"loss": losses.avg})``. The meter was fed the loss; that field was not."""
    line = getattr(at, "lineno", 0)
    fields: set[str] = set()
    for v in values:
        for x in ast.walk(v):
            if isinstance(x, ast.Name) and x.id == name:
                parent = ctx.parents.get(x)
                if not (isinstance(parent, ast.Attribute) and parent.value is x):
                    return False  # the whole object (``log(losses)``) is read
                fields.add(parent.attr)
    if not fields:
        return False
    stores: dict[str, ast.Assign] = {}
    for n in ctx.local(scope):
        if isinstance(n, ast.Assign) and n.lineno < line:
            for t in n.targets:
                if isinstance(t, ast.Attribute) and dotted(t.value) == name and t.attr in fields:
                    stores[t.attr] = n  # in source order: the last one kept is the latest
    return set(stores) == fields and all(
        not reads(ast.walk(b.value), taint.fields) & taint.names for b in stores.values()
    )


def _item_store(binding: ast.AST, name: str) -> bool:
    """``name[key] = value``: an item of the container is set, the container is not rebound."""
    return isinstance(binding, ast.Assign) and all(
        isinstance(t, ast.Subscript) and dotted(t.value) == name for t in binding.targets
    )


def _evaluation_loop(flow: LossFlow, loop: ast.For | ast.AsyncFor | ast.While, taint: Taint) -> bool:
    """A loop over data that never backprops (validation): it iterates a loader-like name or runs a
    model forward. Not ``for k, v in logs.items()`` over the loss's own container, not VAR's ``for si,
    (bg, ed) in enumerate(self.begin_ends)`` slicing the training logits per resolution."""
    ctx = flow.ctx
    if flow.facts.has_backward(loop.body):
        return False
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        iterated = reads(ctx.local(loop.iter))
        if iterated & taint.names:
            return False
        if any(DATA_NAME.search(n.split(".")[-1]) for n in iterated):
            return True
    return any(
        isinstance(n, ast.Call) and FORWARD_NAME.search((dotted(n.func) or "").split(".")[-1])
        for stmt in loop.body
        for n in ctx.local(stmt)
    )


def _inside(ctx: FileContext, node: ast.AST, region: ast.AST) -> bool:
    return ctx.position(region) <= ctx.position(node) < ctx.subtree_end(region)
