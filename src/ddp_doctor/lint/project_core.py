"""The project index's state and name resolution: which project def a spelling names.

:class:`IndexCore` holds every table of the index (lint/project.py's :class:`ProjectIndex` is
built on it) and resolves names across files: module aliases and package re-exports, a call's
target through the file's imports (``_project_target``, ``summary_for``), ``A = B`` aliases, star
imports, ``import a as m`` in several branches, methods by name or by a written or constructed
type, and which modules a module reaches through its imports.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from pathlib import Path

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.dist_tests import DISTRIBUTED_NAME, negative_test
from ddp_doctor.lint.handed_models import Handed
from ddp_doctor.lint.model_picks import split_pick_key
from ddp_doctor.lint.project_modules import LOCAL_KEY, absolute_imports, absolute_module, relative_base
from ddp_doctor.lint.project_reach import Reach
from ddp_doctor.lint.project_summary import FACTS, Summary, is_class_summary
from ddp_doctor.lint.samplers import CallShape

CONFLICT = object()  # a configuration key given different defaults


# ``obj.method(...)`` with an unknown ``obj`` is matched by method name only when few classes of the
# project define that name (``prepare_distributed``), never for common names (``__init__``, ``setup``
# defined by dozens of classes).
MAX_SAME_NAME_METHODS = 4


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
    built: dict[str, ast.expr] = {}  # ``self.x = Logger(...)``: what built it, when nothing is written
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
            if isinstance(n, ast.Assign) and any(dotted(t) == f"self.{receiver.attr}" for t in n.targets):
                typed = _built_from_class_type(ctx, member, n.value)
                if typed is not None:
                    return typed
                if isinstance(n.value, ast.Call) and (name := dotted(n.value.func)):
                    built[name] = n.value.func
    # one constructor (or factory) builds it everywhere: the caller asks the project whether it is a class
    return next(iter(built.values())) if len(built) == 1 else None


def _built_from_class_type(
    ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, value: ast.expr
) -> ast.expr | None:
    """``C`` for ``cls(...)`` / ``cls.make(...)`` where ``fn`` wrote ``cls: type[C] = ...``: an
    instance the class it names builds (rsl_rl ``alg_class: type[PPO] = resolve_callable(...)``,
    ``self.alg = alg_class.construct_algorithm(...)``)."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func.value if isinstance(value.func, ast.Attribute) else value.func
    if not isinstance(func, ast.Name):
        return None
    for n in ctx.local(fn):
        if (
            isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name)
            and n.target.id == func.id
            and isinstance(n.annotation, ast.Subscript)
            and dotted(n.annotation.value) in ("type", "Type", "typing.Type")
        ):
            return n.annotation.slice
    return None


@dataclass
class IndexCore:
    """Every table of the project index, and name resolution across its files."""

    root: Path
    facts: frozenset[str] = frozenset(FACTS)  # which of FACTS to compute (the selected rules')
    modules: dict[str, str] = field(default_factory=dict)  # module name -> file path
    summaries: dict[str, Summary] = field(default_factory=dict)
    # local aliases being followed (``_local_alias``): a cycle of them (``a = b``, ``b = a``) ends
    _aliasing: set[int] = field(default_factory=set, repr=False)
    methods: dict[str, list[Summary]] = field(default_factory=dict)  # method name -> every class's
    backward_objects: set[str] = field(default_factory=set)  # spellings bound to backward-running objects
    rank0_objects: set[str] = field(default_factory=set)  # spellings bound only on rank 0
    rank0_sink_classes: set[str] = field(default_factory=set)  # writer classes that write on rank 0 only
    # classes whose writer one method attaches (rank0_sinks.attached_writer_classes) -> that method
    attached_writer_classes: dict[str, str] = field(default_factory=dict)
    rank0_predicates: set[str] = field(default_factory=set)  # functions answering "am I rank 0?"
    distributed_predicates: set[str] = field(default_factory=set)  # "is this run distributed?" (dist_tests)
    silences_other_ranks: bool = False  # some file's logging setup keeps rank 0's records only
    logging_silencers: set[str] = field(default_factory=set)  # the modules whose setup does it
    # module -> line of its ``builtins.print = ...`` that drops output off rank 0 (MAE/DeiT
    # ``setup_for_distributed``, MoCo's ``print_pass``): it covers the code that module reaches
    print_silencers: dict[str, int] = field(default_factory=dict)
    files: int = 0
    set_epoch_modules: set[str] = field(default_factory=set)  # modules that call ``x.set_epoch(...)``
    epoch_sampler_classes: set[str] = field(
        default_factory=set
    )  # qualnames of ``Summary.epoch_sampler`` classes
    # defs whose returned loaders draw from a project class of another module, read before that class
    # was summarised: (def, the class's qualname, what it returns over it, what its calls pass), kept
    # once the class is known to be an epoch-ordered sampler (``ProjectIndex._finish_project_samplers``)
    _pending_sampler_loaders: list[tuple[Summary, str, dict[int, str], list[CallShape]]] = field(
        default_factory=list
    )
    # modules whose every ``set_epoch`` sits under ``if self.ddp:`` of a constructor flag with a false
    # default: (class qualname, its ``__init__``, parameter, attribute) per call, and the names of the
    # module-level units those calls reach (project_scan ``_set_epoch_module``), until decided
    _gated_set_epoch: dict[
        str, tuple[list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str, str]], set[str]]
    ] = field(default_factory=dict)
    wraps_ddp: bool = False  # some file wraps a model in DDP/FSDP
    wraps_plain_ddp: bool = False  # some file wraps a model in DistributedDataParallel itself
    uses_scaler: bool = False  # some file uses a GradScaler (or a scaling wrapper)
    tests_use_scaler: bool = False  # some test module does (it covers the test modules only)
    # The training modules that use one: a scaler covers the code its module imports and the code
    # that imports it, not a sibling entry script (LlamaGen's GradScaler in ``vq_train.py`` does not
    # scale ``train_c2i_fsdp.py``).
    scaler_modules: set[str] = field(default_factory=set)
    # Those of them that build no GradScaler: their only scaling is ``scaler.scale(loss).backward()``
    # on a scaler handed in (Chinese-CLIP's ``train(..., scaler, ...)``), built by a caller.
    scaled_only_modules: set[str] = field(default_factory=set)
    # Classes whose own methods are a module's only GradScaler (4M's ``NativeScalerWithGradNormCount``
    # in ``fourm/utils/native_scaler.py``): the scaler exists where an instance is built, so the
    # modules that build one join ``scaler_modules``, not the module defining the class.
    scaler_classes: set[str] = field(default_factory=set)
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
    # Option defaults written anywhere in the project (lint/option_defaults.py: argparse options of a
    # parser module, configuration classes and dataclasses, ``cfg.syncbn = False`` at module level):
    # option -> literal, CONFLICT where two places write different values
    option_defaults: dict[str, object] = field(default_factory=dict)
    _yaml_files: list[Path] | None = None  # the YAML configurations shipped under root (lazy)
    # the files the word pre-check left unsummarised (a configuration module mentioning no fact
    # word: imagenette-ddp's ``Config = dict(MODEL="efficientnet_b3")``), read for an option's
    # default only, and each file's defaults once (lazy)
    _unscanned: list[tuple[str, Path]] = field(default_factory=list)
    _unscanned_defaults: dict[Path, dict[str, object]] = field(default_factory=dict)
    _launch_files: list[Path] | None = None  # the shell launch scripts shipped under root (lazy)
    # answers read from those files, by the option asked about (each file is read once per question,
    # not once per rule and file that asks it)
    _option_answers: dict[str, tuple[bool, object]] = field(default_factory=dict)
    _launch_answers: dict[tuple[str, ...], list[tuple[object, str]]] = field(default_factory=dict)
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
    # Module-level tables of project classes, by qualname (``models.backbones.model_zoo = {'resnet50':
    # resnet50, ...}``): a def of another module that imports and reads one may build any entry
    class_tables: dict[str, set[str]] = field(default_factory=dict)
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
    # Files whose loss flow returns the loss from some def and which call project code: (module, path,
    # the project target each called spelling names). Their flows are read again once every class is
    # summarised, with the meter classes whose update reduces known (IndexScan._refine_meter_returns).
    _meter_flows: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
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
    # What any call of project code passes (lint/call_arguments.py): callee (a qualname, or ``.name``
    # for ``obj.name(...)``) -> argument positions and keyword names, ``*`` for ``*args``/``**kw`` or
    # the callee handed on as a value (``partial(f, ...)``, a callback). MetaICL's
    # ``do_train(..., gradient_accumulation_steps=1)`` that no call passes a count to.
    passed_arguments: dict[str, set[int | str]] = field(default_factory=dict)
    # classes whose every construction hands a rank-0 test to these parameters (names or positions)
    rank0_handed: dict[str, set[str | int]] = field(default_factory=dict)
    # per project class, the arguments every construction so far binds to the rank itself, and, once
    # the index is complete, the classes with some (Multi_Lanes_Detection's ``main_pod=args.rank``)
    _rank_args: dict[str, dict[str | int, frozenset[tuple[str, int]]]] = field(default_factory=dict)
    rank_handed: dict[str, set[str | int]] = field(default_factory=dict)
    # method names whose every call in the project (``obj.name(...)``) hands a rank-0 test to these
    # arguments (voxceleb ``trainer.train_network(loader, verbose=(args.gpu == 0))``)
    rank0_method_args: dict[str, set[str | int]] = field(default_factory=dict)
    # project function qualname -> its arguments (names, positions) every call binds to a rank-0 test
    rank0_function_args: dict[str, set[str | int]] = field(default_factory=dict)
    # per project function, the arguments every call so far binds to a name it got from a call of
    # project code (callee, returned position), and, once the index is complete, those whose callee
    # returns a loader over a shuffling DistributedSampler there: argument -> "file.py:line" of the
    # sampler (comp4471's ``train_loop(..., loader_train=loader_train)`` with ``loader_train,
    # loader_val = configure_data(cfg)``)
    _loader_args: dict[str, dict[str | int, frozenset[tuple[str, int]]]] = field(default_factory=dict)
    sampler_loader_args: dict[str, dict[str | int, str]] = field(default_factory=dict)
    _children: dict[str, set[str]] | None = None  # class -> its direct project subclasses (lazy)
    # which defs and classes nothing in the project names (lint/project_reach.py): their code never runs
    reach: Reach = field(default_factory=Reach)
    rank0_callees: set[str] = field(default_factory=set)
    _wrapper_names: tuple[str, ...] | None = None
    _plain_loader_names: tuple[str, ...] | None = None
    _bn_modules: set[str] | None = None
    _heads: tuple[int, set[str]] | None = None  # (module count, first parts): module_heads()
    _by_module: tuple[int, dict[str, dict[str, str]]] | None = None  # module_reexports()
    star_cache: dict[str, dict[str, str]] = field(default_factory=dict)  # project_modules.star_names
    _local_names: set[str] = field(default_factory=set)  # top-level defs of the file being summarised
    _loss_names: tuple[str, ...] | None = None
    _compile_names: tuple[str, ...] | None = None
    _fp16_cast_names: tuple[str, ...] | None = None

    # --- building ------------------------------------------------------------------------------

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
                source = self.resolve_module(absolute_module(node, module + ".__init__") or "")
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

    def module_reexports(self, module: str) -> dict[str, str]:
        """``{name: outside qualname}`` of what a project module imports from outside the project
        (``utils.py``'s ``import torch``): what ``from utils import *`` hands its importer."""
        if self._by_module is None or self._by_module[0] != len(self.reexports):
            grouped: dict[str, dict[str, str]] = {}
            for key, target in self.reexports.items():
                mod, _, name = key.rpartition(".")
                grouped.setdefault(mod, {})[name] = target
            self._by_module = (len(self.reexports), grouped)
        return self._by_module[1].get(module, {})

    def module_heads(self) -> set[str]:
        """The first parts of the project's module names (``yolox`` of ``yolox.models.yolox``)."""
        if self._heads is None or self._heads[0] != len(self.modules):
            self._heads = (len(self.modules), {m.partition(".")[0] for m in self.modules})
        return self._heads[1]

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
            if (
                local is not None
                and not rest
                and self.star_imports.get(local)
                and not hasattr(builtins, text)
            ):
                # a name a star import brings (RNN-T-ASR's ``from encoders import *`` then
                # ``ConformerEncoder(...)``): looked up in the star-imported modules (``_star_get``)
                return f"{local}.{text}"
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
        return most_build_batchnorm(found)

    def pick_builds_batchnorm(self, pick: str) -> bool:
        """``pick`` is "package|name" (lint/model_picks.py): most project defs named ``name`` under
        ``package`` build BatchNorm."""
        return most_build_batchnorm(self.pick_candidates(pick))

    def pick_candidates(self, pick: str) -> list[Summary]:
        """The project defs named ``name`` under ``package`` (``pick`` is "package|name"). An
        ambiguous package name (HigherHRNet's ``models``: ``lib.models`` and ``lib.config.models``)
        stands for each package so named; the builder's own name picks among them."""
        package, name = split_pick_key(pick)
        if not package:  # a module named wholly at run time: any project def so named
            return [s for q, s in self.summaries.items() if q.rsplit(".", 1)[-1] == name]
        module = self.resolve_module(package)
        packages = [module] if module is not None else [m for m in self.modules if m.endswith("." + package)]
        if module is None and any(m.startswith(package + ".") for m in self.modules):
            packages.append(
                package
            )  # a directory of modules without an ``__init__.py`` (voxceleb ``models/``)
        return [
            s
            for q, s in self.summaries.items()
            if q.rsplit(".", 1)[-1] == name and any(q.startswith(p + ".") and s.module != p for p in packages)
        ]

    def _registry_name(
        self, imports: dict[str, str], module: str, module_names: set[str], text: str
    ) -> str | None:
        """The qualname of a registry object spelled ``text`` in ``module`` (imported or its own;
        also through an imported module: lufficc SSD ``registry.BACKBONES``)."""
        if "." in text:
            head, _, rest = text.partition(".")
            if head not in imports or not all(p.isidentifier() for p in text.split(".")):
                return None
            return self._project_target(imports, ast.Attribute(value=ast.Name(id=head), attr=rest))
        if text in imports:
            target = self._project_target(imports, ast.Name(id=text))
            return target
        return f"{module}.{text}" if text in module_names else None

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
            return (
                self._get(f"{module}.{text}")
                or self._star_imported(ctx, text)
                or self._local_alias(ctx, func)
            )
        head, _, rest = text.partition(".")
        if head == "self" and "." not in rest:  # ``self.save_logs(...)``: the method of the caller's class
            fn = ctx.enclosing_function(func)
            owner = ctx.method_owner(fn)
            if owner is not None:
                return self._inherited(f"{module}.{owner.name}", rest)
            return None
        target = self._project_target(imports, func)
        if target is None and rest and head in ctx.import_choices:
            return self._one_choice(ctx.import_choices[head], head, func)
        found = self._get(target) if target else None
        if found is None and rest and "." not in rest:
            found = self._class_method(ctx, head, target, rest)
        return found

    def _class_method(self, ctx: FileContext, head: str, target: str | None, name: str) -> Summary | None:
        """``Cls.name(...)`` called on a project class that inherits the method (semseg_benchmark's
        ``Trainer.build_model(cfg)``, a static method of ``Trainer``'s base ``DistBaseTrainer``): the
        base's method; the class of this file or imported."""
        cls = target.rpartition(".")[0] if target else f"{ctx.module}.{head}"
        if head in ctx.absolute_imports and not target:
            return None
        summary = self._get(cls)
        if summary is None or not is_class_summary(summary):
            return None
        return self._inherited(cls, name)

    def _local_alias(self, ctx: FileContext, func: ast.AST) -> Summary | None:
        """A name bound once in its scope (or the module) to project code by another name
        (``build = data.build_loader``), or to one of two by a condition (gns ``get_data_loader =
        distribute.get_distributed_loader if cuda else data_loader.get_loader``): the branch a
        distributed run takes, where the names or the test say which; None when they do not."""
        if not isinstance(func, ast.Name) or func not in ctx.parents or id(func) in self._aliasing:
            return None  # (``a = b`` and ``b = a``: each alias is followed once)
        self._aliasing.add(id(func))
        try:
            return self._alias_target(ctx, func)
        finally:
            self._aliasing.discard(id(func))

    def _alias_target(self, ctx: FileContext, func: ast.Name) -> Summary | None:
        scope = ctx.enclosing_function(func)
        binds = ctx.bindings(scope).get(func.id) or (
            ctx.bindings(ctx.tree).get(func.id, []) if scope is not ctx.tree else []
        )
        if len(binds) != 1 or not isinstance(bound := binds[0], ast.Assign) or len(bound.targets) != 1:
            return None
        if not isinstance(bound.targets[0], ast.Name) or bound.targets[0].id != func.id:
            return None
        value = bound.value
        if isinstance(value, (ast.Attribute, ast.Name)) and dotted(value) != func.id:
            return self.summary_for(ctx, value)
        if not isinstance(value, ast.IfExp):
            return None
        branches = [
            (b, found)
            for b in (value.body, value.orelse)
            if isinstance(b, (ast.Attribute, ast.Name))
            and dotted(b) != func.id
            and (found := self.summary_for(ctx, b)) is not None
        ]
        if len(branches) == 1:
            return branches[0][1]
        if len(branches) != 2:
            return None
        named = [found for b, found in branches if DISTRIBUTED_NAME.search(dotted(b) or "")]
        if len(named) == 1:
            return named[0]
        test = value.test
        if DISTRIBUTED_NAME.search(ast.unparse(test)) and not negative_test(test):
            return branches[0][1]  # ``a if args.distributed else b``
        return None

    def _inherited(self, cls: str, name: str) -> Summary | None:
        """The method ``self.name(...)`` runs in a method of ``cls``: ``cls``'s own, else the first
        found in its project base classes, depth first in the order they are written (DBNet's
        ``Trainer(BaseTrainer)`` calls ``self.logger_info(...)``, defined in another file's base)."""
        seen: set[str] = set()
        todo = [cls]
        while todo and len(seen) < 16:
            current = self._defined_class(todo.pop(0)) or ""
            if current in seen:
                continue
            seen.add(current)
            found = self._get(f"{current}.{name}")
            if found is not None:
                return found
            summary = self.summaries.get(current)
            todo = [*(summary.class_bases if summary is not None else ()), *todo]
        return None

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
            and (m := self.resolve_module(absolute_module(node, relative_base(ctx, module)) or ""))
            is not None
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
        sources = [*self._star_sources.get(pkg, ()), *self.star_imports.get(pkg, ())]
        found = [s for m in dict.fromkeys(sources) if (s := self.summaries.get(f"{m}.{name}"))]
        return found[0] if len(found) == 1 else None

    def method_summaries(self, func: ast.AST) -> list[Summary]:
        """Every project method that ``obj.name(...)`` may run, by method name (types unknown)."""
        if isinstance(func, ast.Attribute):
            return self.methods.get(func.attr, [])
        return []

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

    def _constructed_method(self, ctx: FileContext, call: ast.Call) -> Summary | None:
        """The project method ``obj.m(...)`` runs when ``obj`` is bound in this scope only to
        instances of one project class (``trainer = Trainer(...)`` ... ``trainer.train(...)``;
        ``FileContext.constructors``)."""
        funcs = ctx.constructors(call)
        classes = {self._project_target(ctx.absolute_imports, f) for f in funcs or []}
        if len(classes) != 1:
            return None
        cls = self._defined_class(classes.pop())
        assert isinstance(call.func, ast.Attribute)  # constructors() found bindings: ``obj.m(...)``
        return self._get(f"{cls}.{call.func.attr}") if cls else None

    def _defined_class(self, cls: str | None) -> str | None:
        """Where ``cls`` is defined, through package re-exports (``neuralop.Trainer`` is
        ``neuralop.training.trainer.Trainer``)."""
        for _ in range(4):
            if cls is None or cls in self.summaries or cls not in self.name_alias:
                break
            cls = self.name_alias[cls]
        return cls

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
        cls = self._defined_class(self._project_target(ctx.absolute_imports, annotation))
        return self._get(f"{cls}.{func.attr}") if cls else None

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


def most_build_batchnorm(candidates: list[Summary]) -> bool:
    """The majority rule for a model chosen at run time among candidates (a registry's classes, the
    defs a pick can name): it builds BatchNorm when more than half of them do."""
    return bool(candidates) and 2 * sum(s.builds_batchnorm for s in candidates) > len(candidates)
