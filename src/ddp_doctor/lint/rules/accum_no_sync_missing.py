"""accum-no-sync-missing: a DDP accumulation loop that all-reduces on every micro-step.

DDP all-reduces gradients in every backward unless ``no_sync()`` is entered or
``require_backward_grad_sync`` is False for that forward (torch docs, DDP.no_sync). Syncing every
micro-step wastes bandwidth but gives the same numbers, so this is info, never an error.
Flagged only when the file builds a DDP model (in project mode: or a project helper returns one,
or, for a loop in a module without any wrap such as ``engine.py``, some file of the project wraps
in DDP — not FSDP, whose reduce-scatter is outside this rule) and the loop's micro-steps do not
control gradient sync: ``no_sync``, ``require_backward_grad_sync``, FSDP2's
``set_requires_gradient_sync`` or a sync context helper (``lint/idioms.py`` SYNC_CONTROL, e.g.
EDM's ``misc.ddp_sync``) in the loop body (through same-file helpers), around the loop, or in a
project function the loop calls. accelerate: a model passed through ``accelerator.prepare`` is a
DDP model; a micro-batch loop written by hand (not under ``accelerator.accumulate``) with neither
``accumulate`` nor ``accelerator.no_sync`` all-reduces every micro-step. PyTorch-Ignite's
``idist.auto_model(model)`` wraps in DDP when the run is distributed (an alias of DDP in
``lint/context.py``). A toggle that cannot skip anything does not count: the flag set
to the constant ``True``, or a ``no_sync()`` block with neither a forward nor a backward in it;
a ``no_sync`` bound only under ``isinstance(model, FSDP)`` (open_lm) skips nothing for DDP. Micro-steps
whose forward goes through ``model.module`` and never through the DDP wrap (minimind GRPO) are not
reported: no reducer runs, so there is nothing to skip (each rank trains alone, a different bug).
A step function that backprops on every call and steps under an accumulation guard
(``train_step`` called once per micro-batch) is an accumulation loop too, unless its file controls
sync anywhere (its callers may). Config-gated when the micro-step count is read from configuration (``--accum_iter > 1``); not
reported when the count is 1 on every path but DeepSpeed's (whose engine accumulates by itself).
A toggle written before the loop in its block, or in a block around it (Wolf's apex
``model.disable_allreduce()`` ahead of the loop over all chunks but the last), controls the loop's
backwards too. accelerate whose every shipped launch (``accelerate launch --config_file X.yaml`` in
the project's shell scripts) names a config with ``distributed_type: FSDP``/``DEEPSPEED`` (HALOs),
or whose ``Accelerator`` gets an ``fsdp_plugin``/``deepspeed_plugin``, wraps in no DDP
(``lint/launch_scripts.py`` ``accelerate_shards``). A loop in a top-level function that builds its
own model from a class, optimises it and never wraps it, beside the file's DDP code elsewhere (a
course lab's single-GPU accumulation demo), runs no reducer (``single_process.trains_own_unwrapped_model``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, conjuncts, dotted, method
from ddp_doctor.lint.discarded_wrap import discarded_wrap
from ddp_doctor.lint.idioms import DDP, SYNC_CONTROL
from ddp_doctor.lint.launch_scripts import accelerate_shards
from ddp_doctor.lint.loops import (
    LOOPS,
    LoopFacts,
    accumulation_count,
    accumulation_window,
    count_gate,
)
from ddp_doctor.lint.rules.base import Rule, Violation
from ddp_doctor.lint.single_process import trains_own_unwrapped_model

DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
WRAPS = frozenset(
    {
        DDP,
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "deepspeed.initialize",
    }
)


class AccumNoSyncMissing(Rule):
    id = "accum-no-sync-missing"
    project_facts = frozenset({"sync_toggle", "call_arguments", "options"})
    flagged = (
        "a DDP accumulation loop (DDP all-reduces every backward) whose micro-steps run no effective "
        "sync control: `no_sync`, `require_backward_grad_sync`, `set_requires_gradient_sync`, a sync "
        "helper — in the loop (and its same-file helpers), around it, or in a project function it "
        "calls; `= True` and a `no_sync()` block with no forward/backward skip nothing"
    )
    not_flagged = (
        "nanoGPT's `model.require_backward_grad_sync = (...)`, `no_sync()` contexts (also "
        "`nullcontext() if last else model.no_sync()`, and through aliases: `cm = model.no_sync` ... "
        "`ctx = cm if not last else nullcontext`), apex DDP's `disable_allreduce()`, EDM `ddp_sync`, FSDP1/FSDP2 (reduce-scatter, "
        "not this rule), accelerate, micro-steps whose forward bypasses DDP through `model.module`, a loop "
        "that `break`s after its first backward (retrying a micro-batch until one backward succeeds), the sync "
        "turned off by a statement before the loop in its block (apex `model.disable_allreduce()` ahead of "
        "the micro-batch loop), accelerate launched only with shipped `--config_file` YAMLs that say "
        "`distributed_type: FSDP`/`DEEPSPEED` (or an `Accelerator(fsdp_plugin=...)`), a top-level function "
        "that builds, optimises and never wraps its own model beside the file's DDP worker (a single-process demo)"
    )
    required = (("DistributedDataParallel", "prepare", "auto_model"), ("backward", "scaler", "loss_scaler"))
    required_in_project = (("backward", "scaler", "loss_scaler"),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        project = ctx.project
        calls = ctx.of_type(ast.Call)
        # accelerate's prepare() wraps the model in DDP when distributed; its accumulate() skips the
        # sync (loops under it are no accumulation loops here), a hand-written micro-batch loop does not
        # a wrap the run throws away (``model = model.module`` right after it) all-reduces nothing
        wraps = [n for n in calls if ctx.call_qualname(n) == DDP and not discarded_wrap(ctx, n)]
        if not facts.prepared and not wraps:
            if project is None:
                return
            wraps_here = any(project.call_wraps_ddp(ctx, n, plain=True) for n in calls)
            if not wraps_here and not (project.wraps_plain_ddp and not _wraps_anything(ctx)):
                return
        if facts.prepared and not wraps and accelerate_shards(ctx):
            return  # accelerate wraps in FSDP / DeepSpeed here (every shipped config): not DDP's all-reduce
        wrapped = _ddp_names(ctx)
        wraps = [
            c
            for c in calls
            if ctx.call_qualname(c) in WRAPS or (project is not None and project.call_wraps_ddp(ctx, c))
        ]
        for loop in accumulation_window(facts):
            if _controls_sync(ctx, facts, loop.loop) or _called_inside_sync_control(ctx, facts, loop.loop):
                continue
            if trains_own_unwrapped_model(ctx, _function_of(ctx, loop.loop), wraps):
                continue  # a single-process path beside the file's DDP code: no reducer to skip
            if _forward_bypasses_ddp(ctx, facts, loop.loop, wrapped):
                continue  # no reducer runs at all: nothing is all-reduced, early or late
            if loop.shape == "function" and (
                any(SYNC_CONTROL.match(w) for w in ctx.words) or _callers_toggle_sync(ctx, loop.loop)
            ):
                continue  # a step function: its callers may toggle the sync around each call
            count = accumulation_count(facts, loop)
            if count is not None and _one_unless_deepspeed(ctx, count):
                continue
            # a step function is reported at its backward, where DDP all-reduces on every call
            at: ast.AST = loop.loop
            backwards = [n for n in facts.nodes(loop.loop.body) if facts.backward(n)]
            if loop.shape == "function":  # the backward of the micro-steps the guarded step ends
                before = [n for n in backwards if getattr(n, "lineno", 0) <= loop.step_line]
                # in a step function that accumulates in one mode, the backward of that mode
                picked = (before[-1] if loop.mode else before[0]) if before else None
                at = picked or (backwards[0] if backwards else loop.loop)
            else:
                # a loop is reported at its first backward written in the loop, where DDP's reducer
                # all-reduces on every micro-step and where `no_sync` has to go around; a backward
                # only inside a helper the loop calls leaves the report on the loop
                end = getattr(loop.loop, "end_lineno", None) or loop.loop.lineno
                inside = [n for n in backwards if loop.loop.lineno < getattr(n, "lineno", 0) <= end]
                at = inside[0] if inside else loop.loop
            yield self.violation(
                at,
                Text(
                    f"{loop.where_en[0].upper()}{loop.where_en[1:]} lets DDP all-reduce gradients on every "
                    "micro-step (no effective `no_sync`): wasted bandwidth, numerically the same.",
                    f"{loop.where_zh}让 DDP 在每个微步都做 all-reduce（没有生效的 `no_sync`）："
                    "浪费带宽，数值上等价。",
                ),
                gated_by=", ".join(
                    g for g in (loop.mode, count_gate(ctx, count) if count is not None else None) if g
                )
                or None,
                accumulation_loop_line=loop.loop.lineno,
            )


def _function_of(ctx: FileContext, loop: ast.AST) -> ast.AST | None:
    """The function an accumulation loop runs in (a step function is its own)."""
    return loop if isinstance(loop, (ast.FunctionDef, ast.AsyncFunctionDef)) else ctx.enclosing_function(loop)


def _ddp_names(ctx: FileContext) -> set[str]:
    """Names this file binds to a DDP wrap (``model = DistributedDataParallel(model, ...)``)."""
    return {
        d
        for n in ctx.of_type(ast.Assign)
        if isinstance(n.value, ast.Call) and ctx.call_qualname(n.value) == DDP
        for t in n.targets
        if (d := dotted(t))
    }


def _forward_bypasses_ddp(ctx: FileContext, facts: LoopFacts, loop: ast.AST, wrapped: set[str]) -> bool:
    """The micro-steps run the model through ``model.module`` (minimind GRPO ``model_unwrapped =
    model.module if isinstance(model, DistributedDataParallel) else model``; ``model_unwrapped(x)``)
    and never call the DDP wrap itself: DDP's reducer is never prepared, so no backward all-reduces
    (each rank trains its own copy: a different bug, not a missing ``no_sync``)."""
    if not wrapped:
        return False
    nodes = list(facts.nodes(getattr(loop, "body", [])))
    calls = [n for n in nodes if isinstance(n, ast.Call)]
    if any(dotted(c.func) in wrapped for c in calls):
        return False
    for call in calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "module" and dotted(func.value) in wrapped:
            return True  # ``model.module(x)``
        # a method of the inner module counts as the micro-step's forward only when its result is used
        # (``out = net.score(x)``); one called for its effect (``model_to_save.save_pretrained(d)``,
        # CMedGPT's checkpoint inside the loop) runs no forward
        method_forward = isinstance(func, ast.Attribute) and not isinstance(ctx.parents.get(call), ast.Expr)
        if (
            method_forward
            and isinstance(func, ast.Attribute)
            and func.attr not in _MODULE_API
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "module"
            and dotted(func.value.value) in wrapped
        ):
            return True  # ``model.module.forward_chunk(x)`` (LayoutDIT): a method of the inner module
        receiver = func.value if isinstance(func, ast.Attribute) and func.attr not in _MODULE_API else func
        if receiver is not func and not method_forward:
            continue
        if isinstance(receiver, ast.Name):
            # ``net = model.module if distributed else model`` ... ``net(x)`` or ``net.score(x)`` (proemb)
            for b in ctx.bindings(ctx.enclosing_function(call)).get(receiver.id, []):
                value = b.value if isinstance(b, ast.Assign) else None
                if isinstance(value, ast.IfExp):
                    value = value.body
                if (
                    isinstance(value, ast.Attribute)
                    and value.attr == "module"
                    and dotted(value.value) in wrapped
                ):
                    return True
    return False


# ``nn.Module`` methods that run no forward: a call of one on ``model.module`` is no micro-step's forward
_MODULE_API = frozenset(
    {
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "modules",
        "named_modules",
        "children",
        "state_dict",
        "load_state_dict",
        "zero_grad",
        "train",
        "eval",
        "to",
        "cuda",
        "cpu",
        "requires_grad_",
        "apply",
        "register_forward_hook",
        "register_full_backward_hook",
        "get_input_embeddings",
        "get_output_embeddings",
    }
)


def _one_unless_deepspeed(ctx: FileContext, count: ast.expr) -> bool:
    """The count is 1 on every path but DeepSpeed's (accelerate's test scripts:
    ``gradient_accumulation_steps = ds_config["gradient_accumulation_steps"]`` under ``if
    accelerator.distributed_type == DistributedType.DEEPSPEED:``, else ``1``): the DeepSpeed engine
    does its own accumulation, so no DDP loop ever accumulates here."""
    if not isinstance(count, ast.Name):
        return False
    binds = [
        b
        for b in ctx.bindings(ctx.enclosing_function(count)).get(count.id, [])
        if isinstance(b, ast.Assign) and b.lineno <= count.lineno
    ]
    if not binds:
        return False
    for b in binds:
        if isinstance(b.value, ast.Constant) and b.value.value == 1:
            continue
        if not _under_deepspeed(ctx, b):
            return False
    return True


def _under_deepspeed(ctx: FileContext, node: ast.AST) -> bool:
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.If) and child in cur.body and "deepspeed" in ctx.segment(cur.test).lower():
            return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _controls_sync(ctx: FileContext, facts: LoopFacts, loop: ast.AST) -> bool:
    """Some effective sync control runs with the loop's micro-steps (see the module docstring)."""
    body = getattr(loop, "body", [])
    for node in facts.nodes(body):
        if _effective_toggle(ctx, facts, node):
            return True
        if ctx.project is not None and isinstance(node, ast.Call):
            summary = ctx.project.summary_for(ctx, node.func)
            found = [summary] if summary is not None else ctx.project.method_summaries(node.func)
            if any(s.toggles_sync for s in found[:4]):
                return True
    cur = ctx.parents.get(loop)
    while cur is not None:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and _effective_toggle(ctx, facts, cur):
            return True
        cur = ctx.parents.get(cur)
    return _toggled_before(ctx, facts, loop)


def _toggled_before(ctx: FileContext, facts: LoopFacts, loop: ast.AST) -> bool:
    """A statement before the loop in its block, or in a block around it within its function, turns
    the sync off (apex DDP's ``model.disable_allreduce()`` before the micro-batch loop and
    ``enable_allreduce()`` before the last micro-batch, Wolf; ``model.require_backward_grad_sync =
    False`` set ahead of the loop): the loop's backwards run with the all-reduce already skipped.
    Toggles inside an earlier loop or a nested def belong to that code, not to this loop."""
    node = loop
    while (parent := ctx.parents.get(node)) is not None and not isinstance(
        parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
    ):
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(parent, field_name, None)
            if (
                isinstance(block, list)
                and node in block
                and any(_toggles_in(ctx, facts, stmt) for stmt in block[: block.index(node)])
            ):
                return True
        node = parent
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in parent.body:
        return any(_toggles_in(ctx, facts, stmt) for stmt in parent.body[: parent.body.index(node)])
    return False


def _toggles_in(ctx: FileContext, facts: LoopFacts, stmt: ast.stmt) -> bool:
    """``stmt`` runs an effective sync toggle itself or under an ``if`` (``if distributed:
    model.disable_allreduce()``), not inside a loop or a def of its own."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (*LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Assign, ast.Call)) and _effective_toggle(ctx, facts, node):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _called_inside_sync_control(ctx: FileContext, facts: LoopFacts, loop: ast.AST) -> bool:
    """The loop's function is called in this file, and every call sits inside an effective sync
    control (proemb's ``with model.no_sync() if use_multi_gpu else nullcontext():`` around
    ``batch_similarity_grad(model, ...)``, whose per-item backwards are the micro-steps): the
    caller already skips the all-reduce of every backward the function runs."""
    fn = _function_of(ctx, loop)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    sites = [
        c
        for c in ctx.of_type(ast.Call)
        if (isinstance(c.func, ast.Name) and c.func.id == fn.name)
        or (
            isinstance(c.func, ast.Attribute)
            and c.func.attr == fn.name
            and dotted(c.func.value) in ("self", "cls")
        )
    ]
    return bool(sites) and all(_inside_sync_with(ctx, facts, c) for c in sites)


def _inside_sync_with(ctx: FileContext, facts: LoopFacts, node: ast.AST) -> bool:
    cur = ctx.parents.get(node)
    while cur is not None:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and _effective_toggle(ctx, facts, cur):
            return True
        cur = ctx.parents.get(cur)
    return False


def _callers_toggle_sync(ctx: FileContext, fn: ast.AST) -> bool:
    """(project) A step function called from another file that controls the sync (ml-mdm's
    ``train_batch``, which ``train_parallel.main`` calls under ``with no_sync_context:`` on the
    accumulating micro-steps): the caller decides which calls all-reduce."""
    project = ctx.project
    qualname = ctx.def_qualname(fn)
    if project is None or qualname is None:
        return False
    return any(s.toggles_sync and qualname in s.callees for s in project.summaries.values())


def _effective_toggle(ctx: FileContext, facts: LoopFacts, node: ast.AST) -> bool:
    if _for_fsdp_only(ctx, node):
        return False
    if isinstance(node, ast.Assign):
        if not any(isinstance(t, ast.Attribute) and SYNC_CONTROL.match(t.attr) for t in node.targets):
            return False
        return not (isinstance(node.value, ast.Constant) and node.value.value is True)  # = True: syncs anyway
    if isinstance(node, (ast.With, ast.AsyncWith)):
        exprs: list[ast.AST] = []
        for item in node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.args:
                expr = (
                    expr.func
                )  # OLMo ``grad_sync_context = self.dist_model.no_sync`` ... ``with grad_sync_context():``
            if isinstance(expr, ast.Name):  # sync_ctx = model.no_sync() if ... else nullcontext()
                exprs += _bound_values(ctx, node, expr.id)
            exprs.append(expr)
        if not any(_names_sync_control(e) for e in exprs):
            return False
        inner = list(facts.nodes(node.body))
        return any(isinstance(n, ast.Call) for n in inner)  # a block that runs the model or backward
    if isinstance(node, ast.Call):
        m = method(node)
        name = m[1] if m else (dotted(node.func) or "").split(".")[-1]
        if isinstance(node.func, ast.Name) and _assigned_here(ctx, node.func):
            # a local holding a context (``maybe_no_sync = nullcontext`` / ``= model.no_sync``): what
            # it was bound to decides, not its name — the ``with`` around the call reads those bindings
            return False
        if SYNC_CONTROL.match(name) and name not in ("no_sync", "no_backward_sync"):
            args = [*node.args, *(k.value for k in node.keywords)]
            return not (args and all(isinstance(a, ast.Constant) and a.value is True for a in args))
    return False


def _assigned_here(ctx: FileContext, name: ast.Name) -> bool:
    """The function assigns ``name`` (a local variable, not a function or an import)."""
    binds = ctx.bindings(ctx.enclosing_function(name)).get(name.id, [])
    return any(isinstance(b, ast.Assign) for b in binds)


FSDP_CLASSES = frozenset({"torch.distributed.fsdp.FullyShardedDataParallel"})


def _for_fsdp_only(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs only when the model is an FSDP module (open_lm ``if isinstance(model, FSDP) and
    ii != accum_freq - 1: maybe_no_sync = model.no_sync``): under DDP the toggle never runs, so the
    micro-steps still all-reduce."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, ast.If) and child in cur.body and _tests_fsdp_instance(ctx, cur.test):
            return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _tests_fsdp_instance(ctx: FileContext, test: ast.expr) -> bool:
    """``isinstance(m, FSDP)``, alone or as a term of an ``and``."""
    terms = conjuncts(test)
    for t in terms:
        if (
            isinstance(t, ast.Call)
            and isinstance(t.func, ast.Name)
            and t.func.id == "isinstance"
            and len(t.args) == 2
            and ctx.qualname(t.args[1]) in FSDP_CLASSES
        ):
            return True
    return False


def _bound_values(ctx: FileContext, at: ast.AST, name: str, depth: int = 3) -> list[ast.AST]:
    """What ``name`` is assigned in ``at``'s function, and through the names those values read, what
    they are assigned (``no_sync_cm = net.no_sync`` ... ``sync_context = no_sync_cm if not last else
    nullcontext`` ... ``with sync_context():``): a context picked from an alias of ``no_sync`` is still
    ``no_sync``."""
    bindings = ctx.bindings(ctx.enclosing_function(at))
    values: list[ast.AST] = []
    pending, seen = [name], {name}
    for _ in range(depth):
        following: list[str] = []
        for current in pending:
            for b in bindings.get(current, []):
                if not isinstance(b, ast.Assign) or _for_fsdp_only(ctx, b):
                    continue
                values.append(b.value)
                for alias in _picked_names(b.value):
                    if alias not in seen:
                        seen.add(alias)
                        following.append(alias)
        pending = following
    return values


def _picked_names(expr: ast.AST) -> list[str]:
    """The names whose value ``expr`` is: itself, or either branch of ``a if c else b`` / ``a or b``."""
    if isinstance(expr, ast.Name):
        return [expr.id]
    if isinstance(expr, ast.IfExp):
        return _picked_names(expr.body) + _picked_names(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return [n for v in expr.values for n in _picked_names(v)]
    return []


def _names_sync_control(expr: ast.AST) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            m = method(n)
            name = m[1] if m else (dotted(n.func) or "").split(".")[-1]
            if SYNC_CONTROL.match(name):
                return True
        elif isinstance(n, ast.Attribute) and n.attr in ("no_sync", "no_backward_sync"):
            return True  # the method itself, called later: ``ctx = model.no_sync`` ... ``with ctx():``
    return False


def _wraps_anything(ctx: FileContext) -> bool:
    """The file itself wraps models (DDP, FSDP, DeepSpeed, accelerate, Fabric, or single-process
    ``DataParallel``: UniXcoder's code-generation script beside a DDP sibling): then its own wrap
    decides. Importing ``DistributedDataParallel`` for an ``isinstance`` check wraps nothing."""
    for call in ctx.of_type(ast.Call):
        qual = ctx.call_qualname(call) or ""
        if qual in WRAPS or qual in DATA_PARALLEL or qual.startswith("deepspeed.initialize"):
            return True
        m = method(call)
        if (
            m
            and m[0]
            and m[1] in ("prepare", "setup", "setup_module")
            and ("accelerator" in m[0] or "fabric" in m[0])
        ):
            return True
    return False
