"""Where are the micro-steps? Static structure of a training loop, for the accumulation rules.

A loop is an *accumulation loop* when its body runs backward more often than the optimizer
steps. Two shapes are recognised, and nothing else is (precision first):

- nested: a loop whose body runs backward on every pass (not only in a nested loop) but never
  steps the optimizer, followed (in the same block or an enclosing non-loop block) by an
  optimizer step — ``for micro in range(A): loss.backward()`` then ``optimizer.step()``
  (nanoGPT, torchtitan);
- guarded: a loop that calls backward unconditionally and steps the optimizer only under an
  accumulation guard — ``if (i + 1) % accum == 0: optimizer.step()``.

The *micro-step scope* of such a loop is the statements that run on every micro-step: its body
outside any ``if`` (``with`` and ``try`` bodies included), plus the unconditional bodies of
same-file helpers it calls. Anything under a condition is left alone: the linter cannot tell
how often it runs. Loops driven by Hugging Face accelerate (``with accelerator.accumulate(...)``)
are skipped: accelerate divides the loss and skips non-final optimizer/scheduler calls itself.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeGuard

from ddp_doctor.lint.accelerate_sinks import accelerate_prepare
from ddp_doctor.lint.call_arguments import left_at_default
from ddp_doctor.lint.context import (
    FileContext,
    dotted,
    keyword,
    method,
    names_a_class,
    positional_params,
    walk_local,
)
from ddp_doctor.lint.flags import all_defaults, argparse_defaults, describe, flag_test
from ddp_doctor.lint.idioms import SCALER_CALLABLE
from ddp_doctor.lint.loop_invariant import fixed_choice, inline_invariant, tests_nonfinite

# Receivers whose `.step()` is an optimizer step / a scheduler step, by name when no constructor
# is visible. Schedulers are tested first: `lr_scheduler` contains neither `opt` nor `optim`.
SCHEDULER_NAME = re.compile(r"sched", re.IGNORECASE)
OPTIMIZER_NAME = re.compile(
    r"(^|[._])(opt|optim|optimi[sz]er\w*|\w*_optimi[sz]er)s?(\[.*\])?$", re.IGNORECASE
)
# Identifiers that make an `if` an accumulation guard (besides a `%` in the test). A count of
# batches per update is named for the update too (torchdrug ``batch_id - start_id + 1 ==
# gradient_interval``, mmf ``update_frequency``, ConvNeXt ``update_freq``, PointNeXt
# ``step_per_update``), not only for the accumulation.
ACCUM_GUARD_NAME = re.compile(
    r"accum|micro|sync_grad|is_last|last_step|should_step|do_step|update_step|boundary"
    r"|update_freq|per_update|grad\w*_interval",
    re.IGNORECASE,
)
# Framework objects whose `.backward(loss)` does its own scaling (accelerate, DeepSpeed, Fabric).
FRAMEWORK_BACKWARD = re.compile(r"(accelerator|engine|fabric|deepspeed)$", re.IGNORECASE)
# ``step_and_update_lr``: a schedule-owning optimizer wrapper (the Transformer ``ScheduledOptim``
# copied into many trainers) steps its optimizer and then its learning rate in one call
STEP_METHOD = re.compile(r"^(step|optimi[sz]e|optimi[sz]er_step|step_optimi[sz]er|step_and_update_lr)$")
HELPER_DEPTH = 2  # "simple helper calls in the same file": follow at most two calls deep

OPTIMIZER_CTORS = re.compile(
    r"^(torch\.optim\.(?!lr_scheduler)\w+|transformers\.(optimization\.)?AdamW|"
    r"torch\.distributed\.optim\.ZeroRedundancyOptimizer|bitsandbytes\.optim\.\w+)$"
)
SCHEDULER_CTORS = re.compile(
    r"^(torch\.optim\.lr_scheduler\.\w+|transformers\.(optimization\.)?get_\w*schedule\w*)$"
)


@dataclass(frozen=True)
class Backward:
    call: ast.Call
    root: ast.expr | None  # the tensor backward starts from; None when the call hides it
    framework: bool  # accelerator.backward(loss) and friends: they normalise by themselves
    scaled: bool = False  # through a GradScaler (``scaler.scale(x).backward()``, ``loss_scaler(x, opt)``)


def backward_of(node: ast.AST) -> Backward | None:
    """Recognise ``x.backward()``, ``scaler.scale(x).backward()``, ``accelerator.backward(x)``,
    ``torch.autograd.backward(x)``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "manual_backward"
    ):
        # Lightning manual optimisation: ``self.manual_backward(loss)`` (Lightning scales it itself)
        return Backward(node, node.args[0], framework=True) if node.args else None
    if (
        not isinstance(node, ast.Call)
        or not isinstance(node.func, ast.Attribute)
        or node.func.attr != "backward"
    ):
        return None
    receiver = node.func.value
    text = dotted(receiver)
    if text is not None and (
        FRAMEWORK_BACKWARD.search(text) or text == "torch.autograd" or text == "autograd"
    ):
        root = node.args[0] if node.args else None
        return Backward(node, root, framework=text not in ("torch.autograd", "autograd"))
    scaled = scale_call(receiver)
    if scaled is not None and scaled.args:
        return Backward(node, scaled.args[0], framework=False, scaled=True)
    handed_scaled = scale_call(node.args[0]) if node.args else None
    if handed_scaled is not None and handed_scaled.args:
        # LightningLite/Fabric ``self.backward(scaler.scale(loss))`` (CoTracker): the object
        # backprops the scaled loss it is handed
        return Backward(node, handed_scaled.args[0], framework=False, scaled=True)
    handed = _loss_argument(node)
    if handed is not None and not LOSS_WORD.search(text or ""):
        # ``self.mp_trainer.backward(loss)``: an object that backprops the loss it is handed (a
        # tensor's own ``loss.backward(gradient)`` is called on the loss)
        return Backward(node, handed, framework=False)
    if node.args and MODULE_RECEIVER.search((text or "").rsplit(".", 1)[-1]):
        # ``model.backward(input_tensor, output_tensor, output_tensor_grad)`` (picotron's pipeline
        # stage): a module's own backward of the tensors it is handed, not a backward of the module
        return Backward(node, None, framework=False)
    return Backward(node, receiver, framework=False)


# Receivers that are modules or engines, not tensors: their ``backward(...)`` runs on what they are handed.
MODULE_RECEIVER = re.compile(r"(^|_)(model|net|module|stage|pipeline|engine)$", re.IGNORECASE)


LOSS_WORD = re.compile(r"loss", re.IGNORECASE)


def _loss_argument(call: ast.Call) -> ast.expr | None:
    """The argument named like a loss (``loss``, ``total_loss``, ``loss=...``) of ``x.backward(...)``."""
    for k in call.keywords:
        if k.arg is not None and LOSS_WORD.search(k.arg):
            return k.value
    if call.args and isinstance(call.args[0], (ast.Name, ast.Attribute, ast.Subscript)):
        name = dotted(call.args[0]) or ""
        if LOSS_WORD.search(name.split(".")[-1]):
            return call.args[0]
        # ``accel.backward(output["loss"])`` (DAC through audiotools' Accelerator): an item whose
        # key names the loss
        arg = call.args[0]
        if (
            isinstance(arg, ast.Subscript)
            and isinstance(arg.slice, ast.Constant)
            and isinstance(arg.slice.value, str)
            and LOSS_WORD.search(arg.slice.value)
        ):
            return arg
    return None


def param_backward(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.AST]
) -> tuple[str, int, bool] | None:
    """``(parameter name, position, scaled)`` when every backward in ``fn``'s own ``body`` runs on
    that parameter (open_clip ``def backward(total_loss, scaler): scaler.scale(total_loss).backward()
    ... total_loss.backward()``; VAR ``AmpOptimizer.backward_clip_step(self, loss, stepping)``). The
    position counts the call's arguments (a method's ``self``/``cls`` is not one)."""
    params = positional_params(fn)
    found = [b for n in body if (b := backward_of(n)) is not None]
    aliases = _scaled_aliases(body)
    roots = {_param_root(b.root, aliases, params, body) for b in found}
    if not found or len(roots) != 1 or any(b.framework for b in found):
        return None
    root = roots.pop()
    if root not in params:
        return None
    return root, params.index(root), all(b.scaled for b in found)


def backprops_param_itself(fn: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.AST]) -> bool:
    """``fn`` backprops one of its parameters (``param_backward``) as it is handed: every backward
    runs on the parameter itself (``loss.backward()``, apex ``with amp.scale_loss(loss, opt) as s:
    s.backward()``, ``scaler.scale(loss).backward()``) and nothing in ``fn`` divides (no ``/``, no
    ``div``/``div_``, no gradient scaling): a call of it backprops the caller's value unchanged (the
    ``manager.backward_loss(loss, model, optimizer)`` of a distributed-manager class)."""
    held = param_backward(fn, body)
    if held is None:
        return False
    aliases = _scaled_aliases(body)
    for n in body:
        if isinstance(n, (ast.BinOp, ast.AugAssign)) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mult)):
            return False
        m = method(n)
        if m and m[1] in ("div", "div_", "true_divide", "mul", "mul_", "multiply_grads"):
            return False
        bw = backward_of(n)
        if bw is not None and not (
            isinstance(bw.root, ast.Name) and aliases.get(bw.root.id, bw.root.id) == held[0]
        ):
            return False
    return True


def _scaled_aliases(body: list[ast.AST]) -> dict[str, str]:
    """apex ``with amp.scale_loss(loss, opt) as scaled: scaled.backward()`` runs backward on
    ``loss``: each such ``as`` name, to the name of the loss it stands for."""
    return {
        item.optional_vars.id: source.id
        for n in body
        if isinstance(n, (ast.With, ast.AsyncWith))
        for item in n.items
        if isinstance(item.optional_vars, ast.Name) and isinstance(source := scaled_alias_of(item), ast.Name)
    }


def scaled_alias_of(item: ast.withitem) -> ast.expr | None:
    """The loss a loss-scaling context stands for: apex ``with amp.scale_loss(loss, optimizer, ...)
    as scaled_loss:`` (also ``delay_unscale=``, ``loss_id=``): ``scaled_loss`` is ``loss`` times a
    dynamic loss scale that apex removes again before the step, so a backward on it is a backward on
    ``loss`` (UNITER, SwinBERT, Megatron-era trainers). A context whose callee does not say it
    scales (``torch.autocast(...)``) stands for nothing."""
    call = item.context_expr
    if isinstance(call, ast.Call) and call.args and "scale" in (dotted(call.func) or "").split(".")[-1]:
        return call.args[0]
    return None


def _param_root(
    root: ast.expr | None, aliases: dict[str, str], params: list[str], body: list[ast.AST]
) -> str | None:
    """The parameter a backward root comes from: the parameter itself, an item or attribute of it
    (CosyVoice ``info_dict['loss_dict']['loss']``), or a local assigned only from arithmetic on
    items of that one parameter (``scaled_loss = info_dict['loss_dict']['loss'] /
    info_dict['accum_grad']``; not ``loss = self.model(batch)``, which is computed)."""
    while isinstance(root, (ast.Subscript, ast.Attribute)):
        root = root.value
    if not isinstance(root, ast.Name):
        return None
    name = aliases.get(root.id, root.id)
    if name in params:
        return name
    # the nearest assignment above the backward (in the else branch, CosyVoice's ``scaled_loss``
    # computed from the parameter; not the DeepSpeed branch's ``scaled_loss = model.backward(...)``)
    binds = [
        n
        for n in body
        if isinstance(n, ast.Assign)
        and n.lineno <= root.lineno
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]
    values = [max(binds, key=lambda n: n.lineno).value] if binds else []
    if any(isinstance(x, (ast.Call, ast.Await, ast.Lambda)) for v in values for x in ast.walk(v)):
        return name  # computed (``loss = self.model(batch)``): not the parameter's own value
    used = {x.id for v in values for x in ast.walk(v) if isinstance(x, ast.Name)}
    # every name read is that one parameter (``loss = w * loss_e + args.w_f * loss_f`` reads locals)
    return used.pop() if values and len(used) == 1 and used <= set(params) else name


def argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """The argument a call passes for parameter ``name`` at ``position`` (keyword first)."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def scaler_callable(node: ast.AST, names: set[str] | frozenset[str] = frozenset()) -> Backward | None:
    """``loss_scaler(loss, optimizer, ...)``: a GradScaler wrapper whose ``__call__`` runs
    ``scale(loss).backward()`` (timm NativeScaler and its copies), by spelling or because project
    mode saw the object built from such a class (``names``)."""
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return None
    name = dotted(node.func)
    if name is None:
        return None
    last = name.split(".")[-1]
    if SCALER_CALLABLE.search(last) or last in names:
        return Backward(node, node.args[0], framework=False, scaled=True)
    return None


def scale_call(receiver: ast.expr) -> ast.Call | None:
    """The ``scaler.scale(loss)`` a backward runs on: direct, or the scaled branch of
    ``(scaler.scale(loss) if scaler is not None else loss).backward()``."""
    if isinstance(receiver, ast.IfExp):
        return scale_call(receiver.body) or scale_call(receiver.orelse)
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
    ):
        return receiver
    return None


class LoopFacts:
    """Per-file knowledge of which names hold optimizers, schedulers, accelerate objects."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.optimizers: set[str] = set()
        self.schedulers: set[str] = set()
        self.prepared: set[str] = set()  # names returned by accelerator.prepare(...)
        for node in ctx.of_type(ast.Assign):
            if isinstance(node.value, ast.Call):
                names = [dotted(t) for t in node.targets] + [
                    dotted(e) for t in node.targets if isinstance(t, (ast.Tuple, ast.List)) for e in t.elts
                ]
                names_set = {n for n in names if n}
                q = ctx.call_qualname(node.value) or ""
                if OPTIMIZER_CTORS.match(q):
                    self.optimizers |= names_set
                elif SCHEDULER_CTORS.match(q):
                    self.schedulers |= names_set
                if accelerate_prepare(ctx, node.value):
                    self.prepared |= names_set
        self._follow_aliases()
        # Whether this file decides what accelerate prepared. Without a ``prepare`` call here, an
        # optimizer or scheduler handed in (titok's ``train_one_epoch(..., optimizer, lr_scheduler)``
        # from the entry script that prepared them) may well be prepared: its status is unknown.
        self.prepares_here = ctx.mentions("prepare") and any(
            accelerate_prepare(ctx, c) for c in ctx.of_type(ast.Call)
        )
        project = ctx.project
        self.backward_objects: frozenset[str] = (
            frozenset(project.backward_objects) if project else frozenset()
        )
        self._accum: list[AccumLoop] | None = None
        self._stmt_flags: dict[int, tuple[bool, bool]] = {}
        self._backward_marks: list[int] | None = None
        self._class_names: set[str] | None = None
        self._param_backwards: dict[int, tuple[str, int, bool] | None] = {}
        self._project_backward: dict[int, tuple[str, int, bool] | None] = {}
        self._project_steps: dict[int, tuple[str, bool] | None] = {}

    def _follow_aliases(self) -> None:
        """A plain alias holds what it names: ``optimizer = self.optimizer`` after ``self.model,
        self.optimizer = accelerator.prepare(...)`` is the prepared optimizer (trl's PPO trainer),
        also through a chain of aliases."""
        aliases = [
            (dotted(a.targets[0]), dotted(a.value))
            for a in self.ctx.of_type(ast.Assign)
            if len(a.targets) == 1 and isinstance(a.value, (ast.Name, ast.Attribute))
        ]
        for _ in range(3):
            grew = False
            for target, source in aliases:
                if not target or not source:
                    continue
                for held in (self.prepared, self.optimizers, self.schedulers):
                    if source in held and target not in held:
                        held.add(target)
                        grew = True
            if not grew:
                return

    def backward(self, node: ast.AST) -> Backward | None:
        """Any spelling of a backward call: ``x.backward()``, framework backward, a loss-scaler call,
        a same-file helper that runs backward on one of its parameters (open_clip
        ``backward(total_loss, scaler)``)."""
        found = backward_of(node)
        if found is not None or not isinstance(node, ast.Call):
            return found
        found = scaler_callable(node, self.backward_objects)
        if found is not None:
            # a function or class of this file named ``..._scaler`` is not a loss-scaler object
            # (open_clip ``_make_train_step_no_accum_no_scaler(task, ...)``)
            name = (dotted(node.func) or "").split(".")[-1]
            if name in self.ctx.functions or name in self._classes() or self._plain_project_function(node):
                return None
            return found
        fn = self.ctx.helper(node)
        held = self._param_backward(fn) if fn is not None else None
        if fn is None and (bound := self._partial_of(node)) is not None:
            fn, offset = bound  # ``backwards = partial(loss_backwards, fp16)``; ``backwards(loss, opt)``
            held = self._param_backward(fn)
            if held is None or held[1] < offset:
                return None
            held = (held[0], held[1] - offset, held[2])
        if held is None and fn is None and self.ctx.project is not None:
            key = id(node)
            if key not in self._project_backward:  # a project function or method (VAR)
                self._project_backward[key] = self.ctx.project.call_backward_param(self.ctx, node)
            held = self._project_backward[key]
        if held is None:
            return None
        root = argument(node, held[0], held[1])
        return Backward(node, root, framework=False, scaled=held[2]) if root is not None else None

    def _plain_project_function(self, call: ast.Call) -> bool:
        """(project) ``call`` is of a project function (not a class or an instance) that runs no
        backward: a ``..._scaler`` name that scales something else (Revisiting-FSCIL's
        ``utils.lr_scaler(lr_config, batch_size)`` scales the learning rate by the batch size)."""
        project = self.ctx.project
        if project is None:
            return False
        s = project.summary_for(self.ctx, call.func)
        return (
            s is not None
            and not names_a_class(s.qualname)
            and "." not in s.qualname[len(s.module) + 1 :]  # a module-level function, not a method
            and not s.calls_backward
            and s.backward_param is None
        )

    def _partial_of(self, call: ast.Call) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
        """``name(...)`` where the calling function bound ``name = partial(helper, a, ...)`` once, to a
        same-file helper: that helper and the number of positional arguments the partial fills."""
        if not isinstance(call.func, ast.Name):
            return None
        binds = self.ctx.bindings(self.ctx.enclosing_function(call)).get(call.func.id, [])
        if len(binds) != 1 or not isinstance(binds[0], ast.Assign):
            return None
        value = binds[0].value
        if not (
            isinstance(value, ast.Call)
            and (dotted(value.func) or "").split(".")[-1] == "partial"
            and value.args
            and isinstance(value.args[0], ast.Name)
        ):
            return None
        defs = self.ctx.functions.get(value.args[0].id, [])
        return (defs[0], len(value.args) - 1) if len(defs) == 1 else None

    def _classes(self) -> set[str]:
        if self._class_names is None:
            self._class_names = {c.name for c in self.ctx.of_type(ast.ClassDef)}
        return self._class_names

    def _param_backward(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, int, bool] | None:
        key = id(fn)
        if key not in self._param_backwards:
            self._param_backwards[key] = param_backward(fn, self.ctx.local(fn))
        return self._param_backwards[key]

    def accumulation_loops(self) -> list[AccumLoop]:
        """Computed once per file and shared by the accumulation rules."""
        if self._accum is None:
            self._accum = accumulation_loops(self)
        return self._accum

    def is_scheduler(self, receiver: str | None) -> bool:
        if receiver is None or receiver in self.optimizers:
            return False
        return receiver in self.schedulers or bool(SCHEDULER_NAME.search(receiver.split(".")[-1]))

    def unprepared(self, receiver: str | None) -> bool:
        """``receiver`` provably did not go through ``accelerator.prepare``: this file prepares other
        objects, or built it with an optimizer/scheduler constructor and never prepared it."""
        if receiver is None or receiver in self.prepared:
            return False
        return self.prepares_here or receiver in self.optimizers or receiver in self.schedulers

    def is_optimizer(self, receiver: str | None) -> bool:
        if receiver is None or self.is_scheduler(receiver):
            return False
        return receiver in self.optimizers or bool(OPTIMIZER_NAME.search(receiver))

    def is_optimizer_step(self, node: ast.AST) -> TypeGuard[ast.Call]:
        """``optimizer.step()`` or ``scaler.step(optimizer)``."""
        m = method(node)
        if not m or not STEP_METHOD.search(m[1]):
            return False
        if m[1] in ("step", "step_and_update_lr") and self.is_optimizer(m[0]):
            return True
        assert isinstance(node, ast.Call)
        # ``scaler.step(optimizer)``, a trainer stepping the optimizer it is handed
        # (``self.mp_trainer.optimize(self.opt)``, ColBERT's mixed-precision manager
        # ``amp.step(colbert, optimizer, scheduler)``); not a scheduler's own ``step``
        if self.is_scheduler(m[0]):
            return False
        # handed by position or by keyword (apple ml-cvnets ``scaler.step(optimizer=self.optimizer)``)
        handed = [*node.args, *(k.value for k in node.keywords if k.arg is not None)]
        return any(self.is_optimizer(dotted(a)) for a in handed)

    def steps(self, node: ast.AST) -> TypeGuard[ast.Call]:
        """An optimizer step here, or a call of project code in another file that steps one."""
        return self.is_optimizer_step(node) or self.project_step(node) is not None

    def project_step(self, node: ast.AST) -> tuple[str, bool] | None:
        """``(how, backprops)`` when ``node`` calls project code in another file that steps an
        optimizer (``ProjectIndex.call_steps``); None in file mode or otherwise."""
        if self.ctx.project is None or not isinstance(node, ast.Call):
            return None
        key = id(node)
        if key not in self._project_steps:
            found = None
            if self.ctx.helper(node) is None:  # same-file helpers are followed by ``nodes``
                found = self.ctx.project.call_steps(self.ctx, node)
            self._project_steps[key] = found
        return self._project_steps[key]

    # --- deep searches that follow same-file helpers -------------------------------------------

    def nodes(
        self, body: list[ast.stmt], depth: int = HELPER_DEPTH, seen: frozenset[int] = frozenset()
    ) -> Iterator[ast.AST]:
        """Every node under ``body`` (not entering nested defs), then those of called helpers."""
        for stmt in body:
            for node in self.ctx.local(stmt):
                yield node
                if depth and isinstance(node, ast.Call):
                    fn = self.ctx.helper(node)
                    if fn is not None and id(fn) not in seen:
                        yield from self.nodes(fn.body, depth - 1, seen | {id(fn)})

    def _flags(self, stmt: ast.stmt) -> tuple[bool, bool]:
        """(runs backward, steps the optimizer) somewhere under ``stmt`` or its helpers; cached."""
        key = id(stmt)
        if key not in self._stmt_flags:
            nodes = list(self.nodes([stmt]))
            self._stmt_flags[key] = (
                any(self.backward(n) for n in nodes),
                any(self.steps(n) for n in nodes),
            )
        return self._stmt_flags[key]

    def may_backward(self, node: ast.AST) -> bool:
        """Cheap pre-check: ``node``'s subtree holds a ``.backward`` or a call of a same-file
        function that (within the helper depth) does."""
        if self._backward_marks is None:
            ctx = self.ctx
            backwards: list[ast.AST] = [n for n in ctx.of_type(ast.Attribute) if n.attr == "backward"]
            backwards += [n for n in ctx.of_type(ast.Call) if scaler_callable(n, self.backward_objects)]
            if ctx.project is not None:  # a call of project code in another file that backprops
                backwards += [
                    n
                    for n in ctx.of_type(ast.Call)
                    if ctx.helper(n) is None and ctx.project.call_backward_param(ctx, n) is not None
                ]
            marks = [ctx.position(n) for n in backwards]
            fns = {id(ctx.enclosing_function(n)) for n in backwards}
            for _ in range(HELPER_DEPTH):
                callers = [c for c in ctx.of_type(ast.Call) if id(ctx.helper(c)) in fns]
                marks += [ctx.position(c) for c in callers]
                fns |= {id(ctx.enclosing_function(c)) for c in callers}
            self._backward_marks = sorted(marks)
        start, stop = self.ctx.position(node), self.ctx.subtree_end(node)
        i = bisect.bisect_left(self._backward_marks, start)
        return i < len(self._backward_marks) and self._backward_marks[i] < stop

    def has_backward(self, body: list[ast.stmt]) -> bool:
        return any(self._flags(s)[0] for s in body)

    def has_optimizer_step(self, body: list[ast.stmt]) -> bool:
        return any(self._flags(s)[1] for s in body)

    def in_accelerate_accumulate(self, loop: ast.AST) -> bool:
        """The loop body or an enclosing ``with`` is ``accelerator.accumulate(...)``."""
        if not self.ctx.mentions("accumulate"):
            return False
        for node in walk_local(loop):
            if isinstance(node, ast.withitem) and _is_accumulate(node.context_expr):
                return True
        cur = self.ctx.parents.get(loop)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
                _is_accumulate(i.context_expr) for i in cur.items
            ):
                return True
            cur = self.ctx.parents.get(cur)
        return False


def _is_accumulate(expr: ast.expr) -> bool:
    m = method(expr)
    return bool(m and m[1] == "accumulate")


def accelerate_accumulate_blocks(facts: LoopFacts) -> list[ast.With | ast.AsyncWith]:
    """Every ``with accelerator.accumulate(...):`` block of the file that runs backward."""
    ctx = facts.ctx
    if not ctx.mentions("accumulate"):
        return []
    return [
        w
        for w in ctx.of_type(ast.With) + ctx.of_type(ast.AsyncWith)
        if any(_is_accumulate(i.context_expr) for i in w.items) and facts.has_backward(w.body)
    ]


ACCUM_KEYWORD = "gradient_accumulation_steps"


def accelerator_accumulates(ctx: FileContext) -> tuple[bool, str | None]:
    """(accumulation may be on, the gate when it depends on configuration) from the file's
    ``Accelerator(...)`` calls."""
    ctors = [c for c in ctx.of_type(ast.Call) if ctx.call_qualname(c) == "accelerate.Accelerator"]
    if not ctors:
        return True, f"{ACCUM_KEYWORD} > 1 (the Accelerator is built elsewhere)"
    for call in ctors:
        value = keyword(call, ACCUM_KEYWORD)
        if value is None:
            if keyword(call, "gradient_accumulation_plugin") is not None or any(
                k.arg is None for k in call.keywords
            ):
                return True, f"{ACCUM_KEYWORD} > 1 (set through a plugin or **kwargs)"
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            if value.value > 1:
                return True, None
            continue
        return True, f"{_option_text(ctx, value)} > 1"
    return False, None


def _option_text(ctx: FileContext, value: ast.expr) -> str:
    """``--grad-accum-steps (default 1)`` for ``args.grad_accum_steps`` when argparse defines it."""
    name = dotted(value)
    if name is None:
        return ctx.segment(value)
    dest = name.split(".")[-1]
    defaults = argparse_defaults(ctx)
    if f"--{dest}" not in defaults:
        return name
    return f"{defaults[f'--{dest}']} (default {defaults.get(dest)!r})"


def accumulation_count(facts: LoopFacts, loop: AccumLoop) -> ast.expr | None:
    """The number of micro-steps per optimizer step: ``N`` of ``for _ in range(N)`` (nested), or the
    right operand of the ``%`` in the accumulation guard (``if (i + 1) % accum == 0:``, also
    ``update_grad=(i + 1) % accum_iter == 0``), or the bound a micro-step counter is compared with
    (``if self.counter >= cfg.accum_steps:``). None when no such operand is written."""
    node = loop.loop
    if loop.shape == "nested":
        it = node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else None
        if isinstance(it, ast.Call) and dotted(it.func) == "range" and len(it.args) == 1:
            return it.args[0]
        return None
    # the ``%`` of the ``if`` that steps the optimizer first: another ``%`` in the loop usually paces
    # logging (PointNeXt ``if idx % cfg.print_freq == 0:`` after ``if num_iter == cfg.step_per_update:``)
    first_mod: ast.expr | None = None
    for n in facts.ctx.local(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            parent = facts.ctx.parents.get(n)
            while parent is not None and not isinstance(parent, (ast.If, ast.keyword, ast.stmt)):
                parent = facts.ctx.parents.get(parent)
            if isinstance(parent, ast.keyword) or (
                isinstance(parent, ast.If) and facts.has_optimizer_step(parent.body)
            ):
                return n.right
            if isinstance(parent, ast.If) and first_mod is None:
                first_mod = n.right
    for n in facts.ctx.local(node):  # a micro-step counter: ``if counter >= cfg.accum_steps:``
        test = n.test if isinstance(n, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.GtE, ast.Eq))
            and is_accum_guard(test)
            and facts.has_optimizer_step(n.body)  # type: ignore[attr-defined]
        ):
            return test.comparators[0]
    return first_mod  # an early exit (``if (i + 1) % accum: continue``) before the step


def accumulation_window(facts: LoopFacts) -> list[AccumLoop]:
    """The accumulation loops the accumulation rules share: those of ``LoopFacts`` whose
    micro-step count can be above 1 (project mode reads the callers: ``count_is_one``)."""
    return [loop for loop in facts.accumulation_loops() if not count_is_one(facts, loop)]


def count_is_one(facts: LoopFacts, loop: AccumLoop) -> bool:
    """The micro-step count is a parameter that defaults to 1, never rebound in its function, and
    (project mode) no call of the function in the project passes it (MetaICL ``def do_train(self,
    ..., gradient_accumulation_steps=1)``, called without it): ``step % 1 == 0`` on every pass, so
    nothing accumulates. Unknown callers (file mode, a callback, ``*args``) leave it a count."""
    ctx = facts.ctx
    count = accumulation_count(facts, loop)
    if not isinstance(count, ast.Name):
        return False
    default = left_at_default(ctx, ctx.enclosing_function(loop.loop), count.id)
    return isinstance(default, ast.Constant) and default.value == 1


def count_sources(ctx: FileContext, count: ast.expr) -> list[ast.expr | None]:
    """What a count name was assigned in its function (None for a binding that is not a plain
    assignment: a loop variable, a parameter has no binding and gives [])."""
    if not isinstance(count, ast.Name):
        return [count]
    binds = ctx.bindings(ctx.enclosing_function(count)).get(count.id, [])
    return [b.value if isinstance(b, ast.Assign) else None for b in binds if b.lineno <= count.lineno]


def count_gate(ctx: FileContext, count: ast.expr) -> str | None:
    """Config-gated when the micro-step count is read from configuration (a flag, a config entry, a
    parameter): the loop accumulates only when it is > 1. A literal or a count computed in the
    function (YOLO ``accumulate = max(round(nbs / batch_size), 1)``) is not a gate."""
    if isinstance(count, ast.Constant):
        return None
    sources = count_sources(ctx, count)
    if any(isinstance(s, ast.Constant) and s.value == 1 for s in sources):
        return f"`{ctx.segment(count)}` > 1"  # 1 unless a condition raises it (accelerate's nlp_example)
    if any(s is not None and not isinstance(s, (ast.Name, ast.Attribute, ast.Subscript)) for s in sources):
        return None  # computed here
    shown = sources[-1] if sources and sources[-1] is not None else count
    if not isinstance(shown, (ast.Name, ast.Attribute, ast.Subscript)):
        return None
    return f"{_option_text(ctx, shown)} > 1"


def unconditional_nodes(facts: LoopFacts, body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Nodes of ``body`` that run whenever it runs, through simple same-file helpers."""
    yield from _unconditional_nodes(facts, body, HELPER_DEPTH, frozenset())


def is_accum_guard(test: ast.expr, facts: LoopFacts | None = None) -> bool:
    """A test that is true on the last micro-step: a ``%`` or an accumulation-ish name, or (with
    ``facts``) a name assigned from such an expression in the same function
    (``last = (i + 1) % accum == 0`` ... ``if last:``)."""
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if name and ACCUM_GUARD_NAME.search(name):
            return True
    if facts is not None:
        for node in ast.walk(test):
            if isinstance(node, ast.Name):
                scope = facts.ctx.enclosing_function(test)
                binds = facts.ctx.bindings(scope).get(node.id, [])
                # the name itself assigned (``last = ...``), not one of its fields (VGen's ``cfg.max_frames
                # = cfg.frame_lens[cfg.rank % n]`` does not make ``if cfg.use_fsdp:`` a guard)
                if any(
                    isinstance(b, ast.Assign)
                    and b.lineno < test.lineno
                    and any(isinstance(t, ast.Name) and t.id == node.id for t in b.targets)
                    and (is_accum_guard(b.value) or _set_under_modulo(facts.ctx, b))
                    for b in binds
                ):
                    return True
    return False


def _set_under_modulo(ctx: FileContext, assign: ast.Assign) -> bool:
    """A flag set to a constant in a branch of a ``%`` test (VL-T5 ``update = True`` ... ``elif step_i %
    accum == 0 or last: update = True else: update = False`` ... ``if update: optim.step()``): the
    flag carries that test, as ``update = step_i % accum == 0`` would."""
    if not isinstance(assign.value, ast.Constant) or not isinstance(assign.value.value, bool):
        return False
    child: ast.AST = assign
    cur = ctx.parents.get(assign)
    while cur is not None and not isinstance(
        cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, *LOOPS)
    ):
        if (
            isinstance(cur, ast.If)
            and child in cur.body
            and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(cur.test))
        ):
            return True
        child, cur = cur, ctx.parents.get(cur)
    return False


@dataclass(frozen=True)
class AccumLoop:
    # A loop, or a step function (``train_step``: one call per micro-batch from the caller's loop)
    loop: ast.For | ast.AsyncFor | ast.While | ast.FunctionDef | ast.AsyncFunctionDef
    shape: str  # "nested", "guarded" or "function" (a guarded step function)
    step_line: int  # a line where the optimizer steps
    # A step function that accumulates in one mode only (XLM ``if params.amp == -1:`` steps every
    # call, its ``else`` under ``n_iter % accumulate_gradients == 0``): that mode's flag value
    mode: str | None = None

    @property
    def where_en(self) -> str:
        if isinstance(self.loop, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"the accumulation step `{self.loop.name}` (line {self.loop.lineno}, one call per micro-batch)"
        return f"the accumulation loop at line {self.loop.lineno}"

    @property
    def where_zh(self) -> str:
        if isinstance(self.loop, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"第 {self.loop.lineno} 行的梯度累积步函数 `{self.loop.name}`（每个微批次调用一次）"
        return f"第 {self.loop.lineno} 行的梯度累积循环"


LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def _step_after(facts: LoopFacts, loop: ast.AST, depth: int = 1) -> int | None:
    """Line of an optimizer step that follows ``loop`` in its block or an enclosing non-loop block;
    when the loop ends its function, one that follows a same-file call of that function (the
    micro-batch loop in ``train_step``, ``optimizer.step()`` in the caller)."""
    ctx = facts.ctx
    node = loop
    climbed_loop = False
    while True:
        parent = ctx.parents.get(node)
        if parent is None or isinstance(parent, (ast.ClassDef, ast.Lambda)):
            return None
        for field_name in _BLOCK_FIELDS + ("handlers",):
            block = getattr(parent, field_name, None)
            if isinstance(block, list) and node in block:
                for stmt in block[block.index(node) + 1 :]:
                    # a step inside a later loop belongs to that loop (torch's DDP tests run one
                    # model's backward-only loop, then another model's training loop)
                    if (
                        isinstance(stmt, ast.stmt)
                        and not isinstance(stmt, LOOPS)
                        and facts.has_optimizer_step([stmt])
                    ):
                        return next(n.lineno for n in facts.nodes([stmt]) if facts.steps(n))
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and depth > 0:
            for call in ctx.of_type(ast.Call):
                if ctx.helper(call) is parent:
                    line = _step_after(facts, call, depth - 1)
                    if line is not None:
                        return line
            return None
        if (
            isinstance(parent, LOOPS)
            and not climbed_loop
            and node in parent.body
            and not facts.has_optimizer_step(parent.body)
        ):
            # a loop over micro-step groups around the backward loop, stepping nowhere inside
            # (Squirrel: ``for inter_step in range(inter_size): for b in split_batch(batch, k):
            # backward``, then one ``opt.step()`` after both): the step after the group loop ends
            # the inner loop's micro-steps too
            climbed_loop = True
            node = parent
            continue
        if isinstance(parent, (*LOOPS, ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        node = parent


def unconditional(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of ``body`` that run every time it runs: through with/try, not if/loops."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from unconditional(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from unconditional(stmt.body)
            yield from unconditional(stmt.finalbody)


def accumulation_loops(facts: LoopFacts) -> list[AccumLoop]:
    """Every accumulation loop of the file (see the module docstring for the two shapes)."""
    found: list[AccumLoop] = []
    ctx = facts.ctx
    for loop in ctx.of_type(ast.For) + ctx.of_type(ast.AsyncFor) + ctx.of_type(ast.While):
        if (
            not facts.may_backward(loop)
            or not facts.has_backward(loop.body)
            or facts.in_accelerate_accumulate(loop)
            or _ends_after_one_backward(facts, loop)
        ):
            continue
        if not facts.has_optimizer_step(loop.body):
            keyword_step = _guarded_step(facts, loop)
            if keyword_step is not None:
                found.append(AccumLoop(loop, "guarded", keyword_step))
                continue
            if not _runs_backward(facts, every_pass(facts, loop), loop):
                continue  # backward only in a nested loop: that inner loop is the accumulation loop
            line = _step_after(facts, loop)
            if line is not None:
                found.append(AccumLoop(loop, "nested", line))
            continue
        guarded = _guarded_step(facts, loop)
        if guarded is not None:
            found.append(AccumLoop(loop, "guarded", guarded))
    return found + _step_functions(facts, found)


def _ends_after_one_backward(facts: LoopFacts, loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """A pass that backprops always leaves the loop: a ``break`` after the backward runs on every pass
    (outside any ``if``, through ``try``/``with``), and every ``continue`` after the backward follows a
    ``zero_grad`` in its block. Such a loop retries a micro-batch until one backward succeeds (a loss
    that is NaN is skipped) and runs one backward per optimizer step: nothing accumulates."""
    backwards = [n.lineno for n in facts.nodes(loop.body) if isinstance(n, ast.Call) and facts.backward(n)]
    if not backwards:
        return False
    first = min(backwards)
    if not any(isinstance(s, ast.Break) and s.lineno > first for s in unconditional(loop.body)):
        return False
    for node in facts.ctx.local(loop):
        if not (isinstance(node, ast.Continue) and node.lineno > first):
            continue
        if _innermost_loop(facts.ctx, node) is not loop:
            continue
        block = _block_of(facts.ctx, node)
        if not any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad"
            for s in block[: block.index(node)]
            for n in ast.walk(s)
        ):
            return False
    return True


def _innermost_loop(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (*LOOPS, ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = ctx.parents.get(cur)
    return cur


def _block_of(ctx: FileContext, stmt: ast.stmt) -> list[ast.stmt]:
    parent = ctx.parents.get(stmt)
    for field_name in (*_BLOCK_FIELDS, "handlers"):
        block = getattr(parent, field_name, None)
        if isinstance(block, list) and stmt in block:
            return block
    return [stmt]


def _step_functions(facts: LoopFacts, loops: list[AccumLoop]) -> list[AccumLoop]:
    """Functions that are one micro-step each: every call backprops (outside any loop of theirs) and
    steps the optimizer only under an accumulation guard (``if (self.step + 1) % self.accum == 0:``,
    the caller's loop calls them once per micro-batch). Not one holding an accumulation loop, nor
    one under accelerate's ``accumulate()``."""
    ctx = facts.ctx
    out: list[AccumLoop] = []
    for fn in ctx.of_type(ast.FunctionDef) + ctx.of_type(ast.AsyncFunctionDef):
        if not facts.may_backward(fn) or facts.in_accelerate_accumulate(fn):
            continue
        if any(ctx.within(lp.loop, fn) for lp in loops):
            continue
        # backward on every call, outside any branch or in both branches of an if/else that only
        # picks how to backprop (Pointcept ``if amp: scaler.scale(loss).backward() else:
        # loss.backward()``); a function whose branches each backprop and step their own optimizer
        # (alternating GAN updates) accumulates nothing
        if not _backprops_every_call(facts, fn.body, modes=True):
            continue
        line = _guarded_in(facts, fn.body)
        if type(line) is int:
            out.append(AccumLoop(fn, "function", line))
        elif line is False and (moded := _moded_step(facts, fn.body)) is not None:
            out.append(AccumLoop(fn, "function", moded[0], moded[1]))
    return out


def _moded_step(facts: LoopFacts, body: list[ast.stmt]) -> tuple[int, str] | None:
    """``if <config flag>: <step every call> else: <step under an accumulation guard>`` (or the
    reverse) among the statements that always run: the guarded step's line and the flag value
    that selects it; None otherwise."""
    for stmt in unconditional(body):
        if not isinstance(stmt, ast.If) or not stmt.orelse or not facts.has_optimizer_step([stmt]):
            continue
        test = flag_test(facts.ctx, stmt.test, all_defaults(facts.ctx))
        if test is None:
            return None
        branches = (_guarded_in(facts, stmt.body), _guarded_in(facts, stmt.orelse))
        if branches[0] is False and type(branches[1]) is int:
            return branches[1], describe(test, False)
        if branches[1] is False and type(branches[0]) is int:
            return branches[0], describe(test, True)
        return None
    return None


def _backprops_every_call(facts: LoopFacts, body: list[ast.stmt], modes: bool = False) -> bool:
    """Backward runs whenever ``body`` runs: unconditionally, or in both branches of an if/else
    neither of which steps an optimizer (the branches choose how to backprop, not what to update);
    with ``modes``, also an if/else on a configuration flag (two training modes, each backprops)."""
    if any(facts.backward(n) for n in _unconditional_nodes(facts, body, HELPER_DEPTH, frozenset())):
        return True
    return any(
        isinstance(s, ast.If)
        and s.orelse
        and (
            not facts.has_optimizer_step([s])
            or (modes and _flag_choice(facts, s.test))
            # ``if n % accum == 0: backward; step`` ``else: backward``: the guard only picks the step
            or (modes and is_accum_guard(s.test, facts) and not facts.has_optimizer_step(s.orelse))
        )
        and _backprops_every_call(facts, s.body, modes)
        and _backprops_every_call(facts, s.orelse, modes)
        for s in unconditional(body)
    )


def _flag_choice(facts: LoopFacts, test: ast.expr) -> bool:
    """``test`` reads a configuration flag (``params.amp == -1``), not a counter or a rank."""
    return not is_accum_guard(test) and flag_test(facts.ctx, test, all_defaults(facts.ctx)) is not None


def _runs_backward(facts: LoopFacts, body: list[ast.stmt], loop: ast.AST | None = None) -> bool:
    """Backward runs on every pass through ``body`` (or in both branches of an if/else; with the
    ``loop`` whose body it is, in either branch of an if/else on a choice that loop cannot change)."""
    if any(facts.backward(n) for n in _unconditional_nodes(facts, body, HELPER_DEPTH, frozenset())):
        return True
    return any(
        isinstance(s, ast.If)
        and s.orelse
        and (
            (_runs_backward(facts, s.body, loop) and _runs_backward(facts, s.orelse, loop))
            # ``if torch.isnan(loss).any(): skip`` ``else: loss.backward()``: every healthy micro-step
            or (
                (
                    tests_nonfinite(s.test)
                    or (
                        isinstance(loop, LOOPS)
                        and fixed_choice(loop, s.test, lambda test: is_accum_guard(test, facts))
                    )
                )
                and (_runs_backward(facts, s.body, loop) or _runs_backward(facts, s.orelse, loop))
            )
        )
        for s in unconditional(body)
    )


def _guarded_step(facts: LoopFacts, loop: ast.For | ast.AsyncFor | ast.While) -> int | None:
    """Line of the step when the loop backprops unconditionally and steps only under a guard."""
    body = every_pass(facts, loop)
    if not _runs_backward(facts, body, loop):
        return None
    line = _guarded_in(facts, body)
    return line if type(line) is int else None


def _guarded_in(facts: LoopFacts, body: list[ast.stmt], depth: int = HELPER_DEPTH) -> int | None | bool:
    """Line of an optimizer step of ``body`` that runs only under an accumulation guard; None when
    ``body`` does not step; False when it steps otherwise (every pass, or under another condition).
    ``if amp: ... else: ...`` is followed into both branches; a backward whose keyword carries the
    guard (timm/MAE ``loss_scaler(loss, opt, update_grad=(i + 1) % accum == 0)``) steps under it; a
    same-file helper whose own step is guarded (YOLOv6 ``self.update_optimizer()`` stepping when
    ``curr_step - self.last_opt_step >= self.accumulate``) steps under its guard; and every step after
    an early exit under an accumulation guard (``if self.step % accum != 0: return``, ``continue``
    in a loop) is guarded by it."""
    step_line: int | None = None
    exited = False  # an earlier statement leaves the body unless this is the last micro-step
    for stmt in unconditional(body):
        if isinstance(stmt, ast.If):
            if is_accum_guard(stmt.test, facts) and facts.has_optimizer_step(stmt.body):
                step_line = step_line or next(n.lineno for n in facts.nodes(stmt.body) if facts.steps(n))
            elif facts.has_optimizer_step([stmt]) or _guard_keyword_step(facts, [stmt]):
                if exited:
                    step_line = step_line or _first_step_line(facts, stmt)
                    continue
                if not stmt.orelse:
                    return False  # stepped under some other condition: cannot tell how often
                branches = (_guarded_in(facts, stmt.body, depth), _guarded_in(facts, stmt.orelse, depth))
                if False in branches or branches == (None, None):
                    return False
                step_line = step_line or next(b for b in branches if type(b) is int)
            elif _exits_under_guard(facts, stmt):
                exited = True
        elif not isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)) and facts.has_optimizer_step([stmt]):
            if exited:
                step_line = step_line or _first_step_line(facts, stmt)
                continue
            keyword_step = _guard_keyword_step(facts, [stmt])
            if keyword_step is None:
                helper = _helper_call(facts, stmt) if depth else None
                # an update helper; not a step function that backprops too (that one is an
                # accumulation unit of its own, and this loop only its caller)
                if helper is not None and facts.has_backward(helper.body):
                    helper = None
                inner = _guarded_in(facts, helper.body, depth - 1) if helper is not None else False
                if helper is None and depth:  # an update helper in another file (project mode)
                    inner = _project_guarded(facts, stmt)
                if type(inner) is not int:
                    return False  # an unconditional step: every iteration is an optimizer step
                keyword_step = inner
            # a helper that backprops and steps under its flag (``optimizer_step(loss / acc, opt,
            # is_update=step % acc == 0)``, timm ``loss_scaler(..., update_grad=...)``)
            step_line = step_line or keyword_step
    return step_line or _guard_keyword_step(facts, body)


def guarded_in(facts: LoopFacts, body: list[ast.stmt]) -> int | None | bool:
    """How ``body`` steps an optimizer: the line of a step under an accumulation guard, False when
    it steps otherwise, None when it does not step (see ``_guarded_in``)."""
    return _guarded_in(facts, body)


def _project_guarded(facts: LoopFacts, stmt: ast.stmt) -> int | bool:
    """The line of ``stmt`` when it is a call of project code that steps only under an accumulation
    guard and runs no backward (a step function of its own is an accumulation unit in its file)."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    found = facts.project_step(value) if value is not None else None
    return stmt.lineno if found is not None and found == ("guarded", False) else False


def _first_step_line(facts: LoopFacts, stmt: ast.stmt) -> int:
    return next(n.lineno for n in facts.nodes([stmt]) if facts.steps(n))


def _helper_call(facts: LoopFacts, stmt: ast.stmt) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The same-file helper a statement consists of a call to (``self.update_optimizer()``,
    ``x = step_fn(...)``)."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Await):
        value = value.value
    return facts.ctx.helper(value) if isinstance(value, ast.Call) else None


def _exits_under_guard(facts: LoopFacts, stmt: ast.If) -> bool:
    """``stmt`` leaves the body (``return``/``continue``) under an accumulation guard, directly or
    in a nested ``if`` (``if accum != 1: if self.step % accum != 0: return``), and steps nothing."""
    if facts.has_optimizer_step([stmt]):
        return False
    if _names_accumulation(stmt.test) and any(isinstance(s, (ast.Return, ast.Continue)) for s in stmt.body):
        return True
    return any(isinstance(s, ast.If) and _exits_under_guard(facts, s) for s in stmt.body)


def _names_accumulation(test: ast.expr) -> bool:
    """The test names the accumulation (``self.step % self.grad_accumulation_steps != 0``,
    ``not is_last_micro``). Stricter than ``is_accum_guard``: a bare ``%`` also skips batches of
    the wrong size (DLRM ``if X.size(0) % world_size != 0: continue``), which says nothing about
    when the optimizer steps."""
    if isinstance(test, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in test.ops):
        # a membership test picks listed batches (ReLoRA ``if update_step in args.skip_batches:
        # continue``, ``update_step`` the count of updates so far): which ones, not the last micro-step
        return False
    return any(
        ACCUM_GUARD_NAME.search(n.id if isinstance(n, ast.Name) else n.attr)
        for n in ast.walk(test)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


def _guard_keyword_step(facts: LoopFacts, body: list[ast.stmt]) -> int | None:
    for node in _unconditional_nodes(facts, body, 0, frozenset()):
        bw = facts.backward(node)
        if (
            bw is not None
            and isinstance(node, ast.Call)
            and any(is_accum_guard(k.value, facts) for k in node.keywords)
        ):
            return node.lineno
    for stmt in body:  # one level into if/else branches
        if isinstance(stmt, ast.If):
            for branch in (stmt.body, stmt.orelse):
                for node in _unconditional_nodes(facts, branch, 0, frozenset()):
                    if (
                        isinstance(node, ast.Call)  # (a backward is a call)
                        and facts.backward(node)
                        and any(is_accum_guard(k.value, facts) for k in node.keywords)
                    ):
                        return node.lineno
    return None


def micro_scope(facts: LoopFacts, loop: AccumLoop) -> Iterator[ast.AST]:
    """Nodes that run on every micro-step of ``loop`` (unconditional; through simple helpers)."""
    body = (
        loop.loop.body
        if isinstance(loop.loop, (ast.FunctionDef, ast.AsyncFunctionDef))
        else every_pass(facts, loop.loop)
    )
    yield from _unconditional_nodes(facts, body, HELPER_DEPTH, frozenset())


def every_pass(facts: LoopFacts, loop: ast.For | ast.AsyncFor | ast.While) -> list[ast.stmt]:
    """The loop's body, with the ``if``s the loop cannot change (``if mode == "train":``, ``if
    scheduler is not None:``) opened: they select whether the body runs in this run, not how often
    (``lint/loop_invariant.py``)."""
    return inline_invariant(loop, lambda test: is_accum_guard(test, facts))


def micro_method_calls(facts: LoopFacts, name: str) -> Iterator[tuple[AccumLoop, ast.Call, str | None]]:
    """``(loop, call, receiver)`` for every ``receiver.name(...)`` that runs on each micro-step of an
    accumulation loop, skipping receivers prepared by accelerate (which skips non-final calls)."""
    for loop in accumulation_window(facts):
        for node in micro_scope(facts, loop):
            m = method(node)
            if m and m[1] == name and m[0] not in facts.prepared:
                assert isinstance(node, ast.Call)
                yield loop, node, m[0]


_CONDITIONAL_EXPRS = (
    ast.IfExp,
    ast.BoolOp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _expr_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of one simple statement, not entering sub-expressions that may not run."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(c for c in ast.iter_child_nodes(cur) if not isinstance(c, _CONDITIONAL_EXPRS))


def _unconditional_nodes(
    facts: LoopFacts, body: list[ast.stmt], depth: int, seen: frozenset[int]
) -> Iterator[ast.AST]:
    for stmt in unconditional(body):
        if isinstance(stmt, ast.If) and _exits_under_guard(facts, stmt):
            return  # what follows ``if step % accum != 0: return`` runs on the last micro-step only
        if isinstance(
            stmt, (ast.If, *LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.Match)
        ):
            continue  # conditional or nested bodies; try bodies come through `unconditional`
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            roots: list[ast.AST] = list(stmt.items)
        else:
            roots = [stmt]
        for root in roots:
            for node in _expr_nodes(root):
                yield node
                if depth and isinstance(node, ast.Call):
                    fn = facts.ctx.helper(node)
                    if fn is not None and id(fn) not in seen:
                        yield from _unconditional_nodes(facts, fn.body, depth - 1, seen | {id(fn)})
