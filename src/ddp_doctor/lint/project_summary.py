"""What project mode records for each top-level def, class and method (:class:`Summary`), and
the rule-owned facts (:data:`FACTS`) the index computes only for the rules that read them.

Part of the project index (lint/project.py): the other parts fill these records (project_scan.py,
project_def_facts.py, project_log_facts.py), spread them through calls (project.py) and answer
the rules' questions from them (project_queries.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddp_doctor.lint.batchnorm_syntax import OptionSwitch
from ddp_doctor.lint.context import names_a_class
from ddp_doctor.lint.provenance import Shape
from ddp_doctor.lint.state_logs import StateLog

DATA_PARALLEL = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
    }
)


# The facts beyond the shared ones (module doc), each read by the rules that name it in
# ``Rule.project_facts``: fact -> the Summary fields and ProjectIndex attributes/queries it feeds.
FACTS: dict[str, tuple[str, ...]] = {
    "batchnorm": (
        "builds_batchnorm",
        "converts_syncbn",
        "syncbn_param",
        "pick_builds_batchnorm",
        "refs",
        "module_builds_batchnorm",
        "call_builds_batchnorm",
        "picks_param",
        "call_picked_module",
    ),
    "sync_toggle": ("toggles_sync",),
    # option defaults written anywhere in the project (lint/option_defaults.py)
    "options": ("option_default", "option_defaults", "launched_values"),
    "scaler": (
        "uses_scaler",
        "tests_use_scaler",
        "scaler_modules",
        "scaler_classes",
        "scales_module",
        "fp16_gate",
        "call_fp16_gate",
        "fp16_cast_param",
        "call_fp16_cast",
        "fp16_cast_returns",
        "call_fp16_cast_return",
        "fp16_cast_names",
        "scaled_only_modules",
        "option_choices",
        "option_excludes",
    ),
    "rank0_logging": (
        "logs_rank0",
        "logs_inside",
        "inside_logger_names",
        "rank0_objects",
        "rank0_sink_classes",
        "attached_writer_classes",
        "builds_rank0_sink",
        "null_writer",
        "null_off_rank0",
        "rank0_predicates",
        "distributed_predicates",
        "silences_other_ranks",
        "logging_silencers",
        "silences_logging",
        "print_silencers",
        "silences_print",
        "logged_params",
        "call_logged_args",
        "state_logged",
        "call_state_logged",
        "reduces_self",
        "method_reduces_receiver",
        "sync_windows",
        "delegated_syncs",
        "rank0_decorator",
        "decorators",
        "logs",
        "rank0_callees",
        "rank0_called",
        "rank0_returns",
        "rank0_handed",
        "rank_handed",
        "rank_attributes",
        "rank0_method_args",
        "rank0_function_args",
        "rank0_function_params",
        "rank0_method_params",
        "declares_abstract",
        "rank0_flags",
        "base_class_flags",
        "dead_override_base",
        "call_rank0_positions",
        "rank0_attributes",
    ),
    "loss_flow": (
        "returns_loss",
        "method_returns_reduced",
        "param_call_return",
        "call_returns_loss",
        "call_param_return",
        "loss_returning_names",
        "syncs_updates",
        "synced_meter_names",
        "backprop_targets",
        "backpropagated_defs",
        "lightning_args",
        "lightning_params",
        "handed_params",
    ),
    "training_params": (
        "trains_on_params",
        "trains_on_argument",
        "hands_to_ddp_code",
        "reads_rank_and_world",
        "call_shards_by_rank",
    ),
    "compile": ("compiles_param", "call_compiles", "compiling_names"),
    "epochs": (
        "epoch_params",
        "reiterates_argument",
        "sampler_loaders",
        "set_epoch_modules",
        "returns_sampler",
        "sampler_built_by",
        "sampler_loader_args",
        "sampler_loader_params",
    ),
    "call_arguments": ("passed_arguments", "never_passed", "never_constructed_with", "result_discarded"),
    "plain_loaders": (
        "plain_loaders",
        "plain_loader_calls",
        "param_shuffled_loaders",
        "flag_gated_loaders",
        "returned_plain_loader",
        "plain_loader_builder_names",
    ),
}


@dataclass
class Summary:
    qualname: str
    module: str
    path: str
    line: int
    returns_ddp: bool = False
    fsdp_only: bool = False  # its own wraps are all FSDP (no DistributedDataParallel)
    wraps_ddp: bool = False  # calls a DDP/FSDP constructor (directly or through a project helper)
    calls_backward: bool = False
    # returns values combined across ranks (``dist.all_reduce(t); return t``), directly or through
    # the project functions whose results it returns (lingua ``dist_mean_dict`` → ``dist_mean``)
    returns_reduced: bool = False
    reduce_callees: set[str] = field(default_factory=set)  # project functions whose results it returns
    # the positions of the tuples it returns that hold values combined across ranks (reductions.
    # reduced_return_positions: mmcv's ``return loss, log_vars`` with ``log_vars`` all-reduced item by
    # item), None when it returns no tuple literal; and the project calls it returns whole (``return
    # self.parse_losses(losses)``: ``(class, method)`` for a method of its own class, ``(qualname, "")``)
    reduced_positions: frozenset[int] | None = None
    returned_calls: tuple[tuple[str, str], ...] = ()
    # it calls nothing but Python builtins and methods of its own values (reductions.local_only:
    # MonoDetector's ``reduce_loss_dict`` is ``sum(loss_dict.values())``): a reduce by name only
    local_only: bool = False
    toggles_sync: bool = False
    builds_batchnorm: bool = False
    converts_syncbn: bool = False
    # puts every BatchNorm layer in eval mode (``freeze_bn``: batchnorm_syntax.freezes_batchnorm)
    freezes_batchnorm: bool = False
    # (a class) its ``train`` override keeps its BatchNorm in eval mode (batchnorm_syntax.keeps_eval_mode):
    # it builds no BatchNorm that trains, whatever it holds
    keeps_eval: bool = False
    # Project classes/functions it builds only when a parameter that defaults to off says so
    # (TabPFN ``self.input_ln = SeqBN(ninp) if input_normalization else None``, default False):
    # their BatchNorm is not in what it builds on the default path.
    bn_optional: set[str] = field(default_factory=set)
    # ``(parameter, position)``: its own BatchNorm layers are all built only under that parameter,
    # which defaults to off (MIMO-UNet's ``BasicConv(..., norm=False)``: ``if norm:
    # layers.append(nn.BatchNorm2d(c))``); a caller builds them only where some call may pass it
    # (position -1: keyword only). ``switch_calls``: per project callee, what its calls hand it
    # (``batchnorm_syntax.call_shape``).
    bn_switch: tuple[str, int] | None = None
    switch_calls: dict[str, list[tuple[int, frozenset[str], bool]]] = field(default_factory=dict)
    # Per BatchNorm layer built only under configuration options (``nn.BatchNorm1d(d) if self.use_bn
    # else ()`` with ``self.use_bn = args.use_bn``, ``--use_bn`` defaulting to 0: Wsi-Caption's
    # captioning model): the options' tests (``batchnorm_syntax.option_switches``). Settled once the
    # project's option defaults are known: it builds BatchNorm unless every such layer is off by default.
    bn_options: list[tuple[OptionSwitch, ...]] = field(default_factory=list)
    # Project callees it builds only under configuration options, per call the options' tests
    # (FastSpeech2's ``if self.use_postnet: self.postnet = PostNet()`` with ``self.use_postnet =
    # model_config[...]["use_postnet"]``, the shipped YAML setting it False): settled with
    # ``bn_options``, a callee whose every call is off by default joins ``bn_optional``.
    bn_option_callees: dict[str, list[tuple[OptionSwitch, ...]]] = field(default_factory=dict)
    # ``(parameter, position)``: it builds a model by a factory (``timm.create_model(enc_name)``) from a
    # parameter whose default names a BatchNorm family (SlowTV's ``PoseNet(enc_name='resnet18')``):
    # BatchNorm unless every call in the project hands that parameter another literal name (settled
    # once all calls are read). ``model_names``: per project callee, per call, the parameters it hands a
    # literal non-BatchNorm model name (``batchnorm_syntax.names_other_model``).
    bn_name_param: tuple[str, int] | None = None
    model_names: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    # Project callees that fill one attribute as a pick by a parameter's type (OpenAI CLIP's
    # ``self.visual = ModifiedResNet(...)`` or ``VisionTransformer(...)`` by ``isinstance(vision_layers,
    # (tuple, list))``), by the line of the choosing ``if``: it builds BatchNorm when most of a
    # choice's candidates do (``batchnorm_syntax.type_chosen_slot``); they are in ``bn_optional`` too.
    bn_choices: dict[int | str, set[str]] = field(default_factory=dict)
    # Some candidate of such a choice builds BatchNorm, short of a majority (CLIP's ``ModifiedResNet``
    # beside its ``VisionTransformer``), in it or in what it builds: a file that converts to
    # SyncBatchNorm behind an option declares those runs, which the option's default leaves unsynced.
    picks_batchnorm: bool = False
    # ``(parameter, position, default)``: it converts to SyncBatchNorm only when that parameter is
    # true (Group-Free-3D ``GroupFreeDetector(..., sync_bn=True if args.syncbn else False)``): each
    # call decides by its argument (lint/syncbn_parameter.py).
    syncbn_param: tuple[str, int, bool] | None = None
    # position of the parameter holding a module it returns a def of, picked by a run-time name
    # (pytorch-template's ``init_obj(name, module)``: ``return getattr(module, cfg[name]['type'])(...)``;
    # lint/model_picks.py ``handed_pick_param``): the caller's module argument is the registry
    picks_param: int | None = None
    logs_rank0: bool = False
    # its rank-0 logs sit under its own rank tests and it does more than log (project_log_facts
    # ``logs_inside``): its own file reports what it logs, not its callers
    logs_inside: bool = False
    callees: set[str] = field(default_factory=set)  # resolved project qualnames it calls/instantiates
    returned_callees: set[str] = field(default_factory=set)  # project qualnames whose result it returns
    # Project names it merely references (``norm=Conv``, ``if m in {Conv, C3}``), and ``module.*`` for
    # modules it reaches through ``from m import *`` + ``eval`` (YOLO's parse_model): BatchNorm only.
    refs: set[str] = field(default_factory=set)
    # Parameters (by name and position, ``self`` not counted) whose value is iterated by a loop that
    # runs backward — directly or after ``self.x = param`` in a method of the class.
    trains_on_params: set[str | int] = field(default_factory=set)
    # Its own body reads both a rank and a world size (``np.array_split(files, get_world_size())
    # [get_rank()]``): what it builds is split by rank (contriever's ``load_dataset``). For a class:
    # its methods read both, or it subclasses IterableDataset (it decides what each rank reads).
    reads_rank_and_world: bool = False
    # What calling it returns of the local training loss (lint/provenance.py): KAIR's
    # ``current_log()`` returning ``self.log_dict`` that ``optimize_parameters`` filled.
    returns_loss: Shape | None = None
    # ``(parameter, position)``: it calls that parameter and returns the result there (MSN ``gpu_timer``).
    param_call_return: tuple[int, int] | None = None
    # ``(model parameter, flag parameter or None)``: it returns ``torch.compile`` of that parameter,
    # when the flag parameter says so (VAR ``args.compile_model(m, fast)``).
    compiles_param: tuple[int, int | None] | None = None
    # ``(parameter, position, scaled)``: every backward it runs is on that parameter (VAR
    # ``AmpOptimizer.backward_clip_step(loss=loss, ...)``): a call of it is a backward of the argument.
    backward_param: tuple[str, int, bool] | None = None
    # ... and it backprops that parameter as it is handed, dividing nothing (lint/loops.py
    # ``backprops_param_itself``): a call of it backprops the caller's value undivided.
    backward_param_itself: bool = False
    # How it steps an optimizer (lint/loops.py ``guarded_in``): "guarded" only under an
    # accumulation guard (CosyVoice ``update_parameter_and_lr`` stepping when ``(batch_idx + 1) %
    # accum_grad == 0``), "always" otherwise; None: it steps none.
    steps: str | None = None
    # Parameters (name and position; a method's ``self`` not counted) it iterates again on every
    # pass of an outer loop, or hands to a call inside one, in a module that never calls
    # ``set_epoch`` (neuralop ``Trainer.train(train_loader, ...)``: ``for epoch in ...:
    # self.train_one_epoch(epoch, train_loader, ...)``).
    epoch_params: set[str | int] = field(default_factory=set)
    # What it returns of DataLoaders over a shuffling DistributedSampler, in a module that never
    # calls ``set_epoch`` (lint/samplers.py ``returned_sampler_loaders``: hysts ``create_dataloader``
    # returning ``train_loader, val_loader``): position (``WHOLE`` or a tuple index) -> "file.py:line"
    # of the sampler.
    sampler_loaders: dict[int, str] = field(default_factory=dict)
    # (a class) a sampler of the project's own that orders its samples by ``self.epoch``, which only
    # its ``set_epoch`` changes, and shuffles by default (lint/samplers.py ``epoch_sampler_class``):
    # built in another file, it is a DistributedSampler there. Shared: read by every data-order rule.
    epoch_sampler: bool = False
    # ... and the constructor parameter its epoch starts from (samplers.init_epoch_param): a call
    # passing it sets the epoch without ``set_epoch``
    epoch_sampler_param: tuple[str, int] | None = None
    # It returns a shuffling DistributedSampler (lint/samplers.py ``returned_sampler``): "file.py:line"
    # of the sampler, and the parameter (name, position) a caller turns shuffling off with, if any.
    returns_sampler: tuple[str, str | None, int | None] | None = None
    # What it returns of DataLoaders that draw without a sampler in a def that reads no rank (lint/
    # samplers.py ``returned_plain_loaders``): position -> "file.py:line" of the DataLoader call,
    # also through the project calls whose whole result it returns (``plain_loader_calls``, position
    # -> callee qualname, folded into ``plain_loaders`` once every def is known).
    plain_loaders: dict[int, str] = field(default_factory=dict)
    plain_loader_calls: dict[int, str] = field(default_factory=dict)
    # Those whose ``shuffle`` is one of its parameters (rDL-SIM's ``get_loader_SR(..., shuffle=False)``):
    # position -> ("file.py:line", the parameter, its position or -1, whether it defaults to True);
    # a call that passes a literal true (or leaves a true default) gets a sampler-less shuffled loader.
    param_shuffled_loaders: dict[int, tuple[str, str, int, bool]] = field(default_factory=dict)
    # loaders whose sampler a distribution flag parameter with a false default chooses (samplers.py
    # ``flag_gated_loaders``): position -> ("file.py:line", flag, its position or -1)
    flag_gated_loaders: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    # Its parameters that its log calls write (VAR ``TensorboardLogger.update(**kwargs)`` →
    # ``add_scalar``; ``**kwargs`` as ``"**kwargs"``): a call of it logs those arguments.
    logged_params: tuple[str, ...] = ()
    params: tuple[str, ...] = ()  # positional parameter names (no ``self``)
    # A method that logs what its instance was built with (``ProgressMeter.display`` printing the
    # meters ``__init__`` kept): how, and which constructor parameters (lint/state_logs.py).
    state_logged: StateLog | None = None
    # A method that combines its instance's own state across ranks (rrn's ``MetricManager.all_reduct``:
    # ``self.metrics[i].all_reduce(device)``): a call of it as a statement reduces the receiver in place.
    reduces_self: bool = False
    # A class whose update method combines its argument across ranks (efficientvit ``AverageMeter``
    # whose ``update`` sums through ``sync_tensor``): its instances are synchronised meters.
    syncs_updates: bool = False
    # (a class) its sync-named methods that combine across ranks themselves, each with the statistics
    # (properties) that still read this rank's own state after it (``SmoothedValue``'s deque-read
    # ``avg``/``median``/``max``/``value``; lint/meter_windows.py), and the sync-named methods of a
    # container that calls the same method on the meters it holds, each with the container's methods
    # and what they read of those meters (``MetricLogger.latest_meter``: ``value``)
    sync_windows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    delegated_syncs: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    # Its own DDP/FSDP wrap is of a model it was handed (``smart_DDP(model)``), not of one it built
    # itself (fast-autoaugment ``get_model(conf)`` builds the ResNet it wraps).
    wraps_param: bool = False
    wraps_built: bool = False  # one of its own wraps is of a model it built
    # One of its own wraps unpacks its ``**kwargs`` (``convert_model(model, **kwargs)``): a caller's
    # keyword (``find_unused_parameters=True``) reaches DDP.
    wrap_kwargs: bool = False
    # It returns ``torch.float16`` (a dtype property or helper, OLMo ``autocast_precision``): the
    # condition it does so under (``self.precision == "amp_fp16"``), "" when always; None: never.
    fp16_gate: str | None = None
    # The position (``self`` not counted) of the parameter whose weights it casts to float16 (OpenAI
    # CLIP's ``convert_weights(model)``: ``model.apply`` of a def doing ``.half()``); None: none.
    fp16_cast_param: int | None = None
    # Casts to float16 of a model it returns, under ``if <parameter> == "v":`` (CLAP's ``create_model(
    # ..., precision=...)``): ``(project helper handed the model or None for ``.half()``, parameter,
    # its position, values)`` (project_def_facts.fp16_cast_returns).
    fp16_cast_returns: tuple[tuple[str | None, str, int, frozenset[str]], ...] = ()
    # A decorator whose wrapper runs the decorated function only under a rank-0 test (BasicSR/mmcv
    # ``master_only``, nerfstudio ``check_main_thread``), and the project decorators a function has.
    rank0_decorator: bool = False
    decorators: tuple[str, ...] = ()
    logs: bool = False  # it has a log call of its own (print, logger.*, writer.add_scalar ...)
    # (a class) its project base classes, as written (resolved through re-exports when asked), and
    # whether it only declares some method (``def _train_step(self): pass``): not meant to run as is
    class_bases: tuple[str, ...] = ()
    declares_abstract: bool = False
    # (a class) the ``self.<attr>`` flags its methods bind to rank-0 tests (rank0.class_flags: VL-T5's
    # ``self.verbose = True`` lowered off gpu 0): the subclasses of other files test them too
    rank0_flags: tuple[str, ...] = ()
    # (a class) every method but ``__init__`` does nothing (tape's ``DummyVisualizer``, CenterNet's
    # ``EmptySummaryWriter``: what a factory hands the other ranks); (a function) the project classes it
    # returns under a test that holds off rank 0 (lint/rank0_sinks.py ``null_off_rank0_returns``)
    null_writer: bool = False
    null_off_rank0: tuple[str, ...] = ()
    # (a class) the data-parallel wrapper it subclasses (``torch.nn.parallel.DistributedDataParallel``)
    wrapper_base: str | None = None


def propagated_flags(s: Summary) -> tuple[bool, ...]:
    """The flags `_propagate` spreads from callees to callers: one list, so its before/after
    comparison cannot miss a field (it once compared 5 fields with 6 and never stopped early)."""
    return (
        s.calls_backward,
        s.returns_reduced,
        s.toggles_sync,
        s.builds_batchnorm,
        s.picks_batchnorm,
        s.converts_syncbn,
        s.returns_ddp,
        s.wraps_ddp,
    )


def is_class_summary(s: Summary) -> bool:
    """Named like a class: ``ResNet``, also a private one (``_VGG``)."""
    return names_a_class(s.qualname)
