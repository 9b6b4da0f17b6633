"""fp16-no-scaler: training under float16 autocast with no GradScaler in sight.

float16 has a 5-bit exponent: gradients below ~6e-8 flush to zero and above 65504 overflow,
which GradScaler's dynamic loss scaling exists to prevent (torch docs, "Automatic Mixed
Precision": "if the forward pass for a particular op has float16 inputs, the backward pass
will produce float16 gradients ... may underflow"). Flagged when float16 compute is set up:

- an autocast that is float16: ``dtype=torch.float16``/``torch.half``, ``torch.cuda.amp.autocast()``
  / ``torch.autocast("cuda")`` (float16 by default);
- an FSDP ``MixedPrecision(param_dtype=torch.float16)`` policy (FSDP1 needs ``ShardedGradScaler``);
- the model's weights cast to float16 (``model.half()``, ``model.to(torch.float16)``), where the
  cast value is the model the file trains (wrapped in DDP, ``.train()``, or its ``parameters()``
  given to an optimizer);

and the file (project) runs backward and has no ``*GradScaler``, no ``.scale(...)``, no
loss-scaler object (timm ``NativeScaler`` style) and no accelerate/Lightning/DeepSpeed (they scale
themselves), and no hand-made loss scaling (``loss_scale``, apex ``amp.scale_loss``). Config-gated: a dtype chosen from a flag (nanoGPT/llm.c ``ptdtype = {"float16":
torch.float16, ...}[dtype]``, ``torch.float16 if args.fp16 else ...``) or a policy/autocast under an
``if`` on a configuration flag is reported with the flag value that makes it float16; so is a dtype
read from a project property or helper that returns ``torch.float16`` under a setting (OLMo
``dtype=self.cfg.autocast_precision``). A GradScaler built only for some values of an option (``GradScaler() if args.precision == "amp" else
None``) leaves float16 picked by another value of that option unscaled (Chinese-CLIP casting the
weights under ``precision == "fp16"``, Protenix's ``{"fp16": torch.float16}[dtype]`` autocast beside
``GradScaler(enabled=dtype == "float16")``); in project mode the cast may be a project helper's
(``convert_weights(model)``). A GradScaler only in a test module does not count, and an
autocast that computes no gradient (under ``no_grad``/``inference_mode``, or in a function named
for evaluation: ``eval_batch``, ``validate``) is not training. In a file that never backprops
(project mode: the training is elsewhere), only an autocast in model code (a class's method) is
on the training path; a script-level benchmark under autocast is not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.flags import (
    UNKNOWN,
    all_defaults,
    argparse_choices,
    describe,
    flag_test,
    gate_of,
    value_test,
)
from ddp_doctor.lint.idioms import LOSS_SCALING_OPTIMIZER
from ddp_doctor.lint.loops import LoopFacts, argument
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.rules.base import Rule, Violation

AUTOCAST = "torch.amp.autocast"
CUDA_AUTOCAST = "torch.cuda.amp.autocast"  # defaults to float16
FP16 = "torch.float16"
MIXED_PRECISION = (
    "torch.distributed.fsdp.MixedPrecision",
    "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision",
    "torch.distributed.fsdp.api.MixedPrecision",
)
SELF_SCALING = ("accelerate", "lightning", "pytorch_lightning", "deepspeed")
HAND_SCALING = re.compile(r"loss_scal|scale_loss|loss_scaler", re.IGNORECASE)
OPTIMIZER_CALL = re.compile(r"(optim|Adam|SGD|LAMB|Lion|Adafactor|RMSprop)", re.IGNORECASE)
NO_GRAD = re.compile(r"(no_grad|inference_mode)$")
EVAL_FUNCTION = re.compile(
    r"^_*(eval|evaluate|valid|validate|validation|test|predict|infer|inference|sample|generate)(_|$)"
)
PASS_THROUGH = frozenset({"cuda", "to", "train", "float", "cpu"})  # model.cuda().half()


class Fp16NoScaler(Rule):
    id = "fp16-no-scaler"
    project_facts = frozenset({"scaler"})
    flagged = (
        "a float16 autocast (`dtype=torch.float16/half`, also with `device_type=str(device)`, or "
        '`torch.cuda.amp.autocast()` / `torch.autocast("cuda")` defaults; config-gated on CUDA for a '
        "device read at run time, `device_type=self.device.type`) or the trained model's "
        "weights cast to float16 (`model.half()`, `.to(torch.float16)` on a model wrapped in DDP, "
        "`.train()`ed or optimised), a backward in the file, and no GradScaler / `.scale(` / "
        "hand-made loss scaling / accelerate / Lightning / DeepSpeed; config-gated: a dtype picked by "
        "a flag (a table, `getattr(torch, cfg.dtype)`, also held on `self`, `if args.dtype in [...]: dtype = torch.float16`, also handed to the function "
        "that autocasts with `enabled=dtype != torch.float32`); (project) weights cast by a project helper "
        "(`convert_weights(model)`: `model.apply` of a def doing `.half()`); a GradScaler built only for "
        'other values of the option that picks float16 (`GradScaler() if args.precision == "amp" else None` '
        'with `if args.precision == "fp16": model.half()`, `GradScaler(enabled=cfg.dtype == "float16")` with '
        'a `{"fp16": torch.float16}[cfg.dtype]` autocast, `GradScaler(enabled=(dtype == "float16"))` beside a '
        "`torch.cuda.amp.autocast()` of the same block, float16 whatever that option says)"
    )
    not_flagged = (
        "bf16, a dtype held in a variable (nanoGPT's `ptdtype`), `enabled=flag`, a float16 teacher "
        "only evaluated, inference-only files, an autocast under `no_grad`/`inference_mode` or in a "
        "function named for evaluation (`eval_batch`, `validate`, `predict`), a branch on an option "
        'value its argparse `choices` leave out (`if precision == "amp":` with no "amp" choice), an fp16 '
        "optimizer that scales the loss itself in the file or (project) on its code path (fairseq "
        "`FP16Optimizer`, apex/Megatron/DeepSpeed `FP16_Optimizer`)"
    )
    required = (("autocast", "MixedPrecision", "half", "float16"), ("backward",))
    required_in_project = (("autocast", "MixedPrecision", "half", "float16"),)

    def project_words(self, project: ProjectIndex) -> tuple[str, ...]:
        return project.fp16_cast_names()  # ``convert_weights(model)`` casts the weights it is handed

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if any(ctx.imports_module(m) for m in SELF_SCALING):
            return
        calls = ctx.of_type(ast.Call)
        # RecBole: ``GradScaler(enabled=self.enable_scaler)`` next to ``autocast(enabled=self.enable_amp)``:
        # a scaler switched by its own flag leaves the autocast flag on with the scaler flag off
        # Chinese-CLIP/CLAP ``GradScaler() if args.precision == "amp" else None``: a scaler built only
        # for some values of an option; float16 picked by another value of that option runs unscaled
        scaler_values = _scaler_values(ctx, calls)
        scaler_flags = None if scaler_values else _scaler_flags(ctx, calls)
        if any("GradScaler" in w for w in ctx.words) and scaler_flags is None and not scaler_values:
            return  # a scaler class is named somewhere (torch.amp, ShardedGradScaler, ...)
        if any(HAND_SCALING.search(w) or LOSS_SCALING_OPTIMIZER.search(w) for w in ctx.words):
            # loss scaling by hand (guided-diffusion ``lg_loss_scale``, apex ``amp.scale_loss``) or by
            # an fp16 optimizer that scales (fairseq ``FP16Optimizer``)
            return
        backwards = [b for n in calls if (b := facts.backward(n))]
        project = ctx.project
        if (
            not scaler_flags
            and not scaler_values
            and (
                any(b.scaled for b in backwards)
                or any((method(n) or (None, ""))[1] == "scale" for n in calls)
            )
        ):
            return
        if project is not None:
            if scaler_values:
                # the scaled backwards elsewhere run this file's scaler (handed to them); a module on
                # the same code path that builds its own scaler is not known to be off
                if project.builds_scaler_near(ctx.module):
                    return
            elif project.scales_module(ctx.module, own=not scaler_flags):
                return
            if not backwards and not any(s.calls_backward for s in project.summaries.values()):
                return
        elif not backwards:
            return
        defaults = all_defaults(ctx)
        for n in calls:
            fp16, gate = self._fp16(ctx, n, defaults, scaler_flags or set())
            if not fp16 or _evaluation_only(ctx, n) or _excluded_choice(ctx, n):
                continue
            if not backwards and ctx.call_qualname(n) in (AUTOCAST, CUDA_AUTOCAST) and not _in_class(ctx, n):
                continue  # an autocast where nothing backprops: only model code (a forward) trains under it
            picked: tuple[str, str] | None = None
            if scaler_values:
                picked = _unscaled_pick(ctx, n, scaler_values)
                if picked is None:
                    continue  # float16 not picked by an option value the scaler leaves out
                option_text = _flag_text(ctx, _expr(picked[0]), defaults)
                gate = (
                    f"{option_text} == {picked[1]!r}"
                    if picked[1]
                    else f"{option_text} other than {_values(scaler_values)}"
                )
            gate = gate or gate_of(ctx, n, defaults)
            what = ctx.segment(n)
            if "\n" in what:  # a call over several lines: its name, not a cut line with its comment
                what = f"{dotted(n.func) or what.splitlines()[0]}(...)"
            if picked is not None and not picked[1]:
                built = _values(scaler_values)
                message = Text(
                    f"`{what}` trains in float16 whatever `{picked[0]}` is, but the GradScaler is built only "
                    f"when it is {built}: with another value, small gradients underflow to zero, large ones overflow.",
                    f"无论 `{picked[0]}` 取何值，`{what}` 都以 float16 训练，但 GradScaler 只在其为 {built} 时创建："
                    "取其他值时小梯度下溢为零，大梯度溢出。",
                )
            elif picked is not None:
                option, value = picked
                # the scaler's own option may be spelled otherwise (``cfg.precision`` / ``args.precision``)
                built = _values(scaler_values)
                message = Text(
                    f"`{what}` trains in float16 when `{option}` is {value!r}, but the GradScaler is built "
                    f"only when it is {built}: small gradients underflow to zero, large ones overflow.",
                    f"`{what}` 在 `{option}` 为 {value!r} 时以 float16 训练，但 GradScaler 只在其为 {built} 时创建："
                    "小梯度下溢为零，大梯度溢出。",
                )
            elif ctx.call_qualname(n) in MIXED_PRECISION:  # FSDP1 needs its own, sharded scaler
                message = Text(
                    f"`{what}` makes FSDP compute its gradients in float16 but no ShardedGradScaler is "
                    "used: small gradients underflow to zero, large ones overflow.",
                    f"`{what}` 让 FSDP 以 float16 计算梯度，但没有使用 ShardedGradScaler：小梯度下溢为零，大梯度溢出。",
                )
            elif scaler_flags:
                flags = "`/`".join(sorted(scaler_flags))
                message = Text(
                    f"`{what}` trains in float16 but the GradScaler runs only when `{flags}` is on, a "
                    "separate setting: with it off, small gradients underflow to zero, large ones overflow.",
                    f"`{what}` 以 float16 训练，但 GradScaler 只在另一个设置 `{flags}` 打开时生效：关闭时小梯度"
                    "下溢为零，大梯度溢出。",
                )
            else:
                message = Text(
                    f"`{what}` trains in float16 but no GradScaler is used: small "
                    "gradients underflow to zero, large ones overflow.",
                    f"`{what}` 以 float16 训练但没有使用 GradScaler：小梯度下溢为零，大梯度溢出。",
                )
            yield self.violation(n, message, gated_by=gate, autocast=ctx.segment(n))

    def _fp16(
        self, ctx: FileContext, call: ast.Call, defaults: dict[str, object], scaler_flags: set[str]
    ) -> tuple[bool, str | None]:
        """(float16 compute, the flag value that selects it or None). ``scaler_flags``: the flags the
        file's GradScalers are enabled by (empty: no GradScaler)."""
        qual = ctx.call_qualname(call)
        if scaler_flags and qual not in (AUTOCAST, CUDA_AUTOCAST):
            return False, None  # the file scales: only an autocast switched apart from it can escape
        cast = _model_cast(ctx, call)
        if cast is not None:
            returned = ctx.project.call_fp16_cast_return(ctx, call) if ctx.project is not None else None
            if returned is not None:  # cast when the option handed in takes a float16 value
                return True, f"{_flag_text(ctx, returned[0], defaults)} == {sorted(returned[1])[0]!r}"
            return True, None
        if qual in MIXED_PRECISION:
            dtype = keyword(call, "param_dtype")
            if dtype is None or ctx.qualname(dtype) == FP16:
                return dtype is not None, None
            gate = _dtype_gate(ctx, dtype, call, defaults)  # ``{"fp16": torch.float16, ...}[args.mp]``
            return gate is not None, gate
        if qual not in (AUTOCAST, CUDA_AUTOCAST):
            return False, None
        if any(k.arg is None for k in call.keywords):
            return False, None  # ``autocast(**kwargs)`` replays settings made elsewhere (checkpointing)
        # positional too: ``@autocast(False)`` (torch.cuda.amp's first parameter) switches it off
        # (imaginaire's resample2d keeps a CUDA kernel in float32 that way)
        enabled = argument(call, "enabled", 0 if qual == CUDA_AUTOCAST else 2)
        switch: str | None = None
        if scaler_flags:
            # the file scales only under its scaler flags: an autocast on its own flag is the bug
            # when that flag is on and the scaler's is off; one sharing the scaler's flag is fine
            switch = dotted(enabled) if enabled is not None else None
            if switch is None or any(_same_setting(ctx, switch, f) for f in scaler_flags):
                return False, None
            switch = f"`{switch}` on with `{'`/`'.join(sorted(scaler_flags))}` off"
        dtype = argument(call, "dtype", 1)  # (device_type, dtype, ...) and (enabled, dtype, ...)
        if (
            switch is None
            and enabled is not None
            and not (isinstance(enabled, ast.Constant) and enabled.value is True)
            and not _enabled_by_own_dtype(ctx, enabled, dtype)
        ):
            return False, None  # disabled, or enabled by a runtime flag we cannot read
        if switch is not None:
            if dtype is not None and ctx.qualname(dtype) != FP16:
                return False, None
            if dtype is None and qual == AUTOCAST and not _cuda_device(ctx, call):
                return False, None
            return True, switch + ("" if dtype is not None or qual == CUDA_AUTOCAST else ", on CUDA")
        if dtype is not None:
            if ctx.qualname(dtype) == FP16:
                return True, None
            gate = _dtype_gate(ctx, dtype, call, defaults)
            if gate is None and ctx.project is not None:
                # a dtype property or helper of the project that returns float16 under a setting
                # (OLMo ``dtype=self.cfg.autocast_precision``: ``torch.float16`` for ``amp_fp16``)
                returned = ctx.project.call_fp16_gate(ctx, dtype)
                if returned is not None:
                    return True, f"{returned} (in `{ctx.segment(dtype)}`)" if returned else None
            return gate is not None, gate
        if qual == CUDA_AUTOCAST:
            return True, None
        device = keyword(call, "device_type") or (call.args[0] if call.args else None)
        if isinstance(device, ast.Constant) or qual != AUTOCAST:
            return isinstance(device, ast.Constant) and device.value == "cuda", None
        # a device read at run time (neuraloperator ``device_type=self.autocast_device_type``): float16
        # whenever the run is on a GPU
        return (True, "the device is CUDA") if _cuda_device(ctx, call) else (False, None)


def _scaler_flags(ctx: FileContext, calls: list[ast.Call]) -> set[str] | None:
    """The flags every GradScaler of the file is switched on by (``GradScaler(enabled=self.enable_scaler)``
    → ``{"self.enable_scaler"}``); None when one is always on (or its switch is not a plain flag),
    and an empty set when the file builds none."""
    flags: set[str] = set()
    for n in calls:
        name = dotted(n.func) or ""
        if not name.endswith("GradScaler"):
            continue
        enabled = keyword(n, "enabled")
        flag = dotted(enabled) if enabled is not None else None
        if flag is None:
            return None
        flags.add(flag)
    return flags


def _scaler_values(ctx: FileContext, calls: list[ast.Call]) -> dict[str, frozenset[str]]:
    """``option -> values`` when every GradScaler of the file is built only for some string values
    of one option: ``GradScaler() if args.precision == "amp" else None``, ``GradScaler(enabled=
    cfg.dtype == "float16")``, or under ``if args.precision in ("amp", "fp16"):``. Empty otherwise
    (no scaler, or one built unconditionally or on a flag)."""
    out: dict[str, set[str]] = {}
    for n in calls:
        if not (dotted(n.func) or "").endswith("GradScaler"):
            continue
        enabled = keyword(n, "enabled")
        picked = value_test(enabled) if enabled is not None else None
        if picked is None and enabled is None:
            picked = _enclosing_value_test(ctx, n)
        if picked is None:
            return {}
        out.setdefault(picked[0], set()).update(picked[1])
    if len(out) != 1:
        return {}
    return {k: frozenset(v) for k, v in out.items()}


def _enclosing_value_test(ctx: FileContext, node: ast.AST) -> tuple[str, frozenset[str]] | None:
    """The innermost ``if``/conditional expression of ``node``'s function that runs it only for some
    values of an option (``node`` in its true branch)."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, ast.IfExp) and child is cur.body:
            return value_test(cur.test)
        if isinstance(cur, ast.If) and child in cur.body:
            found = value_test(cur.test)
            if found is not None:
                return found
        child, cur = cur, ctx.parents.get(cur)
    return None


def _unscaled_pick(
    ctx: FileContext, call: ast.Call, scaler_values: dict[str, frozenset[str]]
) -> tuple[str, str] | None:
    """(option, value): the value of the scaler's own option that picks float16 at ``call`` when
    the scaler is built for other values only: the key of a dtype table (``{"fp16": torch.float16,
    ...}[cfg.dtype]``) the autocast's dtype is read from, or an enclosing ``if args.precision ==
    "fp16":``. None when the float16 is not picked by that option or the scaler covers the value."""
    ((scaler_option, covered),) = scaler_values.items()
    picks: list[tuple[str, frozenset[str]]] = []
    dtype = keyword(call, "dtype") or keyword(call, "param_dtype")
    table = _dtype_table(ctx, dtype, call) if dtype is not None else None
    if table is not None:
        picks.append(table)
    enclosing = _enclosing_value_test(ctx, call)
    if enclosing is not None:
        picks.append(enclosing)
    returned = ctx.project.call_fp16_cast_return(ctx, call) if ctx.project is not None else None
    if returned is not None and (handed := dotted(returned[0])) is not None:
        picks.append((handed, returned[1]))  # ``create_model(..., precision=args.precision)``
    for option, values in picks:
        if option.rsplit(".", 1)[-1] != scaler_option.rsplit(".", 1)[-1] and not _same_setting(
            ctx, option, scaler_option
        ):
            continue
        if values & covered:
            return None  # some float16 value is scaled: not judged
        return option, sorted(values)[0]
    if _float16_always(ctx, call) and _beside_scaler(ctx, call):
        # baby-llama2's ``torch.cuda.amp.autocast()`` (no dtype: float16 on CUDA) beside
        # ``GradScaler(enabled=(dtype == 'float16'))``, with no test of that option around it (only
        # ``if __name__ == "__main__":``): the option switches the scaler, not the autocast, so its
        # other values train float16 unscaled ("": every value the scaler leaves out)
        return scaler_option, ""
    return None


def _float16_always(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` is an autocast that is float16 by itself: no ``enabled`` switch, and a literal
    ``torch.float16`` dtype or none (``torch.cuda.amp.autocast()``, ``torch.autocast("cuda")``)."""
    qual = ctx.call_qualname(call)
    if qual not in (AUTOCAST, CUDA_AUTOCAST) or argument(call, "enabled", 0 if qual == CUDA_AUTOCAST else 2):
        return False
    dtype = argument(call, "dtype", 1)
    if dtype is not None:
        return ctx.qualname(dtype) == FP16
    return qual == CUDA_AUTOCAST or _cuda_device(ctx, call)


def _beside_scaler(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` runs in the function (or module block) that builds the GradScaler, under no test but
    the device's or ``__name__``'s: nothing but the scaler's own switch tells the two apart. An
    autocast under some other ``if`` (or in another function) may be reached only for the scaler's
    values."""
    scope = ctx.enclosing_function(call)
    if not any(
        (dotted(n.func) or "").endswith("GradScaler") and ctx.enclosing_function(n) is scope
        for n in ctx.of_type(ast.Call)
    ):
        return False
    child: ast.AST = call
    cur = ctx.parents.get(call)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.If, ast.IfExp)) and child is not cur.test:
            words = {
                n.id if isinstance(n, ast.Name) else n.attr
                for n in ast.walk(cur.test)
                if isinstance(n, (ast.Name, ast.Attribute))
            }
            if not any("device" in w or "cuda" in w or w == "__name__" for w in words):
                return False
        child, cur = cur, ctx.parents.get(cur)
    return True


def _values(scaler_values: dict[str, frozenset[str]]) -> str:
    """The option values the file's GradScaler is built for: ``'fp16'/'amp'``."""
    ((_, covered),) = scaler_values.items()
    return "/".join(repr(v) for v in sorted(covered))


def _dtype_table(ctx: FileContext, dtype: ast.AST, at: ast.AST) -> tuple[str, frozenset[str]] | None:
    """``{"fp16": torch.float16, "bf16": ...}[opt]`` (directly or through a name assigned it in the
    function): (opt, the keys that map to float16)."""
    if isinstance(dtype, ast.Name):
        binds = [
            b
            for b in ctx.bindings(ctx.enclosing_function(at)).get(dtype.id, [])
            if b.lineno <= getattr(at, "lineno", 0)
        ]
        if not binds or not isinstance(binds[-1], ast.Assign):
            return None
        dtype = binds[-1].value
    if not (isinstance(dtype, ast.Subscript) and isinstance(dtype.value, ast.Dict)):
        return None
    option = dotted(dtype.slice)
    keys = frozenset(
        k.value
        for k, v in zip(dtype.value.keys, dtype.value.values, strict=False)
        if isinstance(k, ast.Constant)
        and isinstance(k.value, str)
        and ctx.qualname(v) in (FP16, "torch.half")
    )
    return (option, keys) if option and keys else None


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _same_setting(ctx: FileContext, a: str, b: str) -> bool:
    """Two spellings of one setting: ``self.amp_training = args.fp16`` makes ``self.amp_training``
    and ``args.fp16`` the same switch (YOLOX), followed through a few such assignments."""
    return bool(_origins(ctx, a) & _origins(ctx, b))


def _origins(ctx: FileContext, name: str) -> set[str]:
    """``name`` and what it is assigned from, when every assignment of that spelling in the file
    gives the same expression (a few hops)."""
    out = {name}
    for _ in range(3):
        values = {
            ctx.segment(node.value)
            for node in ctx.of_type(ast.Assign)
            if any(dotted(t) == name for t in node.targets)
        }
        if len(values) != 1:
            break
        name = values.pop()
        out.add(name)
    return out


def _cuda_device(ctx: FileContext, call: ast.Call) -> bool:
    """``autocast("cuda")`` or a device read at run time (``device_type=self.device.type``): float16
    by default when the trainer runs on a GPU."""
    device = keyword(call, "device_type") or (call.args[0] if call.args else None)
    if isinstance(device, ast.Constant):
        return device.value == "cuda"
    return device is not None and "device" in ctx.segment(device)


def _in_class(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` is in a method (model code the project's training runs), not in a script-level
    function of a file that never backprops (a benchmark under autocast)."""
    cur = ctx.parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.ClassDef):
            return True
        cur = ctx.parents.get(cur)
    return False


def _evaluation_only(ctx: FileContext, call: ast.Call) -> bool:
    """The float16 region computes no gradient: inside ``torch.no_grad()``/``inference_mode()`` (a
    with block or a decorator), or in a function whose name says it evaluates (OLMo ``eval_batch``)."""
    cur = ctx.parents.get(call)
    while cur is not None:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
            NO_GRAD.search(
                dotted(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr) or ""
            )
            for i in cur.items
        ):
            return True
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in cur.decorator_list]
            return bool(EVAL_FUNCTION.match(cur.name)) or any(NO_GRAD.search(d) for d in decorators)
        cur = ctx.parents.get(cur)
    return False


def _model_cast(ctx: FileContext, call: ast.Call) -> str | None:
    """``model.half()`` / ``model.cuda().to(torch.float16)``: the name of the model whose weights
    become float16, when the file trains that name (wraps it in DDP, calls ``.train()`` on it, or
    hands its ``parameters()`` to an optimizer); None otherwise (inputs, a frozen teacher,
    ``.data.half()`` inside a conversion helper)."""
    m = method(call)
    half = m is not None and m[1] == "half" and not call.args
    to_fp16 = (
        m is not None
        and m[1] == "to"
        and any(ctx.qualname(a) == FP16 for a in [*call.args, *(k.value for k in call.keywords)])
    )
    base: ast.AST | None
    if half or to_fp16:
        base = call.func.value  # type: ignore[attr-defined]  # method() saw an Attribute
    elif ctx.project is not None and ctx.project.call_fp16_cast_return(ctx, call) is not None:
        base = None  # ``model, cfg = create_model(..., precision=...)``: the model it returns
    else:
        # a project helper that casts the module it is handed (``convert_weights(model)``)
        position = ctx.project.call_fp16_cast(ctx, call) if ctx.project is not None else None
        if position is None or position >= len(call.args):
            return None
        base = call.args[position]
    while (
        isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr in PASS_THROUGH
    ):
        base = base.func.value
    name = dotted(base) if base is not None else None
    parent = ctx.parents.get(call)
    targets = (
        {
            d
            for t in parent.targets
            for e in (t.elts if isinstance(t, ast.Tuple) and base is None else [t])
            if (d := dotted(e))
        }
        if isinstance(parent, ast.Assign)
        else set()
    ) | ({name} if name else set())
    # ``DDP(net.cuda().half(), ...)``: cast inside the wrap (through ``.cuda()``/``.to(...)``)
    outer: ast.AST = call
    while isinstance(up := ctx.parents.get(outer), ast.Attribute) and up.attr in PASS_THROUGH:
        outer = ctx.parents.get(up, up)
    wrap = ctx.parents.get(outer)
    if (
        isinstance(wrap, ast.Call)
        and wrap.args
        and wrap.args[0] is outer
        and (ctx.call_qualname(wrap) or "").endswith("DistributedDataParallel")
    ):
        return name or "model"
    if not targets:
        return None
    for n in ctx.of_type(ast.Call):
        func = dotted(n.func) or ""
        qual = ctx.call_qualname(n) or func
        if func in {f"{t}.train" for t in targets}:
            return name or next(iter(targets))
        args = [*n.args, *(k.value for k in n.keywords)]
        if qual.endswith("DistributedDataParallel") and n.args and dotted(_moved(n.args[0])) in targets:
            return name or next(iter(targets))
        if OPTIMIZER_CALL.search(qual) and any(
            (isinstance(x, ast.Call) and dotted(x.func) in {f"{t}.parameters" for t in targets})
            or (isinstance(x, ast.Call) and any(dotted(a) in targets for a in x.args))
            for a in args
            for x in ast.walk(a)
        ):  # Adam(model.parameters()), Adam(get_trainable_params(model)) (DALLE)
            return name or next(iter(targets))
    return None


def _moved(node: ast.expr) -> ast.expr:
    """The module under ``.cuda()``/``.to(...)``-style calls: ``DDP(net.cuda(), ...)`` wraps ``net``."""
    while (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PASS_THROUGH
    ):
        node = node.func.value
    return node


def _enabled_by_own_dtype(ctx: FileContext, enabled: ast.expr, dtype: ast.expr | None) -> bool:
    """``autocast(dtype=dtype, enabled=dtype != torch.float32)`` (4M): the switch is the dtype itself,
    on for every reduced precision, so float16 whenever the dtype is."""
    if dtype is None or not isinstance(enabled, ast.Compare) or len(enabled.ops) != 1:
        return False
    if not isinstance(enabled.ops[0], (ast.NotEq, ast.IsNot)):
        return False
    sides = (enabled.left, enabled.comparators[0])
    own = ctx.segment(dtype)
    return any(
        ctx.segment(a) == own and ctx.qualname(b) in ("torch.float32", "torch.float")
        for a, b in (sides, sides[::-1])
    )


def _dtype_gate(
    ctx: FileContext, dtype: ast.AST, at: ast.AST, defaults: dict[str, object], depth: int = 2
) -> str | None:
    """The flag value that makes a variable dtype float16: ``{"float16": torch.float16}[flag]`` or
    ``torch.float16 if flag else ...``, followed through one assignment of a name; a name assigned
    ``torch.float16`` under an ``if`` on a flag (``if args.dtype in ['float16', 'fp16']: dtype =
    torch.float16``); a parameter, through what the file's calls of its function hand it (4M's
    ``train_one_epoch(..., dtype=dtype)``)."""
    if isinstance(dtype, ast.Name):
        scope = ctx.enclosing_function(at)
        binds = [b for b in ctx.bindings(scope).get(dtype.id, []) if b.lineno <= getattr(at, "lineno", 0)]
        if not binds and scope is not ctx.tree:
            handed = _handed_gate(ctx, dtype.id, scope, defaults, depth)
            if handed is not None:
                return handed
            binds = ctx.bindings(ctx.tree).get(dtype.id, [])
        chosen = _assigned_fp16_gate(ctx, binds, defaults)
        if chosen is not None:
            return chosen
        if not binds or not isinstance(binds[-1], ast.Assign) or len(binds[-1].targets) != 1:
            return None
        dtype = binds[-1].value
    if isinstance(dtype, ast.Attribute):
        dtype = _self_attribute_value(ctx, dtype) or dtype  # ``self.dtype = getattr(torch, cfg.use_dtype)``
    named = _dtype_by_name(ctx, dtype)
    if named is not None:
        return f"{_flag_text(ctx, named, defaults)} == 'float16'"
    if isinstance(dtype, ast.Subscript) and isinstance(dtype.value, ast.Dict):
        for key, value in zip(dtype.value.keys, dtype.value.values, strict=False):
            if key is not None and isinstance(key, ast.Constant) and ctx.qualname(value) == FP16:
                return f"{_flag_text(ctx, dtype.slice, defaults)} == {key.value!r}"
        return None
    if isinstance(dtype, ast.IfExp):
        for branch, when in ((dtype.body, True), (dtype.orelse, False)):
            if ctx.qualname(branch) == FP16:
                # ``torch.bfloat16 if args.dtype == "bfloat16" else torch.float16``: the value that
                # picks float16 (``--dtype != 'bfloat16'``), not "--dtype false"
                test = flag_test(ctx, dtype.test, defaults)
                if test is not None and test.value is not UNKNOWN:
                    return describe(test, when)
                return f"{_flag_text(ctx, dtype.test, defaults)} {'true' if when else 'false'}"
    return None


def _dtype_by_name(ctx: FileContext, dtype: ast.AST) -> ast.expr | None:
    """``getattr(torch, cfg.use_dtype)``: the dtype named by an option's string (LightLM's
    ``use_dtype = "float16"`` in its DDP entry), float16 when the option is ``"float16"``; the
    option read. None for anything else (a literal name, a fallback-less read of another module)."""
    if (
        isinstance(dtype, ast.Call)
        and isinstance(dtype.func, ast.Name)
        and dtype.func.id == "getattr"
        and len(dtype.args) == 2
        and ctx.qualname(dtype.args[0]) == "torch"
        and not isinstance(dtype.args[1], ast.Constant)
    ):
        return dtype.args[1]
    return None


def _self_attribute_value(ctx: FileContext, attr: ast.Attribute) -> ast.expr | None:
    """The value of ``self.x``: the one ``self.x = ...`` of the enclosing class (None when there is
    none or several)."""
    if not (isinstance(attr.value, ast.Name) and attr.value.id == "self"):
        return None
    cls = ctx.parents.get(ctx.enclosing_function(attr))
    if not isinstance(cls, ast.ClassDef):
        return None
    values = [
        n.value
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Attribute)
        and dotted(n.targets[0]) == f"self.{attr.attr}"
    ]
    return values[0] if len(values) == 1 else None


def _assigned_fp16_gate(
    ctx: FileContext, binds: list[ast.stmt | ast.expr], defaults: dict[str, object]
) -> str | None:
    """``if args.dtype in ['float16', 'fp16']: dtype = torch.float16`` (``elif`` chains too): the
    flag value of the ``if`` whose branch assigns float16 to the name."""
    for bind in binds:
        if not (isinstance(bind, ast.Assign) and ctx.qualname(bind.value) in (FP16, "torch.half")):
            continue
        holder = ctx.parents.get(bind)
        if not isinstance(holder, ast.If) or bind not in holder.body:
            continue
        test = holder.test
        found = flag_test(ctx, test, defaults)
        if found is not None:
            return describe(found, True)
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set))
            and dotted(test.left) is not None
        ):
            values = [e.value for e in test.comparators[0].elts if isinstance(e, ast.Constant)]
            return f"{_flag_text(ctx, test.left, defaults)} in {tuple(values)!r}"
    return None


def _handed_gate(
    ctx: FileContext, name: str, scope: ast.AST, defaults: dict[str, object], depth: int
) -> str | None:
    """A dtype parameter: the gate of what a call of its function in this file hands it."""
    if depth <= 0 or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args)]
    if name not in params:
        return None
    position = params.index(name)
    for call in ctx.of_type(ast.Call):
        if ctx.helper(call) is not scope:
            continue
        handed = argument(call, name, position - (1 if params[0] in ("self", "cls") else 0))
        if handed is not None:
            gate = _dtype_gate(ctx, handed, call, defaults, depth - 1)
            if gate is not None:
                return gate
    return None


def _flag_text(ctx: FileContext, node: ast.AST, defaults: dict[str, object]) -> str:
    test = flag_test(ctx, node, defaults) if isinstance(node, ast.expr) else None
    if test is not None:
        return test.option
    return dotted(node) or ctx.segment(node) or "a flag"


def _excluded_choice(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` sits under ``if precision == "amp":`` where ``precision`` (a parameter or
    ``args.precision``) is named like an argparse option whose ``choices`` leave that value out
    (open_flamingo's ``--precision`` offers amp_bf16/amp_bfloat16/bf16/fp16/fp32): the branch never
    runs from the command line."""
    own = argparse_choices(ctx)
    project = ctx.project
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, ast.Module):
        if isinstance(cur, (ast.If, ast.IfExp)) and child in (
            [cur.body] if isinstance(cur, ast.IfExp) else cur.body
        ):
            test = cur.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Eq, ast.In))
            ):
                name = dotted(test.left)
                right = test.comparators[0]
                values = (
                    [right]
                    if isinstance(test.ops[0], ast.Eq)
                    else list(right.elts)
                    if isinstance(right, (ast.List, ast.Tuple, ast.Set))
                    else []
                )
                literals = [
                    v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                ]
                if name and literals and len(literals) == len(values):
                    dest = name.split(".")[-1]
                    if dest in own:
                        if not set(literals) & own[dest]:
                            return True
                    elif project is not None and all(project.option_excludes(dest, v) for v in literals):
                        return True
        child, cur = cur, ctx.parents.get(cur)
    return False
