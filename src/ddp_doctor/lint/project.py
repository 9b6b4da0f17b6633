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

The index is split by concern; :class:`ProjectIndex` (this module) builds it and spreads the
summaries through calls (``_propagate``), on top of:

- project_summary.py: the per-def record (``Summary``) and the rule-owned facts (``FACTS``);
- project_modules.py: files as modules (names, import tables, parsing, ``attach``);
- project_core.py: the index's tables and name resolution (``IndexCore``: ``summary_for``);
- project_bindings.py: project-wide spellings and rank-0 call sites (``IndexBindings``);
- project_scan.py: summarising one file, each def walked once (``IndexScan``);
- project_def_facts.py, project_log_facts.py: facts of one def read from its own tree;
- project_queries.py: the rules' questions to the finished index (``IndexQueries``).

Rules import ``ProjectIndex`` (and the few names in ``__all__``) from here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ddp_doctor.lint.batchnorm_syntax import (
    OptionSwitch,
    gives_other_model,
    option_switch_builds,
    passes_switch,
)
from ddp_doctor.lint.idioms import DDP
from ddp_doctor.lint.project_core import GENERIC_METHODS, most_build_batchnorm
from ddp_doctor.lint.project_log_facts import parameters_logged
from ddp_doctor.lint.project_modules import (
    FACT_WORDS,
    MAX_FILE_BYTES,
    absolute_imports,
    attach,
    is_test_module,
    module_name,
    parse_file,
)
from ddp_doctor.lint.project_queries import IndexQueries
from ddp_doctor.lint.project_scan import IndexScan
from ddp_doctor.lint.project_summary import FACTS, Summary, is_class_summary, propagated_flags
from ddp_doctor.lint.samplers import WHOLE, passes_epoch

__all__ = [
    "DDP",
    "FACTS",
    "ProjectIndex",
    "Summary",
    "absolute_imports",
    "attach",
    "module_name",
    "parameters_logged",
]

ROUNDS = 12  # propagation stops earlier when nothing changes; model builders nest 5-6 calls deep


class ProjectIndex(IndexScan, IndexQueries):
    """The project index: built once per linted directory (:meth:`build`), then asked by the rules."""

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
                index.reach.add_path(path)  # a notebook (or stub) may name a def of the project
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    index.reach.add_path(path)
                    continue
            except OSError:
                continue
            module = module_name(root, path)
            index.modules[module] = str(path)
            paths.append((module, path))
        index.files = len(index.modules)
        index._register_aliases()
        for module, path in paths:  # package re-exports before any summary resolves through them
            if path.name == "__init__.py" and (ctx := parse_file(path)) is not None:
                index._register_reexports(module, ctx)
        for module, path in paths:
            ctx = parse_file(path, FACT_WORDS)
            if ctx is None:
                index._unscanned.append((module, path))
                index.reach.add_path(path, module)  # its words name defs (unparsed, or no fact word)
                continue
            try:
                index.reach.add(module, ctx)
                index._summarise(module, ctx)
            except RecursionError:
                index.reach.unknown = True
                continue
        index._refine_meter_returns()
        index._finish_project_samplers()
        index._finish_set_epoch_gates()
        index._settle_factory_names()
        index._settle_bn_options()
        # what each def converts and builds by itself, before its callees' flags join
        own_converts = {q for q, x in index.summaries.items() if x.converts_syncbn}
        own_builds = {q for q, x in index.summaries.items() if x.builds_batchnorm}
        index._propagate()
        index._settle_partial_conversions(own_converts, own_builds)
        index.reach.read_text_files(root)
        index.reach.settle()
        return index

    def _settle_factory_names(self) -> None:
        """A def building a model by a factory from a parameter whose default names a BatchNorm family
        (``Summary.bn_name_param``) builds BatchNorm unless every project call of it hands that
        parameter another literal name: a call that passes nothing, or a configured value, takes the
        BatchNorm default (ACT's ``VisionBackbone(backbone_name=backbone_name)`` under a policy whose
        own default is ``resnet18``)."""
        given: dict[str, list[frozenset[str]]] = {}
        for s in self.summaries.values():
            for callee, names in s.model_names.items():
                given.setdefault(callee, []).extend(names)
        for qual, s in self.summaries.items():
            if s.bn_name_param is not None and not s.builds_batchnorm and not s.keeps_eval:
                s.builds_batchnorm = not gives_other_model(given.get(qual, []), s.bn_name_param)

    def _settle_bn_options(self) -> None:
        """A def whose BatchNorm layers are built only under configuration options builds BatchNorm
        when some layer's options all hold under the project's defaults, or one is not known (a
        YAML configuration setting it otherwise, an option written nowhere); a project callee built
        only under options (``Summary.bn_option_callees``) is optional when every call's are off."""
        for s in self.summaries.values():
            if s.bn_options and not s.builds_batchnorm:
                s.builds_batchnorm = any(all(self._option_builds(o) for o in layer) for layer in s.bn_options)
            for callee, calls in s.bn_option_callees.items():
                # a project model built only under options the project defaults to off (a
                # BatchNorm PostNet behind ``use_postnet: False``) is not on the run's path
                if any(all(self._option_builds(o) for o in call) for call in calls):
                    s.bn_optional.discard(callee)
                else:
                    s.bn_optional.add(callee)
                    s.refs.discard(callee)

    def _option_builds(self, switch: OptionSwitch) -> bool:
        known, value = self.option_default(switch[0])
        return not known or option_switch_builds(switch, value)

    def _settle_choices(self, s: Summary) -> bool:
        """``s.bn_choices`` under the majority rule of run-time picks: BatchNorm built when most
        candidates of a choice build it, picked (``picks_batchnorm``) when only some do. True when it
        changed a flag."""
        if s.builds_batchnorm or s.keeps_eval or not s.bn_choices:
            return False
        groups = [[t for q in sorted(g) if (t := self._get(q)) is not None] for g in s.bn_choices.values()]
        if any(most_build_batchnorm(g) for g in groups):
            s.builds_batchnorm = True
            return True
        if not s.picks_batchnorm and any(t.builds_batchnorm for g in groups for t in g):
            s.picks_batchnorm = True
            return True
        return False

    def _built_callees(self, s: Summary) -> Iterator[Summary]:
        """The project callees whose BatchNorm ``s`` holds (``_propagate``'s condition): what a class
        constructs, what a function returns, not a callee built only under an option that is off."""
        for callee in s.callees:
            c = self._get(callee)
            if c is not None and (
                (is_class_summary(s) or is_class_summary(c) or callee in s.returned_callees)
                and callee not in s.bn_optional
            ):
                yield c

    def _settle_partial_conversions(self, own_converts: set[str], own_builds: set[str]) -> None:
        """A model whose SyncBatchNorm comes only from some of its parts converts nothing else: a
        backbone building ``nn.SyncBatchNorm`` itself beside decoder heads with plain
        ``nn.BatchNorm2d`` (MNCDV3's ViT-Adapter and UperNet heads), or a discriminator class whose
        ``norm_layer=nn.SyncBatchNorm`` default the model replaces by ``nn.BatchNorm2d`` (the
        medicaldiffusion VQGAN). ``converts_syncbn`` spread from a callee is taken back where the def
        builds BatchNorm of its own, or holds another callee whose BatchNorm is not converted; a
        conversion or SyncBatchNorm choice the def makes itself still covers all it holds."""
        partial: set[int] = set()
        for _ in range(ROUNDS):
            changed = False
            for qual, s in self.summaries.items():
                if id(s) in partial or not s.converts_syncbn or qual in own_converts or s.keeps_eval:
                    continue
                if qual in own_builds or any(
                    c.builds_batchnorm and (not c.converts_syncbn or id(c) in partial)
                    for c in self._built_callees(s)
                ):
                    partial.add(id(s))
                    changed = True
            if not changed:
                break
        for s in self.summaries.values():
            if id(s) in partial:
                s.converts_syncbn = False

    def _module_namespace(self, module: str) -> list[str]:
        """The modules whose defs ``module``'s namespace holds: itself and, for a package whose
        ``__init__.py`` does ``from .resnet import *``, those star-imported modules (audio-ssl's
        ``audio_models.__dict__[name](...)`` picks a def of ``audio_models/resnet.py``)."""
        return [module, *self._star_sources.get(module, ()), *self.star_imports.get(module, ())]

    def _propagate(self) -> None:
        sums = self.summaries
        for _ in range(ROUNDS):
            changed = False
            bn_modules = {q.rsplit(".", 1)[0] for q, x in sums.items() if x.builds_batchnorm}
            for s in sums.values():
                if (
                    not s.builds_batchnorm
                    and not s.keeps_eval
                    and any(
                        (r.endswith(".*") and any(m in bn_modules for m in self._module_namespace(r[:-2])))
                        # a reference (a subclass, ``block=BasicConv``) is built with arguments not seen here;
                        # one it calls itself (an imported ``makeMLP(c_in, c_out)`` whose BatchNorm waits on
                        # ``batch_norm=False``) is built with the arguments its calls hand it
                        or (
                            (ref := self._get(r)) is not None
                            and (
                                ref.builds_batchnorm
                                or (
                                    ref.bn_switch is not None
                                    and (
                                        r not in s.switch_calls
                                        or passes_switch(s.switch_calls[r], ref.bn_switch)
                                    )
                                )
                            )
                        )
                        or (r.startswith("registry:") and self._registry_builds_batchnorm(r[9:]))
                        or (r.startswith("pick:") and self.pick_builds_batchnorm(r[5:]))
                        or any(
                            (t := self._get(e)) is not None and t.builds_batchnorm
                            for e in self.class_tables.get(r, ())
                        )
                        for r in s.refs
                    )
                ):
                    s.builds_batchnorm = changed = True
                changed |= self._settle_choices(s)
                for callee in s.callees:
                    c = self._get(callee)
                    if c is None:
                        continue
                    before = propagated_flags(s)
                    if not is_class_summary(c):
                        s.calls_backward |= c.calls_backward
                        s.returns_reduced |= callee in s.reduce_callees and c.returns_reduced
                        s.toggles_sync |= c.toggles_sync
                    # a function builds what it constructs and what it returns, not what a helper
                    # it calls does to its argument (KAIR ``merge_bn(self.netG)``, transformers'
                    # trainer helpers); a class holds everything its methods build
                    if (
                        (is_class_summary(s) or is_class_summary(c) or callee in s.returned_callees)
                        and callee not in s.bn_optional
                        and not s.keeps_eval
                    ):
                        s.builds_batchnorm |= c.builds_batchnorm or passes_switch(
                            s.switch_calls.get(callee, []), c.bn_switch
                        )
                        s.picks_batchnorm |= c.picks_batchnorm
                        s.converts_syncbn |= c.converts_syncbn
                    if callee in s.returned_callees:
                        s.returns_ddp |= c.returns_ddp
                        if not is_class_summary(c) and c.returns_loss is not None and s.returns_loss is None:
                            s.returns_loss, changed = c.returns_loss, True
                    changed |= before != propagated_flags(s)
            if not changed:
                break
        self._finish_instances()
        self._finish_plain_loaders()
        for s in sums.values():  # ``@master_only def log_info(msg): logger.info(msg)``: rank 0 only
            if s.logs and any((d := self._get(q)) is not None and d.rank0_decorator for q in s.decorators):
                s.logs_rank0 = True
        for spelling, built in self._call_bound.items():
            classes: list[Summary | None] = []
            for b in built:
                f = sums.get(b)
                if f is not None and not is_class_summary(f):  # ``metrics = init_logging()``
                    classes += [sums.get(r) for r in f.returned_callees] or [None]
                else:
                    classes.append(f)
            if all(f is not None and is_class_summary(f) and f.syncs_updates for f in classes):
                self.synced_meter_names.add(spelling)
        for qual, s in sums.items():  # functions and methods the project calls on rank 0 only
            if is_class_summary(s) or not s.logs:
                continue
            name = qual.rsplit(".", 1)[-1]
            keys = [qual] if s.qualname.count(".") == s.module.count(".") + 1 else []
            if not keys:  # a method: ``obj.name(...)`` / ``self.name(...)``, by name
                # every call of that name in the project is guarded, whichever class defines it: a
                # base class's ``self.report()`` under ``if rank == 0:`` reaches the overrides of
                # its subclasses too (UER-py's six ``report_and_reset_stats``)
                if name in GENERIC_METHODS:
                    continue
                keys = [qual, f".{name}"]
            sites = [self._guarded_calls[k] for k in keys if k in self._guarded_calls]
            if sites and all(sites):
                self.rank0_callees.add(qual)
        self._guarded_calls = {}
        self._finish_rank0_handoff()
        self._finish_rank_handoff()
        self._finish_loader_args()
        for spelling in self._backprop_spellings:  # ``vq_loss = VQLoss(...)``: its ``forward``
            constructed = {b for b in self._call_bound.get(spelling, ()) if b}
            found = [c for c in constructed if (c_s := sums.get(c)) is not None and is_class_summary(c_s)]
            if len(found) == 1 and f"{found[0]}.forward" in sums:
                self.backprop_targets.add(f"{found[0]}.forward")
        self._backprop_spellings = set()
        self._call_bound = {}
        if "scaler" in self.facts:  # a loss-scaling object (timm NativeScaler) is a scaler
            self.uses_scaler |= bool(self.backward_objects)

    def _finish_project_samplers(self) -> None:
        """A def returning a loader over a project class of another module (``_project_sampler_loaders``)
        returns one over a shuffling DistributedSampler when that class orders its samples by epoch
        and no call of it there hands it the epoch (``samplers.passes_epoch``)."""
        for s, target, found, shapes in self._pending_sampler_loaders:
            cls = self._get(target)
            if cls is None or not cls.epoch_sampler or s.sampler_loaders:
                continue
            if not any(passes_epoch(shape, cls.epoch_sampler_param) for shape in shapes):
                s.sampler_loaders = found
        self._pending_sampler_loaders = []

    def _finish_set_epoch_gates(self) -> None:
        """A module whose every ``set_epoch`` waits on a constructor flag left false (kpgt's ``if
        self.ddp:``, ``Trainer(...)`` built without ``ddp=``) stays one without ``set_epoch``; one where
        some construction may pass the flag calls it after all: its defs that reach a call lose the
        epoch facts read as if it did not (``epoch_params``), and all its defs the sampler facts
        (project_scan ``_function_facts`` reads those only in modules without ``set_epoch``)."""
        for module, (gates, units) in self._gated_set_epoch.items():
            if all(self.never_constructed_with(cls, init, param, attr) for cls, init, param, attr in gates):
                continue
            self.set_epoch_modules.add(module)
            for s in self.summaries.values():
                if s.module != module:
                    continue
                s.sampler_loaders, s.returns_sampler = {}, None
                if s.qualname[len(module) + 1 :].split(".")[0] in units:
                    s.epoch_params = set()
        self._gated_set_epoch = {}

    def _finish_plain_loaders(self) -> None:
        """A def that returns the whole result of a project call returning a sampler-less loader returns
        that loader (cloud-phase-prediction's ``preProcessing`` → ``prepare_data``), a few calls deep;
        none from a def that may shard its data by rank."""

        def may_shard(s: Summary) -> bool:
            # a def that reads the rank and world size, or calls a dataset class or function that
            # does, may shard its data by rank: its loaders are not known to draw the whole dataset
            return s.reads_rank_and_world or any(
                (c := self._get(q)) is not None and c.reads_rank_and_world for q in s.callees
            )

        for s in self.summaries.values():
            if (s.plain_loaders or s.param_shuffled_loaders or s.flag_gated_loaders) and may_shard(s):
                s.plain_loaders, s.param_shuffled_loaders, s.flag_gated_loaders = {}, {}, {}
        pending = [s for s in self.summaries.values() if s.plain_loader_calls and not may_shard(s)]
        for _ in range(3):
            grew = False
            for s in pending:
                for position, callee in s.plain_loader_calls.items():
                    c = self._get(callee)
                    if c is not None and WHOLE in c.plain_loaders and position not in s.plain_loaders:
                        s.plain_loaders[position] = c.plain_loaders[WHOLE]
                        grew = True
            if not grew:
                break

    def _finish_instances(self) -> None:
        """Objects built from project classes: backward objects (a class whose ``__call__`` backprops)
        and the modules that build a loss-scaling object or a class holding a GradScaler (they scale)."""
        for target, names, module in self._pending:
            scaling = "scaler" in self.facts and not is_test_module(module)
            built = self._get(target)
            if scaling and built is not None and built.qualname in self.scaler_classes:
                self.scaler_modules.add(module)  # an instance of a project class holding a GradScaler
                self.scaled_only_modules.discard(module)
            if built is not None and (
                built.qualname in self.rank0_sink_classes
                or self._attached_on_rank0_only(built.qualname, names, module)
            ):
                self.rank0_objects |= {n.split(".")[-1] for n in names}  # a rank-0-only writer's instance
            pending = self.summaries.get(target)
            if pending is not None and is_class_summary(pending) and pending.calls_backward:
                self.backward_objects |= {n.split(".")[-1] for n in names}
                if scaling:
                    self.scaler_modules.add(module)  # a loss-scaling object (timm NativeScaler)
                    self.scaled_only_modules.discard(module)
        self._pending = []

    def _attached_on_rank0_only(self, cls: str, names: set[str], module: str) -> bool:
        """``cls`` holds no writer until a method attaches one (UNITER's ``TB_LOGGER.create(path)``),
        and every call of that method the project makes, on this instance (imported from ``module``:
        ``utils.logger.TB_LOGGER.create``) or on any object by that name (``obj.create(...)``), sits
        under a rank-0 test: the instance writes on rank 0 only."""
        attach = self.attached_writer_classes.get(cls)
        if attach is None:
            return False
        keys = [f".{attach}", *(f"{module}.{n}.{attach}" for n in names if "." not in n)]
        sites = [self._guarded_calls[k] for k in keys if k in self._guarded_calls]
        return bool(sites) and all(sites)

    def _finish_rank0_handoff(self) -> None:
        """Classes whose every construction hands a rank-0 test to a parameter (its dependencies on
        returned tuples checked now that every file's returns are known)."""
        for key, args in self._rank0_args.items():
            kept = {a for a, deps in args.items() if all(self._returns_rank0_at(q, p) for q, p in deps)}
            if key.startswith("."):  # ``obj.name(...)``: every call of that method name
                if kept and key[1:] not in GENERIC_METHODS:
                    self.rank0_method_args[key[1:]] = kept
                continue
            built = self._get(key)
            if built is not None and is_class_summary(built) and kept:
                self.rank0_handed[built.qualname] = kept
            elif built is not None and kept:  # a function: ``train(loader, verbose=(worker_idx == 0))``
                self.rank0_function_args[built.qualname] = kept
        self._rank0_args = {}

    def _finish_rank_handoff(self) -> None:
        """Classes whose every construction hands the rank itself to a parameter."""
        for key, args in self._rank_args.items():
            built = self._get(key)
            if built is not None and is_class_summary(built) and args:
                self.rank_handed[built.qualname] = set(args)
        self._rank_args = {}

    def _finish_loader_args(self) -> None:
        """Arguments of project functions that every call hands a loader over a shuffling
        DistributedSampler (returned by project code of a module that never calls ``set_epoch``)."""
        for key, args in self._loader_args.items():
            built = self._get(key)
            if built is None or is_class_summary(built):
                continue
            kept: dict[str | int, str] = {}
            for arg, deps in args.items():
                places = [self._sampler_loader_at(q, p) for q, p in deps]
                if places and all(places):
                    kept[arg] = str(places[0])
            if kept:
                self.sampler_loader_args[built.qualname] = kept
        self._loader_args = {}

    def _sampler_loader_at(self, qualname: str, position: int) -> str | None:
        target = self._get(qualname)
        return target.sampler_loaders.get(position) if target is not None else None

    def _returns_rank0_at(self, qualname: str, position: int) -> bool:
        target = self._get(qualname)
        return target is not None and position in self.rank0_returns.get(target.qualname, ())
