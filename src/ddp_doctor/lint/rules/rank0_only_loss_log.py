"""rank0-only-loss-log: the training loss is logged from rank 0 without a cross-rank reduction.

Each rank's loss is the mean over its own micro-batch; rank 0's value alone has about
sqrt(world size) times the standard deviation of the global mean, so the curve looks unstable
when the training is not (the global loss is ``all_reduce(loss) / world_size``). Flagged when, in
one function, a value derived from the tensor passed to backward (or returned by a helper that
runs backward), with no all-reduce/gather/reduce on the way, is logged on rank 0 only:

- by a logging call (print, logger.*, wandb/TensorBoard/tqdm style, ``pbar.desc = ...``) under a
  rank-0 test (``lint/rank0.py``: ``rank == 0``, ``RANK in {-1, 0}``, ``not fsdp or rank == 0`` ...);
- by a call that logs on rank 0 by itself (``fabric.print``, ``fabric.log_dict``,
  ``accelerator.print`` (or ``print``/``log`` of any name bound to ``accelerate.Accelerator(...)``),
  a logger from ``accelerate.logging.get_logger`` (unless ``main_process_only=False``),
  ``print0``/``print_rank_0``, a project function that only logs under a
  rank-0 test, or one behind a project decorator whose wrapper calls it on rank 0 only:
  ``@master_only``);
- through an object that exists on rank 0 only (``writer = SummaryWriter() if rank == 0 else None``,
  also built in another file in project mode).

Derived values follow assignments, the other outputs of the loss call (``loss, items =
criterion(...)``), and metric objects updated with them (``meter.update(loss.item())``) unless the
object syncs (torchmetrics ``compute()`` with the default ``sync_on_compute=True``, also when built
as ``MeanMetric().to(device)``). A logged name whose latest binding before the log is not the
training value (a validation loop under ``torch.no_grad()`` reusing ``loss``) is not flagged;
``np.average`` of local values combines nothing. nanoGPT's rank-0 ``lossf`` print is a case.

Also rank 0 only: the plain ``logger.info(...)`` calls of a project whose logging configuration
silences the other ranks (``lint/rank0.py`` ``silences_other_ranks``: MSN/I-JEPA ``setLevel(ERROR)``
off rank 0, YOLOX's loguru sink added on rank 0 only), a tqdm bar built with ``disable=not
is_main_process``, and Lightning's ``self.log``/``self.log_dict`` without ``sync_dist=True`` in
``training_step`` (the logger runs on rank 0; the epoch aggregate is rank 0's own mean), where the
loss is what ``training_step`` returns. Names that say they hold something else (``acc``,
``top1``, ``prob``, ``lr``, ``grad_norm``) are never the loss, even when they come out of the same
call. The message says what the value is: the loss itself, a meter or running sum fed with it, or
a value computed from it.

One logging event, one finding: the logs under one rank-0 test that go to one output (the
writer's scalars of the same step's loss terms) are reported once, at the first, naming the
others' lines (their fix is one: reduce before the block; a print beside them is another
output); a log call that runs a def of the file which logs what it is handed is reported at the
call when the call is the guarded one, and inside the def otherwise. A scalar logger of the file
(a def whose rank-0 log writes what it is handed, which the file also hands the learning rate or
other values that are not the loss: ``_store_scalar_logs(name, val, step)``) is reported at each
calling function's first call that hands it the loss, not at its one sink.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.call_arguments import dead_unless_passed, fixed_by_defaults
from ddp_doctor.lint.context import FileContext, conjuncts, dotted, parameter_names
from ddp_doctor.lint.flags import argparse_defaults
from ddp_doctor.lint.logged_helpers import constructed_method
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.overrides import abstract, override_defs
from ddp_doctor.lint.provenance import LossFlow, Taint, alarm, evaluation_function, loop_aliases, reads
from ddp_doctor.lint.rank0 import (
    bound_argument,
    is_log_call,
    is_not_rank0_test,
    is_rank0_test,
    rank0_attribute_flags,
    rank0_locals,
    rank0_predicates,
    rank_aliases,
    silenced_stdout,
    silences_other_ranks,
    zero_rank_names,
)
from ddp_doctor.lint.reductions import outside_reductions, reads_combined
from ddp_doctor.lint.rules._logged_values import logged_values
from ddp_doctor.lint.rules._rank0_regions import (
    bars_off_rank0,
    configures_logging,
    handed_flags,
    inside_rank0_printer,
    own_class_flags,
    rank0_flags,
    rank0_logs,
    rank0_only_objects,
    stderr_bars,
)
from ddp_doctor.lint.rules.base import Rule, Violation
from ddp_doctor.lint.rules.sampler_missing import DISTRIBUTED_WORDS
from ddp_doctor.lint.single_process import single_process_only

NO_GRAD = re.compile(r"(no_grad|inference_mode|evaluate|eval)", re.IGNORECASE)
# What a validation loop iterates, and the forward it runs.
DATA_NAME = re.compile(r"load|data|batch|val|eval|test|sample|iter", re.IGNORECASE)
FORWARD_NAME = re.compile(r"(model|net|engine|ddp|fsdp|module|encoder|decoder|forward)$", re.IGNORECASE)


class Rank0OnlyLossLog(Rule):
    id = "rank0-only-loss-log"
    project_facts = frozenset({"rank0_logging", "loss_flow", "call_arguments"})
    flagged = (
        "a logging call (print, logger, wandb, TensorBoard, tqdm) under a rank-0 guard (by what it "
        "tests; see above), a rank-0-only call or object, a logger the logging setup silences off "
        "rank 0 (also a setup that returns before adding handlers off rank 0, or picks the level "
        "into a local), or Lightning `self.log` without `sync_dist=True` in `training_step`, logs a "
        "value derived from the backward tensor (or from a same-file helper that returns it; in "
        "Lightning, what `training_step` returns) with no all-reduce/gather/reduce on the way; also "
        "an object's method that logs what it was built with (`progress.display(i)` of a "
        "`ProgressMeter` built from the loss meter); rank tests by role: the spawned worker's first "
        "parameter or the name handed to `init_process_group(rank=...)`, a flag every caller binds "
        "to one, an attribute set only to one (`args.on_main_process`), the rank itself read as a truth "
        "value (`if not rank:`, `if args.local_rank: return`), a rank compared to a name the file only sets to 0 "
        "(`if self.gpu_id == self.log_rank:`); `wandb.log` where the run is started under a rank-0 test only "
        "(`if rank == 0: wandb.init(...)`); a value computed for the logs in a `no_grad` "
        "block inside the training loop; a running sum of what a training step returns (`total += "
        "self.training_step(batch)`, also `total = total + ...`); a call of a function decorated to run on "
        "rank 0 only (`@rank_zero_only`, `@rank_zero_call`, `@master_only`) that hands it the loss; "
        "an instance of a class whose log methods all run on rank 0 only (`@rank_zero_only def log`, one "
        "rank-0 test) or that forwards every call on rank 0 only (`RankZeroLoggingWrapper`; an installed "
        "class named so); (project) loggers built on rank 0 only (`a, b = create_logger(args)` under "
        "`if is_main_process():`, None elsewhere) and rank-0 flags handed to a function or class of "
        "another file, also through an imported module (`distributed_train.train(..., is_logger)`), and the rank "
        "handed to a class that keeps it under a name of its own (`Runner(..., main_pod=args.rank)`, then "
        "`if self.main_pod == 0:`); (project) prints of a helper file whose caller replaces `builtins.print` "
        "off rank 0, though the helper names no process group; a "
        "logger object called as a function (`main_logger(msg)`); (project) a writer from a factory that hands "
        "the other ranks one doing nothing (`create_summary(rank)` returning an `EmptySummaryWriter` when "
        "`rank > 0`); (project) a writer object a method attaches on rank 0 only (`if rank == 0: "
        "TB_LOGGER.create(path)`, the class writing only through it), also fed by calling a meter "
        "(`running_loss(loss.item())`); `print = logger.info` with a logger the setup silences off rank 0; (project) a "
        "meter's window statistic (`meters['loss'].avg`, `.median`, `.value`, `latest_meter()`) after a "
        "sync that the project's meter class writes back only its count and total for (`SmoothedValue."
        "synchronize_between_processes`); the message names the value and its kind"
    )
    not_flagged = (
        "all-reduced or `reduce_mean`-style helper values, every rank logging, validation losses, "
        "accuracies/probabilities/lr/val metrics, `sync_dist=True` / `rank_zero_only=True`, values "
        "read where one process runs (`if args.local_rank == -1:`, the raw branch of `if n_gpu > 1: "
        "reduce`), a rank-0 writer's other calls after it was fed the loss, values a helper "
        "reads back out of a tensor it all-reduced, meters whose project class all-reduces in "
        "`update` or that a project method reduces in place (`manager.all_reduct(device)`), MONAI metrics "
        "(`CumulativeAverage`, gathered in `aggregate()`), a "
        "dict's keys printed beside gathered values, a project logger's `write` (no `logging` record), "
        "tensors all-reduced in a loop over a literal list (`for t in [loss, aux]: dist.all_reduce(t)`), "
        "a nested function's own variable of the same name (a nested `evaluate` binding its validation "
        "`loss`); (project) a rank test on a parameter no call passes (`def train(..., rank=0)` called "
        "without `rank`: every process logs); a mean gathered to rank 0 and taken there (`None` on the "
        "other ranks) that a helper returns; a loss (and its terms) computed from all-gathered tensors only "
        "(`dist.all_gather(parts, emb)`, `clip_loss(torch.cat(parts), ...)`: the global batch's loss); "
        "a synced meter's `global_avg`, its whole printout, or a window its class's sync gathers too; "
        "a log file's copy of the line just printed under the same rank-0 test, an end-of-run dump of "
        "a history that only copies values the loop's rank-0 logs showed, a log method named for "
        "images or media (`log_images_to_wandb(x, y, y_hat, id_logs)`); (project) the outputs a model's "
        "`forward` all-reduces item by item before returning them beside the loss (mmcv-style "
        "`parse_losses`: `loss, log_vars = model(batch)`)"
    )
    required = (("backward", "scaler", "loss_scaler", "log", "log_dict"),)  # log: Lightning self.log
    # project mode: the loss may come from a project function (``logs = model.current_log()``)
    required_in_project = required

    def project_words(self, project: Any) -> tuple[str, ...]:
        # (and a helper whose own rank-0 log of what it is handed is reported in its file)
        return (*project.loss_returning_names(), *project.inside_logger_names())

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
        found: list[tuple[Violation, ast.Call | None]] = []
        moved: list[Violation] = []
        copies = _file_copies(ctx, list(self._check(ctx, facts)))
        for v, call, node in copies:
            # a base-class method every project subclass overrides never runs (Amphion's
            # ``TTSTrainer._train_epoch``): what it would log is no event of the run
            if ctx.project is not None and ctx.project.dead_override_base(ctx, ctx.enclosing_function(node)):
                continue
            if v.evidence.get("via") is not None:
                moved.append(v)  # reported at the call that hands a scalar logger the loss
                continue
            # the logging call may itself be a call of a def of this file (SpeechTokenizer's
            # ``self.log({...: loss.item()}, step=steps)`` under ``is_main``, whose body writes
            # each value to a rank-0 writer): the def is then what it calls into
            found.append((v, call if call is not None else node if isinstance(node, ast.Call) else None))
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
        kept = [v for v, _ in found if id(v) not in dropped]
        # a call reported already as a guarded log is not reported again as a handing call
        lines = {v.line for v in kept}
        for v in moved:  # (one per call, though the scalar logger may write the value twice)
            if v.line not in lines:
                lines.add(v.line)
                kept.append(v)
        yield from _one_per_block(kept)

    def _check(
        self, ctx: FileContext, facts: LoopFacts
    ) -> Iterator[tuple[Violation, ast.Call | None, ast.AST]]:
        flow = LossFlow(ctx, facts)
        if not flow.taints:
            return
        predicates = rank0_predicates(ctx.tree, [f for defs in ctx.functions.values() for f in defs])
        # ``main_worker(worker_idx, ...)`` spawned: ``worker_idx == 0`` is a rank-0 test
        predicates |= rank_aliases(ctx)
        # ``self.log_rank = 0``
        predicates |= zero_rank_names(ctx.of_type(ast.Assign), argparse_defaults(ctx).keys())
        predicates |= rank0_attribute_flags(ctx.of_type(ast.Assign), predicates)  # ``args.on_main_process``
        quiet = silences_other_ranks(ctx.tree, predicates, ctx.parents)
        if ctx.project is not None:
            predicates |= ctx.project.rank0_predicates
            quiet |= ctx.project.silences_logging(ctx.module, configures_logging(ctx))
        rank0_objects = rank0_only_objects(ctx, predicates)
        # a test that such an object exists (``if self.wandb_run is not None:``) is a rank-0 test
        exists = {f"?{o}" for o in rank0_objects} | {f"?self.{o}" for o in rank0_objects}
        # ``sys.stdout = open(os.devnull, "w")`` off rank 0: this file's prints show rank 0's values
        silencer = silenced_stdout(ctx.of_type(ast.Assign), ctx.parents, predicates)
        stdout = None if silencer is None else ("", silencer.lineno)
        bars = stderr_bars(ctx, silencer)
        if stdout is None and ctx.project is not None:
            # ``builtins.print`` replaced off rank 0 by code this module reaches (MAE/DeiT
            # ``setup_for_distributed`` in ``util/misc.py``)
            found = ctx.project.silences_print(ctx.module)
            # only in a file that runs under a process group: a single-process script importing the
            # same utilities never calls the code that replaces ``print`` (TabPFN's style search)
            if found is not None and (
                ctx.imports_module("torch.distributed")
                or ctx.mentions(*DISTRIBUTED_WORDS, "rank")
                or _run_by_silencer(ctx, found[0])
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
                (region, *item)
                for region in regions
                for local in [
                    predicates
                    | exists
                    | rank0_flags(ctx, region, predicates)
                    | rank0_locals(region, ctx.local(region), predicates, ctx.parents)
                    | handed_flags(ctx, region)
                    | own_class_flags(ctx, region, predicates)
                ]
                for item in rank0_logs(
                    ctx,
                    region,
                    rank0_objects | bars_off_rank0(ctx, region, local),
                    local,
                    quiet,
                    _lightning_receivers(ctx, flow, region),
                    stdout,
                    ctx.project is not None and ctx.project.rank0_called(ctx, region),
                    bars,
                )
            ]
            for region, node, guard, how in logs:
                if id(node) in seen or single_process_only(ctx, node):
                    continue  # (a log of the single-process run: ``if args.local_rank == -1:``)
                if dead_unless_passed(ctx, node) is not None:
                    continue  # ``if writer is not None:`` with a ``writer=None`` no call passes
                if guard is not None and _rank_left_at_default(ctx, guard, predicates | exists):
                    continue  # ``def train(..., rank=0)`` called without ``rank``: every process logs
                values = logged_values(ctx, node, rank0_objects)
                # (not what a collective in the log's own expression combines: ``gather(loss).mean()``)
                names = reads(
                    (x for v in values for x in outside_reductions(ctx, v)), taint.fields, statistics=True
                )
                names |= loop_aliases(ctx, node, names)
                if region is not scope:
                    # a closure's own assignment makes its own local (CMedGPT's nested ``def
                    # evaluate(...)`` binds ``loss = outputs[0]`` of its validation forward)
                    names -= _closure_locals(ctx, region)
                hit = sorted(
                    n
                    for n in names & taint.names
                    if _training_binding(flow, scope, n, node, taint)
                    and not _fields_rebound_uncoupled(ctx, scope, n, values, node, taint)
                )
                if not hit or alarm(ctx, node, taint.names - set(taint.updates), taint.fields):
                    continue  # not the loss, or a warning that fires on its value (``if loss > 12:``)
                if set(hit) <= taint.params and inside_rank0_printer(ctx, node):
                    continue  # ``def print0(s): if master_process: print(s)``: its callers' calls are the logs
                if _run_summary(ctx, scope, node, hit, taint, [n for r, n, _, _ in logs if r is scope]):
                    continue  # the end-of-run dump of values each epoch's log showed already
                if guard is not None:
                    where = Text(
                        f"under the rank-0 check at line {guard.lineno}",
                        f"在第 {guard.lineno} 行的 rank 0 判断下",
                    )
                else:
                    where = how
                if set(hit) <= taint.params and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    handing = _scalar_logger_calls(flow, scope, set(hit))
                    if handing is not None:
                        # a scalar logger of the file: the event is each caller's call that hands it
                        # the loss, not the def's one sink that every value of the run goes through
                        seen.add(id(node))
                        at = getattr(node, "lineno", 0)
                        for first, also, name, kind in handing:
                            v = self.violation(
                                first,
                                Text(
                                    f"`{name}` ({kind.en}) is handed to `{scope.name}`, which logs it at line {at} "
                                    f"{where.en} with no all-reduce on the way: it is rank 0's local value, "
                                    "noisier than the global loss.",
                                    f"`{name}`（{kind.zh}）被交给 `{scope.name}`，后者{where.zh}于第 {at} 行记录它，"
                                    "途中没有 all-reduce：它只是 rank 0 的本地值。",
                                ),
                                value=name,
                                value_kind=kind.en,
                                via=scope.name,
                                logged_at=at,
                            )
                            if also:
                                v.evidence["also_at"] = also
                            yield v, None, first
                        continue
                seen.add(id(node))
                name, kind = _named_value(hit, taint)
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
                        output=_output(node),
                    ),
                    node if isinstance(node, ast.Call) and not is_log_call(node) else None,
                    node,
                )


def _run_by_silencer(ctx: FileContext, silencer: str) -> bool:
    """(project) The module that replaces ``builtins.print`` off rank 0 imports this one: this
    file's code runs in the processes it silenced, though the file names no process group itself
    (Contrastive-Segmentation's ``utils/train_utils.py``, whose ``train`` the silencing
    ``main.py`` worker calls). Not a script that imports the silencing module (TabPFN's style
    search): that one may never run the code that replaces ``print``."""
    module = ctx.module
    return (
        ctx.project is not None
        and module is not None
        and silencer != module
        and module in ctx.project.reachable(silencer)
    )


def _scalar_logger_calls(
    flow: LossFlow, fn: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]
) -> list[tuple[ast.Call, list[int], str, Text]] | None:
    """When ``fn`` is a scalar logger of the file, the calls that hand it the training loss: per
    calling function, (first call, the other calls' lines, the loss name, its kind). A scalar logger
    is a def whose rank-0 log writes the parameter(s) ``params``, and which the training code also
    hands values that are not the loss (``_store_scalar_logs('train/lr', lr, ...)`` beside
    ``_store_scalar_logs('train/loss', loss, ...)``; Lightning ``self.scalar_summary(tag, phase,
    value, step)`` of the learning rate and each loss term): what it logs is what each call hands
    it, and the call that hands it the loss is the event (a helper only ever handed the loss, such as
    ``self._log_training_progress(epoch, i, loss)``, or handed the training loss by ``training_step``
    and the validation loss by ``validation_step`` (OpenFold's ``self._log(loss_breakdown, ...)``),
    is itself the event). None otherwise."""
    ctx = flow.ctx
    by_caller: dict[int, list[tuple[ast.Call, str, Text]]] = {}
    other = False
    for call in ctx.of_type(ast.Call):
        if ctx.helper(call) is not fn:
            continue
        args = [a for p in params if (a := bound_argument(fn, call, p)) is not None]
        if not args:
            continue
        caller = ctx.enclosing_function(call)
        taint = flow.taints.get(id(caller))
        if taint is None:
            continue  # (a caller that trains nothing: an evaluation step handing its own losses)
        hit: list[str] = []
        if not single_process_only(ctx, call):
            names = reads(
                (x for a in args for x in outside_reductions(ctx, a)), taint.fields, statistics=True
            )
            names |= loop_aliases(ctx, call, names)
            hit = sorted(n for n in names & taint.names if _training_binding(flow, caller, n, call, taint))
        if not hit:
            other = True  # the training code hands it something else too: the learning rate
            continue
        # a dict of the loss beside other values (DDPM-weather ``self._log(epoch, {"avg_loss":
        # avg_loss.item(), "lr": lr})``): a logger of whatever metrics it is handed, like one handed
        # the learning rate by another call
        other = other or any(_mixed_dict(flow, caller, a, taint) for a in args)
        by_caller.setdefault(id(caller), []).append((call, *_named_value(hit, taint)))
    if not other or not by_caller:
        return None
    out: list[tuple[ast.Call, list[int], str, Text]] = []
    for calls in by_caller.values():
        calls.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        first, name, kind = calls[0]
        out.append((first, sorted({c[0].lineno for c in calls[1:]} - {first.lineno}), name, kind))
    return out


def _mixed_dict(flow: LossFlow, scope: ast.AST, arg: ast.expr, taint: Taint) -> bool:
    """``arg`` is a dict display (or a name whose latest binding before it is one) with a value that
    reads no training name: ``{"loss": loss.item(), "lr": lr}``."""
    shown: ast.AST | None = arg
    if isinstance(arg, ast.Name):
        before = [b for b in flow.ctx.bindings(scope).get(arg.id, []) if b.lineno < arg.lineno]
        last = before[-1] if before else None
        shown = last.value if isinstance(last, ast.Assign) and len(last.targets) == 1 else None
    if not isinstance(shown, ast.Dict):
        return False
    return any(
        v is not None and not reads(ast.walk(v), taint.fields) & taint.names for v in shown.values
    ) and any(v is not None and reads(ast.walk(v), taint.fields) & taint.names for v in shown.values)


def _run_summary(
    ctx: FileContext, scope: ast.AST, node: ast.AST, hit: list[str], taint: Taint, logs: list[ast.AST]
) -> bool:
    """``node``, after the training loop, logs only what the loop's own rank-0 logs showed: the
    history of the epoch losses (SAM-Med3D ``self.losses.append(epoch_loss)`` beside the epoch's
    ``logger.info(... epoch_loss ...)``, then ``logger.info(f"Total loss: {self.losses}")`` once
    training ends; a ``pd.DataFrame({"train_loss": train_losses, ...}).to_csv(...)``), or the best
    of them. Each value was reported where the loop logged it; the summary is no other event and
    has the same fix (reduce the epoch loss)."""
    shown: set[str] = set()
    for other in logs:
        loop = _outer_loop(ctx, other, scope)
        if (
            other is not node
            and loop is not None
            and getattr(loop, "end_lineno", 0) < getattr(node, "lineno", 0)
        ):
            shown |= reads(ast.walk(other), taint.fields, statistics=True) & taint.names
    if not shown or _outer_loop(ctx, node, scope) is not None:
        return False
    line = getattr(node, "lineno", 0)
    return all(_echoes(ctx, scope, h, shown, taint, line, 3) for h in hit)


def _echoes(
    ctx: FileContext, scope: ast.AST, name: str, shown: set[str], taint: Taint, line: int, depth: int
) -> bool:
    """``name`` holds only copies of values of ``shown`` (``depth`` levels): it is one, or every
    binding or ``append``/``extend`` of it before ``line`` that reads a training value reads only
    such names, with no arithmetic on them (an epoch mean of logged step losses is a new value)."""
    if name in shown:
        return True
    if depth == 0:
        return False
    fed = False
    for n in ctx.local(scope):
        if getattr(n, "lineno", line) >= line:
            continue
        value: ast.AST | None = None
        if isinstance(n, ast.AugAssign) and dotted(n.target) == name:
            return False  # ``total += loss.item()``: a new value (a sum), not a copy of one shown
        targets = (
            n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        )
        if any(dotted(t) == name for t in targets):
            value = getattr(n, "value", None)
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("append", "extend", "insert")
            and dotted(n.func.value) == name
        ):
            value = ast.Tuple(elts=[*n.args], ctx=ast.Load())
        if value is None:
            continue
        read = reads(ast.walk(value), taint.fields, statistics=True) & taint.names
        if not read:
            continue  # ``self.losses = []``: no training value
        if any(isinstance(b, ast.BinOp) and reads(ast.walk(b), taint.fields) & read for b in ast.walk(value)):
            return False  # ``epoch_loss = total / n``: computed from them, not a copy
        if not all(_echoes(ctx, scope, r, shown, taint, line, depth - 1) for r in read):
            return False
        fed = True
    return fed


def _outer_loop(ctx: FileContext, node: ast.AST, scope: ast.AST) -> ast.AST | None:
    """The outermost loop of ``scope`` around ``node``, if any."""
    found = None
    cur = ctx.parents.get(node)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            found = cur
        cur = ctx.parents.get(cur)
    return found


def _file_copies(
    ctx: FileContext, found: list[tuple[Violation, ast.Call | None, ast.AST]]
) -> list[tuple[Violation, ast.Call | None, ast.AST]]:
    """``found`` less the log-file copies of a console line: ``print(log)`` then ``with open(path,
    "a") as f: f.write(log)`` under the same rank-0 test (rfpp) writes the message just printed to a
    file; it is the same event as the print, with the same fix."""
    shown = {
        (v.evidence.get("guard_line"), v.evidence.get("value"))
        for v, _, node in found
        if v.evidence.get("guard_line") is not None and not _file_write(ctx, node)
    }
    return [
        (v, call, node)
        for v, call, node in found
        if not (
            _file_write(ctx, node)
            and (v.evidence.get("guard_line"), v.evidence.get("value")) in shown
            and v.evidence.get("guard_line") is not None
        )
    ]


def _file_write(ctx: FileContext, node: ast.AST) -> bool:
    """``f.write(...)`` where ``f`` is a file the function opened (``with open(...) as f`` or ``f =
    open(...)``)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("write", "writelines")
        and isinstance(node.func.value, ast.Name)
    ):
        return False
    name = node.func.value.id
    scope = ctx.enclosing_function(node)
    for n in ctx.local(scope):
        opened = (
            [
                i.context_expr
                for i in n.items
                if isinstance(i.optional_vars, ast.Name) and i.optional_vars.id == name
            ]
            if isinstance(n, (ast.With, ast.AsyncWith))
            else [n.value]
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            else []
        )
        if any(isinstance(o, ast.Call) and dotted(o.func) in ("open", "io.open") for o in opened):
            return True
    return False


def _output(node: ast.AST) -> str | None:
    """Where a log goes, for grouping: the object whose method logs (``sw`` of ``sw.add_scalar``,
    ``self.logger``), or the function (``print``, ``self.log_stats``); None for a log that is no
    call (``pbar.desc = ...``)."""
    if not isinstance(node, ast.Call):
        return None
    name = dotted(node.func)
    if not name:
        # ``neptune_run["train/loss"].log(...)``: the run object holding the series
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Subscript):
            return dotted(func.value.value)
        return None
    receiver = name.rpartition(".")[0]
    # ``self.log_stats(...)``: the method is the output (each of a class's helpers writes elsewhere)
    return name if receiver in ("", "self", "cls") else receiver


def _one_per_block(found: list[Violation]) -> Iterator[Violation]:
    """One finding per output of a rank-0 block: the logs under one rank-0 test that go to one
    output (the writer's scalars of the same step's loss terms, or several prints) are one curve
    or console line with one fix, reducing before the block. The first is reported and names the
    others' lines; another output of the block (a print beside the TensorBoard scalars) is
    another finding, as it shows the noise to another reader."""
    blocks: dict[tuple[int, str], list[Violation]] = {}
    for v in found:
        guard, output = v.evidence.get("guard_line"), v.evidence.get("output")
        if guard is None or output is None:
            yield v
        else:
            blocks.setdefault((guard, output), []).append(v)
    for group in blocks.values():
        group.sort(key=lambda v: v.line)
        first = group[0]
        also = sorted({v.line for v in group[1:]} - {first.line})
        if also:
            lines = ", ".join(map(str, also))
            first.evidence["also_at"] = also
            first.message = Text(
                f"{first.message.en} The same block logs this rank's loss to `{first.evidence['output']}` again at line(s) {lines}.",
                f"{first.message.get('zh')}同一代码块还在第 {lines} 行向 `{first.evidence['output']}` 记录了本 rank 的损失。",
            )
        yield first


def _rank_left_at_default(ctx: FileContext, guard: ast.If, predicates: set[str]) -> bool:
    """The rank test of ``guard`` (one operand of an ``and``) reads only parameters that every call of
    the function leaves at a constant default (pangu-pytorch's ``def train(..., rank=0)`` with ``if
    rank == 0:``, called without ``rank``): it has one value in every process, so what it guards is
    logged by every rank (or by none), never by rank 0 alone."""
    test = guard.test
    parts = conjuncts(test)
    return any(
        (is_rank0_test(p, predicates) or is_not_rank0_test(p, predicates))
        and fixed_by_defaults(ctx, p) is not None
        for p in parts
    )


def _guarded(v: Violation) -> bool:
    """The finding's log sits under a rank-0 test of its own function."""
    return v.evidence.get("guard_line") is not None


def _named_value(hit: list[str], taint: Taint) -> tuple[str, Text]:
    """Which of the logged names the message names, and its kind: the loss itself first, then a
    name that says it is a loss (``total_loss`` before ``nan_share``)."""
    name = min(hit, key=lambda h: (_kind(h, taint).en != "the loss", "loss" not in h.lower(), h))
    return name, _kind(name, taint)


def _closure_locals(ctx: FileContext, fn: ast.AST) -> set[str]:
    """Names a nested function binds itself (Python makes them its locals), less those it declares
    ``nonlocal``/``global``: they are not the enclosing function's values of the same name."""
    declared = {name for n in ctx.local(fn) if isinstance(n, (ast.Nonlocal, ast.Global)) for name in n.names}
    params = set(parameter_names(fn)) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    return (set(ctx.bindings(fn)) | params) - declared


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


def _lightning_receivers(ctx: FileContext, flow: LossFlow, region: ast.AST) -> set[str]:
    """Names that are a Lightning module in ``region``: ``self`` in a method of one, and (project
    mode) a parameter a Lightning module passes itself to (ViLT ``compute_mlm(pl_module, batch)``).
    None in a hook named for evaluation (``on_validation_epoch_end``: what it logs is not the training's)."""
    if evaluation_function(region):
        return set()
    out = {"self"} if flow.in_lightning_module(region) else set()
    if ctx.project is not None:
        out |= ctx.project.lightning_params(ctx, region)
    return out


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
    # ``total /= len(loader)`` after the loop combines with what the name held: the bindings up to
    # its latest whole one decide (DS-Net's validation ``tracking_loss``, summed in the validation
    # loop, then divided, then copied into ``best_tracking_loss``)
    last = max(
        (i for i, b in enumerate(before) if not _item_store(b, name) and not _augmented(b, name)),
        default=-1,
    )
    candidates = before[max(last, 0) :]
    return any(_holds_training_value(flow, scope, name, b, at, taint, depth) for b in candidates)


def _constructs(call: ast.Call) -> bool:
    """``MetricManager(...)`` / ``utils.ProgressMeter(...)``: a class built (by its name's case)."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return name[:1].isupper()


def _from_gathered(value: ast.expr, taint: Taint) -> bool:
    """``value`` is computed from gathered values. A dict written out holds each of its values
    apart: it is when every value that reads the loss reads a gathered one (CognitiveDistillation's
    ``payload = {"loss": loss, "loss_avg": metric_logger.meters["loss"].avg}`` after ``loss =
    all_reduce_mean(loss)`` still holds the meter's local window)."""
    parts = [value]
    if isinstance(value, ast.Dict):
        parts = [v for v in value.values if reads(ast.walk(v), taint.fields, statistics=True) & taint.names]
    return bool(parts) and all(
        any(isinstance(x, ast.Name) and x.id in taint.gathered for x in ast.walk(p)) for p in parts
    )


def _holds_training_value(
    flow: LossFlow, scope: ast.AST, name: str, binding: ast.AST, at: ast.AST, taint: Taint, depth: int
) -> bool:
    ctx = flow.ctx
    line = getattr(at, "lineno", 0)
    if isinstance(binding, ast.Assign) and _from_gathered(binding.value, taint):
        return False  # rebound from gathered values: ``loss = sum(all_gather(loss)) / n``
    bound_at = getattr(binding, "lineno", 0)
    if (
        isinstance(binding, ast.Assign)
        and taint.reduced_at
        and reads_combined(binding.value, bound_at, taint.reduced_at, ctx.bindings(scope))
    ):
        # rebound from a tensor combined in place: ``dist.all_reduce(loss_tensor)`` then ``loss =
        # loss_tensor.item() / world_size`` (the global value, though ``loss`` is the root's name)
        return False
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
        isinstance(binding, (ast.For, ast.AsyncFor))
        and not updated
        and not _iterates_training(flow, binding, taint)
    ):
        # a later loop reusing the loop variable over other values (FastPCC's ``for item_name, item in
        # test_items.items():`` after ``for item_name, item in loss_dict.items(): item = item.item()``)
        return False
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
        if isinstance(binding, (ast.AnnAssign, ast.AugAssign)) and isinstance(binding.target, ast.Name)
        else None
    )
    # an object built around meters (``manager = MetricManager([loss_cur])``,
    # ``progress = ProgressMeter(n, [losses])``) holds them, not their values at construction: their
    # updates up to the log count
    held_until = at if isinstance(value, ast.Call) and _constructs(value) else binding
    read = reads(ast.walk(value), statistics=True) if value is not None else set()
    # ``message += "{}: {}".format(k, v)`` in ``for k, v in logs.items():`` (KAIR): the loop's names
    # read the container
    aliases = loop_aliases(ctx, binding, read) if isinstance(binding, ast.AugAssign) else set()
    read |= aliases
    if (
        name not in taint.roots | taint.terms | taint.carriers
        and not updated
        and value is not None
        and not any(
            depth == 0 or _training_binding(flow, scope, n, held_until, taint, depth - 1)
            for n in read & taint.names
        )
        and not (
            isinstance(value, ast.Call)
            and (ctx.helper(value) is not None or flow.call_shape(value) is not None)
        )
        # ``total = total + self.training_step(batch) * w``: a running sum of what a step returns
        and not flow.sums_returned_loss(value)
    ):
        return False  # rebound to something else (val metrics reusing the name `metrics`)
    # a forward of its own in an evaluation region (``with torch.no_grad(): loss = model(**batch).loss``
    # in the validation loop): what it binds is a validation value even where it is logged
    # (not a call of code that returns the training loss: ``loss = self._train_step(batch)``)
    calls = [x for x in ast.walk(value) if isinstance(x, ast.Call)] if value is not None else []
    fresh = (
        bool(calls)
        and value is not None
        and not (reads(ast.walk(value), taint.fields, statistics=True) | aliases) & taint.names
        and not any(ctx.helper(c) is not None or flow.call_shape(c) is not None for c in calls)
    )
    cur = ctx.parents.get(binding)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
            NO_GRAD.search(
                dotted(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr) or ""
            )
            for i in cur.items
        ):
            # a ``no_grad`` block for the logs inside the training loop (MPP ``with torch.no_grad():
            # log_nrmse = raw_loss.sqrt().mean()`` beside the backward): a training value wherever logged
            return (
                (ctx.within(at, cur) or _in_training_loop(flow, cur, scope))
                and not fresh
                and not _computed_in(flow, scope, cur, binding, taint)
            )
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)) and _evaluation_loop(flow, cur, taint):
            return ctx.within(at, cur) and not fresh and not _computed_in(flow, scope, cur, binding, taint)
        cur = ctx.parents.get(cur)
    return True


def _computed_in(
    flow: LossFlow, scope: ast.AST, region: ast.AST, binding: ast.AST, taint: Taint, depth: int = 6
) -> bool:
    """The value ``binding`` stores is computed inside ``region`` (a validation loop, a ``no_grad``
    block) from that region's own forward: every tainted name it reads was last bound, before it, in
    ``region`` too, by a value computed the same way (``depth`` levels), down to values that read no
    training name (the region's ``model(...)`` call, its loader's items). A validation loop that
    reuses the training names (CanglongPhysics: ``output_surface, ... = model(...)``, then
    ``loss_surface = criterion(output_surface_f, ...)``, then ``total_loss = loss_surface + ...``) logs
    its own values on its bar; a value that reads a training name bound outside the region (MPP's
    ``log_nrmse = raw_loss.sqrt().mean()`` under ``no_grad`` beside the backward) is the training's."""
    ctx = flow.ctx
    if depth == 0:
        return False
    if isinstance(binding, (ast.For, ast.AsyncFor)):
        # the region's loop variables (or a loop inside it): items of what it iterates
        return ctx.within(binding, region) and not reads(ast.walk(binding.iter), taint.fields) & taint.names
    value = getattr(binding, "value", None)
    if not isinstance(binding, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or value is None:
        return False
    if not ctx.within(binding, region) or binding is region:
        return False
    calls = [c for c in ast.walk(value) if isinstance(c, ast.Call)]
    if any(_trains(flow, c) for c in calls):
        return False  # a call of code that returns the training loss (``self._train_step(batch)``)
    read = reads(ast.walk(value), taint.fields, statistics=True)
    read |= loop_aliases(ctx, binding, read)  # ``for k, v in logs.items(): message += f"{v}"``: ``logs``
    names = read & taint.names
    if isinstance(binding, ast.AugAssign):
        names |= reads([binding.target]) & taint.names
    line = binding.lineno
    bindings = ctx.bindings(scope)
    for name in names:
        before = [b for b in bindings.get(name, []) if b.lineno < line]
        if not before or not _computed_in(flow, scope, region, before[-1], taint, depth - 1):
            return False
    return True


def _trains(flow: LossFlow, call: ast.Call) -> bool:
    """``call`` runs a training step: a same-file helper that runs backward itself, or other code
    that returns the training loss. A same-file loss function (``calculate_focus_variable_loss(out,
    target)``) returns what it computes from its arguments, wherever they come from."""
    fn = flow.ctx.helper(call)
    if fn is not None and not abstract(fn) and not override_defs(flow.ctx, call):
        return flow.facts.has_backward(fn.body)
    # (a method declared here and defined by subclasses: what they return decides)
    shape = flow.call_shape(call)
    return shape is not None and shape is not False


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


def _augmented(binding: ast.AST, name: str) -> bool:
    """``name += value`` / ``name /= n``: the name is combined with what it held, not rebound."""
    return isinstance(binding, ast.AugAssign) and dotted(binding.target) == name


def _item_store(binding: ast.AST, name: str) -> bool:
    """``name[key] = value``: an item of the container is set, the container is not rebound."""
    return isinstance(binding, ast.Assign) and all(
        isinstance(t, ast.Subscript) and dotted(t.value) == name for t in binding.targets
    )


def _in_training_loop(flow: LossFlow, node: ast.AST, scope: ast.AST) -> bool:
    """``node`` sits in a loop of ``scope`` whose body runs backward."""
    cur = flow.ctx.parents.get(node)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)) and flow.facts.has_backward(cur.body):
            return True
        cur = flow.ctx.parents.get(cur)
    return False


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


def _iterates_training(flow: LossFlow, loop: ast.For | ast.AsyncFor, taint: Taint) -> bool:
    """What ``loop`` iterates reads a training value (``for k, v in loss_dict.items()``) or is
    computed by code that returns the loss (``for loss in self.train_steps(loader)``)."""
    if reads(ast.walk(loop.iter), taint.fields) & taint.names:
        return True
    return any(
        isinstance(c, ast.Call) and (flow.ctx.helper(c) is not None or flow.call_shape(c) is not None)
        for c in ast.walk(loop.iter)
    )
