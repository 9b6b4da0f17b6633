"""rank0-only-loss-log, where rank 0 alone logs: the logging calls of a region that run on rank 0
only (under a rank-0 test, through a rank-0-only call, object, bar or silenced logger, in a Lightning
``training_step``), the flags and objects that say so (the class's own, handed in by callers or
unpacked from a project function), and the helpers that forward what they are given to such a call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.accelerate_sinks import main_process_only_call
from ddp_doctor.lint.context import FileContext, dotted, keyword, method, parameter_names
from ddp_doctor.lint.idioms import RANK0_FUNCTION, RANK0_SINK_CLASS
from ddp_doctor.lint.logged_helpers import constructed_method
from ddp_doctor.lint.project import parameters_logged
from ddp_doctor.lint.project_log_facts import written_file_mode
from ddp_doctor.lint.provenance import reads
from ddp_doctor.lint.rank0 import (
    LOG_ATTRS,
    LOG_CALL,
    bound_argument,
    class_flags,
    enclosing_rank0_if,
    is_log_call,
    is_not_rank0_test,
    is_plain_print,
    is_rank0_log_call,
    is_rank0_test,
    is_silenceable_record,
    off_rank0_branch,
    rank0_locals,
    rank0_parameters,
    rank_zero_decorated,
    records_silenceably,
)
from ddp_doctor.lint.rank0_handoff import unpacked_rank0
from ddp_doctor.lint.rank0_sinks import sink_names
from ddp_doctor.lint.state_logs import state_log_call


def configures_logging(ctx: FileContext) -> bool:
    """The file calls ``logging.basicConfig`` itself."""
    return ctx.mentions("basicConfig") and any(
        isinstance(c.func, ast.Attribute) and c.func.attr == "basicConfig" for c in ctx.of_type(ast.Call)
    )


def _outside_rank0_sink(ctx: FileContext, value: ast.expr) -> bool:
    """``RankZeroLoggingWrapper(logger, dist)`` of an installed package (not a class of the project,
    whose code decides): a writer that says it writes on rank 0 only (``idioms.RANK0_SINK_CLASS``)."""
    if not isinstance(value, ast.Call):
        return False
    name = (dotted(value.func) or "").rsplit(".", 1)[-1]
    if not RANK0_SINK_CLASS.match(name):
        return False
    return ctx.project is None or ctx.project.summary_for(ctx, value.func) is None


def rank0_only_objects(ctx: FileContext, predicates: set[str]) -> set[str]:
    """Last parts of names bound only on rank 0, in this file or (project mode) anywhere; and
    progress bars shown on rank 0 only (``tqdm(..., disable=not accelerator.is_main_process)``)."""
    out: set[str] = set(ctx.project.rank0_objects) if ctx.project is not None else set()
    guarded, own = sink_names(ctx, predicates)  # (``if rank == 0: writer = SummaryWriter()``)
    if ctx.project is not None:
        # ``logger = get_logger(work_dir)`` of a project def returning a rank-0-only writer is one,
        # also a factory handing the other ranks a writer that does nothing (``create_summary(rank)``)
        rank0_built = {
            d.split(".")[-1]
            for node in ctx.of_type(ast.Assign)
            if isinstance(node.value, ast.Call) and ctx.project.builds_rank0_sink(ctx, node.value)
            for t in node.targets
            if (d := dotted(t))
        }
        guarded |= rank0_built
        own -= rank0_built
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
        if rank0_only or _outside_rank0_sink(ctx, value):
            out |= {d.split(".")[-1] for t in node.targets if (d := dotted(t))}
        elif isinstance(value, ast.Call) and _disabled_off_rank0(value, predicates):
            # a bar hidden off rank 0 is that function's bar: PBGNN's single-process trainers of the
            # same file name their own (shown) bar ``pbar`` too
            out |= {_scoped(ctx, node, d) for t in node.targets if (d := dotted(t))}
    for with_node in ctx.of_type(ast.With):
        for item in with_node.items:
            expr, var = item.context_expr, item.optional_vars
            if isinstance(expr, ast.Call) and var is not None and _disabled_off_rank0(expr, predicates):
                out |= {_scoped(ctx, with_node, d) for d in [dotted(var)] if d}
    return out


def bars_off_rank0(ctx: FileContext, region: ast.AST, predicates: set[str]) -> set[str]:
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
        elif (
            isinstance(node, ast.NamedExpr)
            and isinstance(node.value, ast.Call)
            and _disabled_off_rank0(node.value, predicates)
        ):
            out.add(node.target.id)  # ``for step, batch in enumerate(pbar := tqdm(..., disable=...)):``
    return out


def rank0_flags(ctx: FileContext, fn: ast.AST, predicates: set[str]) -> set[str]:
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
            if dotted(c.func) == f"self.{fn.name}" and ctx.within(c, owner)
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


def handed_flags(ctx: FileContext, region: ast.AST) -> set[str]:
    """(project) Rank-0 tests that reach ``region`` from elsewhere: names it unpacks from a project
    function's returned tuple (``device, is_logger = setup(config)``), and, in a method, the
    ``self.<attr>`` its class keeps from a constructor argument that every construction in the
    project binds to a rank-0 test (neuraloperator ``Trainer(..., verbose=... and is_logger)``)."""
    project = ctx.project
    if project is None or not isinstance(region, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    out = unpacked_rank0(ctx.local(region), lambda call: project.call_rank0_positions(ctx, call))
    out |= project.rank0_function_params(ctx, region)  # every call of it binds them to one
    owner = ctx.method_owner(region)
    if owner is not None:
        out |= project.rank0_attributes(ctx, owner)
        out |= project.rank_attributes(ctx, owner)  # ``self.main_pod`` kept from ``main_pod=args.rank``
        out |= project.rank0_method_params(ctx, region)  # every call of its name binds them to one
    return out


def own_class_flags(ctx: FileContext, region: ast.AST, predicates: set[str]) -> set[str]:
    """In a method, the flags its class keeps (``self.disable_logs = is_distributed and rank != 0``)
    and, in project mode, those its project base classes keep."""
    owner = ctx.parents.get(region)
    if not (isinstance(region, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(owner, ast.ClassDef)):
        return set()
    flags = class_flags(owner, predicates)
    if ctx.project is not None:
        # and those of its project base classes (VL-T5's ``self.verbose`` of ``TrainerBase``), but
        # not a flag the class binds itself (its own bindings decide what it holds)
        bound = {
            f"self.{t.attr}"
            for n in ast.walk(owner)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
        flags |= {f for f in ctx.project.base_class_flags(ctx, owner) if f.lstrip("!") not in bound}
    return flags


def inside_rank0_printer(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` is in the body of a function that is itself a rank-0 log call by its name (``print0``,
    ``print_rank_0``): each call of it that logs the loss is reported where it is made."""
    fn = ctx.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return (
        bool(RANK0_FUNCTION.match(fn.name))
        or rank_zero_decorated(fn)
        or _forwards_to_rank0_log(fn)
        or _prints_for_other_files(ctx, fn)
    )


def _prints_for_other_files(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """(project) ``def logger_info(self, s): if self.config["local_rank"] == 0: self.logger.info(s)``,
    called with the loss from other files: a rank-0 test around log calls and nothing else, a print
    helper of the files that call it (DBNet's base trainer). What it logs is what those calls hand
    it, and each call is reported where it is made (the project knows the helper logs on rank 0
    only): one finding per call, not one more inside the helper for all of them."""
    if ctx.project is None or not any(node is fn for node, _ in ctx.project.handed_params(ctx)):
        return False
    body = [
        s
        for s in fn.body
        if not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
    ]
    if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse:
        return False
    return is_rank0_test(body[0].test) and all(
        isinstance(x, ast.Expr) and isinstance(x.value, ast.Call) and is_log_call(x.value)
        for x in body[0].body
    )


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
    params = set(parameter_names(fn))
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


def _bar_class_write(ctx: FileContext, call: ast.Call) -> bool:
    """``pbar.write(msg)`` on a progress bar (a name bound to a call with ``disable=``, tqdm's
    switch): tqdm's ``write`` is a class method that prints on every process, whether this bar is
    hidden or not (distil-whisper's ``steps_trained_progress_bar.write(f"... Loss: {loss}")`` with
    ``disable=not accelerator.is_local_main_process``), so the bar being rank 0's says nothing of it."""
    if not (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "write"
        and isinstance(call.func.value, ast.Name)
    ):
        return False
    name = call.func.value.id
    scope = ctx.enclosing_function(call)
    binds = ctx.bindings(scope).get(name, []) or ctx.bindings(ctx.tree).get(name, [])
    built: list[ast.expr] = []
    for b in binds:
        if isinstance(b, ast.Assign):
            built.append(b.value)
        elif isinstance(b, (ast.With, ast.AsyncWith)):
            built += [i.context_expr for i in b.items if dotted(i.optional_vars) == name]
        else:
            return False
    return bool(built) and all(isinstance(v, ast.Call) and keyword(v, "disable") is not None for v in built)


def _log_function_alias(ctx: FileContext, call: ast.Call) -> bool:
    """``log_(msg)`` where the function (else the module) binds ``log_`` only to log functions
    (PVDM's ``log_ = print`` / ``log_ = logger.log`` by whether a logger was handed in): a call of
    a local name for ``print`` or a logger's method is a log call."""
    if not isinstance(call.func, ast.Name):
        return False
    name = call.func.id
    binds = ctx.bindings(ctx.enclosing_function(call)).get(name) or ctx.bindings(ctx.tree).get(name, [])
    return bool(binds) and all(
        isinstance(b, ast.Assign)
        and isinstance(b.value, (ast.Name, ast.Attribute))
        and bool(LOG_CALL.match((dotted(b.value) or "").rsplit(".", 1)[-1]))
        for b in binds
    )


def _disabled_off_rank0(call: ast.Call, predicates: set[str]) -> bool:
    flag = keyword(call, "disable")
    return flag is not None and is_not_rank0_test(flag, predicates)


LIGHTNING_LOG = frozenset({"log", "log_dict"})


BAR_UPDATES = frozenset({"set_description", "set_postfix", "set_description_str", "set_postfix_str", "write"})


def stderr_bars(ctx: FileContext, silencer: ast.Assign | None) -> frozenset[str]:
    """``sys.stdout = sys.stderr = open(os.devnull, "w")`` off rank 0: the file's tqdm bars write to
    standard error (tqdm's default, no ``file=``), so what they show is rank 0's (Kaggle UW-GI's
    ``progress_bar.set_description(f"loss: {losses:.4f}")``). The names bound to such bars."""
    if silencer is None or not any(dotted(t) == "sys.stderr" for t in silencer.targets):
        return frozenset()
    out: set[str] = set()
    for node in ctx.of_type(ast.Assign):
        value = node.value
        if (
            isinstance(value, ast.Call)
            and (dotted(value.func) or "").rsplit(".", 1)[-1] == "tqdm"
            and keyword(value, "file") is None
        ):
            out |= {d for t in node.targets if (d := dotted(t))}
    return frozenset(out)


def _rebound_records(ctx: FileContext, scope: ast.AST) -> set[str]:
    """Names ``scope`` (or its module) binds only to a logger's record method: CenterNet's ``print =
    logger.info`` makes every later ``print(...)`` a record the logging setup can silence."""
    out: set[str] = set()
    for where in (ctx.tree, scope) if scope is not ctx.tree else (ctx.tree,):
        for name, binds in ctx.bindings(where).items():
            values = [b.value if isinstance(b, ast.Assign) else None for b in binds]
            if values and all(isinstance(v, ast.Attribute) and records_silenceably(v) for v in values):
                out.add(name)
    return out


def rank0_logs(
    ctx: FileContext,
    scope: ast.AST,
    rank0_objects: set[str],
    predicates: set[str],
    quiet: bool,
    lightning: set[str],
    stdout: tuple[str, int] | None = None,  # (module, line) of the silencing; module "" for this file
    rank0_called: bool = False,
    stderr_bars: frozenset[str] = frozenset(),
) -> Iterator[tuple[ast.AST, ast.If | None, Text]]:
    """(log node, its rank-0 guard or None, how it is rank 0 only) for every rank-0-only log in ``scope``;
    ``rank0_called``: the project calls ``scope`` under rank-0 tests only; ``stderr_bars``: progress
    bars of the file that write to standard error while the file silences it off rank 0."""
    name = getattr(scope, "name", "")
    records = _rebound_records(ctx, scope) if quiet else set()
    for node in ctx.local(scope):
        if isinstance(node, ast.Call):
            if _saves_to_file(ctx, node):
                continue  # ``fout.write(yaml.dump(info_dict))``: a file saved, not a log
            if off_rank0_branch(ctx.parents, node, predicates):
                # the other branch of a rank-0 test (CenterNet tutorial's ``if local_rank == 0: ...
                # elif writer is not None: writer.add_scalar(...)``) runs on the other ranks, where a
                # rank-0 writer is None: whatever it logs is not rank 0's alone
                continue
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
            state = state_log_call(ctx, node)  # ``progress.display(i)``: prints the meters it was built with
            if guard is not None and (
                is_log_call(node)
                or _log_function_alias(ctx, node)
                or (ctx.project is not None and ctx.project.call_logged_args(ctx, node) is not None)
                or helper_logged_args(ctx, node)
                or state is not None
            ):
                yield node, guard, Text("", "")
                continue
            if state is not None and stdout is not None and state[0] == "print":
                yield (
                    node,
                    None,
                    Text(
                        f"by `{dotted(node.func)}`, which prints with `print` while standard output is "
                        f"silenced on the other ranks ({stdout[0] + ', ' if stdout[0] else ''}line {stdout[1]})",
                        f"由 `{dotted(node.func)}`（用 `print` 输出；{stdout[0] + ' ' if stdout[0] else ''}"
                        f"第 {stdout[1]} 行已让其他 rank 的标准输出静默）",
                    ),
                )
                continue
            if state is not None and quiet and state[0] == "logger":
                yield (
                    node,
                    None,
                    Text(
                        f"by `{dotted(node.func)}`, whose logger the logging setup silences on other ranks",
                        f"由 `{dotted(node.func)}`（其记录器由日志配置只在 rank 0 输出）",
                    ),
                )
                continue
            if (
                is_rank0_log_call(node)
                or main_process_only_call(ctx, node)
                or (
                    (fn := ctx.helper(node)) is not None
                    and (_forwards_to_rank0_log(fn) or rank_zero_decorated(fn))
                    and helper_logged_args(ctx, node)
                )
            ):
                # (or a same-file wrapper that only forwards to one: ``self.print(msg)``)
                yield node, None, Text("by a call that runs on rank 0 only", "由仅在 rank 0 执行的调用")
                continue
            m = method(node)
            if (
                m
                and m[0]
                and holds_rank0_object(ctx, node, m[0], rank0_objects)
                and m[1] not in ("close", "flush", "finish")
                and not _bar_class_write(ctx, node)
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
            if stdout is not None and m is not None and m[0] in stderr_bars and m[1] in BAR_UPDATES:
                yield (
                    node,
                    None,
                    Text(
                        f"on the progress bar `{m[0]}` while standard error is silenced on the other ranks "
                        f"(line {stdout[1]})",
                        f"在进度条 `{m[0]}` 上（第 {stdout[1]} 行已让其他 rank 的标准错误输出静默）",
                    ),
                )
                continue
            if quiet and (
                is_silenceable_record(node) or (isinstance(node.func, ast.Name) and node.func.id in records)
            ):
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
                # (not a function that tests the rank around its own logs among other work: its file
                # reports what it logs, inside it, as for a def of this file)
                if summary is not None and summary.logs_rank0 and not summary.logs_inside:
                    yield node, None, Text("by a call that runs on rank 0 only", "由仅在 rank 0 执行的调用")
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr in LOG_ATTRS for t in node.targets
        ):
            guard = _guard(ctx, node, predicates)
            if guard is not None:
                yield node, guard, Text("", "")
        elif (
            isinstance(node, ast.Dict) and "self" in lightning and name == "training_step" and log_entry(node)
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


def log_entry(node: ast.Dict) -> ast.expr | None:
    """The ``"log"`` (or ``"progress_bar"``) entry of a dict: what Lightning 0.x hands its loggers."""
    return next(
        (
            v
            for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and k.value in LIGHTNING_LOG_KEYS
        ),
        None,
    )


def _saves_to_file(ctx: FileContext, call: ast.Call) -> bool:
    """``f.write(...)`` where ``f`` is a file opened to save a snapshot (``with open(p, "w") as f:``,
    the innermost such ``with`` or else the latest ``f = open(...)``): a state saved (wenet's
    ``yaml.dump(info_dict)``), not a log. A file opened to append (yolov7's ``open(results_file,
    "a")``) is a log that grows every epoch."""
    mode = written_file_mode(ctx, call)
    return mode is not None and "w" in mode


def _scoped(ctx: FileContext, node: ast.AST, name: str) -> str:
    """The spelling a rank-0-only object bound at ``node`` is kept under: a plain local name of a
    function as ``name@<function>`` (only that function's uses are that object), else its last part."""
    fn = ctx.enclosing_function(node)
    if "." not in name and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"{name}@{id(fn)}"
    return name.split(".")[-1]


def holds_rank0_object(
    ctx: FileContext, at: ast.AST, name: str, rank0_objects: set[str] | frozenset[str]
) -> bool:
    """``name`` (used at ``at``) is one of ``rank0_objects``: by its last part, or as the local of
    ``at``'s function it was kept under (:func:`_scoped`)."""
    last = name.split(".")[-1]
    return last in rank0_objects or f"{name}@{id(ctx.enclosing_function(at))}" in rank0_objects


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
        if name and holds_rank0_object(ctx, call, name, rank0_objects):
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
    params = parameter_names(fn)
    logged = {p.lstrip("*") for p in parameters_logged(ctx, fn)[0]}
    if depth:
        for inner in ctx.local(fn):
            if isinstance(inner, ast.Call) and not is_log_call(inner):
                handed = helper_logged_args(ctx, inner, depth - 1)
                logged |= reads(x for a in handed for x in ast.walk(a)) & set(params)
    return [a for p in params if p in logged and (a := bound_argument(fn, call, p)) is not None]
