"""batchnorm-unsynced: BatchNorm layers in a model that is wrapped in DDP, never converted.

Under DDP each rank normalises with its local micro-batch statistics (torch docs, SyncBatchNorm:
"use SyncBatchNorm to synchronise statistics across processes"), so small per-GPU batches give
noisy, rank-dependent normalisation. Flagged when the file wraps a model in DDP (directly, or in
project mode through a project helper such as ``smart_DDP(model)``) and builds BatchNorm layers:
``nn.BatchNorm2d``, a torchvision constructor known to contain them, a model chosen by name
(``models.__dict__[arch]()``, ``getattr(models, arch)()``, ``torchvision.models.get_model``), a
factory called with a BatchNorm-family name (``timm.create_model(args.model)`` with ``--model``
defaulting to ``resnet50``; a ViT default is not BatchNorm), a model class picked by name and
handed to a builder (MoCo ``MoCo(models.__dict__[args.arch], ...)``), or in project mode a project
class/function that builds them (the model in ``models/yolo.py``; ``obj.get_model()`` when most
project methods of that name do, YOLOX's experiment classes) or a project module used as a
registry (``resnet.__dict__[args.arch]()`` where ``resnet.py`` builds BatchNorm, also a package
re-exporting such builders), a builder named under a project package at run time
(``eval('models.' + cfg.MODEL.NAME + '.get_pose_net')``, ``getattr(importlib.import_module(...),
'Network')``: when most defs so named build BatchNorm), and a wrap of a model the function was
handed (``do_train(cfg, model)``) that a caller built with BatchNorm (reported at the wrap). apex's
``convert_syncbn_model`` counts as a conversion.

A wrap of a module that no optimizer of the file is built from, while the file's optimizers name
its other wrapped models (GPEN's frozen ``IDLoss`` beside the generator and discriminator), is not
reported (``_untrained_wrap.py``).

When the code never names one class, the candidates decide (round 12): the names a star import
brings to ``eval(cfg['NAME'])`` (sithu31296 semseg), a package searched by
``import_module('models.' + name).__getattribute__('MainModel')`` (voxceleb_trainer), a module
used as a registry through a name bound first (YouReID ``net = models.__dict__[name]``), a
registry reached as ``registry.BACKBONES[name]`` or handed to ``build_from_cfg(cfg, MODELS)``, a
module-level table of layer classes a generic builder instantiates (YOLOP); a model that converts
itself under a constructor parameter (Group-Free-3D ``sync_bn=True if args.syncbn else False``)
is decided by each call's argument (``lint/syncbn_parameter.py``); Lightning's own DDP wrap is a
``Trainer`` with a DDP strategy and no ``sync_batchnorm=True`` (``_lightning_wrap.py``).

No ``SyncBatchNorm`` anywhere: flagged. A conversion (``convert_sync_batchnorm``) only behind an
opt-in flag (``if opt.sync_bn:`` with ``--sync-bn`` off by default) leaves the default path
unsynced: flagged as config-gated, naming the flag. The flag's default is the file's argparse
default, else (round 14) what the project writes for that option: a parser module's argparse
(Point-BERT ``utils/parser.py``), a configuration class or dataclass field (kaggle_islr ``class
Config: syncbn = False``), a module-level ``cfg.syncbn = False``, the shipped YAML configurations
(``lint/option_defaults.py``); in file mode the file's own classes and settings. A conversion under
any other condition (``if has_batchnorms(model):``, a flag that is on by default, or whose default
is unknown or set both ways, in the code or a YAML config) is trusted. A registry whose BatchNorm
models all convert themselves (PixPro's ``models.__dict__[args.model]``) picks a synced model, and
a classmethod building ``cls(...)`` (a ``from_pretrained`` override, DRAGON) builds its class.
Round 16: a conversion flag set in a script's settings block under ``if __name__ == "__main__":``
(``sync_bn = False`` above the training code) has that default, as a module-level setting does; a
condition whose branch holds the wrap as well as the conversion (``if args.distributed and not
args.horovod:``) decides whether there is a wrap, not whether the model is converted, and is not
read as the conversion's gate; a Lightning strategy local bound to ``"ddp"`` under a condition, or
chosen by ``DDPPlugin(...) if args.strategy == 'ddp' else ...``, runs DDP under that condition (a
local bound only to devices or other strategies runs none); a package's ``__init__.py`` builder
(nanodet ``build_backbone``) is read by the project index whatever words it holds; BatchNorm built
only under a switch that defaults to off is not built on the default path (``project_scan.py``).
Round 17: that switch may be the building block's own parameter (``BasicConv(..., norm=False)``
appending ``nn.BatchNorm2d`` only ``if norm:``, ``conv_block(cin, cout, use_bn=False)``): a caller
builds BatchNorm only where a call of the block may pass it (by keyword with a value other than
False/None, by position, through ``*args``/``**kwargs``); ``Summary.bn_switch`` in project mode,
the file's own calls of the block in this file (a block also named without a call, as a layer type
or a base class, still counts).
Round 23: a trainer class handed the built model (DBNet.pytorch's ``BaseTrainer(config, model,
criterion)`` keeping ``self.model = model`` and wrapping ``DDP(self.model)``) is read as a handed
model: what its constructions hand that parameter, also through a subclass's ``super().__init__``
(``handed_models.py``).
Round 25: BatchNorm kept in eval mode while the network trains uses running statistics: a class
whose ``train`` override keeps its children (or its BatchNorm layers) in eval mode builds no
BatchNorm that trains (Cutie's encoders, ``Summary.keeps_eval``), and a trainer class that wraps
``self.net`` and only ever puts it in eval mode (XMem's ``train()`` running ``self.XMem.eval()``) is
not reported; an entry script whose training runs in a method of a project object it builds
(``agent.learn()``) is no evaluation script.
Round 26: BatchNorm built only under a configuration option (``if opt.use_bn:``, or an instance
attribute the class reads from one: Wsi-Caption's ``self.use_bn = args.use_bn`` then
``(nn.BatchNorm1d(d),) if self.use_bn else ()``) is built on the run's path only when the option's
project default says so (``Summary.bn_options``, settled once the project's option defaults are
known; an option whose default is unknown builds it).
A slot filled by one of two project calls picked by a parameter's type (OpenAI CLIP's ``if
isinstance(vision_layers, (tuple, list)): self.visual = ModifiedResNet(...)`` / ``else: self.visual =
VisionTransformer(...)``, copied into CLIP4Clip and clip_finetune) is a run-time pick: BatchNorm when
most candidates build it (``Summary.bn_choices``); a file that converts to SyncBatchNorm behind an
option names the BatchNorm runs (Chinese-CLIP's RN50 with ``--use-bn-sync``): config-gated
(``Summary.picks_batchnorm``).
Round 27: a project class that builds its backbone with ``timm.create_model`` from a constructor
parameter whose default names a BatchNorm family (cal-ql's ``VisionBackbone(backbone_name='resnet18')``)
builds BatchNorm unless every project call hands that parameter another literal name
(``Summary.bn_name_param``); an entry script's ``trainer.setup_multi_gpu(rank)`` that wraps the
trainer's own model in place, the trainer built there with a project BatchNorm model handed in, is
left to the trainer's file, which reports the wrap of the handed model (one finding per bug).
Round 28: a vendored synchronised BatchNorm that syncs only across ``DataParallel`` replicas
(Synchronized-BatchNorm-PyTorch's ``SynchronizedBatchNorm2d``, face-vid2vid) is per-rank BatchNorm
under DDP (``batchnorm_syntax.replica_only_sync``); SyncBatchNorm built in one part of a model (a
backbone's ``nn.SyncBatchNorm``, a discriminator's ``norm_layer=nn.SyncBatchNorm`` default the model
replaces by ``nn.BatchNorm2d``) converts nothing else: a model that also holds plain BatchNorm is not
synced (``ProjectIndex._settle_partial_conversions``; MNCDV3's UperNet heads, medicaldiffusion's VQGAN).
Autofix (plain findings only): convert the wrapped model just before wrapping.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.batchnorm_syntax import (
    BATCHNORM,
    INSPECTS,
    batchnorm_reference,
    call_shape,
    freezes_batchnorm,
    keeps_eval_mode,
    layer_switch,
    library_batchnorm,
    mmcv_batchnorm,
    option_switch_builds,
    option_switches,
    passes_switch,
    picked_by_name,
)
from ddp_doctor.lint.call_arguments import skipped_by_defaults
from ddp_doctor.lint.context import FileContext, dotted, init_of, keyword, method, positional_params
from ddp_doctor.lint.discarded_wrap import discarded_wrap
from ddp_doctor.lint.flags import UNKNOWN, FlagTest, all_defaults, describe, flag_test
from ddp_doctor.lint.frozen_wrap import frozen_names
from ddp_doctor.lint.idioms import BATCHNORM_ARCH, DDP, MODEL_FACTORIES, MODEL_GETTERS, MODEL_REGISTRIES
from ddp_doctor.lint.inference_only import never_trains
from ddp_doctor.lint.launch_scripts import launched_values, option_value, spelled
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.model_picks import bound_callee
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.option_defaults import option_default
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.project_modules import absolute_module, relative_base
from ddp_doctor.lint.project_summary import Summary, is_class_summary
from ddp_doctor.lint.rules._lightning_wrap import fit_model, lightning_ddp_wraps
from ddp_doctor.lint.rules._model_by_name import builds_batchnorm_by_name, builds_batchnorm_from_handed_module
from ddp_doctor.lint.rules._pick_gate import pick_gate
from ddp_doctor.lint.rules._separate_models import batchnorm_in_other_models
from ddp_doctor.lint.rules._untrained_wrap import untrained_wrap
from ddp_doctor.lint.rules.base import (
    Edit,
    Rule,
    Violation,
    insert_line_before,
    starts_own_line,
    statement_of,
)
from ddp_doctor.lint.syncbn_parameter import converted_by_argument

FROZEN_NAME = re.compile(r"teacher|ema|frozen|target", re.IGNORECASE)
DISTRIBUTED_TEST = re.compile(r"rank|distributed|world|ddp|gpus|cuda|device", re.IGNORECASE)


# inplace_abn's layers keep per-GPU statistics and ``convert_sync_batchnorm`` leaves them as they are
# (it converts ``_BatchNorm`` subclasses): the synchronised layer is its own ``InPlaceABNSync``.
ABN_NOTE = Text(
    " These are inplace_abn's `InPlaceABN`/`ABN`, which `convert_sync_batchnorm` does not convert: build "
    "`InPlaceABNSync` instead.",
    "这些是 inplace_abn 的 `InPlaceABN`/`ABN`，`convert_sync_batchnorm` 不会转换它们：请改用 `InPlaceABNSync`。",
)
INPLACE_ABN = re.compile(r"^inplace_abn(\.\w+)*\.(InPlaceABN|ABN)$")


def _inplace_abn_only(ctx: FileContext, bn_nodes: list[ast.AST]) -> bool:
    """Every BatchNorm layer the finding names is an inplace_abn ``InPlaceABN``/``ABN``."""
    names = [ctx.call_qualname(n) if isinstance(n, ast.Call) else ctx.qualname(n) for n in bn_nodes]
    return bool(names) and all(INPLACE_ABN.match(q or "") for q in names)


class BatchnormUnsynced(Rule):
    id = "batchnorm-unsynced"
    project_facts = frozenset({"batchnorm", "options", "call_arguments"})
    flagged = (
        "the file builds BatchNorm layers (also MinkowskiEngine's `MinkowskiBatchNorm`, torchsparse's and "
        "torch_geometric's `BatchNorm`, and a vendored `SynchronizedBatchNorm2d` that syncs only across "
        "DataParallel replicas; or a torchvision model known to contain them, a `conformer`/torchaudio "
        "Conformer, mmcv's `build_norm_layer`/`ConvModule` with a `norm_cfg` of type `BN` (also a constructor "
        "parameter's default `norm_cfg=dict(type='BN')`), timm "
        "`create_model` with a BatchNorm-family name or flag default (also a name the shipped YAML "
        "configurations agree on, read through `model_name = params['model_name']`, or a project class's "
        "constructor parameter default, `enc_name='resnet18'`, that no call replaces by another name), "
        "a project module used as a "
        "registry, also one handed to a helper returning `getattr(module, cfg[name]['type'])(...)` "
        "(`get_instance(models, 'arch', cfg)`, `config.init_obj('arch', module_arch)`) or a project helper "
        "returning `getattr(resnet, name)` (`get_model(name)(**kw)`), a project BatchNorm model class given "
        "as a parameter's default that the def builds or hands on (`def train(rank, Model=ResNet)`), a builder named under a "
        "project package by `eval`/`importlib` (also `importlib.import_module(cfg.model).Net`: the project's "
        "defs so named), a model `eval`'d by "
        "name over a star import of BatchNorm models) and wraps in DDP (also apex's, ignite's `idist.auto_model` without `sync_bn=True`, a project subclass of DDP, also star-imported, and a Lightning "
        "`Trainer` with a DDP strategy and no `sync_batchnorm=True`), with no SyncBatchNorm anywhere "
        "(SyncBatchNorm built in only some parts of a project model, a backbone's `nn.SyncBatchNorm` beside "
        "heads with `nn.BatchNorm2d`, leaves the others unsynced); "
        "(project) a DDP wrap of a model the function was handed, where a caller built it with "
        "BatchNorm (also `DDP(self.model)` in a class whose constructor keeps its `model` parameter as "
        "`self.model`, a subclass's `super().__init__(cfg, model)` handing it on); a self-converting model built with its conversion flag off; a conversion behind an "
        "option the project defaults to off (a parser module, a configuration class, the shipped YAML "
        'configurations, a script\'s settings block under `if __name__ == "__main__":`) or that a '
        "shipped shell launch script turns off (`--syncbn=0` in `train_ddp.sh` for a parser default of 1; "
        "config-gated by that script)"
    )
    not_flagged = (
        "`convert_sync_batchnorm`, apex `convert_syncbn_model`, SyncBatchNorm, LayerNorm "
        "(ViT/ConvNeXt defaults), frozen/teacher copies, a wrap no optimizer of the file is built from "
        "while its optimizers name the other wrapped models (a frozen loss network), no DDP; (project) a builder that picks "
        "SyncBatchNorm itself (`nn.SyncBatchNorm if sbn else nn.BatchNorm2d`), BatchNorm built only "
        "under a parameter that defaults to off (`SeqBN(d) if input_normalization else None`, a block's "
        "own `if norm: nn.BatchNorm2d(c)` with `norm=False` no call passes, a configuration option the project "
        "defaults to off: `if self.use_bn:` with `self.use_bn = args.use_bn` and `--use_bn` 0, also a project "
        "module built only under such an option, `if self.use_postnet: self.postnet = PostNet()`) or a "
        "class built with another norm selected (`BasicEncoder(norm_fn='instance')`, or by an option whose "
        "default names another norm: `if self.opt.norm == 'batch':`, `ConvBlock(c, c, self.opt.norm)` with "
        "`--norm` defaulting to `group`); a conversion under the same test as the wrap (`if args.dist:` "
        "around each); an "
        "entry script that never backprops (a `test.py` that only validates); a model picked at run "
        "time from candidates most of which build no BatchNorm (also one of two towers picked by an argument's "
        "type, CLIP's `ModifiedResNet` or `VisionTransformer` by `isinstance(vision_layers, (tuple, list))`, "
        "unless the file converts behind an option: config-gated), or from a registry whose BatchNorm "
        "models convert themselves; a Lightning `Trainer` with no DDP strategy written (or a strategy "
        "local bound only to other strategies); every BatchNorm layer put in eval mode by a method the "
        "training function calls on the wrapped model after `train()` (`model.module.freeze_bn()`), "
        "by a `train` override of the class that builds it (`for m in self.children(): m.train(False)`), "
        "or by a trainer class that puts its wrapped `self.net` only ever in eval mode; "
        "(project) a wrap under a test of parameters no call passes, false at their defaults "
        "(`if gpus > 1:` with `gpus=1`)"
    )
    autofix = "inserts `model = nn.SyncBatchNorm.convert_sync_batchnorm(model)` before the wrap"
    required = (("DistributedDataParallel", "prepare", "Trainer", "auto_model"),)
    # The layers may come from another file; the wrap is DDP itself, accelerate's prepare, or a
    # project helper (by name).
    required_in_project = (("DistributedDataParallel", "prepare", "Trainer", "auto_model"),)

    def project_words(self, project: ProjectIndex) -> tuple[str, ...]:
        return project.ddp_wrapper_names()

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        calls = _sort_calls(ctx)
        bn_nodes, ddp_calls, prepares, conversions = (
            calls.bn_nodes,
            calls.ddp_calls,
            calls.prepares,
            calls.conversions,
        )
        project, gates, evals = ctx.project, calls.gates, calls.evals
        # a wrap under a test of parameters every run leaves at their defaults, false with them
        # (kl-nn's ``load_model(..., GPUs=1)``: ``if GPUs > 1: DDP(model)``, no call passes GPUs)
        ddp_calls = [c for c in ddp_calls if not skipped_by_defaults(ctx, c)]
        # a wrap the run throws away (``model = model.module`` right after it): its BatchNorm trains bare
        ddp_calls = [c for c in ddp_calls if not discarded_wrap(ctx, c)]
        # an ``eval`` pick counts where a wrap is of what it built (semseg also evals its dataset name)
        bn_nodes += [e for e in evals if any(_wraps_built_from(ctx, c, [e], hop=False) for c in ddp_calls)]
        handed_by = None
        if not bn_nodes and project is not None:
            # a trainer wrapping the model it was handed (TransReID ``do_train(cfg, model, ...)``):
            # BatchNorm in what its callers built
            for call in ddp_calls:
                where = _handed_batchnorm(ctx, project, call)
                if where is not None:
                    handed_by, ddp_calls = where, [call]
                    break
        bn_lines = [getattr(n, "lineno", 0) for n in bn_nodes]
        if bn_nodes and not conversions and not _names_syncbn(ctx):
            yield from self._lightning(ctx, bn_nodes)
        # a prepare counts as the wrap of what it is handed when that was built with BatchNorm
        # (StyleTTS2 ``model[k] = accelerator.prepare(model[k])`` of modules holding the pitch
        # extractor's BatchNorm2d); prepare also takes loaders and optimizers, so not otherwise
        ddp_calls += [c for c in prepares if _wraps_built_from(ctx, c, bn_nodes)]
        if project is not None and handed_by is None:
            ddp_calls = [c for c in ddp_calls if not _wrapped_by_receiver(ctx, project, c, bn_nodes)]
        if (not bn_lines and handed_by is None) or not ddp_calls or never_trains(ctx, facts):
            return  # (an evaluation script: BatchNorm in eval() uses running statistics)
        if _frozen_in_training(ctx, ddp_calls) or all(_kept_in_eval(ctx, c) for c in ddp_calls):
            return  # every BatchNorm layer in eval mode while it trains: running statistics only
        gated_by = None
        if conversions or ctx.mentions("SyncBatchNorm", "convert_syncbn_model"):
            gated_by = _opt_in_gate(ctx, conversions, bn_nodes, ddp_calls)
            if gated_by is None:
                return  # converted on the default path (or under a condition we trust)
        if gated_by is None and bn_nodes and all(id(n) in gates for n in bn_nodes):
            gated_by = gates[id(bn_nodes[0])]  # every BatchNorm model here exists only under a configuration
        lines = ", ".join(map(str, sorted(set(bn_lines))[:5]))
        built_en = f"BatchNorm layers (line {lines})"
        built_zh = f"BatchNorm 层（第 {lines} 行）"
        if handed_by is not None:
            built_en = f"BatchNorm layers (in the model handed in at {handed_by})"
            built_zh = f"BatchNorm 层（在 {handed_by} 传入的模型中）"
        # several wraps (LlamaGen wraps its VQ model and, apart, the loss module holding the
        # BatchNorm discriminator): report the wraps of what the BatchNorm was built into
        tied = [c for c in ddp_calls if _wraps_built_from(ctx, c, bn_nodes)]
        if not tied and handed_by is None and batchnorm_in_other_models(ctx, ddp_calls, bn_nodes):
            return  # LatentSync: the BatchNorm is in an evaluation network, the wrap is of the UNet
        for call in _one_per_choice(ctx, tied or ddp_calls):
            if call not in prepares and untrained_wrap(ctx, call, ddp_calls):
                continue  # a frozen loss network (GPEN's IDLoss): no optimizer of the file updates it
            by_accelerate = " (accelerate's `prepare` does it on several GPUs)" if call in prepares else ""
            by_accelerate_zh = "（多 GPU 时由 accelerate 的 `prepare` 完成）" if call in prepares else ""
            abn = handed_by is None and _inplace_abn_only(ctx, bn_nodes)
            yield self.violation(
                call,
                Text(
                    f"{built_en} are wrapped in DDP{by_accelerate} without "
                    "SyncBatchNorm: each rank normalises with its own micro-batch statistics."
                    + (ABN_NOTE.en if abn else ""),
                    f"{built_zh}被 DDP 包装{by_accelerate_zh}却未转换为 SyncBatchNorm。"
                    + (ABN_NOTE.zh if abn else ""),
                ),
                # ``convert_sync_batchnorm`` converts ``_BatchNorm`` subclasses only: no autofix for inplace_abn
                edits=() if gated_by or abn else self._fix(ctx, call),
                gated_by=gated_by,
                batchnorm_lines=sorted(bn_lines),
            )

    def _lightning(self, ctx: FileContext, bn_nodes: list[ast.AST]) -> Iterator[Violation]:
        """A Lightning Trainer running DDP without ``sync_batchnorm`` that fits a module built with
        BatchNorm (``_lightning_wrap.py``)."""
        lines = ", ".join(map(str, sorted({getattr(n, "lineno", 0) for n in bn_nodes})[:5]))
        for wrap in lightning_ddp_wraps(ctx):
            if not any(
                (model := fit_model(fit)) is not None and _wraps_built_from(ctx, fit, bn_nodes, arg=model)
                for fit in wrap.fits
            ):
                continue
            yield self.violation(
                wrap.call,
                Text(
                    f"BatchNorm layers (line {lines}) train under Lightning's DDP without "
                    "`sync_batchnorm=True`: each rank normalises with its own micro-batch statistics "
                    "(Lightning converts them when the Trainer is given `sync_batchnorm=True`).",
                    f"BatchNorm 层（第 {lines} 行）在 Lightning 的 DDP 下训练却未设置 "
                    "`sync_batchnorm=True`：每个 rank 只用自己的微批统计量归一化"
                    "（给 Trainer 传入 `sync_batchnorm=True` 即由 Lightning 转换）。",
                ),
                gated_by=wrap.gate,
                batchnorm_lines=sorted(getattr(n, "lineno", 0) for n in bn_nodes),
            )

    def _fix(self, ctx: FileContext, call: ast.Call) -> tuple[Edit, ...]:
        if ctx.call_qualname(call) != DDP:
            return ()
        model = dotted(call.args[0]) if call.args else None
        stmt = statement_of(ctx, call)
        prefix = _torch_nn_prefix(ctx)
        if model is None or stmt is None or prefix is None or not starts_own_line(ctx, stmt):
            return ()
        return (
            insert_line_before(
                ctx, stmt, f"{model} = {prefix}.SyncBatchNorm.convert_sync_batchnorm({model})"
            ),
        )


@dataclass
class _Calls:
    """The file's calls that matter here, sorted once."""

    bn_nodes: list[ast.AST] = field(default_factory=list)
    ddp_calls: list[ast.Call] = field(default_factory=list)
    # accelerate's prepare wraps in DDP on several GPUs
    prepares: list[ast.Call] = field(default_factory=list)
    conversions: list[ast.AST] = field(default_factory=list)
    # BatchNorm only under a configuration: ``Detector(sync_bn=args.syncbn)`` (unsynced when the flag
    # is off), a pick of which only some candidates build BatchNorm (``_pick_gate.py``)
    gates: dict[int, str] = field(default_factory=dict)
    # ``eval(cfg['NAME'])(...)``: BatchNorm only where a wrap takes what it built
    evals: list[ast.Call] = field(default_factory=list)


def _sort_calls(ctx: FileContext) -> _Calls:
    out = _Calls()
    project = ctx.project
    defaults = all_defaults(ctx) if ctx.mentions("create_model") else {}
    for node in ctx.of_type(ast.Call):
        q = ctx.call_qualname(node) or ""
        if q == DDP or (
            project is not None
            and ctx.helper(node) is None  # this file's own helpers are read directly
            and project.call_wraps_ddp(ctx, node)
        ):
            synced = keyword(node, "sync_bn")  # ignite's ``idist.auto_model(model, sync_bn=True)`` converts
            if (
                q == DDP
                and synced is not None
                and not (isinstance(synced, ast.Constant) and not synced.value)
            ):
                out.conversions.append(node)
            if q == DDP or project.call_wraps_argument(ctx, node):
                out.ddp_calls.append(node)
            helper = project.summary_for(ctx, node.func) if q != DDP and project is not None else None
            if helper is not None and (helper.converts_syncbn or helper.syncbn_param is not None):
                # a wrap helper that converts itself, perhaps under a flag (hysts
                # ``apply_data_parallel_wrapper``): its own file reports the flag
                out.conversions.append(node)
            # else a helper that builds the model it wraps (fast-autoaugment ``get_model(conf)``):
            # that model is not this file's; the helper's own file is checked where it wraps
        elif _accelerate_prepare(node):
            out.prepares.append(node)
        elif "SyncBatchNorm" in q or (dotted(node.func) or "").endswith(
            ("convert_sync_batchnorm", "convert_syncbn_model")
        ):
            out.conversions.append(node)
        elif BATCHNORM.match(q) and (_switched_off(ctx, node) or _option_off(ctx, node)):
            continue  # built only under a switch no call of this file turns on (``BasicConv(norm=False)``)
        elif (
            BATCHNORM.match(q)
            or library_batchnorm(ctx, node)
            or mmcv_batchnorm(ctx, node)
            or _model_by_name(ctx, node)
            or _factory_batchnorm(ctx, node, defaults)
            or (project is not None and builds_batchnorm_by_name(ctx, project, node))
            or (project is not None and builds_batchnorm_from_handed_module(ctx, project, node))
        ):
            out.bn_nodes.append(node)
            if project is not None and (gate := pick_gate(ctx, project, node)) is not None:
                out.gates[id(node)] = gate  # only some candidates of the pick build BatchNorm
        elif project is not None and _star_eval_pick(ctx, project, node):
            out.evals.append(node)
            if (gate := pick_gate(ctx, project, node)) is not None:
                out.gates[id(node)] = gate
        elif project is not None:
            summary = project.summary_for(ctx, node.func)
            if summary is not None and summary.module == ctx.module:
                continue  # this file's own functions are read directly above
            if isinstance(ctx.parents.get(node), ast.Expr) and not (summary and summary.converts_syncbn):
                continue  # its result is dropped: a call for its effect on an argument builds no model
                # (torch's ``_localize_dtensor(module)`` in ``replicate``)
            if summary is not None and summary.syncbn_param is not None and summary.builds_batchnorm:
                converted = converted_by_argument(ctx, node, summary.syncbn_param)
                if converted is True:
                    out.conversions.append(node)
                else:  # a self-converting model built with its conversion off
                    out.bn_nodes.append(node)
                    if isinstance(converted, str):
                        out.gates[id(node)] = converted
            elif summary is not None and summary.converts_syncbn:
                out.conversions.append(node)
            elif (summary is not None and _builds_batchnorm(summary, node)) or (
                summary is None and project.call_builds_batchnorm(ctx, node)
            ):
                out.bn_nodes.append(node)
            elif summary is not None and summary.picks_batchnorm and _names_syncbn(ctx):
                # BatchNorm in a candidate the model picks by an argument's type (a CLIP ResNet vision
                # tower): a file that converts behind an option names those runs; the option decides
                out.bn_nodes.append(node)
                out.gates[id(node)] = "a BatchNorm candidate picked at run time"
    # a BatchNorm class handed over as a layer type and built later (torchvision's ``def
    # __init__(self, ..., norm_layer=nn.BatchNorm2d)``, ``partial(nn.BatchNorm2d, eps=1e-3)``), as
    # the project index reads it in other files (``builds_from_reference``)
    refs: list[ast.Attribute | ast.Name] = [*ctx.of_type(ast.Attribute), *ctx.of_type(ast.Name)]
    for ref in refs:
        if (
            isinstance(ref.ctx, ast.Load)
            and not isinstance(ctx.parents.get(ref), ast.Attribute)
            and (
                batchnorm_reference(ctx, ref)
                or (project is not None and _handed_batchnorm_class(ctx, project, ref))
            )
        ):
            out.bn_nodes.append(ref)
    # a layer of a class whose ``train`` override keeps it in eval mode (Cutie's encoders) never
    # normalises with a rank's batch
    out.bn_nodes = [n for n in out.bn_nodes if not _in_eval_class(ctx, n)]
    return out


def _in_eval_class(ctx: FileContext, node: ast.AST) -> bool:
    cur = ctx.parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.ClassDef) and keeps_eval_mode(ctx, cur):
            return True
        cur = ctx.parents.get(cur)
    return False


def _handed_batchnorm_class(ctx: FileContext, project: ProjectIndex, ref: ast.Name | ast.Attribute) -> bool:
    """A project class of another file that builds BatchNorm, given as a parameter's default that the
    def builds or hands on (kl-nn's ``def train_nn(rank, world_size, Model=ForkCNN)`` handing
    ``Model`` to the helper that runs ``Model(mode)``; ``def load_model(Model=ForkCNN)`` running it),
    as a BatchNorm layer class given as ``norm_layer=`` is built. Not a class handed to another call
    (XLM's ``find_modules(model, name, HashingMemory, found)`` searches for its instances) nor a
    default only inspected (``isinstance(m, cls)``)."""
    parent = ctx.parents.get(ref)
    fn = ctx.parents.get(parent) if isinstance(parent, ast.arguments) else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(parent, ast.arguments):
        return False
    named = [*parent.posonlyargs, *parent.args]
    pairs = list(zip(named[len(named) - len(parent.defaults) :], parent.defaults))
    pairs += [(a, d) for a, d in zip(parent.kwonlyargs, parent.kw_defaults) if d is not None]
    param = next((a.arg for a, d in pairs if d is ref), None)
    if param is None or not any(
        _built_or_handed(ctx, n) for n in ctx.local(fn) if isinstance(n, ast.Name) and n.id == param
    ):
        return False
    summary = project.summary_for(ctx, ref)
    # a class of this file: its own layers are read directly above
    return (
        summary is not None
        and summary.module != ctx.module
        and is_class_summary(summary)
        and summary.builds_batchnorm
    )


def _built_or_handed(ctx: FileContext, name: ast.Name) -> bool:
    """``name`` is called (``Model(mode)``) or handed to a call that is no type test (``build(Model)``)."""
    parent = ctx.parents.get(name)
    if isinstance(parent, ast.keyword):
        parent = ctx.parents.get(parent)
    if not isinstance(parent, ast.Call):
        return False
    return parent.func is name or (dotted(parent.func) or "").split(".")[-1] not in INSPECTS


def _switched_off(ctx: FileContext, layer: ast.Call) -> bool:
    """A BatchNorm layer built only under a parameter of its def that defaults to off (``if norm:
    layers.append(nn.BatchNorm2d(c))`` in ``BasicConv.__init__(..., norm=False)``, a function of
    the file or a class's constructor), where the file calls that def and no call may pass it, and
    never hands the def on by name (a layer type given to a builder, its arguments unseen)."""
    found = layer_switch(ctx, layer)
    if found is None:
        return False
    fn, switch = found
    owner = ctx.parents.get(fn)
    refs: list[ast.Name | ast.Attribute]
    if isinstance(owner, ast.ClassDef) and fn.name == "__init__":
        refs = [r for r in ctx.of_type(ast.Name) if r.id == owner.name]
    elif owner is ctx.tree:
        refs = [r for r in ctx.of_type(ast.Name) if r.id == fn.name]
    elif isinstance(owner, ast.ClassDef):
        # a builder method (``self.make_layers(cfg, batch_norm=False)``): every ``.make_layers`` of the file
        refs = [r for r in ctx.of_type(ast.Attribute) if r.attr == fn.name]
    else:
        return False
    calls: list[tuple[int, frozenset[str], bool]] = []
    for ref in refs:
        if not isinstance(ref.ctx, ast.Load):
            continue
        parent = ctx.parents.get(ref)
        if isinstance(parent, ast.Call) and parent.func is ref:
            calls.append(call_shape(parent))
        elif not (isinstance(parent, ast.Call) and dotted(parent.func) == "super"):
            return False  # handed on by name (``block=BasicConv``)
    return bool(calls) and not passes_switch(calls, switch)


def _option_off(ctx: FileContext, layer: ast.Call) -> bool:
    """A BatchNorm layer built only under configuration options (``if self.use_bn:`` with
    ``self.use_bn = args.use_bn``) one of which the project (or, in file mode, this file) defaults so
    that the layer is not built: the run's default path has none (``Summary.bn_options``)."""
    for switch in option_switches(ctx, layer):
        known, value = option_default(ctx, switch[0])
        if known and not option_switch_builds(switch, value):
            return True
    return False


def _builds_batchnorm(summary: Summary, call: ast.Call) -> bool:
    """This call of a project def builds BatchNorm: the def always does, or builds it only under a
    parameter that defaults to off (``Summary.bn_switch``) and this call may pass it."""
    return summary.builds_batchnorm or passes_switch([call_shape(call)], summary.bn_switch)


def _handed_batchnorm(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> str | None:
    """``DDP(model)`` where ``model`` is a parameter of the enclosing def (never rebound there but by
    moves) that a caller hands a model built with BatchNorm: where that caller is. Not for a def
    that returns the wrap (``smart_DDP(model)``): its callers' files hold the finding."""
    if ctx.call_qualname(call) != DDP or not call.args:
        return None
    arg = unmoved(ctx, call.args[0])
    fn = ctx.enclosing_function(arg)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if not isinstance(arg, ast.Name):
        return _handed_to_constructor(ctx, project, fn, arg)
    owner = ctx.method_owner(fn)
    params = positional_params(fn, bound=owner is not None)
    if arg.id not in params and arg.id not in [a.arg for a in fn.args.kwonlyargs]:
        return _built_by_handed_callable(ctx, project, fn, arg, call) or _handed_to_constructor(
            ctx, project, fn, arg
        )
    for b in ctx.bindings(fn).get(arg.id, []):
        moved = isinstance(b, ast.Assign) and isinstance(unmoved(ctx, b.value), ast.Name)
        if b.lineno < call.lineno and not moved:
            return None  # rebound to something built here
    if _returns_wrap(ctx, fn, call):
        return None
    if owner is not None:
        qual = f"{ctx.module}.{owner.name}" + ("" if fn.name == "__init__" else f".{fn.name}")
    elif ctx.parents.get(fn) is ctx.tree:
        qual = f"{ctx.module}.{fn.name}"
    else:
        return None
    position = params.index(arg.id) if arg.id in params else -1
    return project.handed_batchnorm(qual, position, arg.id)


def _handed_to_constructor(
    ctx: FileContext, project: ProjectIndex, fn: ast.FunctionDef | ast.AsyncFunctionDef, arg: ast.AST
) -> str | None:
    """``DDP(self.model)`` in a method of a class whose ``__init__`` keeps its parameter ``model`` as
    ``self.model`` (perhaps moved: ``self.model = model.to(device)``), never rebinding it there
    (DBNet's ``BaseTrainer(config, model, criterion)``, trainer classes handed the built model):
    the model is what the class's constructions hand that parameter; where one hands a model built
    with BatchNorm. Also through a local bound to it (``model = self._model.to(rank)``)."""
    if isinstance(arg, ast.Name):
        bound = [b for b in ctx.bindings(fn).get(arg.id, []) if b.lineno <= arg.lineno]
        if not bound or not isinstance(bound[-1], ast.Assign):
            return None
        arg = unmoved(ctx, bound[-1].value)
    held = dotted(arg) if isinstance(arg, ast.Attribute) else None
    owner = ctx.method_owner(fn)
    if (
        held is None
        or not held.startswith("self.")
        or owner is None
        or ctx.parents.get(owner) is not ctx.tree
    ):
        return None
    init = init_of(owner)
    if init is None:
        return None
    params = positional_params(init, bound=True)
    names = set(params) | {a.arg for a in init.args.kwonlyargs}
    values = [
        unmoved(ctx, node.value)
        for node in ast.walk(owner)
        if isinstance(node, ast.Assign) and any(dotted(t) == held for t in node.targets)
    ]
    # kept from a constructor parameter once; every other binding re-wraps or converts that same
    # attribute (``self.model = DDP(self.model)``), none builds another model
    from_param = [
        v for v in values if isinstance(v, ast.Name) and v.id in names and ctx.enclosing_function(v) is init
    ]
    if len(from_param) != 1 or not all(v in from_param or _of_itself(ctx, v, held) for v in values):
        return None
    name = from_param[0].id
    position = params.index(name) if name in params else -1
    return project.handed_batchnorm(f"{ctx.module}.{owner.name}", position, name)


def _of_itself(ctx: FileContext, value: ast.AST, held: str) -> bool:
    """``value`` is the attribute ``held`` itself or a call on it (``DDP(self.model, ...)``)."""
    if dotted(value) == held:
        return True
    return (
        isinstance(value, ast.Call)
        and bool(value.args)
        and dotted(unmoved(ctx, value.args[0], through_syncbn=True)) == held
    )


def _built_by_handed_callable(
    ctx: FileContext,
    project: ProjectIndex,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    arg: ast.Name,
    call: ast.Call,
) -> str | None:
    """``model = self.model_fn()`` ... ``DDP(model)`` in a method, where ``__init__`` keeps its
    parameter ``model_fn`` as ``self.model_fn`` (HagAli22's ``DDPTrainer(model_fn=create_model)``): the
    model is what the callable the class is built with builds; where a construction hands it one
    that builds BatchNorm."""
    owner = ctx.method_owner(fn)
    if owner is None or ctx.parents.get(owner) is not ctx.tree:
        return None
    value: ast.AST | None = None
    for b in reversed([b for b in ctx.bindings(fn).get(arg.id, []) if b.lineno < call.lineno]):
        value = unmoved(ctx, b.value) if isinstance(b, ast.Assign) else None
        if not (isinstance(value, ast.Name) and value.id == arg.id):
            break  # past the moves (``model = model.to(device)``): what was built
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "self"
    ):
        return None
    init = init_of(owner)
    if init is None:
        return None
    params = positional_params(init, bound=True)
    for node in ctx.local(init):
        if (
            isinstance(node, ast.Assign)
            and any(dotted(t) == f"self.{value.func.attr}" for t in node.targets)
            and isinstance(node.value, ast.Name)
            and (node.value.id in params or node.value.id in [a.arg for a in init.args.kwonlyargs])
        ):
            name = node.value.id
            position = params.index(name) if name in params else -1
            return project.handed_batchnorm(f"{ctx.module}.{owner.name}", position, name)
    return None


def _wrapped_by_receiver(
    ctx: FileContext, project: ProjectIndex, call: ast.Call, built: list[ast.AST]
) -> bool:
    """``trainer.setup_multi_gpu(rank)``: a project method that wraps its object's own model in place
    (none of them returns the wrap; the call hands it no model built here), where ``trainer`` is only ever a project
    class built here with a model of ``built`` handed in (cal-ql's ``ACTTrainer(cfg.act, policy)``
    keeping ``self.policy = policy``): that class's file reports the wrap of the handed model
    (``_handed_to_constructor``), so this call is no second wrap of it."""
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name):
        return False
    own = project.summary_for(ctx, call.func)
    found = [own] if own is not None else project.method_summaries(call.func)
    if not found or any(m.returns_ddp or not m.wraps_ddp for m in found):
        return False
    if any(
        _wraps_built_from(ctx, call, built, arg=a) for a in [*call.args, *(k.value for k in call.keywords)]
    ):
        return False  # handed the model itself: this call is its wrap
    values = _values_bound(ctx, ctx.enclosing_function(call), call.func.value.id, call.lineno)
    return bool(values) and all(
        isinstance(v, ast.Call)
        and (c := project.summary_for(ctx, v.func)) is not None
        and is_class_summary(c)
        and _hands_project_batchnorm(ctx, project, v, c.qualname, built)
        for v in values
    )


def _hands_project_batchnorm(
    ctx: FileContext, project: ProjectIndex, construction: ast.Call, cls: str, built: list[ast.AST]
) -> bool:
    """``construction`` (of project class ``cls``) hands it a model of ``built`` that the project index
    sees as a BatchNorm model handed to that parameter (a project builder's result, what the class's
    own file reads for its wrap); not a model built inline here (``nn.Sequential(..., nn.BatchNorm2d(8))``),
    which only this file sees."""
    handed = [(i, "", a) for i, a in enumerate(construction.args)]
    handed += [(-1, k.arg, k.value) for k in construction.keywords if k.arg is not None]
    return any(
        _wraps_built_from(ctx, construction, built, arg=a)
        and project.handed_batchnorm(cls, i, name) is not None
        for i, name, a in handed
    )


def _returns_wrap(ctx: FileContext, fn: ast.AST, call: ast.Call) -> bool:
    """``fn`` returns the DDP wrap (directly or through the name it is assigned to)."""
    parent = ctx.parents.get(call)
    names = {dotted(t) for t in parent.targets} if isinstance(parent, ast.Assign) else set()
    returned = [r.value for r in ctx.local(fn) if isinstance(r, ast.Return) and r.value is not None]
    return any(
        v is call or any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(v)) for v in returned
    )


def _wraps_built_from(
    ctx: FileContext, call: ast.Call, built: list[ast.AST], hop: bool = True, arg: ast.AST | None = None
) -> bool:
    """The model this wrap is handed (``DDP(vq_loss.to(device))`` → ``vq_loss``; ``arg`` when given:
    Lightning's ``trainer.fit(model=...)``) is a name of its function that one of ``built`` (the
    BatchNorm-building calls) is assigned to."""
    if arg is None:
        arg = call.args[0] if call.args else None
    while isinstance(arg, (ast.Call, ast.Subscript)) and isinstance(
        arg.func if isinstance(arg, ast.Call) else arg.value, (ast.Attribute, ast.Name)
    ):
        if isinstance(arg, ast.Subscript):
            arg = arg.value  # ``model[k]``: an entry of a dict of modules
        elif isinstance(arg.func, ast.Attribute):
            arg = arg.func.value  # ``m.to(device)``, ``m.cuda()``
        else:
            break
    scope = ctx.enclosing_function(call)
    if (
        isinstance(arg, ast.Attribute)
        and dotted(arg) is not None
        and (held := dotted(arg) or "").startswith("self.")
    ):
        # ``self.model = Backbone(...)`` then ``self.model = DDP(self.model, ...)`` (ArcFace's learner:
        # the ``self.head`` wrap beside it holds no BatchNorm)
        values = [
            n.value
            for n in ctx.local(scope)
            if isinstance(n, ast.Assign)
            and n.lineno <= call.lineno
            and any(dotted(t) == held for t in n.targets)
        ]
    elif isinstance(arg, ast.Name):
        values = _values_bound(ctx, scope, arg.id, call.lineno) + _loop_items(ctx, scope, arg, call)
        # one hop: ``model = build_model(params, text_aligner, pitch_extractor)`` with
        # ``pitch_extractor = load_F0_models(path)`` (a BatchNorm builder) two lines up
        values += [
            v
            for value in (list(values) if hop else [])
            for n in ast.walk(value)
            if isinstance(n, ast.Name) and n.id != arg.id
            for v in _values_bound(ctx, scope, n.id, call.lineno)
        ]
    else:
        return False
    spans = [(ctx.position(v), ctx.subtree_end(v)) for v in values]
    if any(lo <= ctx.position(n) < hi for n in built for lo, hi in spans):
        return True
    # BatchNorm built inside a class or function of this file: a name bound to a call of it
    makers = {d.name for n in built if (d := _top_level_def(ctx, n)) is not None}
    return any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in makers
        for v in values
        for c in ast.walk(v)
    )


def _loop_items(ctx: FileContext, scope: ast.AST, name: ast.Name, call: ast.Call) -> list[ast.expr]:
    """What ``name`` takes as the target of a loop around ``call`` over a list of this scope
    (SemCKD/RepDistiller: ``module_list = nn.ModuleList([])``, ``module_list.append(model_s)``,
    then ``for module in module_list: DDP(module)``): the list's bound values and what is
    appended to it before the wrap."""
    loop = ctx.parents.get(call)
    while loop is not None and loop is not scope and not isinstance(loop, ast.For):
        loop = ctx.parents.get(loop)
    if not (
        isinstance(loop, ast.For)
        and isinstance(loop.target, ast.Name)
        and loop.target.id == name.id
        and isinstance(loop.iter, ast.Name)
    ):
        return []
    listed = loop.iter.id
    added = [
        n.args[-1]
        for n in ctx.local(scope)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("append", "extend", "insert")
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == listed
        and n.args
        and n.lineno < call.lineno
    ]
    return _values_bound(ctx, scope, listed, call.lineno) + added


def _frozen_in_training(ctx: FileContext, wraps: list[ast.Call]) -> bool:
    """A def that backprops calls, on a wrapped model, a method that puts its every BatchNorm layer
    in eval mode (``model.module.freeze_bn()`` after ``model.train()``, EfficientDet/RetinaNet
    trainers: ``batchnorm_syntax.freezes_batchnorm``), unconditionally and with no ``.train()``
    after it in that def: the layers use their running statistics, never a rank's batch."""
    models = {_root(c.args[0]) for c in wraps if c.args} | {
        _root(t) for c in wraps if isinstance(p := ctx.parents.get(c), ast.Assign) for t in p.targets
    }
    models.discard(None)
    for call in ctx.of_type(ast.Call):
        fn = ctx.enclosing_function(call)
        if (
            not isinstance(call.func, ast.Attribute)
            or call.args
            or _root(call.func.value) not in models
            or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            or not isinstance(ctx.parents.get(call), ast.Expr)
            or _under_if(ctx, call, fn)
            or not _freezes(ctx, call)
        ):
            continue
        local = [
            (n.func.attr, n)
            for n in ctx.local(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        backprops = any(name == "backward" for name, _ in local)
        retrains = any(name == "train" and ctx.position(n) > ctx.position(call) for name, n in local)
        if backprops and not retrains:
            return True
    return False


def _kept_in_eval(ctx: FileContext, wrap: ast.Call) -> bool:
    """``self.net = DDP(...)`` in a class that puts ``self.net`` in eval mode (``self.net.eval()``)
    and never in train mode, while nothing in the file switches another receiver to train mode
    (XMem's trainer: its ``train()`` method runs ``self.XMem.eval()`` to keep BatchNorm frozen):
    the wrapped network trains on running statistics. A ``for net in nets: net.train()`` or a
    ``self.net.train()`` anywhere in the file leaves it to the loop's mode: not this."""
    parent = ctx.parents.get(wrap)
    held = [d for t in parent.targets if (d := dotted(t))] if isinstance(parent, ast.Assign) else []
    if len(held) != 1 or not held[0].startswith("self.") or held[0].count(".") != 1:
        return False
    owner = ctx.method_owner(ctx.enclosing_function(wrap))
    if owner is None:
        return False
    # ``self.train()`` runs the class's own ``train`` (XMem's switches its flags), not a module's
    own_train = any(isinstance(f, ast.FunctionDef) and f.name == "train" for f in owner.body)
    evals = False
    for call in ctx.of_type(ast.Call):
        if not isinstance(call.func, ast.Attribute) or call.func.attr not in ("train", "eval"):
            continue
        receiver = dotted(call.func.value) or ""
        if call.func.attr == "eval":
            evals |= receiver == held[0] and ctx.position(owner) <= ctx.position(call) < ctx.subtree_end(
                owner
            )
        elif receiver != "self" or not own_train or (call.args and not _false(call.args[0])):
            return False  # a train-mode switch of some model (or of the class, by a mode argument)
    return evals


def _false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from (``model`` of ``model.module``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _under_if(ctx: FileContext, node: ast.AST, fn: ast.AST) -> bool:
    cur = ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, (ast.If, ast.IfExp)):
            return True
        cur = ctx.parents.get(cur)
    return False


def _freezes(ctx: FileContext, call: ast.Call) -> bool:
    """The method ``call`` runs freezes BatchNorm: this file's def, else the project's (every
    project method of that name where the receiver's type is unknown)."""
    own = ctx.helper(call)
    if own is not None:
        return freezes_batchnorm(ctx, own)
    project = ctx.project
    if project is None:
        return False
    summary = project.summary_for(ctx, call.func)
    if summary is not None:
        return bool(summary.freezes_batchnorm)
    found = project.method_summaries(call.func)
    return bool(found) and all(m.freezes_batchnorm for m in found)


def _one_per_choice(ctx: FileContext, wraps: list[ast.Call]) -> list[ast.Call]:
    """The wraps less those that wrap the same model as an earlier one in another branch of one
    ``if`` (pytorch/examples' ``if args.gpu is not None: DDP(model, device_ids=[args.gpu])`` /
    ``else: DDP(model)``): one run takes one branch, so it is one bug, reported at the first."""
    kept: list[ast.Call] = []
    for call in sorted(wraps, key=ctx.position):
        model = ctx.segment(unmoved(ctx, call.args[0])) if call.args else None
        if not any(
            model is not None
            and k.args
            and ctx.segment(unmoved(ctx, k.args[0])) == model
            and _other_branches(ctx, k, call)
            for k in kept
        ):
            kept.append(call)
    return kept


def _other_branches(ctx: FileContext, first: ast.AST, second: ast.AST) -> bool:
    """``first`` and ``second`` sit in the body and the ``else`` (or an ``elif``) of one ``if``."""
    child, cur = second, ctx.parents.get(second)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if (
            isinstance(cur, ast.If)
            and _inside_block(ctx, child, cur.orelse)
            and _inside_block(ctx, first, cur.body)
        ):
            return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _names_syncbn(ctx: FileContext) -> bool:
    return ctx.mentions("SyncBatchNorm", "convert_syncbn_model", "convert_sync_batchnorm")


def _values_bound(ctx: FileContext, scope: ast.AST, name: str, before: int) -> list[ast.expr]:
    return [
        b.value for b in ctx.bindings(scope).get(name, []) if isinstance(b, ast.Assign) and b.lineno <= before
    ]


def _accelerate_prepare(call: ast.Call) -> bool:
    m = method(call)
    return bool(m and m[1] == "prepare" and m[0] and "accelerator" in m[0].lower() and call.args)


def _top_level_def(ctx: FileContext, node: ast.AST) -> ast.ClassDef | ast.FunctionDef | None:
    cur, top = ctx.parents.get(node), None
    while cur is not None:
        if isinstance(cur, (ast.ClassDef, ast.FunctionDef)):
            top = cur
        cur = ctx.parents.get(cur)
    return top


def _model_by_name(ctx: FileContext, call: ast.Call) -> bool:
    """``models.__dict__[arch](...)``, ``getattr(models, arch)(...)``, ``torchvision.models.get_model``;
    also such a class handed to a builder that instantiates it (MoCo
    ``builder.MoCo(models.__dict__[args.arch], dim)``)."""
    if ctx.call_qualname(call) in MODEL_GETTERS:
        return True
    # ``net = models.__dict__[name]`` ... ``net(num_classes=n)`` (YouReID): the pick, through the name
    callee = bound_callee(ctx, call)
    return any(_registry_entry(ctx, e) for e in (callee, *call.args, *(k.value for k in call.keywords)))


def _star_eval_pick(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> bool:
    """``eval(model_cfg['NAME'])(...)`` in a file that star-imports project modules (sithu31296
    semseg ``from semseg.models import *``): the name is one the star imports bring, so the
    candidates are those modules' defs, used as a registry (the ``models.__dict__[name]`` rule)."""
    pick = bound_callee(ctx, call)
    if not (
        isinstance(pick, ast.Call)
        and isinstance(pick.func, ast.Name)
        and pick.func.id == "eval"
        and pick.args
        and not isinstance(pick.args[0], ast.Constant)
    ):
        return False
    module = ctx.module or ""
    return any(
        (m := project.resolve_module(absolute_module(node, relative_base(ctx, module)) or "")) is not None
        and project.module_builds_batchnorm(m)
        for node in ctx.of_type(ast.ImportFrom)
        if any(a.name == "*" for a in node.names)
    )


def _registry_entry(ctx: FileContext, func: ast.AST) -> bool:
    """A model class picked by name from a registry of BatchNorm models."""
    picked = picked_by_name(func)
    # ``getattr(models, "resnet50")`` names one model: a registry pick is by a key known at run time
    if picked is None or (isinstance(func, ast.Call) and isinstance(picked[1], ast.Constant)):
        return False
    registry = picked[0]
    qual = ctx.qualname(registry) or ""
    project = ctx.project
    # a project module used as a registry of model builders: what its builders build decides, also
    # for a project module named ``models`` (SLIP's ``getattr(models, args.model)`` picks among ViT
    # builders whose only norm layers are SyncBatchNorm), not the torchvision guess
    module = project.resolve_module(qual) if project is not None and qual else None
    if project is not None and module is not None:
        # a registry whose BatchNorm models all convert themselves (PixPro) picks a synced model
        return project.module_builds_batchnorm(module) and not project.module_converts_syncbn(module)
    return qual in MODEL_REGISTRIES or qual.startswith("torchvision.models")


def _factory_batchnorm(ctx: FileContext, call: ast.Call, defaults: dict[str, object]) -> bool:
    """``timm.create_model(name)`` where the name (a literal, or the default of the flag it is read
    from: ``args.model`` → ``--model``'s default) is a BatchNorm family."""
    if ctx.call_qualname(call) not in MODEL_FACTORIES or _frozen(ctx, call):
        return False
    arg = call.args[0] if call.args else keyword(call, "model_name")
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return bool(BATCHNORM_ARCH.match(arg.value))
    key = _option_key(ctx, arg) if arg is not None else None
    if key is None:
        return False
    value = defaults.get(key)
    if value is None:
        # (project) the default the project writes elsewhere, or the shipped YAML configurations'
        # value (NAIRR's ``model_name = params['model_name']`` with ``model_name: resnet101.a1_in1k``)
        known, written = option_default(ctx, key)
        value = written if known else None
    return isinstance(value, str) and bool(BATCHNORM_ARCH.match(value))


def _option_key(ctx: FileContext, arg: ast.expr) -> str | None:
    """The option a model name is read from: ``args.model`` → ``model``, ``cfg['model_name']`` →
    ``model_name``; through a local bound once in the function (``model_name = params['model_name']``)."""
    if isinstance(arg, ast.Name):
        fn = ctx.enclosing_function(arg)
        bound = ctx.bindings(fn).get(arg.id, []) if fn is not None else []
        if len(bound) == 1 and isinstance(bound[0], ast.Assign) and len(bound[0].targets) == 1:
            value = bound[0].value
            if isinstance(value, (ast.Attribute, ast.Subscript)):
                arg = value
    if isinstance(arg, ast.Subscript):
        index = arg.slice
        return index.value if isinstance(index, ast.Constant) and isinstance(index.value, str) else None
    name = dotted(arg)
    return name.split(".")[-1] if name is not None else None


def _frozen(ctx: FileContext, call: ast.Call) -> bool:
    """The built model is not trained: a teacher/EMA/target copy (DeiT's distillation teacher) or
    one the file freezes (lint/frozen_wrap.py ``frozen_names``), so its statistics never update."""
    parent = ctx.parents.get(call)
    if not isinstance(parent, ast.Assign):
        return False
    names = {d for t in parent.targets if (d := dotted(t))}
    if any(FROZEN_NAME.search(n.split(".")[-1]) for n in names):
        return True
    frozen = frozen_names(ctx.of_type(ast.Call), mode_switches=False)
    return any(n in frozen for n in names)


def _opt_in_gate(
    ctx: FileContext, conversions: list[ast.AST], bn_nodes: list[ast.AST], wraps: list[ast.Call]
) -> str | None:
    """The flag a conversion hides behind when every conversion is off by default; None when the
    default path converts (or the condition is not a plain config flag). A conversion inside one
    branch of a choice whose other branches build BatchNorm models (fast-autoaugment converts only
    its ``'efficientnet' in name`` model) leaves those models unsynced: gated by that choice. A
    condition whose branch holds the wrap too (LAION-CLAP ``if args.distributed and not
    args.horovod:`` around both ``if args.use_bn_sync: convert`` and ``DDP(model)``) decides whether
    there is a wrap at all, not whether the wrapped model is converted: it and the conditions
    around it are not read."""
    if not conversions:
        return None
    defaults = all_defaults(ctx)
    gates: list[str] = []
    # per conversion, the launches (as written, script) under which it is skipped: a launch that
    # turns one conversion off while another runs (swav's ``--sync_bn apex`` beside ``if sync_bn ==
    # "pytorch"`` / ``elif sync_bn == "apex"``) leaves the model converted
    skips: list[set[tuple[str, str]]] = []
    from_launch = False
    for node in conversions:
        gate = None
        skips.append(set())
        child, cur = node, ctx.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(cur, ast.If) and child is not cur.test:
                branch = cur.body if child in cur.body else cur.orelse
                if any(_inside_block(ctx, w, branch) for w in wraps):
                    break
            if isinstance(cur, ast.If) and gate is None and child is not cur.test:
                other = cur.orelse if child in cur.body else cur.body
                if any(_inside_block(ctx, b, other) for b in bn_nodes):
                    choice = _model_choice(ctx, node, cur)
                    gate = f"not ({ctx.segment(choice.test)})" if choice is not None else None
            # a test the wraps sit under too (``if CONFIG.dist:`` around the conversion and, apart,
            # around the wrap) decides whether there is a wrap: not read as the conversion's gate
            if isinstance(cur, ast.If) and not (
                child is not cur.test and _wraps_under_same_test(ctx, cur, child in cur.body, wraps)
            ):
                test = flag_test(ctx, cur.test, defaults)
                if test is not None and test.default_true is None:
                    test = _option_flag_test(ctx, cur.test, test, defaults)
                if test is not None:  # a runtime condition inside an opt-in flag decides only within it
                    in_body = child in cur.body
                    launches = _launched_tests(ctx, cur.test, test, defaults)
                    skipped = [
                        (given, script)
                        for holds, given, script in launches
                        if holds is not None and holds is not in_body
                    ]
                    skips[-1] = {(spelled(test.option, given), script) for given, script in skipped}
                    if test.default_true is None or test.default_true == in_body:
                        # runs under the default, or the default is set where we cannot read it
                        # (semseg's YAML configs all set ``sync_bn: True``): trust the conversion,
                        # unless a shipped launch script turns it off (RetinaFace's ``--syncbn=0``)
                        if not skipped:
                            return None
                        given, script = skipped[0]
                        gate = f"{spelled(test.option, given)} (as {script} runs it)"
                        from_launch = True
                    else:
                        # off by default: a finding even where every shipped launch script turns it on
                        # (the run without the flag is unsynced; FAS-CVPR2024's label is config-gated so)
                        gate = describe(test, not in_body)  # the bug: the branch that skips the conversion
            child, cur = cur, ctx.parents.get(cur)
        if gate is None:
            return None  # unconditional, or only under a runtime condition we cannot read: trust it
        gates.append(gate)
    if from_launch:
        common = set.intersection(*skips)
        if not common:
            return None  # every launch that turns one conversion off runs another
        spelling, script = min(common)
        return f"{spelling} (as {script} runs it)"
    return gates[0]


def _wraps_under_same_test(ctx: FileContext, test_if: ast.If, in_body: bool, wraps: list[ast.Call]) -> bool:
    """Every wrap sits in the same branch of another ``if`` spelling the same test as ``test_if``
    (MGMatting's ``if CONFIG.dist: convert_sync_batchnorm(G)`` then, apart, ``if CONFIG.dist: G =
    DDP(G)``): the test decides whether there is a wrap, as one ``if`` around both does, so a run
    that skips the conversion wraps nothing."""
    spelled = ctx.segment(test_if.test)
    found = False
    for wrap in wraps:
        child: ast.AST = wrap
        cur = ctx.parents.get(wrap)
        held = False
        while cur is not None and not isinstance(cur, ast.Module):
            if (
                isinstance(cur, ast.If)
                and cur is not test_if
                and child is not cur.test
                and (child in cur.body) == in_body
                and ctx.segment(cur.test) == spelled
            ):
                held = True
                break
            child, cur = cur, ctx.parents.get(cur)
        if not held:
            return False
        found = True
    return found


def _launched_tests(
    ctx: FileContext, expr: ast.expr, test: FlagTest, defaults: dict[str, object]
) -> list[tuple[bool | None, object, str]]:
    """Whether ``expr`` (a test of option ``test.flag``) holds in each run a shipped shell launch
    script makes (lint/launch_scripts.py: RetinaFace's ``train_ddp_lanch.sh`` passes ``--syncbn=0``
    to a parser whose default is 1): (holds, the value given, the script); None where the value
    cannot be read."""
    if "." not in test.flag:
        return []
    key = test.flag.split(".")[-1]
    default = defaults.get(key, UNKNOWN)
    if default is UNKNOWN:
        known, value = option_default(ctx, key)
        default = value if known else None
    out: list[tuple[bool | None, object, str]] = []
    for given, script in launched_values(ctx, test.option if test.option.startswith("--") else key):
        held = option_value(given, default)
        launched = flag_test(ctx, expr, {**defaults, key: held}) if held is not UNKNOWN else None
        out.append((launched.default_true if launched is not None else None, given, script))
    return out


def _option_flag_test(
    ctx: FileContext, expr: ast.expr, test: FlagTest, defaults: dict[str, object]
) -> FlagTest:
    """``test`` evaluated under the default its option is given outside the file's argparse
    (lint/option_defaults.py): in project mode anywhere in the project (Point-BERT's ``if
    args.sync_bn:`` declared in ``utils/parser.py``; ``config.syncbn`` of a ``class Config: syncbn =
    False`` in another file; a key of the shipped YAML configurations), alone in the file's own
    configuration classes and module-level settings."""
    if "." not in test.flag:
        return test
    key = test.flag.split(".")[-1]
    known, value = option_default(ctx, key)
    if not known:
        return test
    return flag_test(ctx, expr, {**defaults, key: value}) or test


def _torch_nn_prefix(ctx: FileContext) -> str | None:
    """How this file spells ``torch.nn`` (``torch.nn`` or an ``nn`` alias), if it imports it."""
    for alias, target in ctx.imports.items():
        if target == "torch.nn":
            return alias
    return "torch.nn" if ctx.imports.get("torch") == "torch" else None


def _inside_block(ctx: FileContext, node: ast.AST, block: list[ast.stmt]) -> bool:
    pos = ctx.position(node)
    return any(ctx.position(stmt) <= pos < ctx.subtree_end(stmt) for stmt in block)


def _model_choice(ctx: FileContext, node: ast.AST, top: ast.If) -> ast.If | None:
    """The innermost ``if`` between ``node`` and ``top`` (included) that chooses something other than
    distribution (``'efficientnet' in name``, not ``local_rank >= 0``): the branch the conversion is in."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None:
        if (
            isinstance(cur, ast.If)
            and child is not cur.test
            and not DISTRIBUTED_TEST.search(ctx.segment(cur.test))
        ):
            return cur
        if cur is top:
            return None
        child, cur = cur, ctx.parents.get(cur)
    return None
