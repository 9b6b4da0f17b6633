"""find-unused-true: DDP built with ``find_unused_parameters=True``.

With it, DDP traverses the autograd graph after every forward to find parameters that will get
no gradient (torch docs, DistributedDataParallel: "this flag results in an extra traversal of the
autograd graph every iteration"). It costs time, not accuracy: severity info.
Autofix: ``True`` → ``False`` (DDP raises a clear error if a parameter really gets no gradient).
Lightning builds the same wrap from ``DDPStrategy(find_unused_parameters=True)`` (1.x: ``DDPPlugin``)
and from the strategy name ``"ddp_find_unused_parameters_true"``; both are flagged like the keyword.
So is the keyword unpacked from a dict (OpenUnReID ``DistributedDataParallel(model, **ddp_cfg)``
with ``ddp_cfg = {..., "find_unused_parameters": True}``), and the keyword given to a project
subclass of DDP (NATSpeech ``class DDP(DistributedDataParallel)``; lint/context.py resolves it to
DDP, in project mode from another file too).
A value read from configuration with ``True`` as its fallback (KAIR's
``opt.get("find_unused_parameters", True)``, also through a variable assigned just before) is
reported config-gated, without an autofix. An Accelerator that only prepares a model frozen in the
same function (HALOs' reference model: lint/frozen_wrap.py) never runs a backward through DDP. So is an expression that is True under the
configuration's defaults (wenet ``find_unused_parameters=not grad_ckpt`` where ``grad_ckpt`` is
``getattr(model.encoder, "gradient_checkpointing", False)`` or ``False`` on every path).
Round 17: a DDP wrap of a model whose every parameter the same function sets not to require
gradients and never thaws (an EMA copy wrapped, then ``for p in ema.parameters():
p.requires_grad_(False)``; lint/frozen_wrap.py ``parameters_frozen``) builds no autograd graph for
DDP to search: not reported.
Round 23: in a function with no backward that puts the wrap in ``eval()``, a use inside a
``torch.no_grad()``/``inference_mode()`` block (handed to a helper, ``model.module.generate``) and an
``isinstance(model, DDP)`` test are evaluation uses too (Amdg's checkpoint-scoring loop).
Round 26: a comparison of an option with a constant that holds under the option's default
(Sherpa3D's ``find_unused_parameters=(FLAGS.mode == 'geometry_modeling')``, ``--mode`` defaulting to
that stage) is True unless the run configures otherwise: config-gated, as ``not grad_ckpt`` is.
Round 28: a wrap the run throws away (``model = model.module`` right after it, or only returned
from a def whose every call discards the result; lint/discarded_wrap.py) builds no reducer: not
reported (SAM-Adapter, pretrain-300M).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, other_branch, param_defaults
from ddp_doctor.lint.discarded_wrap import discarded_wrap
from ddp_doctor.lint.flags import UNKNOWN, all_defaults, bool_typed_options, flag_test
from ddp_doctor.lint.frozen_wrap import parameters_frozen, wraps_frozen_model_only
from ddp_doctor.lint.idioms import DDP
from ddp_doctor.lint.inference_only import never_trains
from ddp_doctor.lint.launch_scripts import FLAG, launched_values, option_value
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.option_defaults import option_default
from ddp_doctor.lint.project_def_facts import forwards_kwargs
from ddp_doctor.lint.provenance import evaluation_function, runs_without_grad
from ddp_doctor.lint.rank0 import bound_argument
from ddp_doctor.lint.rules.base import Rule, Violation, replace_node

# A class named for evaluation (``eval``, ``Evaluator``, ``ValidationRunner``, ``Inference``; not unittest ``Test*`` classes).
EVAL_CLASS = re.compile(r"^_*(eval|evaluat|valid|infer|predict)", re.IGNORECASE)
# What a function that only evaluates a wrapped model does with it besides calling it.
EVALUATION_USES = frozenset({"eval", "load_state_dict", "state_dict", "cuda", "to"})
# Context managers (and decorators) under which a forward records no autograd graph.
# Constructors whose keyword configures DDP's find_unused_parameters.
DDP_CONFIGS: dict[str, str] = {
    "torch.nn.parallel.DistributedDataParallel": "find_unused_parameters",
    "accelerate.utils.DistributedDataParallelKwargs": "find_unused_parameters",
    "accelerate.DistributedDataParallelKwargs": "find_unused_parameters",
    "transformers.TrainingArguments": "ddp_find_unused_parameters",
}
# Lightning's DDP strategies and (1.x) plugins take the same keyword and hand it to the DDP wrap they
# build: ``DDPStrategy(find_unused_parameters=True)`` (``pytorch_lightning``, ``lightning.pytorch``,
# ``lightning.fabric``).
LIGHTNING_DDP = re.compile(
    r"^(pytorch_lightning|lightning(\.pytorch|\.fabric)?)\.(strategies|plugins)(\.\w+)*\."
    r"(DDP\w*Strategy|DDP\w*Plugin)$"
)
# A Lightning strategy named by its registry string: ``Trainer(strategy="ddp_find_unused_parameters_true")``
# is ``DDPStrategy(find_unused_parameters=True)``.
STRATEGY_NAME = re.compile(r"^ddp(_spawn|_fork|_notebook)?_find_unused_parameters_true$")


def _keyword(qualname: str) -> str | None:
    """The keyword that turns on unused-parameter search in the constructor ``qualname``."""
    return DDP_CONFIGS.get(qualname) or ("find_unused_parameters" if LIGHTNING_DDP.match(qualname) else None)


class FindUnusedTrue(Rule):
    id = "find-unused-true"
    project_facts = frozenset({"options", "call_arguments"})
    flagged = (
        "`find_unused_parameters=True` on DDP, accelerate `DistributedDataParallelKwargs`, Lightning "
        "`DDPStrategy`/`DDPPlugin`, or `ddp_find_unused_parameters=True` on `TrainingArguments`; "
        'Lightning `strategy="ddp_find_unused_parameters_true"`; the keyword unpacked from a dict '
        "(`**ddp_cfg`) or given to a project subclass of DDP or of a Lightning DDP strategy, or to a project "
        "function that hands its `**kwargs` to the DDP call (`convert_model(model, find_unused_parameters=True)`); "
        "a conditional that "
        "picks a literal True for one configuration (`True if sample_param['history'] > 1 else False`, "
        "config-gated by its condition); an option whose default is True where the project writes it "
        "(`find_unused_parameters=args.find_unused` with `add_argument('--find_unused', default=True)`, a "
        "configuration class, the shipped YAML, all agreeing; also a comparison true under the option's default: "
        "`find_unused_parameters=(args.mode == 'geometry')` with `--mode` defaulting to `'geometry'`, "
        "config-gated); the keyword bound by "
        "`functools.partial(DDP, find_unused_parameters=True)`; a dict of DDP keywords a framework hands on "
        "(`torch_kwargs={'ddp_kwargs': {'find_unused_parameters': True}}`, `dict(find_unused_parameters=True)`); "
        "(project) an option a shipped shell launch script turns on (`--find_unused_parameters` in "
        "`scripts/train.sh` for a `store_true` option, any value such as `False` for a `type=bool` option; "
        "config-gated by that script); (project) a configuration "
        "block a function is handed and unpacks into the wrap (`DDPStrategy(**config)`) where a shipped YAML "
        "configuration sets `find_unused_parameters: True` (config-gated)"
    )
    not_flagged = (
        "a value from config without a True fallback (also `True if args.find_unused else False`); an entry script that never backprops (an "
        "evaluation or inference script copied from the trainer); an Accelerator built in a function "
        "only to prepare a model it froze (`eval()` / `requires_grad_(False)`: a reference or teacher); a "
        "DDP wrap of a model whose parameters the function then freezes (an EMA copy); a "
        "wrap in a function with no backward that only puts it in `eval()` and runs forwards (a test worker; "
        "also `isinstance(model, DDP)`), or hands it to a same-file helper that evaluates it "
        "(`evaluate(model, loader)` after the training loop); a wrap used only under `torch.no_grad()` "
        "(a distillation teacher, `model.module.generate` in a scoring loop); a wrap the run throws away "
        "(`model = DDP(model, ...)` then at once `model = model.module`; (project) a wrap only returned from "
        "a def every call of which discards the result)"
    )
    autofix = "`True` → `False`"
    # a strategy string is no identifier: the ``strategy=`` keyword that takes it is
    required = ((*DDP_CONFIGS.values(), "strategy"),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        found = list(self._check(ctx, facts))
        if found and not never_trains(ctx, facts):  # an evaluation script never traverses a graph
            yield from found

    def applies(self, ctx: FileContext) -> bool:
        # the keyword may be a dict key (``{"find_unused_parameters": True}`` unpacked into the wrap)
        return super().applies(ctx) or "find_unused_parameters" in ctx.source

    def _option_setting(
        self, ctx: FileContext, kw_name: str | None, value: ast.expr | None
    ) -> Violation | None:
        """``find_unused_parameters=args.find_unused``: an option whose default is True, or one a
        shipped launch script turns on."""
        if value is None:
            return None
        option = _option_defaulting_true(ctx, value)
        if option is not None:
            return self.violation(
                value,
                Text(
                    f"`{kw_name}={ctx.segment(value)}`, an option whose default is True ({option}): DDP "
                    "re-traverses the autograd graph every step unless the run turns it off (speed, not accuracy).",
                    f"`{kw_name}={ctx.segment(value)}` 是默认值为 True 的选项（{option}）：除非运行时关闭，DDP "
                    "每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                ),
                setting=True,
            )
        launched = _option_launched_true(ctx, value)
        if launched is not None:
            key, script = launched
            why = why_zh = ""
            if key in bool_typed_options(ctx):
                why = " (the option is `type=bool`, which reads any non-empty string, `False` too, as True)"
                why_zh = "（该选项为 `type=bool`，任何非空字符串（包括 `False`）都被读作 True）"
            return self.violation(
                value,
                Text(
                    f"`{kw_name}={ctx.segment(value)}`: the shipped launch script {script} turns `{key}` on{why}: "
                    "DDP then re-traverses the autograd graph every step (speed, not accuracy).",
                    f"`{kw_name}={ctx.segment(value)}`：仓库自带的启动脚本 {script} 打开了 `{key}`{why_zh}："
                    "DDP 此时每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                ),
                gated_by=f"`{key}` on, as {script} runs it",
                setting=True,
            )
        return None

    def _unpacked_setting(self, ctx: FileContext, call: ast.Call, kw_name: str) -> Violation | None:
        """``DDPStrategy(**config)`` of a configuration block handed in, which shipped YAML
        configurations turn on (``_configured_unpack``): config-gated."""
        unpacked = _configured_unpack(ctx, call, kw_name)
        if unpacked is None:
            return None
        spread, count, total = unpacked
        return self.violation(
            spread,
            Text(
                f"`**{ctx.segment(spread)}` hands `{kw_name}` from configuration, and {count} of the {total} "
                f"shipped YAML settings of `{kw_name}` are True: DDP then re-traverses the autograd graph "
                "every step (speed, not accuracy).",
                f"`**{ctx.segment(spread)}` 从配置传入 `{kw_name}`，仓库自带的 YAML 中有 {count}/{total} 处把它设为 "
                "True：此时 DDP 每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
            ),
            gated_by=f"a configuration setting `{kw_name}: True` ({count} of {total} shipped)",
            setting=True,
        )

    def _check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        seen: set[int] = set()
        for node in ctx.of_type(ast.Call):
            for k in node.keywords:
                if (
                    k.arg is not None
                    and "strategy" in k.arg
                    and isinstance(k.value, ast.Constant)
                    and isinstance(k.value.value, str)
                    and STRATEGY_NAME.match(k.value.value)
                ):
                    yield self.violation(
                        k.value,
                        Text(
                            f"`{k.arg}={k.value.value!r}`: Lightning's DDP with `find_unused_parameters=True` "
                            "re-traverses the autograd graph every step (speed, not accuracy).",
                            f"`{k.arg}={k.value.value!r}`：Lightning 的 DDP 开启了 `find_unused_parameters=True`，"
                            "每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                        ),
                        setting=True,
                    )
            handed = _handed_to_a_wrap_helper(ctx, node)
            if handed is not None:
                yield self.violation(
                    handed.value,
                    Text(
                        f"`{handed.arg}=True` is handed to `{dotted(node.func)}`, which passes it to DDP's "
                        "`find_unused_parameters`: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{handed.arg}=True` 被交给 `{dotted(node.func)}`，后者把它传给 DDP 的 "
                        "`find_unused_parameters`：DDP 每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                    ),
                    edits=(replace_node(ctx, handed.value, "False"),),
                    setting=True,
                )
                continue
            qualname = ctx.call_qualname(node) or ""
            if qualname == "functools.partial" and node.args:
                # ``partial(DDP, device_ids=[rank], find_unused_parameters=True)``: the keyword reaches
                # every wrap the partial makes
                qualname = ctx.qualname(node.args[0]) or ""
            kw_name = _keyword(qualname)
            if kw_name is None and isinstance(node.func, ast.Name):
                # a class of this file that subclasses one of them (MolCA's ``class
                # MyDDPStrategy(strategies.DDPStrategy)`` overriding checkpoint saving) takes the
                # keyword on to its base's constructor
                kw_name = next(
                    (kw for q in ctx.base_qualnames(node.func.id) if (kw := _keyword(q)) is not None), None
                )
            value = _setting(ctx, node, kw_name) if kw_name else None
            if value is not None and id(value) in seen:
                continue  # one dict unpacked into two wraps (OpenUnReID's ``**ddp_cfg``): one finding
            if value is not None:
                seen.add(id(value))
            if (
                value is not None
                and "accelerate" in (ctx.call_qualname(node) or "")
                and wraps_frozen_model_only(ctx, node)
            ):
                continue  # an Accelerator that only prepares a frozen (reference) model
            # an EMA copy whose parameters are all frozen; a wrap the run throws away (``model =
            # model.module`` at once, SAM-Adapter): no graph runs through the wrap to traverse
            if value is not None and (_wraps_frozen_parameters(ctx, node) or discarded_wrap(ctx, node)):
                continue
            # Versatile-Diffusion's ``class eval(exec_container)``, a test function's own wrap of a
            # model it only evaluates: no backward runs there
            if _in_evaluation_class(ctx, node) or _evaluated_only(ctx, facts, node):
                continue
            source = _through_name(ctx, value, node)
            default = _config_default(source) if source is not None else None
            gate = f"{default} not set in the configuration (default True)"
            if default is None and value is not None and not isinstance(value, ast.Constant):
                default = _true_by_default(ctx, value, node)
                source = value if default is not None else source
                gate = f"{default} not set in the configuration (then `{ctx.segment(value)}` is True)"
            if value is not None and source is not None and default is not None:
                origin = ctx.segment(source)
                if source is not value:  # read into a variable first
                    origin = f"{origin}` (through `{ctx.segment(value)}`)"
                else:
                    origin = f"{origin}`"
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}` comes from `{origin}, which is True unless the configuration "
                        "sets it: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{kw_name}` 取自 `{origin}，配置未设置时为 True：DDP 每步都要重新遍历 autograd 图"
                        "（影响速度，不影响精度）。",
                    ),
                    gated_by=gate,
                    setting=True,
                )
                continue
            picked = _true_when(ctx, value, node)
            if picked is not None and value is not None:
                chooser, condition = picked
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}` is True when `{condition}` (`{ctx.segment(chooser)}`): DDP then "
                        "re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{condition}` 时 `{kw_name}` 为 True（`{ctx.segment(chooser)}`）：DDP 此时每步都要重新遍历 "
                        "autograd 图（影响速度，不影响精度）。",
                    ),
                    gated_by=f"{condition} (then `{kw_name}` is True)",
                    setting=True,
                )
                continue
            default_true = _true_default_parameter(ctx, value, node) if isinstance(value, ast.Name) else None
            if (
                isinstance(value, ast.Name)
                and default_true is not None
                and not _passed_otherwise(ctx, node, value)
            ):
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}={value.id}`, a parameter that defaults to True (line {default_true.lineno}) and "
                        "no call of this file changes: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{kw_name}={value.id}` 是默认值为 True 的参数（第 {default_true.lineno} 行），本文件的调用都没有改它："
                        "DDP 每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                    ),
                    edits=(replace_node(ctx, default_true, "False"),),
                    setting=True,
                )
                continue
            option_setting = self._option_setting(ctx, kw_name, value) or (
                self._unpacked_setting(ctx, node, kw_name) if value is None and kw_name else None
            )
            if option_setting is not None:
                yield option_setting
                continue
            if isinstance(value, ast.Constant) and value.value is True:
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}=True`: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{kw_name}=True`：DDP 每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                    ),
                    edits=(replace_node(ctx, value, "False"),),
                    setting=True,
                )
        # a DDP keyword dict a framework hands on (fastNLP ``torch_kwargs={"ddp_kwargs":
        # {"find_unused_parameters": True}}``, ``ddp_kwargs = dict(find_unused_parameters=True)``): the
        # literal True is the setting wherever the dict goes (one not read above)
        for value in _dict_settings(ctx):
            if id(value) in seen:
                continue
            seen.add(id(value))
            yield self.violation(
                value,
                Text(
                    "`find_unused_parameters: True` in a dict of DDP keywords: DDP re-traverses the autograd "
                    "graph every step (speed, not accuracy).",
                    "DDP 参数字典中的 `find_unused_parameters: True`：DDP 每步都要重新遍历 autograd 图"
                    "（影响速度，不影响精度）。",
                ),
                edits=(replace_node(ctx, value, "False"),),
                setting=True,
            )


def _configured_unpack(ctx: FileContext, call: ast.Call, name: str) -> tuple[ast.expr, int, int] | None:
    """``DDPStrategy(**config)`` with ``config`` a configuration block handed in (a parameter of the
    function, not a dict built here), where shipped YAML configurations set ``name: True`` (SaProt's
    ``load_strategy(config)`` with ``find_unused_parameters: True`` in most task configs): ``(the
    unpacked expression, how many settings are True, how many there are)``; None otherwise."""
    if ctx.project is None:
        return None
    spread = next((k.value for k in call.keywords if k.arg is None), None)
    built = _through_name(ctx, spread, call) if isinstance(spread, ast.Name) else None
    if (
        not isinstance(spread, ast.Name)
        or isinstance(built, ast.Dict)
        or (isinstance(built, ast.Call) and isinstance(built.func, ast.Name) and built.func.id == "dict")
    ):
        return None  # a dict built in the function is read as written (``_setting``)
    fn = ctx.enclosing_function(call)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or spread.id not in {
        a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
    }:
        return None
    values = ctx.project.yaml_values(name)
    count = sum(v is True for v in values)
    return (spread, count, len(values)) if count else None


def _dict_settings(ctx: FileContext) -> list[ast.Constant]:
    """The literal ``True`` of every ``{"find_unused_parameters": True}`` and ``dict(...,
    find_unused_parameters=True)`` of the file."""
    out: list[ast.Constant] = []
    for node in ctx.of_type(ast.Dict):
        for key, value in zip(node.keys, node.values):
            if (
                isinstance(key, ast.Constant)
                and key.value == "find_unused_parameters"
                and isinstance(value, ast.Constant)
                and value.value is True
            ):
                out.append(value)
    for call in ctx.of_type(ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id == "dict":
            given = keyword(call, "find_unused_parameters")
            if isinstance(given, ast.Constant) and given.value is True:
                out.append(given)
    return out


FIND_UNUSED_KEYWORD = re.compile(r"find_unused", re.IGNORECASE)


def _option_defaulting_true(ctx: FileContext, value: ast.expr | None) -> str | None:
    """``args.find_unused`` / ``cfg.find_unused_parameters``: an option whose default, as the
    project writes it (its argparse options, configuration classes, module-level settings and
    shipped YAML, all agreeing: lint/option_defaults.py) or the file alone does, is True; where that
    default is written. None for any other value (a config value with no known default is trusted)."""
    if not isinstance(value, ast.Attribute) or dotted(value) is None:
        return None
    key = value.attr
    known, default = option_default(ctx, key)
    where = "the project's default" if ctx.project is not None else "this file's default"
    return f"`{key}`: {where}" if known and default is True else None


def _option_launched_true(ctx: FileContext, value: ast.expr | None) -> tuple[str, str] | None:
    """``find_unused_parameters=args.find_unused_parameters`` with a default that is not True, where
    a shipped shell launch script passes the option on (ImbalancedSSL's ``--find_unused_parameters``
    in its ``run_*.sh``; lint/launch_scripts.py): (the option, the script). A script that passes it off,
    or a value read from a shell variable, turns nothing on."""
    if not isinstance(value, ast.Attribute) or dotted(value) is None:
        return None
    key = value.attr
    known, default = option_default(ctx, key)
    # ``add_argument('--find_unused_parameters', default=False, type=bool)``: whatever string a
    # script gives (``False``, ``0``, a shell variable such as ``${FIND_UNUSED}``) is non-empty, so
    # True (RT-ODLab's train.sh passes ``--find_unused_parameters ${FIND_UNUSED_PARAMS}`` = False)
    bool_typed = key in bool_typed_options(ctx)
    for given, script in launched_values(ctx, key):
        if bool_typed and given is not FLAG and given not in ("", None):
            return key, script
        held = option_value(given, default if known else None)
        if held is True or (type(held) is int and held > 0):  # ``--find_unused 1`` for an int option
            return key, script
    return None


def _true_default_parameter(ctx: FileContext, value: ast.Name, call: ast.Call) -> ast.Constant | None:
    """``def distribute_model(model, device, find_unused_paras=True): DDP(...,
    find_unused_parameters=find_unused_paras)`` (never rebound in the def): the default, when True."""
    fn = ctx.enclosing_function(call)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if any(isinstance(b, ast.stmt) for b in ctx.bindings(fn).get(value.id, [])):
        return None  # rebound in the body
    default = param_defaults(fn).get(value.id)
    return default if isinstance(default, ast.Constant) and default.value is True else None


def _passed_otherwise(ctx: FileContext, call: ast.Call, value: ast.Name) -> bool:
    """A call of this file hands the function something for that parameter, or may (``*args``,
    ``**kwargs``): the default is not what its wraps run with there."""
    fn = ctx.enclosing_function(call)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(
        bound_argument(fn, c, value.id) is not None
        or any(isinstance(a, ast.Starred) for a in c.args)
        or any(k.arg is None for k in c.keywords)
        for c in ctx.of_type(ast.Call)
        if ctx.helper(c) is fn
    )


def _handed_to_a_wrap_helper(ctx: FileContext, call: ast.Call) -> ast.keyword | None:
    """``distribute_model(model, device, find_unused_paras=True)`` where ``distribute_model`` (of this
    file, or in project mode of the project) wraps in DDP with ``find_unused_parameters=<that
    parameter>``, or ``convert_model(model, find_unused_parameters=True)`` where it hands its
    ``**kwargs`` to the DDP call (semseg_benchmark): the call is where True is chosen. Not DDP's own
    keyword (read above)."""
    if _keyword(ctx.call_qualname(call) or "") is not None:
        return None
    for k in call.keywords:
        if not (
            k.arg is not None
            and FIND_UNUSED_KEYWORD.search(k.arg)
            and isinstance(k.value, ast.Constant)
            and k.value.value is True
        ):
            continue
        # DDP's own keyword name reaches the wrap through the helper's ``**kwargs`` too
        own_name = k.arg == "find_unused_parameters"
        fn = ctx.helper(call)
        if fn is not None:
            if any(
                isinstance(n, ast.Call)
                and _keyword(ctx.call_qualname(n) or "") is not None
                and (
                    any(
                        isinstance(v, ast.Name) and v.id == k.arg
                        for v in [keyword(n, "find_unused_parameters")]
                    )
                    or (own_name and forwards_kwargs(fn, n))
                )
                for n in ast.walk(fn)
            ):
                return k
        elif ctx.project is not None:
            summary = ctx.project.summary_for(ctx, call.func)
            if (
                summary is not None
                and summary.wraps_ddp
                and (k.arg in summary.params or (own_name and summary.wrap_kwargs))
            ):
                return k
    return None


def _setting(ctx: FileContext, call: ast.Call, name: str) -> ast.expr | None:
    """The value ``call`` gets for keyword ``name``: written as a keyword, or a key of a dict
    unpacked into it (``DistributedDataParallel(model, **ddp_cfg)`` with ``ddp_cfg = {...,
    "find_unused_parameters": True}`` or ``dict(find_unused_parameters=True, ...)`` assigned last
    before the call in the same function, or written in place)."""
    value = keyword(call, name)
    if value is not None:
        return value
    for k in call.keywords:
        if k.arg is not None:
            continue
        unpacked = _through_name(ctx, k.value, call)
        if isinstance(unpacked, ast.Dict):
            for key, item in zip(unpacked.keys, unpacked.values):
                if isinstance(key, ast.Constant) and key.value == name:
                    value = item  # a later duplicate key wins, as in Python
        elif (
            isinstance(unpacked, ast.Call)
            and isinstance(unpacked.func, ast.Name)
            and unpacked.func.id == "dict"
        ):
            value = keyword(unpacked, name) or value
    return value


def _wraps_frozen_parameters(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` is a DDP wrap (``DDP(m)``, also a subclass of it) of a model whose every parameter
    the enclosing function sets not to require gradients and never thaws (lint/frozen_wrap.py
    ``parameters_frozen``; CBIM's ``ema_net = DDP(ema_net, find_unused_parameters=True)`` followed by
    ``for p in ema_net.parameters(): p.requires_grad_(False)``): outputs with no autograd graph,
    nothing for DDP to search for unused parameters."""
    if ctx.call_qualname(call) != DDP or not call.args:
        return False
    names = {dotted(unmoved(ctx, call.args[0]))}
    parent = ctx.parents.get(call)
    if isinstance(parent, ast.Assign):
        names |= {dotted(t) for t in parent.targets}
    names.discard(None)
    return bool(names & parameters_frozen(ctx, ctx.enclosing_function(call)))


def _in_evaluation_class(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` is in a method of a class named for evaluation (``class eval(exec_container)``,
    ``class Evaluator``) that runs no backward itself: the wrap it builds serves forwards only,
    and DDP looks for unused parameters only when a backward will follow."""
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, ast.ClassDef):
        cur = ctx.parents.get(cur)
    if cur is None or not EVAL_CLASS.match(cur.name):
        return False
    return not any(isinstance(n, ast.Attribute) and n.attr == "backward" for n in ast.walk(cur))


def _evaluated_only(ctx: FileContext, facts: LoopFacts, call: ast.Call) -> bool:
    """``m = DistributedDataParallel(...)`` whose forwards never record a graph for a backward: DDP
    searches for unused parameters only when a forward runs with gradients enabled and a backward
    will follow. After the wrap (up to a rebinding of ``m``) every use of ``m`` is

    - under ``torch.no_grad()`` / ``inference_mode()`` (a teacher for distillation, put in ``eval()``
      and forwarded, its weights EMA-updated, only under ``no_grad``: MissM-Benchmark), or
    - with no backward and no optimizer step left in the function after the wrap: a forward, a
      load, move or read of its weights, ``eval()``, or a hand-over to a same-file function that
      evaluates it (puts that parameter in ``eval()`` or is named/decorated for evaluation, and runs
      no backward or step): a ``test()`` worker copied from the training worker that wraps the model
      it restores from a checkpoint (PointHMR's ``run_eval_general`` handing it to
      ``run_validate``), or the final test wrap after the training loop (m3m's ``model =
      DDP(best, ...)`` then ``evaluate(..., model, ...)``).

    Never returned, stored, handed to anything else nor set back to ``train()``; without a
    ``no_grad`` for every use, something must put it in ``eval()``."""
    assign = ctx.parents.get(call)
    if not (
        isinstance(assign, ast.Assign)
        and assign.value is call
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Name)
    ):
        return False
    name = assign.targets[0].id
    scope = ctx.enclosing_function(call)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    nodes = list(ctx.local(scope))
    after = call.end_lineno or call.lineno  # the wrap's own argument is no use of the wrap
    # a wrap inside a loop also reaches the loop's earlier lines: then the whole function counts
    looped = _in_loop(ctx, call, scope)
    trains_after = any(
        (looped or getattr(n, "lineno", 0) > after) and (facts.backward(n) is not None or facts.steps(n))
        for n in nodes
    )
    rebound = [
        n.lineno
        for n in nodes
        if isinstance(n, ast.Name)
        and n.id == name
        and isinstance(n.ctx, ast.Store)
        and n.lineno > after
        and not other_branch(ctx, n, call)  # ``else: model = DataParallel(model)`` never follows the wrap
    ]
    until = min(rebound, default=10**9)
    evaluated = False
    without_grad = True
    used = False
    for n in nodes:
        if not (isinstance(n, ast.Name) and n.id == name and after < n.lineno < until):
            continue
        if isinstance(n.ctx, ast.Store) or _type_test(n, ctx.parents.get(n)):
            continue  # ``isinstance(m, DDP)`` reads the wrap's type and runs nothing
        used = True
        if runs_without_grad(ctx, n):
            continue
        without_grad = False
        if trains_after:
            return False  # a forward of it may record the graph the later backward runs through
        parent = ctx.parents.get(n)
        if isinstance(parent, ast.Call) and parent.func is n:
            continue  # a forward
        if isinstance(parent, ast.Attribute) and parent.attr in EVALUATION_USES:
            evaluated |= parent.attr == "eval"
            continue
        if isinstance(parent, ast.keyword):
            parent = ctx.parents.get(parent)  # handed by keyword: ``_train(..., model_old=model_old)``
        if (
            isinstance(parent, ast.Call)
            and parent.func is not n
            and _evaluating_helper(ctx, facts, parent, n)
        ):
            evaluated = True
            continue
        return False  # handed on, returned, stored, trained: used beyond evaluation here
    return used and (evaluated or without_grad)


def _in_loop(ctx: FileContext, node: ast.AST, scope: ast.AST) -> bool:
    cur = ctx.parents.get(node)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            return True
        cur = ctx.parents.get(cur)
    return False


def _evaluating_helper(ctx: FileContext, facts: LoopFacts, call: ast.Call, arg: ast.Name) -> bool:
    """``call`` runs a same-file function that only evaluates what it gets for ``arg``: no backward and
    no optimizer step in it, nothing sets that parameter to ``train()``, and it is named or decorated
    for evaluation (``evaluate``, ``@torch.no_grad()``) or puts that parameter in ``eval()``
    (PointHMR's ``run_validate(args, loader, Network, ...)`` starting with ``Network.eval()``)."""
    fn = ctx.helper(call)
    if fn is None:
        return False
    params = [
        p
        for p in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
        if bound_argument(fn, call, p.arg) is arg
    ]
    if len(params) != 1:
        return False
    param = params[0].arg
    body = ctx.local(fn)
    if any(facts.backward(n) is not None or facts.steps(n) for n in body):
        # a training function that only consults the model it is handed without gradients (a frozen
        # teacher for distillation: incrementvideo's ``_train(..., model_old=model_old)`` forwarding
        # ``model_old`` under ``torch.no_grad()`` only) records no graph through that model
        return _consulted_without_grad(ctx, fn, param)
    modes = {
        n.func.attr
        for n in body
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == param
        and n.func.attr in ("eval", "train")
    }
    if "train" in modes:
        return False
    return "eval" in modes or evaluation_function(fn)


def _consulted_without_grad(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> bool:
    """Every use of ``param`` in ``fn`` runs under ``no_grad`` / ``inference_mode``, is its
    ``eval()``, or tests that it was given (``if model_old:``, ``if teacher is not None:``); it is
    never rebound, set to ``train()`` nor handed on, and ``fn`` puts it in ``eval()`` or forwards it
    at least once."""
    used = False
    for n in ctx.local(fn):
        if not (isinstance(n, ast.Name) and n.id == param):
            continue
        if isinstance(n.ctx, ast.Store):
            return False
        parent = ctx.parents.get(n)
        if isinstance(parent, ast.Attribute) and parent.attr == "eval":
            used = True
            continue
        if _presence_test(n, parent):
            continue
        if not runs_without_grad(ctx, n):
            return False
        used = True
    return used


def _presence_test(name: ast.Name, parent: ast.AST | None) -> bool:
    """``if m:`` / ``if m is not None:`` / ``m is None``: reads whether it exists, runs nothing."""
    if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and parent.test is name:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    return (
        isinstance(parent, ast.Compare)
        and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
        and all(
            isinstance(c, ast.Constant) and c.value is None
            for c in (parent.left, *parent.comparators)
            if c is not name
        )
    )


def _type_test(name: ast.Name, parent: ast.AST | None) -> bool:
    """``isinstance(m, DistributedDataParallel)``: reads the wrap's type, runs nothing."""
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "isinstance"
        and bool(parent.args)
        and parent.args[0] is name
    )


def _through_name(ctx: FileContext, value: ast.expr | None, at: ast.AST) -> ast.expr | None:
    """The expression a plain name was last assigned before ``at`` in the same function
    (``flag = opt.get("find_unused_parameters", True)`` ... ``find_unused_parameters=flag``)."""
    if not isinstance(value, ast.Name):
        return value
    scope = ctx.enclosing_function(at)
    line = getattr(at, "lineno", 0)
    before = [b for b in ctx.bindings(scope).get(value.id, []) if b.lineno < line]
    last = before[-1] if before else None
    if isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
        return last.value
    return value


def _true_when(ctx: FileContext, value: ast.expr | None, at: ast.AST) -> tuple[ast.IfExp, str] | None:
    """``True if sample_param["history"] > 1 else False`` (TGL), directly or through a variable
    assigned just before: the code turns the search on for one configuration. ``(the conditional,
    the condition under which it is True)``; None when neither branch is a literal True or both are."""
    chooser = _through_name(ctx, value, at)
    if not isinstance(chooser, ast.IfExp) or FIND_UNUSED_KEYWORD.search(ctx.segment(chooser.test)):
        return (
            None  # ``True if args.find_unused else False`` is the setting itself, like a plain config value
        )

    def is_true(e: ast.expr) -> bool:
        return isinstance(e, ast.Constant) and e.value is True

    if is_true(chooser.body) and not is_true(chooser.orelse):
        return chooser, ctx.segment(chooser.test)
    if is_true(chooser.orelse) and not is_true(chooser.body):
        return chooser, f"not ({ctx.segment(chooser.test)})"
    return None


def _config_default(value: ast.expr | None) -> str | None:
    """The key of ``cfg.get("key", True)`` / ``getattr(cfg, "key", True)``: True unless configured."""
    read = _config_read(value) if isinstance(value, ast.Call) else None
    if read is None or not isinstance(read[1], ast.Constant):
        return None
    return read[0] if read[1].value is True else None


def _default_of(ctx: FileContext, expr: ast.expr, at: ast.AST, depth: int = 0) -> tuple[bool, str] | None:
    """``(value, setting)``: what ``expr`` is when the configuration sets nothing, and the setting it
    reads; None when that is not known. ``getattr(cfg, "key", False)`` / ``cfg.get("key", False)``,
    ``not x``, and a name whose every binding in the function before ``at`` agrees (``grad_ckpt =
    getattr(...)`` in one branch, ``grad_ckpt = False`` in the other)."""
    if depth > 3:
        return None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = _default_of(ctx, expr.operand, at, depth + 1)
        return (not inner[0], inner[1]) if inner is not None else None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, bool):
        return expr.value, ""
    if isinstance(expr, ast.Compare):
        return _compared_option(ctx, expr)
    if isinstance(expr, ast.Call):
        read = _config_read(expr)
        if read is None or not isinstance(read[1], ast.Constant) or not isinstance(read[1].value, bool):
            return None
        return read[1].value, read[0]
    if isinstance(expr, ast.Name):
        scope = ctx.enclosing_function(at)
        line = getattr(at, "lineno", 0)
        binds = [b for b in ctx.bindings(scope).get(expr.id, []) if b.lineno < line]
        if not binds or not all(
            isinstance(b, ast.Assign) and len(b.targets) == 1 and isinstance(b.targets[0], ast.Name)
            for b in binds
        ):
            return None
        found = [_default_of(ctx, b.value, at, depth + 1) for b in binds if isinstance(b, ast.Assign)]
        if any(f is None for f in found) or len({f[0] for f in found if f}) != 1:
            return None
        settings = [f[1] for f in found if f and f[1]]
        return found[0][0] if found[0] else False, settings[0] if settings else ""
    return None


def _compared_option(ctx: FileContext, expr: ast.Compare) -> tuple[bool, str] | None:
    """``(value, option)`` of a comparison of an option with a constant (Sherpa3D's
    ``find_unused_parameters=(FLAGS.mode == 'geometry_modeling')``, ``--mode`` defaulting to it) under
    the option's default: the file's argparse, else what the project writes (``option_default``)."""
    test = flag_test(ctx, expr, all_defaults(ctx))
    if test is not None and test.default_true is None and "." in test.flag:
        known, default = option_default(ctx, test.flag.rsplit(".", 1)[-1])
        if known:
            test = flag_test(ctx, expr, {test.flag.rsplit(".", 1)[-1]: default})
    if test is None or test.default_true is None or test.value is UNKNOWN:
        return None
    return test.default_true, test.option


def _true_by_default(ctx: FileContext, value: ast.expr, at: ast.AST) -> str | None:
    """The setting an expression such as ``not grad_ckpt`` reads, when it is True unless that setting
    is configured; None otherwise (a plain config value without a True fallback is not flagged)."""
    found = _default_of(ctx, value, at)
    return found[1] if found is not None and found[0] and found[1] else None


def _config_read(value: ast.Call) -> tuple[str, ast.expr] | None:
    """``(key, fallback)`` of ``cfg.get("key", fallback)`` / ``getattr(cfg, "key", fallback)``."""
    if isinstance(value.func, ast.Attribute) and value.func.attr == "get" and len(value.args) == 2:
        key, fallback = value.args
    elif isinstance(value.func, ast.Name) and value.func.id == "getattr" and len(value.args) == 3:
        key, fallback = value.args[1], value.args[2]
    else:
        return None
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value, fallback
    return None
