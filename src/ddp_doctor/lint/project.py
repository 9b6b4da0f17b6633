"""Project mode: what the functions and classes of a whole directory do, so facts cross files.

A training script rarely keeps everything in one file: DDP is applied by a helper in
``utils/torch_utils.py`` (``smart_DDP``), backward runs inside a loss-scaler object defined in
``util/misc.py``, BatchNorm lives in the model module, a writer exists only on rank 0 because
``main.py`` built it under ``if rank == 0``. ``ProjectIndex.build`` reads every Python file of the
directory once (parse, summarise, drop the tree) and keeps small per-function/per-class
summaries keyed by qualified name (module path from the project root, plus every shorter
suffix that is unique, so ``from utils.torch_utils import smart_DDP`` resolves whether the
script runs from the repo root or from ``src/``). Rules then ask ``ctx.project`` about a call.

Summaries are facts that hold for every call (no context sensitivity): ``returns_ddp``,
``calls_backward``, ``toggles_sync``, ``builds_batchnorm``, ``logs_rank0`` ...
They are propagated through project-internal calls to a fixed point (bounded rounds).

The call graph (modules, aliases, callees, methods), the DDP/FSDP wraps and the backward-running
code are what every rule stands on, and are always computed. Every other fact belongs to the
rules that read it: :data:`FACTS` names them, a rule lists the ones it reads in
``Rule.project_facts``, and ``ProjectIndex.build(facts=...)`` computes only those (the engine passes
the selected rules' facts; tests/lint/test_project_facts.py checks both directions).
Names bound project-wide are tracked by spelling: an instance of a class whose ``__call__``
runs backward (``loss_scaler = NativeScaler()``), objects created only on rank 0
(``log_writer = ... if global_rank == 0 else None``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from ddp_doctor.lint.batchnorm_syntax import (
    BATCHNORM,
    TORCHVISION_BN,
    batchnorm_tables,
    builds_from_reference,
    names_syncbn,
    off_by_default,
)
from ddp_doctor.lint.context import FileContext, dotted, method, walk_local
from ddp_doctor.lint.flags import argparse_choices
from ddp_doctor.lint.handed_models import MOVES, Handed, handed_builder
from ddp_doctor.lint.handed_models import record as record_handed
from ddp_doctor.lint.idioms import SYNC_CONTROL
from ddp_doctor.lint.loops import LoopFacts, backward_of, guarded_in, param_backward
from ddp_doctor.lint.provenance import (
    LossFlow,
    Shape,
    alarm,
    bound_names,
    evaluation_function,
    is_reduce,
    is_update_method,
    loop_aliases,
    merge,
    param_call_return,
    reads,
    returned_reductions,
)
from ddp_doctor.lint.rank0 import is_log_sink
from ddp_doctor.lint.source import read_source

DATA_PARALLEL = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
    }
)
DDP = "torch.nn.parallel.DistributedDataParallel"
# Words a file must contain to hold any fact worth summarising (cheap text pre-check).
FACT_WORDS = (
    "DistributedDataParallel",
    "DistributedSampler",  # a loader builder returning a sampled DataLoader (hysts create_dataloader)
    "FullyShardedDataParallel",
    "fully_shard",
    "backward",
    "BatchNorm",
    "GradScaler",
    "no_sync",
    "require_backward_grad_sync",
    "Module",
    "rank",
    "RANK",
    "Rank",
    "main_process",
    "master",
    "compile",  # a helper returning torch.compile(m)
    "odel",  # model/Model: builders that only compose project classes (``return YOLOX(...)``)
    "riter",  # writer/Writer, add_scalar's owner: project loggers that log their arguments
    "ogger",  # logger/Logger
    "wandb",
    "sync",  # a meter whose update reduces (``sync_tensor``, ``synchronize``)
    "reduce",
    "float16",  # a dtype property or helper returning torch.float16
)
# The facts beyond the shared ones (module doc), each read by the rules that name it in
# ``Rule.project_facts``: fact -> the Summary fields and ProjectIndex attributes/queries it feeds.
FACTS: dict[str, tuple[str, ...]] = {
    "batchnorm": (
        "builds_batchnorm",
        "converts_syncbn",
        "refs",
        "module_builds_batchnorm",
        "call_builds_batchnorm",
    ),
    "sync_toggle": ("toggles_sync",),
    "scaler": (
        "uses_scaler",
        "tests_use_scaler",
        "scaler_modules",
        "scales_module",
        "fp16_gate",
        "call_fp16_gate",
        "option_choices",
        "option_excludes",
    ),
    "rank0_logging": (
        "logs_rank0",
        "rank0_objects",
        "rank0_predicates",
        "distributed_predicates",
        "silences_other_ranks",
        "logging_silencers",
        "silences_logging",
        "print_silencers",
        "silences_print",
        "logged_params",
        "call_logged_args",
        "rank0_decorator",
        "decorators",
        "logs",
        "rank0_callees",
        "rank0_called",
        "rank0_returns",
        "rank0_handed",
        "call_rank0_positions",
        "rank0_attributes",
    ),
    "loss_flow": (
        "returns_loss",
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
    "epochs": ("epoch_params", "reiterates_argument"),
}
_CONFLICT = object()  # a configuration key given different defaults
LOCAL_KEY = "\0module"  # entry of an import table naming the file's own module
ROUNDS = 12  # propagation stops earlier when nothing changes; model builders nest 5-6 calls deep
# ``obj.method(...)`` with an unknown ``obj`` is matched by method name only when few classes of the
# project define that name (``prepare_distributed``), never for common names (``__init__``, ``setup``
# defined by dozens of classes).
MAX_SAME_NAME_METHODS = 4
MAX_FILE_BYTES = 2_000_000
CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "collections.defaultdict"})
SCOPES_UP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)  # a guard is searched up to its function
FP16_NAMES = frozenset({"torch.float16", "torch.half"})  # generated giants are not summarised


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
    toggles_sync: bool = False
    builds_batchnorm: bool = False
    converts_syncbn: bool = False
    # Project classes/functions it builds only when a parameter that defaults to off says so
    # (TabPFN ``self.input_ln = SeqBN(ninp) if input_normalization else None``, default False):
    # their BatchNorm is not in what it builds on the default path.
    bn_optional: set[str] = field(default_factory=set)
    logs_rank0: bool = False
    callees: set[str] = field(default_factory=set)  # resolved project qualnames it calls/instantiates
    returned_callees: set[str] = field(default_factory=set)  # project qualnames whose result it returns
    # Project names it merely references (``norm=Conv``, ``if m in {Conv, C3}``), and ``module.*`` for
    # modules it reaches through ``from m import *`` + ``eval`` (YOLO's parse_model): BatchNorm only.
    refs: set[str] = field(default_factory=set)
    # Parameters (by name and position, ``self`` not counted) whose value is iterated by a loop that
    # runs backward — directly or after ``self.x = param`` in a method of the class.
    trains_on_params: set[str | int] = field(default_factory=set)
    # Its own body reads both a rank and a world size (``np.array_split(files, get_world_size())
    # [get_rank()]``): what it builds is split by rank (contriever's ``load_dataset``).
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
    # How it steps an optimizer (lint/loops.py ``guarded_in``): "guarded" only under an
    # accumulation guard (CosyVoice ``update_parameter_and_lr`` stepping when ``(batch_idx + 1) %
    # accum_grad == 0``), "always" otherwise; None: it steps none.
    steps: str | None = None
    # Parameters (name and position; a method's ``self`` not counted) it iterates again on every
    # pass of an outer loop, or hands to a call inside one, in a module that never calls
    # ``set_epoch`` (neuralop ``Trainer.train(train_loader, ...)``: ``for epoch in ...:
    # self.train_one_epoch(epoch, train_loader, ...)``).
    epoch_params: set[str | int] = field(default_factory=set)
    # Its parameters that its log calls write (VAR ``TensorboardLogger.update(**kwargs)`` →
    # ``add_scalar``; ``**kwargs`` as ``"**kwargs"``): a call of it logs those arguments.
    logged_params: tuple[str, ...] = ()
    params: tuple[str, ...] = ()  # positional parameter names (no ``self``)
    # A class whose update method combines its argument across ranks (efficientvit ``AverageMeter``
    # whose ``update`` sums through ``sync_tensor``): its instances are synchronised meters.
    syncs_updates: bool = False
    # Its own DDP/FSDP wrap is of a model it was handed (``smart_DDP(model)``), not of one it built
    # itself (fast-autoaugment ``get_model(conf)`` builds the ResNet it wraps).
    wraps_param: bool = False
    wraps_built: bool = False  # one of its own wraps is of a model it built
    # It returns ``torch.float16`` (a dtype property or helper, OLMo ``autocast_precision``): the
    # condition it does so under (``self.precision == "amp_fp16"``), "" when always; None: never.
    fp16_gate: str | None = None
    # A decorator whose wrapper runs the decorated function only under a rank-0 test (BasicSR/mmcv
    # ``master_only``, nerfstudio ``check_main_thread``), and the project decorators a function has.
    rank0_decorator: bool = False
    decorators: tuple[str, ...] = ()
    logs: bool = False  # it has a log call of its own (print, logger.*, writer.add_scalar ...)


@dataclass
class _FileScan:
    """What :meth:`ProjectIndex._summarise` knows of one file before it summarises its defs."""

    module: str
    imports: dict[str, str]
    bn: bool  # the BatchNorm facts are wanted
    sync: bool  # the sync-toggle facts are wanted
    loss: bool  # the loss-flow facts are wanted
    star: list[str]  # project modules star-imported here
    uses_eval: bool  # the file calls ``eval(...)`` (a model built by name from a star import)
    bn_tables: set[str]
    module_names: set[str]
    class_tables: dict[str, set[str]]
    flow: LossFlow | None
    backward_defs: set[int]  # ids of the defs/classes holding a ``.backward``
    loop_facts: LoopFacts | None = None  # built on the first def that steps an optimizer


def _defs_of(
    module: str, tree: ast.Module
) -> tuple[
    list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]],
    list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]],
]:
    """Top-level defs and classes, then the methods of the classes (also returned alone)."""
    defs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]] = []
    methods: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.append((f"{module}.{node.name}", node))
        if isinstance(node, ast.ClassDef):
            methods += [
                (f"{module}.{node.name}.{b.name}", b)
                for b in node.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return defs + methods, methods


def _returned(body: list[ast.AST]) -> tuple[set[int], set[str]]:
    """Ids of the returned expressions and the dotted names returned (``return model``,
    ``return model, optimizer``, ``return a if c else b``, ``return get_model()()``)."""
    returned: set[int] = set()
    returned_names: set[str] = set()
    for n in body:
        if isinstance(n, ast.Return) and n.value is not None:
            parts = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) else [n.value]
            for part in parts:
                returned.add(id(part))
                inner = part
                while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Call):
                    inner = inner.func  # ``return get_model()()``: what the factory returned
                    returned.add(id(inner))
                if isinstance(part, ast.IfExp):
                    returned |= {id(part.body), id(part.orelse)}
                if (d := dotted(part)) is not None:
                    returned_names.add(d)
    return returned, returned_names


@dataclass
class ProjectIndex:
    root: Path
    facts: frozenset[str] = frozenset(FACTS)  # which of FACTS to compute (the selected rules')
    modules: dict[str, str] = field(default_factory=dict)  # module name -> file path
    summaries: dict[str, Summary] = field(default_factory=dict)
    methods: dict[str, list[Summary]] = field(default_factory=dict)  # method name -> every class's
    backward_objects: set[str] = field(default_factory=set)  # spellings bound to backward-running objects
    rank0_objects: set[str] = field(default_factory=set)  # spellings bound only on rank 0
    rank0_predicates: set[str] = field(default_factory=set)  # functions answering "am I rank 0?"
    distributed_predicates: set[str] = field(default_factory=set)  # "is this run distributed?" (dist_tests)
    silences_other_ranks: bool = False  # some file's logging setup keeps rank 0's records only
    logging_silencers: set[str] = field(default_factory=set)  # the modules whose setup does it
    # module -> line of its ``builtins.print = ...`` that drops output off rank 0 (MAE/DeiT
    # ``setup_for_distributed``, MoCo's ``print_pass``): it covers the code that module reaches
    print_silencers: dict[str, int] = field(default_factory=dict)
    files: int = 0
    wraps_ddp: bool = False  # some file wraps a model in DDP/FSDP
    wraps_plain_ddp: bool = False  # some file wraps a model in DistributedDataParallel itself
    uses_scaler: bool = False  # some file uses a GradScaler (or a scaling wrapper)
    tests_use_scaler: bool = False  # some test module does (it covers the test modules only)
    # The training modules that use one: a scaler covers the code its module imports and the code
    # that imports it, not a sibling entry script (LlamaGen's GradScaler in ``vq_train.py`` does not
    # scale ``train_c2i_fsdp.py``).
    scaler_modules: set[str] = field(default_factory=set)
    # module -> the project modules it imports (the shared module graph: who can reach whose code)
    module_imports: dict[str, set[str]] = field(default_factory=dict)
    _reach: dict[str, frozenset[str]] = field(default_factory=dict)
    # module -> the project modules it star-imports (``from models import *``: a bare name of the
    # file may be theirs)
    star_imports: dict[str, list[str]] = field(default_factory=dict)
    _root_package: str = ""  # "pkg." when the root directory is itself the package ``pkg``
    # Defaults of a yacs / ml_collections configuration written in Python (SlowFast
    # ``_C.BN.NORM_TYPE = "batchnorm"`` in ``config/defaults.py``): last attribute -> literal; a
    # setting given different values by different assignments is left out (None marks it).
    config_defaults: dict[str, object] = field(default_factory=dict)
    toggles_sync: bool = False  # some file controls DDP gradient sync
    # argparse ``choices`` of the project's options (dest -> literal choices; None when two files
    # define the option with different choices)
    option_choices: dict[str, frozenset[str] | None] = field(default_factory=dict)
    _module_alias: dict[str, str] = field(default_factory=dict)
    name_alias: dict[str, str] = field(default_factory=dict)  # ``Model = DetectionModel`` at module level
    # A module's imports of outside names, as its attributes (DLRM ``extend_distributed`` imports
    # ``DistributedDataParallel as DDP``; ``ext_dist.DDP(...)`` in another file is that class).
    reexports: dict[str, str] = field(default_factory=dict)
    _star_sources: dict[str, list[str]] = field(default_factory=dict)  # package -> modules it star-imports
    # Model registries: registry qualname -> classes registered with ``@REGISTRY.register()``
    # (fvcore/detectron2/mmcv style; SlowFast ``MODEL_REGISTRY.get(name)(cfg)``).
    registries: dict[str, set[str]] = field(default_factory=dict)
    # (class qualname, names bound, module binding them)
    _pending: list[tuple[str, set[str], str]] = field(default_factory=list)
    # spelling -> what calls bound to it construct (a project qualname, or "" for anything else)
    _call_bound: dict[str, set[str]] = field(default_factory=dict)
    # Spellings bound, wherever the project binds them to a call, only to instances of meter classes
    # whose update reduces across ranks (jukebox ``metrics = Metrics()``, handed to ``train(...)``).
    synced_meter_names: set[str] = field(default_factory=set)
    # Project functions and methods whose result some caller backprops (ViLT ``objectives.compute_mlm``
    # merged into what ``forward`` returns to ``training_step``; LlamaGen ``vq_loss(...)``, an instance
    # of ``VQLoss``: its ``forward``), and spellings of instances called for such a result.
    backprop_targets: set[str] = field(default_factory=set)
    _backprop_spellings: set[str] = field(default_factory=set)
    # ``(qualname, position)``: a Lightning module passes itself there (``compute_mlm(self, batch)``),
    # so ``pl_module.log(...)`` inside is Lightning's ``self.log``.
    lightning_args: set[tuple[str, int]] = field(default_factory=set)
    # Files that may hold a loss flow (a word with ``loss`` or ``backward``): read again, lazily and
    # once, with the finished index, for the project functions they hand the loss to (``_handed``:
    # qualname -> argument positions and keyword names; wenet ``log_per_step(writer, info_dict)``).
    _flow_paths: list[str] = field(default_factory=list)
    _handed: dict[str, set[int | str]] | None = None
    _handing: bool = False
    # Call sites by callee (a project qualname, or ``.name`` for ``obj.name(...)``): under a rank-0
    # test or not. A function every call of which is under one runs on rank 0 only (stylegan2
    # ``if is_main and model.steps % 50 == 0: model.print_log()``).
    _guarded_calls: dict[str, bool] = field(default_factory=dict)  # callee -> every site so far guarded
    # lint/rank0_handoff.py: positions of the tuple a function returns that hold a rank-0 test
    # (``return device, is_logger``), and per callee the arguments every call so far binds to a
    # rank-0 test, each with the returned positions it relies on (``is_logger`` from ``setup``)
    rank0_returns: dict[str, set[int]] = field(default_factory=dict)
    _rank0_args: dict[str, dict[str | int, frozenset[tuple[str, int]]]] = field(default_factory=dict)
    # What every call of project code hands each argument (lint/handed_models.py): a model built
    # in one file and wrapped in DDP by the function of another file it is handed to (TransReID).
    handed_models: Handed = field(default_factory=dict)
    # classes whose every construction hands a rank-0 test to these parameters (names or positions)
    rank0_handed: dict[str, set[str | int]] = field(default_factory=dict)
    rank0_callees: set[str] = field(default_factory=set)
    _wrapper_names: tuple[str, ...] | None = None
    _bn_modules: set[str] | None = None
    _local_names: set[str] = field(default_factory=set)  # top-level defs of the file being summarised
    _loss_names: tuple[str, ...] | None = None
    _compile_names: tuple[str, ...] | None = None

    # --- building ------------------------------------------------------------------------------

    @classmethod
    def build(cls, root: Path, files: list[Path], facts: frozenset[str] | None = None) -> ProjectIndex:
        """The index of ``files`` under ``root``; ``facts``: which of :data:`FACTS` to compute (None: all)."""
        root = root.resolve()
        unknown = set(facts or ()) - set(FACTS)
        if unknown:
            raise ValueError(f"unknown project fact(s): {', '.join(sorted(unknown))}")
        index = cls(root=root, facts=frozenset(FACTS) if facts is None else facts)
        if (root / "__init__.py").is_file() and root.name.isidentifier():
            index._root_package = root.name + "."
        # Module names first (no parsing), so imports resolve; then one file at a time: read, parse,
        # summarise, drop the tree (a large library never holds more than one parsed file).
        paths: list[tuple[str, Path]] = []
        for path in (f.resolve() for f in files):
            if path.suffix != ".py":
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
            except OSError:
                continue
            module = module_name(root, path)
            index.modules[module] = str(path)
            paths.append((module, path))
        index.files = len(index.modules)
        index._register_aliases()
        for module, path in paths:  # package re-exports before any summary resolves through them
            if path.name == "__init__.py" and (ctx := _parse(path)) is not None:
                index._register_reexports(module, ctx)
        for module, path in paths:
            ctx = _parse(path, FACT_WORDS)
            if ctx is None:
                continue
            try:
                index._summarise(module, ctx)
            except RecursionError:
                continue
        index._propagate()
        return index

    def _register_aliases(self) -> None:
        counts: dict[str, int] = {}
        full: dict[str, str] = {}
        for module in self.modules:
            parts = module.split(".")
            for i in range(1, len(parts)):
                suffix = ".".join(parts[i:])
                counts[suffix] = counts.get(suffix, 0) + 1
                full[suffix] = module
        self._module_alias = {s: full[s] for s, n in counts.items() if n == 1 and s not in self.modules}

    def _register_reexports(self, module: str, ctx: FileContext) -> None:
        """``from .yolox import YOLOX`` in ``yolox/models/__init__.py``: ``yolox.models.YOLOX`` names
        ``yolox.models.yolox.YOLOX`` (callers import the package, summaries live in the module)."""
        imports = absolute_imports(ctx, module + ".__init__")
        for node in ctx.tree.body:
            if not isinstance(node, ast.ImportFrom):
                continue
            if any(alias.name == "*" for alias in node.names):
                # ``from .metric import *`` in ``apps/utils/__init__.py``: ``apps.utils.X`` may be ``X`` of
                # ``apps.utils.metric`` (looked up when a name is not found, ``_get``)
                source = self.resolve_module(_absolute_module(node, module + ".__init__") or "")
                if source is not None and source != module:
                    self._star_sources.setdefault(module, []).append(source)
            for alias in node.names:
                name = alias.asname or alias.name
                full = imports.get(name)
                if alias.name == "*" or full is None:
                    continue
                mod, _, attr = full.rpartition(".")
                resolved = self.resolve_module(mod) if mod else None
                if resolved is not None and f"{resolved}.{attr}" != f"{module}.{name}":
                    self.name_alias.setdefault(f"{module}.{name}", f"{resolved}.{attr}")

    def _project_module_of(self, qualname: str) -> str | None:
        mod = qualname
        while mod:
            if self.resolve_module(mod) is not None:
                return mod
            mod = mod.rpartition(".")[0]
        return None

    def reexport(self, qualname: str) -> str | None:
        """The outside name a project module's attribute stands for (``extend_distributed.DDP`` →
        ``torch.nn.parallel.DistributedDataParallel``), or None."""
        mod, _, name = qualname.rpartition(".")
        resolved = self.resolve_module(mod) if mod else None
        return self.reexports.get(f"{resolved}.{name}") if resolved is not None else None

    def resolve_module(self, name: str) -> str | None:
        if name in self.modules:
            return name
        found = self._module_alias.get(name)
        if found is None and self._root_package and name.startswith(self._root_package):
            # linting a package's own directory (``pointcept/``) whose files import it by its full
            # name (``from pointcept.models.builder import MODELS``): the module is ``models.builder``
            inner = name[len(self._root_package) :]
            found = inner if inner in self.modules else self._module_alias.get(inner)
        return found

    def _summarise(self, module: str, ctx: FileContext) -> None:
        """One pass per file: the file's own facts first (imports, star imports, eval, the defs that
        hold a ``.backward``), then one summary per top-level def, class and method, each walked once."""
        imports = self._file_imports(module, ctx)
        self._file_flags(module, ctx)
        defs, methods = _defs_of(module, ctx.tree)
        self._name_aliases(module, ctx, imports)
        scan = self._file_scan(module, ctx, imports)
        if scan.flow is not None:
            self._flow_calls(ctx, scan.flow, imports)
        if scan.loss and any("loss" in w or "backward" in w for w in ctx.words):
            self._flow_paths.append(ctx.path)
        for qual, node in defs:
            is_method = (qual, node) in methods
            self.summaries[qual] = self._summary(ctx, scan, qual, node, is_method)
            if is_method:
                self.methods.setdefault(qual.rsplit(".", 1)[-1], []).append(self.summaries[qual])
        self._bindings(ctx, imports, module)

    def _flow_calls(self, ctx: FileContext, flow: LossFlow, imports: dict[str, str]) -> None:
        """Calls of project code in other files that the file's loss flow reaches: results it
        backprops (``backprop_targets``), and a Lightning module handing itself over (``lightning_args``)."""
        for call in flow.project_backprop_calls:
            target = self._project_target(imports, call.func)
            if target:
                self.backprop_targets.add(target)
            elif isinstance(call.func, ast.Name):
                self._backprop_spellings.add(call.func.id)  # an instance: ``vq_loss(...)``
        for step in flow.lightning.values():
            owner = ctx.parents.get(step)
            if not isinstance(owner, ast.ClassDef):
                continue
            for n in ast.walk(owner):
                if not isinstance(n, ast.Call) or ctx.helper(n) is not None:
                    continue
                target = self._project_target(imports, n.func)
                for i, a in enumerate(n.args):
                    if target and isinstance(a, ast.Name) and a.id == "self":
                        self.lightning_args.add((target, i))

    def _file_imports(self, module: str, ctx: FileContext) -> dict[str, str]:
        """The file's absolute imports (with :data:`LOCAL_KEY` its own module); records its
        re-exports of names from outside the project and the names it defines at top level."""
        imports = absolute_imports(ctx, module)
        for name in _module_level_imports(ctx.tree):
            target = imports.get(name)
            if target is not None and self._project_module_of(target) is None:
                self.reexports[f"{module}.{name}"] = target
        imported = {
            resolved
            for target in imports.values()
            if (mod := self._project_module_of(target)) is not None
            and (resolved := self.resolve_module(mod)) is not None
        }
        starred = [
            resolved
            for node in ctx.of_type(ast.ImportFrom)
            if any(a.name == "*" for a in node.names)
            and (resolved := self.resolve_module(_absolute_module(node, module) or "")) is not None
            and resolved != module
        ]
        if starred:
            self.star_imports[module] = starred
        self.module_imports[module] = (imported | set(starred)) - {module}
        imports[LOCAL_KEY] = module
        self._local_names = {
            n.name
            for n in ctx.tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        return imports

    def _file_flags(self, module: str, ctx: FileContext) -> None:
        """Project-wide flags any file can raise: DDP wraps, GradScalers, sync toggles; the file's
        configuration defaults (module-level ``_C.SECTION.KEY = literal``)."""
        if not _test_module(module):
            for node in ctx.tree.body:
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                    continue
                target = dotted(node.targets[0])
                if target is None or target.count(".") < 2 or not isinstance(node.value, ast.Constant):
                    continue  # ``_C.BN.NORM_TYPE``: a section of a config object, not ``self.x``
                key = target.rsplit(".", 1)[-1]
                value = node.value.value
                known = self.config_defaults.get(key, value)
                self.config_defaults[key] = (
                    value if known == value and type(known) is type(value) else _CONFLICT
                )
        self.wraps_ddp |= any(ctx.call_qualname(c) in DATA_PARALLEL for c in ctx.of_type(ast.Call))
        self.wraps_plain_ddp |= any(ctx.call_qualname(c) == DDP for c in ctx.of_type(ast.Call))
        if "scaler" in self.facts:
            # a test's GradScaler scales the tests' losses, not the trainer's (OLMo tests/model_test.py)
            scaler = any("GradScaler" in w for w in ctx.words) or any(
                (m := method(c)) is not None and m[1] == "backward" and _scaled(c)
                for c in ctx.of_type(ast.Call)
            )  # a GradScaler named, or a backward of ``scaler.scale(loss)`` (the scaler built elsewhere)
            for dest, choices in argparse_choices(ctx).items():
                known = self.option_choices.get(dest, choices)
                self.option_choices[dest] = choices if known == choices else None
            if _test_module(module):
                self.tests_use_scaler |= scaler
            else:
                self.uses_scaler |= scaler
                if scaler:
                    self.scaler_modules.add(module)
        if "sync_toggle" in self.facts:
            self.toggles_sync |= any(SYNC_CONTROL.match(w) for w in ctx.words)

    def _name_aliases(self, module: str, ctx: FileContext, imports: dict[str, str]) -> None:
        """Module-level ``alias = name`` / ``alias = pkg.name`` of a project object."""
        for node in ctx.tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, (ast.Name, ast.Attribute))
            ):
                local = dotted(node.value)
                target = f"{module}.{local}" if local and "." not in local and local not in imports else None
                target = target or self._project_target(imports, node.value)
                if target:
                    self.name_alias[f"{module}.{node.targets[0].id}"] = target

    def _file_scan(self, module: str, ctx: FileContext, imports: dict[str, str]) -> _FileScan:
        bn, loss = "batchnorm" in self.facts, "loss_flow" in self.facts
        module_names = _module_level_names(ctx.tree)
        class_tables: dict[str, set[str]] = {}
        if bn:
            class_tables = self._class_tables(ctx, imports, module)
            self._register_decorated(ctx, imports, module, module_names)
        backward_defs: set[int] = set()  # top-level defs/classes (and methods) holding a `.backward`
        for attr in ctx.of_type(ast.Attribute):
            if attr.attr == "backward":
                cur = ctx.parents.get(attr)
                while cur is not None:
                    if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        backward_defs.add(id(cur))
                    cur = ctx.parents.get(cur)
        return _FileScan(
            module=module,
            imports=imports,
            bn=bn,
            sync="sync_toggle" in self.facts,
            loss=loss,
            star=[
                resolved
                for node in ctx.of_type(ast.ImportFrom)
                if any(a.name == "*" for a in node.names)
                and (resolved := self.resolve_module(_absolute_module(node, module) or "")) is not None
            ],
            uses_eval=any(
                isinstance(c.func, ast.Name) and c.func.id == "eval" for c in ctx.of_type(ast.Call)
            ),
            bn_tables=batchnorm_tables(ctx) if bn else set(),
            module_names=module_names,
            class_tables=class_tables,
            flow=LossFlow(ctx, LoopFacts(ctx))
            if loss and (ctx.mentions("backward", "training_step") or "training_step" in ctx.functions)
            else None,
            backward_defs=backward_defs,
        )

    def _summary(
        self,
        ctx: FileContext,
        scan: _FileScan,
        qual: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        is_method: bool,
    ) -> Summary:
        s = Summary(qual, scan.module, ctx.path, node.lineno)
        body = list(ast.walk(node)) if isinstance(node, ast.ClassDef) else ctx.local(node)
        returned, returned_names = _returned(body)
        ddp_names = self._scan_body(ctx, scan, s, node, body, returned, returned_names)
        if ddp_names & returned_names:
            s.returns_ddp = True
        if scan.bn and scan.uses_eval:
            s.refs |= {f"{m}.*" for m in scan.star}
        # only code that runs backward can train on a parameter
        if "training_params" in self.facts and id(node) in scan.backward_defs:
            s.trains_on_params = _trains_on_params(ctx, node)
        if "training_params" in self.facts and not isinstance(node, ast.ClassDef):
            s.reads_rank_and_world = _reads_rank_and_world(body)
        if isinstance(node, ast.ClassDef):
            if scan.bn:  # a subclass has what its project bases build
                s.refs |= {t for b in node.bases if (t := self._project_target(scan.imports, b))}
            s.returns_ddp = False  # calling a class builds an instance of it, never a DDP wrap
            if scan.loss:
                s.syncs_updates = _syncs_updates(ctx, node)
            call = next(
                (b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__call__"), None
            )
            # Only __call__ running backward makes instances "backward objects".
            s.calls_backward = call is not None and any(backward_of(x) for x in walk_local(call))
        else:
            self._function_facts(ctx, scan, s, node, body, is_method)
        return s

    def _function_facts(
        self,
        ctx: FileContext,
        scan: _FileScan,
        s: Summary,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        body: list[ast.AST],
        is_method: bool,
    ) -> None:
        """The facts of a function or method that only the rules declaring them need."""
        if "scaler" in self.facts:
            s.fp16_gate = _fp16_return(ctx, node)
        if "rank0_logging" in self.facts:
            s.logs_rank0 = _logs_rank0_only(ctx, node)
            s.logged_params, s.params = parameters_logged(ctx, node)
            s.rank0_decorator = _rank0_decorator(ctx, node)
            s.logs = _has_log_call(ctx, node)
            s.decorators = self._decorators(node, scan.module, scan.imports)
        if scan.loss:
            s.returns_loss = scan.flow.returns.get(id(node)) if scan.flow is not None else None
            s.param_call_return = param_call_return(node, body)
        if "compile" in self.facts:
            s.compiles_param = _compiles_param(ctx, node, method=is_method)
        if "epochs" in self.facts and "set_epoch" not in ctx.words:
            s.epoch_params = _epoch_params(ctx, node, is_method)
        # shared: what it returns of values combined across ranks (provenance.reducing_call)
        s.returns_reduced, returned = returned_reductions(ctx, node)
        s.reduce_callees = {t for c in returned if (t := self._project_target(scan.imports, c.func))}
        # shared: the loop model (lint/loops.py) takes a call of it as a backward of its argument
        if s.calls_backward:
            s.backward_param = param_backward(node, body)
        # shared: ... and a call of it as an optimizer step, guarded or not
        if any(isinstance(n, ast.Attribute) and n.attr == "step" for n in body):
            if scan.loop_facts is None:
                scan.loop_facts = LoopFacts(ctx)
            guarded = guarded_in(scan.loop_facts, node.body)
            s.steps = "guarded" if type(guarded) is int else "always" if guarded is False else None

    def _scan_body(
        self,
        ctx: FileContext,
        scan: _FileScan,
        s: Summary,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        body: list[ast.AST],
        returned: set[int],
        returned_names: set[str],
    ) -> set[str]:
        """Walk a def's nodes once: backward calls, sync toggles, BatchNorm built or converted,
        DDP/FSDP wraps (returns the names a wrap is assigned to), registry lookups, project callees."""
        bn, imports = scan.bn, scan.imports
        ddp_names: set[str] = set()
        required: set[str] = set()  # project targets built unconditionally somewhere in it
        for n in body:
            if (
                bn
                and isinstance(n, (ast.Name, ast.Attribute))
                and names_syncbn(n)
                and builds_from_reference(ctx, n)
            ):
                # builds SyncBatchNorm itself (``nn.SyncBatchNorm if sbn else nn.BatchNorm2d``, a
                # project subclass ``SparseSyncBatchNorm2d``): a conversion chosen where it is built
                s.converts_syncbn = True
            if isinstance(n, ast.Call):
                q = ctx.call_qualname(n) or ""
                if backward_of(n):
                    s.calls_backward = True
                m = method(n)
                if scan.sync and m and SYNC_CONTROL.match(m[1]):
                    s.toggles_sync = True
                if bn and (BATCHNORM.match(q) or TORCHVISION_BN.match(q)):
                    s.builds_batchnorm = True
                if bn and ("convert_sync_batchnorm" in q or (m and m[1] == "convert_sync_batchnorm")):
                    s.converts_syncbn = True
                if q in DATA_PARALLEL:
                    s.fsdp_only = (q != DDP) and (s.fsdp_only or not s.wraps_ddp)
                    s.wraps_ddp = True
                    handed = _wraps_parameter(ctx, node, n)
                    s.wraps_param |= handed
                    s.wraps_built |= not handed
                    if id(n) in returned:
                        s.returns_ddp = True
                    parent = ctx.parents.get(n)
                    if isinstance(parent, ast.Assign):
                        ddp_names |= {d for t in parent.targets if (d := dotted(t))}
                if bn and m and m[1] in ("get", "build") and m[0]:
                    registry = self._registry_name(imports, scan.module, scan.module_names, m[0])
                    if registry is not None:
                        s.refs.add(f"registry:{registry}")  # MODEL_REGISTRY.get(name)(cfg)
                target = self._project_target(imports, n.func)
                if target:
                    s.callees.add(target)
                    if bn:
                        (s.bn_optional if off_by_default(ctx, n) else required).add(target)
                    parent = ctx.parents.get(n)
                    if id(n) in returned or (  # model = build(...); ...; return model
                        isinstance(parent, (ast.Assign, ast.AnnAssign))
                        and parent.value is n
                        and {dotted(t) for t in _targets(parent)} & returned_names
                    ):
                        s.returned_callees.add(target)
            elif isinstance(n, ast.Attribute):
                if scan.sync and n.attr in ("require_backward_grad_sync",):
                    s.toggles_sync = True
                q = ctx.qualname(n) or ""
                if bn and BATCHNORM.match(q) and builds_from_reference(ctx, n):  # norm_layer=nn.BatchNorm2d
                    s.builds_batchnorm = True
            elif (
                isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name)
                and n.value.id in scan.bn_tables
            ):
                s.builds_batchnorm = True  # norm_cls = REGISTERED_NORM_DICT[name]; norm_cls(**args)
            elif (
                isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name)
                and n.value.id in scan.class_tables
            ):
                s.refs |= scan.class_tables[n.value.id]  # pycls ``_models[cfg.MODEL.TYPE]``
            elif isinstance(n, ast.Name) and bn and n.id in imports:
                target = self._project_target(imports, n)
                if target and not off_by_default(ctx, n):
                    s.refs.add(target)
        s.bn_optional -= required
        s.refs -= s.bn_optional
        return ddp_names

    def _bindings(self, ctx: FileContext, imports: dict[str, str], module: str) -> None:
        """Project-wide spellings: backward-running objects, rank-0-only objects, meters."""
        from ddp_doctor.lint.dist_tests import distributed_predicates
        from ddp_doctor.lint.rank0 import (
            is_builtin_print,
            is_rank0_test,
            rank0_predicates,
            silenced_stdout,
            silences_other_ranks,
        )

        rank0 = "rank0_logging" in self.facts
        loss = "loss_flow" in self.facts
        if "batchnorm" in self.facts:
            record_handed(
                ctx,
                lambda f: self._project_target(imports, f),
                lambda q: bool(BATCHNORM.match(q) or TORCHVISION_BN.match(q)),
                self.handed_models,
            )
        predicates = (
            rank0_predicates(ctx.tree, [f for defs in ctx.functions.values() for f in defs])
            if rank0
            else set()
        )
        self.rank0_predicates |= predicates
        if rank0:
            self.distributed_predicates |= distributed_predicates(
                f for defs in ctx.functions.values() for f in defs
            )
        if rank0 and silences_other_ranks(ctx.tree, predicates, ctx.parents):
            self.silences_other_ranks = True
            self.logging_silencers.add(module)
        if (
            rank0
            and "print" in ctx.words
            and (silencer := silenced_stdout(ctx.of_type(ast.Assign), ctx.parents, predicates))
            and any(is_builtin_print(t) for t in silencer.targets)
        ):
            self.print_silencers[module] = silencer.lineno

        if rank0:
            from ddp_doctor.lint.rank0_handoff import returned_rank0_positions

            ranked = any("rank" in w.lower() for w in ctx.words)  # no rank, no rank-0 test to return
            for fn in ctx.tree.body if ranked else ():  # ``def setup(config): ... return device, is_logger``
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    positions = returned_rank0_positions(fn, predicates, ctx.parents)
                    if positions:
                        self.rank0_returns[f"{module}.{fn.name}"] = positions
            self._call_sites(ctx, imports, predicates)
        for node in ctx.of_type(ast.Assign):
            names = {d for t in node.targets if (d := dotted(t))}
            value = node.value
            while (  # ``VQLoss(...).to(device)``: the instance the constructor built
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in MOVES
                and isinstance(value.func.value, ast.Call)
            ):
                value = value.func.value
            if isinstance(value, ast.Call):
                target = self._project_target(imports, value.func)
                if target:
                    self._pending.append((target, names, module))
                local = dotted(value.func) or ""
                if loss and local not in CONTAINERS:  # ``dict()`` is a literal, like ``{}``
                    if not target and local in self._local_names:
                        target = f"{module}.{local}"  # a class of this same file
                    for n in names:
                        self._call_bound.setdefault(n.split(".")[-1], set()).add(target or "")
            if not rank0:
                continue
            if (
                isinstance(value, ast.IfExp)
                and _is_none(value.orelse)
                and is_rank0_test(value.test, predicates)
                and is_log_sink(value.body)
            ):
                self.rank0_objects |= {n.split(".")[-1] for n in names}
            elif is_log_sink(value):
                guard = _rank0_if(ctx, node)
                if guard is not None:
                    self.rank0_objects |= {n.split(".")[-1] for n in names}

    def _call_sites(self, ctx: FileContext, imports: dict[str, str], predicates: set[str]) -> None:
        """Record, for every call of project code (or ``obj.name(...)``), whether it sits under a
        rank-0 test."""
        from ddp_doctor.lint.rank0 import enclosing_rank0_if, is_not_rank0_test, is_rank0_test

        # a file without any rank test guards no call (most library files): no parent walks
        guarded_file = any(
            is_rank0_test(n.test, predicates) or is_not_rank0_test(n.test, predicates)
            for n in ctx.of_type(ast.If)
        )
        scopes: dict[int, tuple[set[str], dict[str, tuple[str, int]]]] = {}
        for call in ctx.of_type(ast.Call):
            func = call.func
            if isinstance(func, ast.Attribute):
                key = None if func.attr.startswith("__") else f".{func.attr}"
            else:
                key = self._project_target(imports, func)
            if key is None:
                continue
            guarded = (
                guarded_file and enclosing_rank0_if(ctx.parents, call, SCOPES_UP, predicates) is not None
            )
            self._guarded_calls[key] = self._guarded_calls.get(key, True) and guarded
            if not key.startswith("."):
                self._record_rank0_args(ctx, imports, predicates, key, call, scopes)

    def _record_rank0_args(
        self,
        ctx: FileContext,
        imports: dict[str, str],
        predicates: set[str],
        key: str,
        call: ast.Call,
        scopes: dict[int, tuple[set[str], dict[str, tuple[str, int]]]],
    ) -> None:
        """Keep, for ``key``, the arguments that every call so far binds to a rank-0 test (a test
        where the call is made, or a name unpacked from a position a project function returns one in;
        those positions are checked when the index is complete)."""
        from ddp_doctor.lint.rank0 import rank0_locals
        from ddp_doctor.lint.rank0_handoff import rank0_arguments

        found: dict[str | int, frozenset[tuple[str, int]]] = {}
        if call.args or call.keywords:
            fn = ctx.enclosing_function(call)
            if id(fn) not in scopes:
                nodes = ctx.local(fn)
                unpacked = _unpacked_targets(self, nodes, imports)
                scopes[id(fn)] = (rank0_locals(fn, nodes, predicates, ctx.parents), unpacked)
            flags, unpacked = scopes[id(fn)]
            sure = rank0_arguments(call, predicates | flags)
            hoped = rank0_arguments(call, predicates | flags | set(unpacked))
            for arg in hoped:
                expr = (
                    call.args[arg]
                    if isinstance(arg, int)
                    else next(k.value for k in call.keywords if k.arg == arg)
                )
                deps = frozenset(
                    unpacked[n.id] for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id in unpacked
                )
                found[arg] = frozenset() if arg in sure else deps
        before = self._rank0_args.get(key)
        if before is None:
            self._rank0_args[key] = found
        else:
            self._rank0_args[key] = {a: before[a] | d for a, d in found.items() if a in before}

    def _project_target(self, imports: dict[str, str], func: ast.AST) -> str | None:
        text = dotted(func)
        if text is None:
            return None
        local = imports.get(LOCAL_KEY)
        if local is not None and "." not in text and text not in imports and text in self._local_names:
            return f"{local}.{text}"  # a top-level function/class of the same module
        head, _, rest = text.partition(".")
        full = imports.get(head)
        if full is None:
            return None
        full = full + ("." + rest if rest else "")
        mod, _, name = full.rpartition(".")
        while mod:
            resolved = self.resolve_module(mod)
            if resolved is not None:
                return f"{resolved}.{name}"
            mod, _, last = mod.rpartition(".")
            name = f"{last}.{name}"
        return None

    def _registry_builds_batchnorm(self, registry: str) -> bool:
        """Most classes registered with ``registry`` build BatchNorm (SlowFast's video models; a
        registry of mostly LayerNorm transformers does not count)."""
        found = [s for q in self.registries.get(registry, ()) if (s := self._get(q)) is not None]
        return bool(found) and 2 * sum(s.builds_batchnorm for s in found) > len(found)

    def _registry_name(
        self, imports: dict[str, str], module: str, module_names: set[str], text: str
    ) -> str | None:
        """The qualname of a registry object spelled ``text`` in ``module`` (imported or its own)."""
        if "." in text:
            return None
        if text in imports:
            target = self._project_target(imports, ast.Name(id=text))
            return target
        return f"{module}.{text}" if text in module_names else None

    def _register_decorated(
        self, ctx: FileContext, imports: dict[str, str], module: str, module_names: set[str]
    ) -> None:
        """Classes and builder functions of the file decorated ``@REGISTRY.register()`` /
        ``@REGISTRY.register_module()`` (ResNeSt registers ``def resnest50(...)``)."""
        for node in ctx.tree.body:
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                continue
            for dec in node.decorator_list:
                func = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(func, ast.Attribute) and func.attr in ("register", "register_module"):
                    text = dotted(func.value)
                    registry = self._registry_name(imports, module, module_names, text) if text else None
                    if registry is not None:
                        self.registries.setdefault(registry, set()).add(f"{module}.{node.name}")

    def _class_tables(self, ctx: FileContext, imports: dict[str, str], module: str) -> dict[str, set[str]]:
        """Module-level tables of project classes (pycls ``_models = {"resnet": ResNet, ...}``)."""
        out: dict[str, set[str]] = {}
        for node in ctx.tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            value = getattr(node, "value", None)
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
                continue
            found = {t for v in value.values if (t := self._project_target(imports, v))}
            if found:
                out[target.id] = found
        return out

    def _propagate(self) -> None:
        sums = self.summaries
        for _ in range(ROUNDS):
            changed = False
            bn_modules = {q.rsplit(".", 1)[0] for q, x in sums.items() if x.builds_batchnorm}
            for s in sums.values():
                if not s.builds_batchnorm and any(
                    (r.endswith(".*") and r[:-2] in bn_modules)
                    or ((ref := self._get(r)) is not None and ref.builds_batchnorm)
                    or (r.startswith("registry:") and self._registry_builds_batchnorm(r[9:]))
                    for r in s.refs
                ):
                    s.builds_batchnorm = changed = True
                for callee in s.callees:
                    c = self._get(callee)
                    if c is None:
                        continue
                    before = _propagated_flags(s)
                    if not _is_class_summary(c):
                        s.calls_backward |= c.calls_backward
                        s.returns_reduced |= callee in s.reduce_callees and c.returns_reduced
                        s.toggles_sync |= c.toggles_sync
                    # a function builds what it constructs and what it returns, not what a helper
                    # it calls does to its argument (KAIR ``merge_bn(self.netG)``, transformers'
                    # trainer helpers); a class holds everything its methods build
                    if (
                        _is_class_summary(s) or _is_class_summary(c) or callee in s.returned_callees
                    ) and callee not in s.bn_optional:
                        s.builds_batchnorm |= c.builds_batchnorm
                        s.converts_syncbn |= c.converts_syncbn
                    if callee in s.returned_callees:
                        s.returns_ddp |= c.returns_ddp
                        if not _is_class_summary(c) and c.returns_loss is not None and s.returns_loss is None:
                            s.returns_loss, changed = c.returns_loss, True
                    changed |= before != _propagated_flags(s)
            if not changed:
                break
        for target, names, module in self._pending:
            pending = sums.get(target)
            if pending is not None and _is_class_summary(pending) and pending.calls_backward:
                self.backward_objects |= {n.split(".")[-1] for n in names}
                if "scaler" in self.facts and not _test_module(module):
                    self.scaler_modules.add(module)  # a loss-scaling object (timm NativeScaler)
        self._pending = []
        for s in sums.values():  # ``@master_only def log_info(msg): logger.info(msg)``: rank 0 only
            if s.logs and any((d := self._get(q)) is not None and d.rank0_decorator for q in s.decorators):
                s.logs_rank0 = True
        for spelling, built in self._call_bound.items():
            classes: list[Summary | None] = []
            for b in built:
                f = sums.get(b)
                if f is not None and not _is_class_summary(f):  # ``metrics = init_logging()``
                    classes += [sums.get(r) for r in f.returned_callees] or [None]
                else:
                    classes.append(f)
            if all(f is not None and _is_class_summary(f) and f.syncs_updates for f in classes):
                self.synced_meter_names.add(spelling)
        for qual, s in sums.items():  # functions and methods the project calls on rank 0 only
            if _is_class_summary(s) or not s.logs:
                continue
            name = qual.rsplit(".", 1)[-1]
            keys = [qual] if s.qualname.count(".") == s.module.count(".") + 1 else []
            if not keys:  # a method: ``obj.name(...)``, when no other project class defines ``name``
                if len(self.methods.get(name, [])) != 1 or name in GENERIC_METHODS:
                    continue
                keys = [qual, f".{name}"]
            sites = [self._guarded_calls[k] for k in keys if k in self._guarded_calls]
            if sites and all(sites):
                self.rank0_callees.add(qual)
        self._guarded_calls = {}
        self._finish_rank0_handoff()
        for spelling in self._backprop_spellings:  # ``vq_loss = VQLoss(...)``: its ``forward``
            constructed = {b for b in self._call_bound.get(spelling, ()) if b}
            found = [c for c in constructed if (c_s := sums.get(c)) is not None and _is_class_summary(c_s)]
            if len(found) == 1 and f"{found[0]}.forward" in sums:
                self.backprop_targets.add(f"{found[0]}.forward")
        self._backprop_spellings = set()
        self._call_bound = {}
        if "scaler" in self.facts:  # a loss-scaling object (timm NativeScaler) is a scaler
            self.uses_scaler |= bool(self.backward_objects)

    # --- queries ---------------------------------------------------------------------------------

    def summary_for(self, ctx: FileContext, func: ast.AST) -> Summary | None:
        """The summary of what ``func`` (a call's target) names, through the file's imports."""
        module = ctx.module
        if module is None:
            return None
        imports = ctx.absolute_imports
        text = dotted(func)
        if text is None:
            return None
        if "." not in text and text not in imports:  # a function of this same file
            return self._get(f"{module}.{text}") or self._star_imported(ctx, text)
        head, _, rest = text.partition(".")
        if head == "self" and "." not in rest:  # ``self.save_logs(...)``: the method of the caller's class
            fn = ctx.enclosing_function(func)
            owner = ctx.parents.get(fn)
            if isinstance(owner, ast.ClassDef) and ctx.parents.get(owner) is ctx.tree:
                return self._get(f"{module}.{owner.name}.{rest}")
            return None
        target = self._project_target(imports, func)
        if target is None and rest and head in ctx.import_choices:
            return self._one_choice(ctx.import_choices[head], head, func)
        return self._get(target) if target else None

    def _one_choice(self, choices: tuple[str, ...], head: str, func: ast.AST) -> Summary | None:
        """``alias.name`` where ``alias`` is imported from several modules in several branches: the
        summary of the one project module among them that defines ``name`` (FixMatch's
        ``models.build_wideresnet`` after ``import models.wideresnet as models`` in one branch and
        ``import models.resnext as models`` in the other); None when several or none do."""
        found = [
            s
            for choice in choices
            if (target := self._project_target({head: choice}, func)) is not None
            and (s := self._get(target)) is not None
        ]
        return found[0] if len(found) == 1 else None

    def _star_imported(self, ctx: FileContext, name: str) -> Summary | None:
        """``name`` from a project module the file star-imports (StyleTTS2 ``from utils import *``
        then ``log_print(...)``), when exactly one of them defines it."""
        module = ctx.module or ""
        found = [
            s
            for node in ctx.of_type(ast.ImportFrom)
            if any(a.name == "*" for a in node.names)
            and (m := self.resolve_module(_absolute_module(node, module) or "")) is not None
            and (s := self._get(f"{m}.{name}")) is not None
        ]
        return found[0] if len(found) == 1 else None

    def _get(self, qualname: str) -> Summary | None:
        for _ in range(4):  # follow ``A = B`` aliases a few hops
            found = self.summaries.get(qualname)
            if found is not None:
                return found
            if qualname not in self.name_alias:
                return self._star_get(qualname)
            qualname = self.name_alias[qualname]
        return None

    def _star_get(self, qualname: str) -> Summary | None:
        """``pkg.X`` where ``pkg/__init__.py`` does ``from .m import *``: the ``X`` of one such ``m``."""
        pkg, _, name = qualname.rpartition(".")
        found = [s for m in self._star_sources.get(pkg, ()) if (s := self.summaries.get(f"{m}.{name}"))]
        return found[0] if len(found) == 1 else None

    def handed_batchnorm(self, qualname: str, position: int, name: str) -> str | None:
        """Where a caller hands parameter ``position``/``name`` of ``qualname`` a BatchNorm model."""
        return handed_builder(
            self.handed_models,
            self._get,
            qualname,
            position,
            name,
            lambda q: (s := self._get(q)) is not None and s.builds_batchnorm,
        )

    def module_builds_batchnorm(self, module: str) -> bool:
        """Some function or class of ``module`` builds BatchNorm (after propagation); for a package,
        also one it re-exports (MhLiao/DB ``getattr(backbones, name)`` with ``backbones/__init__.py``
        doing ``from .resnet import resnet18, ...``) or star-imports."""
        if self._bn_modules is None:
            self._bn_modules = {s.module for s in self.summaries.values() if s.builds_batchnorm}
            for alias in self.name_alias:
                package = alias.rpartition(".")[0]
                if package not in self._bn_modules and (s := self._get(alias)) and s.builds_batchnorm:
                    self._bn_modules.add(package)
            for package, sources in self._star_sources.items():
                if any(m in self._bn_modules for m in sources):
                    self._bn_modules.add(package)
        return module in self._bn_modules

    def method_summaries(self, func: ast.AST) -> list[Summary]:
        """Every project method that ``obj.name(...)`` may run, by method name (types unknown)."""
        if isinstance(func, ast.Attribute):
            return self.methods.get(func.attr, [])
        return []

    def call_returns_loss(self, ctx: FileContext, call: ast.Call) -> Shape | None:
        """What ``call`` returns of the local training loss, through project code: a function, or
        ``obj.method()`` with ``obj`` of unknown type when most project methods of that name return it
        (KAIR ``model.current_log()``)."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return None if _is_class_summary(s) else s.returns_loss
        found = self._same_name_methods(call.func)
        shapes = [m.returns_loss for m in found if m.returns_loss is not None]
        if not shapes or 2 * len(shapes) <= len(found):
            return None
        out: Shape | None = None
        for shape in shapes:
            out = merge(out, shape)
        return out

    def call_param_return(self, ctx: FileContext, call: ast.Call) -> tuple[int, int] | None:
        """``(parameter, position)`` when ``call`` runs a project function that calls that parameter
        and returns its result (``gpu_timer(train_step)`` in ``src/utils.py``)."""
        s = self.summary_for(ctx, call.func)
        return s.param_call_return if s is not None else None

    def call_steps(self, ctx: FileContext, call: ast.Call) -> tuple[str, bool] | None:
        """``(how, backprops)`` when ``call`` runs a project function or method that steps an
        optimizer: "guarded" (only under an accumulation guard) or "always", and whether it runs
        backward too (a step function of its own, not an update helper)."""
        s = self.summary_for(ctx, call.func)
        if s is None or _is_class_summary(s) or s.steps is None:
            return None
        return s.steps, s.calls_backward

    def call_backward_param(self, ctx: FileContext, call: ast.Call) -> tuple[str, int, bool] | None:
        """``call`` runs a project function or method whose every backward is on one parameter:
        ``(name, position, scaled)`` of that parameter (method by name when most candidates agree)."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return None if _is_class_summary(s) else s.backward_param
        typed = self._annotated_method(ctx, call)
        if typed is not None:
            return typed.backward_param
        # by name only for a name that says what it does and that one project method defines: not
        # ``step``/``update``/``forward``, which optimizers, schedulers and meters define as well
        found = self._same_name_methods(call.func)
        if len(found) != 1 or not isinstance(call.func, ast.Attribute) or call.func.attr in GENERIC_METHODS:
            return None
        return found[0].backward_param

    def call_logged_args(self, ctx: FileContext, call: ast.Call) -> list[ast.expr] | None:
        """The arguments ``call`` logs when it runs project code that logs its parameters: a
        function, or a method of a parameter whose annotation names a project class (``def
        train_step(self, tb_lg: TensorboardLogger)`` ... ``tb_lg.update(**kw)``). None: no such code. Also a method of an object the scope builds from one
        project class (vilbert ``tbLogger = utils.tbLogger(...)`` ... ``tbLogger.step_train(...)``)."""
        s = self.summary_for(ctx, call.func)
        if s is None:
            s = self._annotated_method(ctx, call) or self._constructed_method(ctx, call)
        if s is not None and s.logs_rank0 and not s.logged_params:
            return []  # it logs, but none of its parameters (only alarms: ``if loss > 12: print(loss)``)
        if s is None or not s.logged_params:
            return None
        out: list[ast.expr] = []
        rest = any(p.startswith("*") and not p.startswith("**") for p in s.logged_params)  # *args
        for i, arg in enumerate(call.args):
            if (
                isinstance(arg, ast.Starred)
                or (i < len(s.params) and s.params[i] in s.logged_params)
                or (i >= len(s.params) and rest)
            ):
                out.append(arg)
        spread = any(p.startswith("**") for p in s.logged_params)
        for k in call.keywords:
            if (k.arg is not None and k.arg in s.logged_params) or (
                spread and (k.arg is None or k.arg not in s.params)
            ):
                out.append(k.value)
        return out

    def _constructed_method(self, ctx: FileContext, call: ast.Call) -> Summary | None:
        """The project method ``obj.m(...)`` runs when ``obj`` is bound in this scope only to
        instances of one project class (``trainer = Trainer(...)`` ... ``trainer.train(...)``); a
        rebinding to an item of a loaded checkpoint (``tbLogger = checkpoint["tb_logger"]`` on
        resume, vilbert) restores an instance pickled from that same class and is not counted."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        binds = ctx.bindings(ctx.enclosing_function(call)).get(func.value.id, [])
        classes = {
            self._project_target(ctx.absolute_imports, b.value.func)
            if isinstance(b, ast.Assign) and isinstance(b.value, ast.Call)
            else None
            for b in binds
            if not (isinstance(b, ast.Assign) and _checkpoint_item(b.value))
        }
        if len(classes) != 1:
            return None
        cls = classes.pop()
        # a package re-export: ``neuralop.Trainer`` is ``neuralop.training.trainer.Trainer``
        for _ in range(4):
            if cls is None or cls in self.summaries or cls not in self.name_alias:
                break
            cls = self.name_alias[cls]
        return self._get(f"{cls}.{func.attr}") if cls else None

    def _annotated_method(self, ctx: FileContext, call: ast.Call) -> Summary | None:
        """The project method ``obj.m(...)`` runs when ``obj``'s type is written down: a parameter of
        the enclosing function (``tb_lg: TensorboardLogger``) or ``self.x`` set in a method of the class
        from an annotated parameter (``def __init__(self, var_opt: AmpOptimizer): self.var_opt =
        var_opt``) or annotated itself (``self.x: T = ...``)."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        annotation = _annotation_of(ctx, call, func.value)
        if annotation is None:
            return None
        cls = self._project_target(ctx.absolute_imports, annotation)
        return self._get(f"{cls}.{func.attr}") if cls else None

    def call_builds_batchnorm(self, ctx: FileContext, call: ast.Call) -> bool:
        """``obj.method()`` with ``obj`` of unknown type builds BatchNorm when most project methods of
        that name do (YOLOX ``self.exp.get_model()``: four of the five experiment classes)."""
        inner = call.func
        if isinstance(inner, ast.Call):  # ``get_model(name)(**kw)``: the factory returns a builder
            factory = self.summary_for(ctx, inner.func)
            if factory is not None and factory.builds_batchnorm:
                return True
        m = method(inner) if isinstance(inner, ast.Call) else None
        if m and m[0] and m[1] in ("get", "build") and ctx.module is not None:
            # ``MODEL_REGISTRY.get(name)(cfg)``: a class of a registry of BatchNorm models
            registry = self._registry_name(
                ctx.absolute_imports, ctx.module, _module_level_names(ctx.tree), m[0]
            )
            return registry is not None and self._registry_builds_batchnorm(registry)
        found = self._same_name_methods(call.func)
        builders = sum(m.builds_batchnorm for m in found)
        return builders > 0 and 2 * builders > len(found)

    def _decorators(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, imports: dict[str, str]
    ) -> tuple[str, ...]:
        """Qualnames of the project decorators of ``fn`` (``@master_only``, ``@dist.master_only``)."""
        out: list[str] = []
        for d in fn.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            name = dotted(target)
            if name in self._local_names:
                out.append(f"{module}.{name}")
            elif name and (resolved := self._project_target(imports, target)):
                out.append(resolved)
        return tuple(out)

    def config_default(self, key: str) -> tuple[bool, object]:
        """``(known, value)``: the default a Python configuration of the project gives ``key``."""
        value = self.config_defaults.get(key, _CONFLICT)
        return (value is not _CONFLICT), value

    def scales_module(self, module: str | None, own: bool = True) -> bool:
        """A GradScaler covers ``module``: one in training code that ``module`` imports (directly or
        not), or that imports ``module`` (the loop running its model code), or (for a test module) in
        a test. A scaler in a sibling script that shares neither code path does not. ``own=False``:
        the module's own scalers are judged by the caller (switched by their own flag)."""
        if module is None:
            return self.uses_scaler
        if self.tests_use_scaler and _test_module(module):
            return True
        reach = self.reachable(module)
        return any(
            (own and m == module) or (m != module and (m in reach or module in self.reachable(m)))
            for m in self.scaler_modules
        )

    def silences_print(self, module: str | None) -> tuple[str, int] | None:
        """The module (and line) whose ``builtins.print`` replacement drops this module's prints off
        rank 0: the module itself, one it imports (tabpfn's ``init_dist`` in ``utils.py``) or one that
        imports it (MAE's ``main_pretrain.py`` calling ``misc.init_distributed_mode`` runs
        ``engine_pretrain.py``'s prints). A sibling script sharing neither code path is not covered."""
        if module is None:
            return None
        reach = self.reachable(module)
        for m, line in sorted(self.print_silencers.items()):
            if m == module or m in reach or module in self.reachable(m):
                return m, line
        return None

    def silences_logging(self, module: str | None, configures_itself: bool) -> bool:
        """A logging setup that keeps rank 0's records only runs in this module's process: in the
        module, one it imports, or one that imports it (MSN's ``main.py`` sets the level off rank 0
        and runs ``src/msn_train.py``, whose own ``basicConfig`` runs first); or anywhere in the
        project when the module configures no logging itself (V-JEPA's ``app/main.py`` loads
        ``app/vjepa/train.py`` through ``importlib``, which no import table shows). A sibling entry
        script's setup (CodeBERT's codesearch) does not silence a script that configures logging
        itself (code2nl's ``basicConfig(level=INFO)`` on every rank)."""
        if module is None or not self.logging_silencers:
            return False
        if not configures_itself:
            return True
        reach = self.reachable(module)
        return any(m == module or m in reach or module in self.reachable(m) for m in self.logging_silencers)

    def reachable(self, module: str) -> frozenset[str]:
        """The project modules ``module`` imports, directly or through other project modules."""
        found = self._reach.get(module)
        if found is None:
            seen: set[str] = set()
            stack = [module]
            while stack:
                for nxt in self.module_imports.get(stack.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            found = self._reach[module] = frozenset(seen)
        return found

    def call_fp16_gate(self, ctx: FileContext, expr: ast.AST) -> str | None:
        """The condition under which a dtype read from project code is float16: a call of a function
        or method that returns ``torch.float16`` (``get_dtype(cfg)``), or an attribute named like a
        property that does (``self.cfg.autocast_precision``) when most same-name methods do. "" when
        always; None when it never is or the code is not known."""
        if isinstance(expr, ast.Call):
            s = self.summary_for(ctx, expr.func)
            if s is not None:
                return s.fp16_gate
            func: ast.AST = expr.func
        elif isinstance(expr, ast.Attribute):
            func = expr
        else:
            return None
        found = self._same_name_methods(func)
        gates = [m.fp16_gate for m in found if m.fp16_gate is not None]
        return gates[0] if gates and 2 * len(gates) > len(found) else None

    def call_compiles(self, ctx: FileContext, call: ast.Call) -> tuple[int, int | None] | None:
        """``(model argument, flag argument)`` when ``call`` runs a project function or method that
        returns ``torch.compile`` of that argument (``args.compile_model(m, args.tfast)``)."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return s.compiles_param
        found = self._same_name_methods(call.func)
        compiling = [m.compiles_param for m in found if m.compiles_param is not None]
        return compiling[0] if compiling and 2 * len(compiling) > len(found) else None

    def compiling_names(self) -> tuple[str, ...]:
        """Bare names of project functions and methods that return a compiled model."""
        if self._compile_names is None:
            self._compile_names = tuple(
                sorted({q.rsplit(".", 1)[-1] for q, s in self.summaries.items() if s.compiles_param})
            )
        return self._compile_names

    def backpropagated_defs(self, ctx: FileContext) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions and methods of ``ctx``'s file whose result project code elsewhere backprops."""
        if ctx.module is None or not any(q.startswith(f"{ctx.module}.") for q in self.backprop_targets):
            return []
        out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for qual, node in _defs_of(ctx.module, ctx.tree)[0]:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and qual in self.backprop_targets:
                out.append(node)
        return out

    def _finish_rank0_handoff(self) -> None:
        """Classes whose every construction hands a rank-0 test to a parameter (its dependencies on
        returned tuples checked now that every file's returns are known)."""
        for key, args in self._rank0_args.items():
            built = self._get(key)
            kept = {a for a, deps in args.items() if all(self._returns_rank0_at(q, p) for q, p in deps)}
            if built is not None and _is_class_summary(built) and kept:
                self.rank0_handed[built.qualname] = kept
        self._rank0_args = {}

    def _returns_rank0_at(self, qualname: str, position: int) -> bool:
        target = self._get(qualname)
        return target is not None and position in self.rank0_returns.get(target.qualname, ())

    def call_rank0_positions(self, ctx: FileContext, call: ast.Call) -> set[int]:
        """Positions of the tuple ``call`` returns that hold a rank-0 test (``device, is_logger =
        setup(config)`` with ``setup`` in another file)."""
        target = self.summary_for(ctx, call.func)
        return set(self.rank0_returns.get(target.qualname, ())) if target is not None else set()

    def rank0_attributes(self, ctx: FileContext, cls: ast.ClassDef) -> set[str]:
        """``self.<attr>`` spellings of a top-level class of ``ctx``'s file that hold a rank-0 test in
        every instance the project builds (``Trainer(..., verbose=config.verbose and is_logger)``
        kept as ``self.verbose``)."""
        from ddp_doctor.lint.rank0_handoff import rank0_attributes

        handed = self.rank0_handed.get(f"{ctx.module}.{cls.name}")
        return rank0_attributes(cls, handed) if handed else set()

    def rank0_called(self, ctx: FileContext, fn: ast.AST) -> bool:
        """``fn`` (a top-level function or a method of a top-level class of ``ctx``'s file) is called
        only under rank-0 tests anywhere in the project: its logs run on rank 0 only."""
        if (
            ctx.module is None
            or not self.rank0_callees
            or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            return False
        owner = ctx.parents.get(fn)
        if owner is ctx.tree:
            return f"{ctx.module}.{fn.name}" in self.rank0_callees
        if isinstance(owner, ast.ClassDef) and ctx.parents.get(owner) is ctx.tree:
            return f"{ctx.module}.{owner.name}.{fn.name}" in self.rank0_callees
        return False

    def handed_params(
        self, ctx: FileContext
    ) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]]]:
        """Functions and methods of ``ctx``'s file that code in other files calls with the local loss,
        and the parameters that receive it (wenet ``log_per_step(writer, info_dict)`` from the
        executor). Computed once for the project, on first use, by reading the training files again
        with this index."""
        if ctx.module is None or "loss_flow" not in self.facts:
            return []
        if self._handed is None:
            if self._handing:
                return []  # asked while computing it (the files' own flows): nothing yet
            self._handing = True
            try:
                self._handed = self._compute_handed()
            finally:
                self._handing = False
        out: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]]] = []
        for qual, node in _defs_of(ctx.module, ctx.tree)[0]:
            found = self._handed.get(qual)
            if not found or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            if params and params[0] in ("self", "cls"):
                params = params[1:]
            names = {params[p] for p in found if isinstance(p, int) and p < len(params)}
            names |= {p for p in found if isinstance(p, str)}
            if names:
                out.append((node, names))
        return out

    def _compute_handed(self) -> dict[str, set[int | str]]:
        from ddp_doctor.lint.loops import LoopFacts as Facts

        out: dict[str, set[int | str]] = {}
        # only files that can hold the loss: a backward, a Lightning step, or a call of project code
        # that returns the loss or backprops (the text pre-check; most library files have none)
        words = (
            "backward",
            "training_step",
            *self.loss_returning_names(),
            *{q.rsplit(".", 1)[-1] for q in self.backprop_targets},
        )
        for path in self._flow_paths:
            ctx = _parse(Path(path), words)
            if ctx is None:
                continue
            attach(ctx, self, Path(path))
            try:
                flow = LossFlow(ctx, Facts(ctx))
            except RecursionError:
                continue
            for key, scope in flow.scopes.items():
                taint = flow.taints[key]
                if not taint.names or evaluation_function(scope):
                    continue  # a validation pass (CosyVoice's ``@torch.inference_mode() def cv``) hands
                    # its own, validation, losses on
                for call in ctx.local(scope):
                    if not isinstance(call, ast.Call) or ctx.helper(call) is not None:
                        continue
                    s = self.summary_for(ctx, call.func)
                    if s is None or s.module == ctx.module or _is_class_summary(s):
                        continue
                    at: set[int | str] = {
                        i for i, a in enumerate(call.args) if reads(ast.walk(a), taint.fields) & taint.names
                    }
                    at |= {
                        k.arg
                        for k in call.keywords
                        if k.arg and reads(ast.walk(k.value), taint.fields) & taint.names
                    }
                    if at:
                        out.setdefault(s.qualname, set()).update(at)
        return out

    def lightning_params(self, ctx: FileContext, fn: ast.AST) -> set[str]:
        """Parameters of ``fn`` (a top-level function of ``ctx``'s file) that a Lightning module binds
        to itself (``def compute_mlm(pl_module, batch)`` called as ``compute_mlm(self, batch)``)."""
        if (
            ctx.module is None
            or not self.lightning_args
            or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            return set()
        qual = f"{ctx.module}.{fn.name}"
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        return {params[i] for q, i in self.lightning_args if q == qual and i < len(params)}

    def loss_returning_names(self) -> tuple[str, ...]:
        """Bare names of project functions and methods that return the local loss or backprop their
        argument (computed once): the words that let a file hold the loss without a ``.backward``."""
        if self._loss_names is None:
            self._loss_names = tuple(
                sorted(
                    {
                        q.rsplit(".", 1)[-1]
                        for q, s in self.summaries.items()
                        if s.returns_loss is not None or s.backward_param is not None
                    }
                )
            )
        return self._loss_names

    def _same_name_methods(self, func: ast.AST) -> list[Summary]:
        """Project methods ``obj.name(...)`` may run when ``obj``'s type is unknown (not ``self``,
        ``super()``, or a dunder)."""
        if (
            not isinstance(func, ast.Attribute)
            or func.attr.startswith("__")
            or (isinstance(func.value, ast.Call) and dotted(func.value.func) == "super")
        ):
            return []
        return self.method_summaries(func)

    def call_wraps_ddp(self, ctx: FileContext, call: ast.Call, plain: bool = False) -> bool:
        """``call`` wraps a model in DDP/FSDP through project code (``smart_DDP(model)``,
        ``task.prepare_distributed(...)``); ``plain``: in DistributedDataParallel, not FSDP."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return s.returns_ddp and not (
                plain and s.fsdp_only
            )  # a function that wraps and returns the model
        func = call.func
        if (
            not isinstance(func, ast.Attribute)
            or func.attr.startswith("__")
            or (isinstance(func.value, ast.Call) and dotted(func.value.func) == "super")
        ):
            return False
        found = self.method_summaries(func)  # obj.prepare_distributed(...): may wrap in place on self
        wrapping = sum((m.wraps_ddp or m.returns_ddp) and not (plain and m.fsdp_only) for m in found)
        # Few candidates: any that wraps. Many (timm's five ``prepare_distributed`` task classes): most
        # of them must wrap, so that a common name wrapped by one class in thirty does not count.
        return wrapping > 0 and (len(found) <= MAX_SAME_NAME_METHODS or 2 * wrapping > len(found))

    def call_wraps_argument(self, ctx: FileContext, call: ast.Call) -> bool:
        """The model a project wrap call wraps may be the caller's: the function wraps what it is
        handed, or it is not a plain function (methods wrapping ``self.model``, wraps through
        another helper). False only for a function that builds the model it wraps itself."""
        s = self.summary_for(ctx, call.func)
        return s is None or s.wraps_param or not s.wraps_built

    def ddp_wrapper_names(self) -> tuple[str, ...]:
        """Bare names of project functions returning a wrapped model and of methods wrapping in place
        (computed once): the words a file must contain to wrap through project code."""
        if self._wrapper_names is None:
            names = {q.rsplit(".", 1)[-1] for q, s in self.summaries.items() if s.returns_ddp}
            names |= {n for n, found in self.methods.items() if any(m.wraps_ddp for m in found)}
            names |= {
                a.rsplit(".", 1)[-1] for a, t in self.name_alias.items() if t.rsplit(".", 1)[-1] in names
            }
            self._wrapper_names = tuple(sorted(names))
        return self._wrapper_names

    def hands_to_ddp_code(self, ctx: FileContext, names: set[str]) -> bool:
        """One of ``names`` goes to project code that trains on it and wraps the model in DDP/FSDP
        (``Trainer(model, train_loader)`` whose ``__init__`` wraps): the loader is distributed."""
        for call in ctx.of_type(ast.Call):
            s = self.summary_for(ctx, call.func)
            if s is not None and (s.wraps_ddp or s.returns_ddp) and self.trains_on_argument(ctx, call, names):
                return True
        return False

    def option_excludes(self, dest: str, value: str) -> bool:
        """The project's argparse option ``dest`` has literal choices and ``value`` is not one."""
        choices = self.option_choices.get(dest)
        return choices is not None and value not in choices

    def call_shards_by_rank(self, ctx: FileContext, call: ast.Call) -> bool:
        """``call`` runs a project function that reads a rank and a world size itself or in a project
        function it calls (one level: contriever ``data.load_data(opt, tokenizer)`` →
        ``load_dataset`` keeping this rank's share of the files): what it returns is per-rank data."""
        s = self.summary_for(ctx, call.func)
        if s is None or _is_class_summary(s):
            return False
        return s.reads_rank_and_world or any(
            (c := self._get(q)) is not None and not _is_class_summary(c) and c.reads_rank_and_world
            for q in s.callees
        )

    def reiterates_argument(self, ctx: FileContext, call: ast.Call, names: set[str]) -> bool:
        """``call`` hands one of ``names`` to project code in a module without ``set_epoch`` that
        iterates it again on every pass of an outer loop (a trainer's epoch loop); a method of an
        unknown object by name when every project method of that name (at most 4) does."""
        s = self.summary_for(ctx, call.func) or self._constructed_method(ctx, call)
        found = [s] if s is not None else self.method_summaries(call.func)
        if not found or len(found) > MAX_SAME_NAME_METHODS or any(_is_class_summary(c) for c in found):
            return False
        for i, arg in enumerate(call.args):
            if dotted(arg) in names and all(i in c.epoch_params for c in found):
                return True
        return any(
            dotted(k.value) in names and all(k.arg in c.epoch_params for c in found) for k in call.keywords
        )

    def trains_on_argument(self, ctx: FileContext, call: ast.Call, names: set[str]) -> bool:
        """``call`` hands one of ``names`` to project code that trains on it (``Trainer(model,
        train_loader)`` whose methods iterate ``self.train_data`` and run backward)."""
        s = self.summary_for(ctx, call.func)
        if s is None or not s.trains_on_params:
            return False
        for i, arg in enumerate(call.args):
            if dotted(arg) in names and i in s.trains_on_params:
                return True
        return any(k.arg in s.trains_on_params and dotted(k.value) in names for k in call.keywords)


_RANK_WORD = re.compile(r"rank|process_index", re.IGNORECASE)
_WORLD_WORD = re.compile(r"world|num_replicas|num_processes", re.IGNORECASE)


def _reads_rank_and_world(body: list[ast.AST]) -> bool:
    """The nodes read a rank and a world size (names, attributes, calls such as ``get_rank()``)."""
    words = {
        n.id if isinstance(n, ast.Name) else n.attr for n in body if isinstance(n, (ast.Name, ast.Attribute))
    }
    return any(_RANK_WORD.search(w) for w in words) and any(_WORLD_WORD.search(w) for w in words)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[str]:
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return names[1:] if skip_self and names else names


def _trains_on_params(ctx: FileContext, node: ast.AST) -> set[str | int]:
    """Which parameters of a function (or of a class's ``__init__``) feed a training loop."""
    if isinstance(node, ast.ClassDef):
        init = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
        if init is None:
            return set()
        params = _params(init, skip_self=True)
        held: dict[str, str] = {}  # self.attr -> parameter
        for n in ast.walk(init):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params:
                for t in n.targets:
                    if (d := dotted(t)) and d.startswith("self."):
                        held[d] = n.value.id
        region: ast.AST = node
        watched = held
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = _params(node, skip_self=False)
        region, watched = node, {p: p for p in params}
    else:
        return set()
    if not watched:
        return set()
    backward_fns = {
        f.name
        for f in ast.walk(region)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(backward_of(x) for x in ast.walk(f))
    }
    out: set[str | int] = set()
    for loop in ast.walk(region):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        source = next((watched[d] for x in ast.walk(loop.iter) if (d := dotted(x)) in watched), None)
        if source is None:
            continue
        body = [x for stmt in loop.body for x in ast.walk(stmt)]
        if any(backward_of(x) for x in body) or any(
            isinstance(x, ast.Call)
            and isinstance(x.func, (ast.Name, ast.Attribute))
            and (x.func.id if isinstance(x.func, ast.Name) else x.func.attr) in backward_fns
            for x in body
        ):
            out |= {source, params.index(source)}
    return out


def _epoch_params(
    ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool
) -> set[str | int]:
    """Parameters ``fn`` iterates (``for b in p``, ``enumerate(p)``, ``iter(p)``) inside a loop
    nested in another loop of its own, or passes to a call inside a loop of its own (not in the
    header of that loop: pysot's single ``for idx, data in enumerate(train_loader)`` derives the
    epoch from ``idx`` and iterates the loader once)."""
    params = _params(fn, skip_self=is_method)
    if not params:
        return set()
    out: set[str | int] = set()
    for loop in walk_local(fn):
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        # a for-loop's own header runs once: ``for i, b in enumerate(p)`` alone is one pass over ``p``
        header = set(map(id, ast.walk(loop.iter))) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
        for node in walk_local(loop):
            if node is loop or id(node) in header:
                continue
            used: list[ast.expr] = []
            if isinstance(node, (ast.For, ast.AsyncFor)):  # ``for b in p``, ``for i, b in enumerate(p)``
                used = [x for x in ast.walk(node.iter) if isinstance(x, ast.Name)]
            elif isinstance(node, ast.Call) and (dotted(node.func) or "") not in _NOT_ITERATING:
                used = [*node.args, *(k.value for k in node.keywords)]  # the loader itself, handed on
            for x in used:
                if isinstance(x, ast.Name) and x.id in params:
                    out |= {x.id, params.index(x.id)}
    return out


# Calls that read a loader without iterating it (``len(train_loader)`` in a progress message)
_NOT_ITERATING = frozenset({"len", "print", "isinstance", "str", "repr", "type", "id", "getattr", "hasattr"})


def _whole_reads(value: ast.AST) -> set[str]:
    """Names ``value`` reads as a whole: not only as the container of an item or attribute it picks
    (``d["k"]``, ``d.get("k")``, ``d.k``)."""
    picked = {
        id(x.value)
        for x in ast.walk(value)
        if isinstance(x, (ast.Subscript, ast.Attribute)) and isinstance(x.value, ast.Name)
    }
    return {x.id for x in ast.walk(value) if isinstance(x, ast.Name) and id(x) not in picked}


def _checkpoint_item(value: ast.expr) -> bool:
    """``checkpoint["tb_logger"]``: a string-keyed item of a name that says it holds a checkpoint."""
    return (
        isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, str)
        and any(w in (dotted(value.value) or "").lower() for w in ("checkpoint", "ckpt", "state"))
    )


def parameters_logged(
    ctx: FileContext, fn: ast.AST, depth: int = 2
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(parameters its log calls write, its positional parameters): ``print``, ``writer.add_scalar``
    ... of a parameter, also through a loop over it (``for k, v in kwargs.items():
    self.writer.add_scalar(k, v)``), and through a same-file helper that logs what it is handed
    (vilbert ``tbLogger.step_train(..., loss, ...)`` -> ``self.linePlot(stepId, loss, ...)`` ->
    ``self.logger.add_scalar(..., val, step)``; ``depth`` helpers deep). Not ``f.write(...)``
    (llm.c ``write_state`` dumps tensors)."""
    from ddp_doctor.lint.logged_helpers import helper_logged_args
    from ddp_doctor.lint.rank0 import is_log_call

    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return (), ()
    a = fn.args
    positional = [x.arg for x in (*a.posonlyargs, *a.args)]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    named = {x.arg: x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    if a.vararg is not None:
        named[a.vararg.arg] = "*" + a.vararg.arg
    if a.kwarg is not None:
        named[a.kwarg.arg] = "**" + a.kwarg.arg
    named.pop("self", None)
    named.pop("cls", None)
    nodes = ctx.local(fn)
    if not named or len(nodes) > 400:
        return (), tuple(positional)
    logged: set[str] = set()
    assigns = [
        (reads(ast.walk(n.value)), {t for target in n.targets for t in bound_names(target)})
        for n in nodes
        if isinstance(n, ast.Assign)
    ]
    wholes = [
        (_whole_reads(n.value), {t for target in n.targets for t in bound_names(target)})
        for n in nodes
        if isinstance(n, ast.Assign)
    ]
    for call in nodes:
        handed = (
            helper_logged_args(ctx, call, fn, lambda h: parameters_logged(ctx, h, depth - 1))
            if depth > 0 and isinstance(call, ast.Call) and not is_log_call(call)
            else None
        )
        if handed or (isinstance(call, ast.Call) and is_log_call(call) and not _writes_file(call)):
            assert isinstance(call, ast.Call)
            args = handed if handed is not None else [*call.args, *(k.value for k in call.keywords)]
            names = reads(x for v in args for x in ast.walk(v))
            names |= loop_aliases(ctx, call, names)
            for n in named:
                derived = {n}  # and what is computed from it (``overflow = check(loss.item())``)
                for _ in range(2):
                    for read, written in assigns:
                        if read & derived:
                            derived |= written
                # the parameter or a message built from all of it (ColBERT ``print_message(*s)``:
                # ``s = " ".join(...)``, ``msg = "[...] {}".format(s)``, ``print(msg)``); not an item
                # picked out of it (wenet's ``step = info_dict.get("step")`` is not the loss)
                whole = {n}
                for _ in range(2):
                    for read, written in wholes:
                        if read & whole:
                            whole |= written
                if n not in names and not (names & whole):
                    continue
                if not alarm(ctx, call, derived):  # ``if loss > 12: print(loss)`` warns, it does not log
                    logged.add(named[n])
    return tuple(sorted(logged)), tuple(positional)


# Method names too common to resolve by name alone (optimizers, schedulers, meters, modules).
GENERIC_METHODS = frozenset(
    {"step", "update", "forward", "__call__", "run", "train", "apply", "backward", "compute", "zero_grad"}
)


def _annotation_of(ctx: FileContext, at: ast.AST, receiver: ast.expr) -> ast.expr | None:
    """The written type of ``receiver`` (a parameter, or ``self.x``) where it is used at ``at``."""
    fn = ctx.enclosing_function(at)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if isinstance(receiver, ast.Name):
        for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
            if arg.arg == receiver.id:
                return arg.annotation
        return None
    if not (
        isinstance(receiver, ast.Attribute)
        and isinstance(receiver.value, ast.Name)
        and receiver.value.id == "self"
    ):
        return None
    owner = ctx.parents.get(fn)
    if not isinstance(owner, ast.ClassDef):
        return None
    for member in owner.body:
        if not isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {
            a.arg: a.annotation
            for a in (*member.args.posonlyargs, *member.args.args, *member.args.kwonlyargs)
        }
        for n in ctx.local(member):
            if isinstance(n, ast.AnnAssign) and dotted(n.target) == f"self.{receiver.attr}":
                return n.annotation
            if (
                isinstance(n, ast.Assign)
                and any(dotted(t) == f"self.{receiver.attr}" for t in n.targets)
                and isinstance(n.value, ast.Name)
                and params.get(n.value.id) is not None
            ):
                return params[n.value.id]
    return None


def _writes_file(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "write"


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _parse(path: Path, words: tuple[str, ...] = ()) -> FileContext | None:
    """The file's context, or None when it cannot be read or parsed or (``words``) mentions none of
    them (the cheap text pre-check)."""
    try:
        source, _ = read_source(path)
    except (OSError, ValueError):
        return None
    if words and not any(w in source for w in words):
        return None
    try:
        return FileContext.build(str(path), source, ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _compiles_param(ctx: FileContext, fn: ast.AST, method: bool) -> tuple[int, int | None] | None:
    """``(model parameter, flag parameter)`` for a function that returns ``torch.compile(p, ...)`` of
    its parameter ``p`` (also as a branch of ``a if c else p``); the flag is the other parameter its
    conditions test (VAR ``if fast == 0: return m``), None when none does. Indices skip ``self``."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if method and params:
        params = params[1:]
    model: int | None = None
    for r in ctx.local(fn):
        if not isinstance(r, ast.Return) or r.value is None:
            continue
        for part in (r.value.body, r.value.orelse) if isinstance(r.value, ast.IfExp) else (r.value,):
            if (
                isinstance(part, ast.Call)
                and ctx.call_qualname(part) == "torch.compile"
                and part.args
                and isinstance(part.args[0], ast.Name)
                and part.args[0].id in params
            ):
                model = params.index(part.args[0].id)
    if model is None:
        return None
    tests = [n.test for n in ctx.local(fn) if isinstance(n, (ast.If, ast.IfExp))]
    flags = {
        params.index(x.id)
        for t in tests
        for x in ast.walk(t)
        if isinstance(x, ast.Name) and x.id in params and params.index(x.id) != model
    }
    return model, (flags.pop() if len(flags) == 1 else None)


def _propagated_flags(s: Summary) -> tuple[bool, ...]:
    """The flags `_propagate` spreads from callees to callers: one list, so its before/after
    comparison cannot miss a field (it once compared 5 fields with 6 and never stopped early)."""
    return (
        s.calls_backward,
        s.returns_reduced,
        s.toggles_sync,
        s.builds_batchnorm,
        s.converts_syncbn,
        s.returns_ddp,
        s.wraps_ddp,
    )


def _is_class_summary(s: Summary) -> bool:
    return s.qualname.rsplit(".", 1)[-1][:1].isupper()


def _is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _rank0_if(ctx: FileContext, node: ast.AST) -> ast.If | None:
    """The ``if <rank-0 test>:`` whose body (not else) holds ``node``, in the same function."""
    from ddp_doctor.lint.rank0 import enclosing_rank0_if

    return enclosing_rank0_if(ctx.parents, node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _rank0_decorator(ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``fn(func)`` defines a wrapper that calls ``func`` only under a rank-0 test and returns it
    (``def master_only(func): def wrapper(*a, **k): if rank == 0: return func(*a, **k)``)."""
    params = [a.arg for a in fn.args.args]
    if not params:
        return False
    for inner in fn.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        returned = any(
            isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == inner.name
            for r in fn.body
        )
        calls = [
            c
            for c in ctx.local(inner)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == params[0]
        ]
        if returned and calls and all(_rank0_if(ctx, c) is not None for c in calls):
            return True
    return False


def _has_log_call(ctx: FileContext, fn: ast.AST) -> bool:
    from ddp_doctor.lint.rank0 import is_log_call

    return any(isinstance(n, ast.Call) and is_log_call(n) for n in ctx.local(fn))


def _logs_rank0_only(ctx: FileContext, fn: ast.AST) -> bool:
    """A small function whose every log call sits under a rank-0 test (``def print0(*a): if rank == 0:
    print(*a)``) or logs on rank 0 by itself (``def print(self, msg): return
    self.accelerator.print(msg)``): calling it logs on rank 0 only."""
    from ddp_doctor.lint.rank0 import is_log_call, is_rank0_log_call

    nodes = ctx.local(fn)
    if len(nodes) > 200:
        return False
    logs = [n for n in nodes if isinstance(n, ast.Call) and is_log_call(n)]
    return bool(logs) and all(_rank0_if(ctx, n) is not None or is_rank0_log_call(n) for n in logs)


def _absolute_module(node: ast.ImportFrom, module: str) -> str | None:
    if not node.level:
        return node.module
    package = module.split(".")[:-1]
    if node.level - 1 > len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or path.stem


def _module_level_names(tree: ast.Module) -> set[str]:
    return {
        t.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }


def _wraps_parameter(ctx: FileContext, fn: ast.AST, wrap: ast.Call) -> bool:
    """The value ``wrap`` (a DDP/FSDP call in ``fn``) wraps is ``fn``'s parameter or ``self.x``, possibly
    moved or converted on the way (``model = model.cuda()``, ``m = convert_sync_batchnorm(m)``);
    False when it is a model ``fn`` built (``model = ResNet(...)``)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    a = fn.args
    params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)} - {"self", "cls"}
    target = wrap.args[0] if wrap.args else next((k.value for k in wrap.keywords if k.arg == "module"), None)
    binds = ctx.bindings(fn)
    line = wrap.lineno
    for _ in range(8):
        if target is None:
            return True
        if isinstance(target, ast.Attribute):
            return True  # ``self.model``: set elsewhere, may be the caller's
        if isinstance(target, ast.Call):  # DDP(model.to(device)), DDP(convert(model))
            target = (
                target.func.value
                if isinstance(target.func, ast.Attribute)
                else (target.args[0] if target.args else None)
            )
            continue
        if not isinstance(target, ast.Name):
            return True
        before = [b for b in binds.get(target.id, []) if b.lineno < line]
        if not before:
            return target.id in params
        last = before[-1]
        if not isinstance(last, ast.Assign):
            return True
        line = last.lineno
        value = last.value
        if isinstance(value, ast.Call):
            inner = value.func.value if isinstance(value.func, ast.Attribute) else None
            first = value.args[0] if value.args else None
            if isinstance(inner, ast.Name) and inner.id == target.id:
                target = inner  # model = model.cuda()
                continue
            if isinstance(first, ast.Name) and first.id == target.id:
                target = first  # model = convert(model)
                continue
            return False  # built here: model = ResNet(...)
        target = value
    return True


def _scaled(backward: ast.Call) -> bool:
    """``x.scale(loss).backward()``: the receiver of the backward is a scaler's ``scale`` call."""
    receiver = backward.func.value if isinstance(backward.func, ast.Attribute) else None
    return isinstance(receiver, ast.Call) and (method(receiver) or (None, ""))[1] == "scale"


def _test_module(module: str) -> bool:
    """A test module (``tests/...``, ``test_x``, ``x_test``, ``conftest``): not the training code."""
    parts = module.split(".")
    return (
        any(p in ("test", "tests") for p in parts[:-1])
        or parts[-1].startswith("test_")
        or parts[-1].endswith("_test")
        or parts[-1] == "conftest"
    )


def _fp16_return(ctx: FileContext, fn: ast.AST) -> str | None:
    """The condition under which ``fn`` returns ``torch.float16``/``torch.half`` (the test of the
    innermost ``if`` around that return; "" when none), or None when it never does."""
    for node in ctx.local(fn):
        if isinstance(node, ast.Return) and node.value is not None and ctx.qualname(node.value) in FP16_NAMES:
            child: ast.AST = node
            cur = ctx.parents.get(node)
            while cur is not None and cur is not fn:
                if isinstance(cur, ast.If):
                    test = ctx.segment(cur.test)
                    return test if child in cur.body else f"not ({test})"
                child, cur = cur, ctx.parents.get(cur)
            return ""
    return None


def _syncs_updates(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """The class's update method (``update``, ``add``, ...) reduces across ranks, directly or through
    another method of the class (``self._sync(val)`` → ``sync_tensor(val, reduce="sum")``)."""
    methods = {b.name: b for b in cls.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def reduces(fn: ast.AST, depth: int) -> bool:
        for n in ctx.local(fn):
            if not isinstance(n, ast.Call):
                continue
            name = dotted(n.func) or ""
            if is_reduce(name):
                return True
            m = method(n)
            if depth and m and m[0] == "self" and m[1] in methods and reduces(methods[m[1]], depth - 1):
                return True
        return False

    return any(reduces(fn, 1) for name, fn in methods.items() if is_update_method(name))


def _module_level_imports(tree: ast.Module) -> set[str]:
    """Names bound by the module's own import statements (also under a top-level ``try``/``if``)."""
    out: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Try):
            stack += [*node.body, *node.orelse, *(s for h in node.handlers for s in h.body)]
        elif isinstance(node, ast.If):
            stack += [*node.body, *node.orelse]
    return out


def _unpacked_targets(
    index: ProjectIndex, nodes: list[ast.AST], imports: dict[str, str]
) -> dict[str, tuple[str, int]]:
    """Names a function binds only by unpacking a call of project code: ``{name: (callee, position)}``
    (``device, is_logger = setup(config)`` → ``{"is_logger": ("...torch_setup.setup", 1)}``)."""
    out: dict[str, tuple[str, int] | None] = {}
    for n in nodes:
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            if isinstance(t, ast.Tuple) and isinstance(n.value, ast.Call):
                target = index._project_target(imports, n.value.func)
                for k, e in enumerate(t.elts):
                    if isinstance(e, ast.Name):
                        out[e.id] = (target, k) if target and e.id not in out else None
            elif isinstance(t, ast.Name):
                out[t.id] = None
    return {k: v for k, v in out.items() if v is not None}


def absolute_imports(ctx: FileContext, module: str) -> dict[str, str]:
    """The file's import table with relative imports made absolute (``from .misc import x``)."""
    out = dict(ctx.imports)
    package = module.split(".")[:-1]
    for node in ctx.of_type(ast.ImportFrom):
        if not node.level:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level - 1 <= len(package) else []
        prefix = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            if alias.name != "*":
                out[alias.asname or alias.name] = f"{prefix}.{alias.name}" if prefix else alias.name
    return out


def attach(ctx: FileContext, index: ProjectIndex | None, path: Path) -> None:
    """Give a file's context its project (module name and absolute imports)."""
    if index is None:
        return
    try:
        module = module_name(index.root, path.resolve())
    except ValueError:
        return
    ctx.project = index
    ctx.module = module
    ctx.absolute_imports = absolute_imports(ctx, module)
