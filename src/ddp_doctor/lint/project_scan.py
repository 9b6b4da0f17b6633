"""Summarising one file: its imports, project-wide flags (DDP wraps, GradScalers, sync toggles,
configuration defaults), then one :class:`~ddp_doctor.lint.project_summary.Summary` per top-level
def, class and method, each def walked once (:meth:`IndexScan._scan_body`), with the rule facts the
selected rules declare (:data:`~ddp_doctor.lint.project_summary.FACTS`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ddp_doctor.lint.batchnorm_syntax import (
    BATCHNORM,
    TORCHVISION_BN_CLASS,
    batchnorm_reference,
    batchnorm_subclass,
    batchnorm_tables,
    builds_from_reference,
    call_shape,
    chooses_other_norm,
    factory_name,
    freezes_batchnorm,
    keeps_eval_mode,
    layer_switch,
    library_batchnorm,
    mmcv_batchnorm,
    names_other_model,
    names_syncbn,
    norm_option_selector,
    off_by_default,
    option_switches,
    torchvision_pick,
    type_chosen_slot,
)
from ddp_doctor.lint.call_arguments import constructor_guard
from ddp_doctor.lint.context import FileContext, dotted, init_of, method, walk_local
from ddp_doctor.lint.flags import UNKNOWN, argparse_choices
from ddp_doctor.lint.idioms import DDP, LOSS_SCALING_OPTIMIZER, SYNC_CONTROL
from ddp_doctor.lint.loops import LoopFacts, backprops_param_itself, backward_of, guarded_in, param_backward
from ddp_doctor.lint.meter_windows import delegated_syncs, sync_windows
from ddp_doctor.lint.model_picks import bound_callee, handed_pick_param, pick_key
from ddp_doctor.lint.module_moves import moved_result
from ddp_doctor.lint.option_defaults import merge_default, written_defaults
from ddp_doctor.lint.overrides import abstract
from ddp_doctor.lint.project_bindings import IndexBindings
from ddp_doctor.lint.project_core import CONFLICT
from ddp_doctor.lint.project_def_facts import (
    assign_targets,
    body_reads_rank_and_world,
    class_epoch_params_of,
    class_syncs_updates,
    compiled_param_of,
    epoch_params_of,
    forwards_kwargs,
    fp16_cast_param,
    fp16_cast_returns,
    fp16_return,
    returned_exprs,
    scaled_backward,
    trained_params_of,
    wraps_parameter,
)
from ddp_doctor.lint.project_log_facts import (
    has_log_call,
    is_rank0_decorator,
    logs_inside,
    logs_rank0_only,
    parameters_logged,
)
from ddp_doctor.lint.project_modules import (
    LOCAL_KEY,
    absolute_imports,
    absolute_module,
    defs_of,
    is_test_module,
    module_level_imports,
    module_level_names,
    parse_file,
    relative_base,
    sibling_imports,
)
from ddp_doctor.lint.project_summary import DATA_PARALLEL, Summary, is_class_summary
from ddp_doctor.lint.provenance import LossFlow, param_call_return
from ddp_doctor.lint.rank0 import class_flags
from ddp_doctor.lint.rank0_sinks import is_null_writer, null_off_rank0_returns
from ddp_doctor.lint.reductions import (
    SCAN_SYNCED_METERS,
    local_only,
    reduced_return_positions,
    reduces_own_state,
    returned_reductions,
)
from ddp_doctor.lint.samplers import (
    CallShape,
    calls_set_epoch,
    defines_epoch_sampler,
    epoch_sampler_class,
    flag_gated_loaders,
    init_epoch_param,
    passed_arguments_shape,
    returned_plain_loaders,
    returned_sampler,
    returned_sampler_loaders,
    set_epoch_calls,
    set_epoch_units,
    top_unit,
)
from ddp_doctor.lint.state_logs import state_logged
from ddp_doctor.lint.syncbn_parameter import conversion_parameter


@dataclass
class _FileScan:
    """What :meth:`IndexScan._summarise` knows of one file before it summarises its defs."""

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
    # ids of the module-level defs a ``set_epoch`` call of the module runs from (samplers.set_epoch_units)
    set_epoch_units: set[int] = field(default_factory=set)


# project classes of other modules read as a def's possible sampler (``_project_sampler_loaders``): a
# loader builder calls a dataset, a sampler, perhaps a collate or transform class; more is no builder
_PENDING_CLASSES = 4


class IndexScan(IndexBindings):
    """Summarises each file of the project (see the module docstring)."""

    def _summarise(self, module: str, ctx: FileContext) -> None:
        """One pass per file: the file's own facts first (imports, star imports, eval, the defs that
        hold a ``.backward``), then one summary per top-level def, class and method, each walked once."""
        if "epochs" in self.facts and calls_set_epoch(ctx):
            self._set_epoch_module(module, ctx)
        imports = self._file_imports(module, ctx)
        self._file_flags(module, ctx)
        defs, methods = defs_of(module, ctx.tree)
        self._name_aliases(module, ctx, imports)
        scan = self._file_scan(module, ctx, imports)
        if scan.flow is not None:
            self._flow_calls(ctx, scan.flow, imports)
            if scan.flow.returns:
                called = {
                    text: target
                    for c in ctx.of_type(ast.Call)
                    if (text := dotted(c.func)) and (target := self._project_target(imports, c.func))
                }
                if called:
                    self._meter_flows.append((module, ctx.path, called))
        if scan.loss and any("loss" in w or "backward" in w for w in ctx.words):
            self._flow_paths.append(ctx.path)
        for qual, node in defs:
            is_method = (qual, node) in methods
            self.summaries[qual] = self._summary(ctx, scan, qual, node, is_method)
            if is_method:
                self.methods.setdefault(qual.rsplit(".", 1)[-1], []).append(self.summaries[qual])
        self._bindings(ctx, imports, module)

    def _refine_meter_returns(self) -> None:
        """What a def returns of the loss, read again where the file builds a project meter class
        whose update reduces across ranks: a file's flow is first read before the files after it are
        summarised, so Cardiobotics' ``res = {"train/loss": loss_values.avg[0]}`` (``loss_values =
        AverageMeterDDP()`` from ``utils/ddp_utils.py``, summarised later) looked like the local loss
        to every caller of ``train_epoch``."""
        for module, path, called in self._meter_flows:
            synced = {text for text, target in called.items() if self._synced_meter_class(target)}
            if not synced:
                continue
            ctx = parse_file(Path(path))
            if ctx is None:
                continue
            ctx.memo[SCAN_SYNCED_METERS] = lambda call, synced=synced: dotted(call.func) in synced
            flow = LossFlow(ctx, LoopFacts(ctx))
            for qual, node in defs_of(module, ctx.tree)[0]:
                s = self.summaries.get(qual)
                if s is not None and not is_class_summary(s):
                    s.returns_loss = flow.returns.get(id(node))
        self._meter_flows = []

    def _synced_meter_class(self, target: str) -> bool:
        s = self._get(target)
        return s is not None and is_class_summary(s) and s.syncs_updates

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
        imports = sibling_imports(
            ctx, absolute_imports(ctx, module), module, self.resolve_module, self.module_heads()
        )
        for name in module_level_imports(ctx.tree):
            target = imports.get(name)
            if target is not None and self._project_module_of(target) is None:
                self.reexports[f"{module}.{name}"] = target
        for node in ctx.tree.body:  # a subclass of DDP (NATSpeech ``ddp_utils.DDP``) stands for DDP
            if isinstance(node, ast.ClassDef) and (wrapper := ctx.wrapper_subclass(node.name)) is not None:
                self.reexports[f"{module}.{node.name}"] = wrapper
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
            and (resolved := self.resolve_module(absolute_module(node, relative_base(ctx, module)) or ""))
            is not None
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
        if not is_test_module(module):
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
                    value if known == value and type(known) is type(value) else CONFLICT
                )
            if "options" in self.facts:  # the defaults of options another file tests
                for option, default in written_defaults(ctx).items():
                    merge_default(self.option_defaults, option, default, CONFLICT)
        self.wraps_ddp |= any(ctx.call_qualname(c) in DATA_PARALLEL for c in ctx.of_type(ast.Call))
        self.wraps_plain_ddp |= any(ctx.call_qualname(c) == DDP for c in ctx.of_type(ast.Call))
        if "scaler" in self.facts:
            # a test's GradScaler scales the tests' losses, not the trainer's (OLMo tests/model_test.py)
            builds = any("GradScaler" in w or LOSS_SCALING_OPTIMIZER.search(w) for w in ctx.words)
            scaler = builds or any(
                (m := method(c)) is not None and m[1] == "backward" and scaled_backward(c)
                for c in ctx.of_type(ast.Call)
            )  # a GradScaler (or a loss-scaling fp16 optimizer) named, or a backward of
            # ``scaler.scale(loss)`` (the scaler built elsewhere)
            for dest, choices in argparse_choices(ctx).items():
                known = self.option_choices.get(dest, choices)
                self.option_choices[dest] = choices if known == choices else None
            if is_test_module(module):
                self.tests_use_scaler |= scaler
            else:
                self.uses_scaler |= scaler
                owners = _scaler_classes(ctx, module) if scaler else None
                if owners:
                    self.scaler_classes |= owners
                elif scaler:
                    self.scaler_modules.add(module)
                    if not builds:
                        # its only scaling is a backward of ``scaler.scale(loss)`` on a scaler handed in
                        self.scaled_only_modules.add(module)
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

    def _project_sampler_loaders(
        self, ctx: FileContext, scan: _FileScan, s: Summary, node: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        """What ``node`` returns of loaders over a class of another project module (3D-Detection-Code's
        ``build_dataloader``: ``sampler = DistributedSampler(dataset, shuffle=shuffle)`` with the class
        imported from ``lib/datasets/loader/sampler.py``, a copy of torch's). Whether that class is an
        epoch-ordered sampler is known once every file is summarised, so each such class (named in
        CapWords, as classes are) is read as one here and kept for ``_finish_project_samplers``."""
        targets = {
            t
            for c in ctx.local(node)
            if isinstance(c, ast.Call)
            and (dotted(c.func) or "").rsplit(".", 1)[-1][:1].isupper()
            and (t := self._project_target(scan.imports, c.func)) is not None
            and not t.startswith(f"{scan.module}.")
        }
        for target in sorted(targets)[:_PENDING_CLASSES]:
            shapes: list[CallShape] = []

            def built_by(call: ast.Call, target: str = target, shapes: list[CallShape] = shapes) -> bool:
                if self._project_target(scan.imports, call.func) != target:
                    return False
                shapes.append(passed_arguments_shape(call))
                return True

            found = returned_sampler_loaders(ctx, node, also=built_by)
            if found:
                self._pending_sampler_loaders.append((s, target, found, shapes))

    def _set_epoch_module(self, module: str, ctx: FileContext) -> None:
        """The module calls ``set_epoch``; when every call sits under ``if self.ddp:`` of a flag a
        constructor parameter with a false default holds (``call_arguments.constructor_guard``), whether
        they run is known only once every construction in the project is seen: the module is read as one
        without ``set_epoch`` until ``_finish_set_epoch_gates`` decides."""
        gates = [constructor_guard(ctx, c) for c in set_epoch_calls(ctx)]
        if "call_arguments" not in self.facts or not gates or any(g is None for g in gates):
            self.set_epoch_modules.add(module)
            return
        units = set_epoch_units(ctx) or set()
        self._gated_set_epoch[module] = (
            [(f"{module}.{g[0].name}", g[1], g[2], g[3]) for g in gates if g is not None],
            {
                u.name
                for u in ctx.tree.body
                if id(u) in units and isinstance(u, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            },
        )

    def _gated_calls(self, module: str, ctx: FileContext) -> frozenset[int]:
        """Ids of the module's ``set_epoch`` calls while they wait on a constructor flag
        (``_set_epoch_module``): the epoch facts read them as not written; if some construction may
        pass the flag, ``_finish_set_epoch_gates`` drops the facts of the defs they reach."""
        if module not in self._gated_set_epoch:
            return frozenset()
        return frozenset(id(c) for c in set_epoch_calls(ctx))

    def _file_scan(self, module: str, ctx: FileContext, imports: dict[str, str]) -> _FileScan:
        bn, loss = "batchnorm" in self.facts, "loss_flow" in self.facts
        module_names = module_level_names(ctx.tree)
        class_tables: dict[str, set[str]] = {}
        if bn:
            class_tables = self._class_tables(ctx, imports, module)
            self.class_tables.update({f"{module}.{name}": found for name, found in class_tables.items()})
            self._register_decorated(ctx, imports, module, module_names)
        backward_defs: set[int] = set()  # top-level defs/classes (and methods) holding a `.backward`
        for attr in ctx.of_type(ast.Attribute):
            if attr.attr == "backward":
                cur = ctx.parents.get(attr)
                while cur is not None:
                    if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        backward_defs.add(id(cur))
                    cur = ctx.parents.get(cur)
        backward_defs |= _calling_backward_defs(ctx, backward_defs)
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
                and (resolved := self.resolve_module(absolute_module(node, relative_base(ctx, module)) or ""))
                is not None
            ],
            uses_eval=any(isinstance(c.func, ast.Name) for c in ctx.calls_named("eval")),
            bn_tables=batchnorm_tables(ctx) if bn else set(),
            module_names=module_names,
            class_tables=class_tables,
            flow=LossFlow(ctx, LoopFacts(ctx))
            if loss and (ctx.mentions("backward", "training_step") or "training_step" in ctx.functions)
            else None,
            backward_defs=backward_defs,
            set_epoch_units=(set_epoch_units(ctx) or set()) if "epochs" in self.facts else set(),
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
        returned, returned_names = returned_exprs(body)
        ddp_names = self._scan_body(ctx, scan, s, node, body, returned, returned_names)
        if ddp_names & returned_names:
            s.returns_ddp = True
        if scan.bn and not isinstance(node, ast.ClassDef):
            s.freezes_batchnorm = freezes_batchnorm(ctx, node)
        elif scan.bn and isinstance(node, ast.ClassDef) and keeps_eval_mode(ctx, node):
            s.keeps_eval, s.builds_batchnorm = True, False  # Cutie's encoders
        if scan.bn and scan.uses_eval:
            s.refs |= {f"{m}.*" for m in scan.star}
        # only code that runs backward can train on a parameter
        if "training_params" in self.facts and id(node) in scan.backward_defs:
            s.trains_on_params = trained_params_of(ctx, node)
        if "training_params" in self.facts and not isinstance(node, ast.ClassDef):
            s.reads_rank_and_world = body_reads_rank_and_world(body)
        elif "training_params" in self.facts and isinstance(node, ast.ClassDef):
            # a dataset class that picks its own rank's share (its methods read a rank and a world
            # size) or is iterable-style (DataLoader refuses a sampler for an IterableDataset: the
            # dataset decides what each rank reads)
            s.reads_rank_and_world = body_reads_rank_and_world(body) or any(
                "IterableDataset" in (ctx.qualname(b) or dotted(b) or "") for b in node.bases
            )
        if "rank0_logging" in self.facts:
            if isinstance(node, ast.ClassDef):
                s.null_writer = is_null_writer(node)
            elif not is_method:
                s.null_off_rank0 = tuple(
                    t
                    for c in null_off_rank0_returns(node)
                    if (t := self._project_target(scan.imports, c.func))
                )
        if isinstance(node, ast.ClassDef):
            # a subclass of a data-parallel wrapper (``class DDP(DistributedDataParallel)``): building it
            # in a file that star-imports its module is that wrap (lint/context.py ``_qualname``)
            s.wrapper_base = ctx.wrapper_subclass(node.name) if ctx.parents.get(node) is ctx.tree else None
            # which methods a subclass leaves to its base: for every rule, as the index resolves
            # ``self.m(...)`` and ``Cls.m(...)`` through it (``summary_for``)
            s.class_bases = tuple(t for b in node.bases if (t := self._project_target(scan.imports, b)))
            if "rank0_logging" in self.facts:
                s.declares_abstract = any(
                    isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and abstract(m) for m in node.body
                )
                s.rank0_flags = tuple(sorted(class_flags(node)))
                s.sync_windows = sync_windows(ctx, node)
                s.delegated_syncs = delegated_syncs(node)
            if scan.bn:  # a subclass has what its project bases build
                s.refs |= {t for b in node.bases if (t := self._project_target(scan.imports, b))}
                if batchnorm_subclass(ctx, node):
                    s.builds_batchnorm = True  # a BatchNorm subclass is a BatchNorm layer
                elif any(TORCHVISION_BN_CLASS.match(ctx.qualname(b) or "") for b in node.bases):
                    s.builds_batchnorm = True  # ``super().__init__`` builds the torchvision model's layers
            s.returns_ddp = False  # calling a class builds an instance of it, never a DDP wrap
            if epoch_sampler_class(ctx, node):
                s.epoch_sampler, s.epoch_sampler_param = True, init_epoch_param(node)
                self.epoch_sampler_classes.add(qual)
            if "epochs" in self.facts and scan.module not in self.set_epoch_modules:
                s.epoch_params = class_epoch_params_of(node, self._gated_calls(scan.module, ctx))
            if scan.loss:
                s.syncs_updates = class_syncs_updates(ctx, node)
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
        if "batchnorm" in self.facts:
            s.picks_param = handed_pick_param(node)
        if "scaler" in self.facts:
            s.fp16_gate = fp16_return(ctx, node)
            s.fp16_cast_param = fp16_cast_param(ctx, node, is_method)
            s.fp16_cast_returns = fp16_cast_returns(
                ctx, node, is_method, lambda f: self._project_target(scan.imports, f)
            )
        if "rank0_logging" in self.facts:
            s.logs_rank0 = logs_rank0_only(ctx, node)
            s.logs_inside = s.logs_rank0 and logs_inside(ctx, node)
            s.logged_params, s.params = parameters_logged(ctx, node)
            s.state_logged = state_logged(ctx, node) if is_method else None
            s.rank0_decorator = is_rank0_decorator(ctx, node)
            s.logs = has_log_call(ctx, node)
            s.decorators = self._decorators(node, scan.module, scan.imports)
        if scan.loss:
            s.returns_loss = scan.flow.returns.get(id(node)) if scan.flow is not None else None
            s.param_call_return = param_call_return(node, body)
        if "compile" in self.facts:
            s.compiles_param = compiled_param_of(ctx, node, method=is_method)
        if "plain_loaders" in self.facts:
            s.plain_loaders, s.plain_loader_calls, s.param_shuffled_loaders = returned_plain_loaders(
                ctx, node, lambda f: self._project_target(scan.imports, f)
            )
            s.flag_gated_loaders = flag_gated_loaders(ctx, node)
        if "epochs" in self.facts and scan.module not in self.set_epoch_modules:
            s.epoch_params = epoch_params_of(ctx, node, is_method, self._gated_calls(scan.module, ctx))
            if ctx.mentions("DistributedSampler") or defines_epoch_sampler(ctx):
                s.sampler_loaders = returned_sampler_loaders(ctx, node)
                if (found := returned_sampler(ctx, node)) is not None:
                    s.returns_sampler = (f"{Path(ctx.path).name}:{found[0]}", found[1], found[2])
            if not s.sampler_loaders and ctx.mentions("sampler", "batch_sampler"):
                self._project_sampler_loaders(ctx, scan, s, node)
        elif "epochs" in self.facts and id(top_unit(ctx, node)) not in scan.set_epoch_units:
            # the module sets some sampler's epoch, but not from this def or anything it runs
            s.epoch_params = epoch_params_of(ctx, node, is_method)
        # shared: what it returns of values combined across ranks (provenance.reducing_call)
        s.returns_reduced, returned = returned_reductions(ctx, node)
        s.reduces_self = is_method and reduces_own_state(ctx, node)
        s.local_only = local_only(ctx, node)
        s.reduce_callees = {t for c in returned if (t := self._project_target(scan.imports, c.func))}
        s.reduced_positions = reduced_return_positions(ctx, node)
        s.returned_calls = self._returned_calls(ctx, scan, s.qualname, node, is_method)
        # shared: the loop model (lint/loops.py) takes a call of it as a backward of its argument
        if s.calls_backward:
            s.backward_param = param_backward(node, body)
            s.backward_param_itself = s.backward_param is not None and backprops_param_itself(node, body)
        # shared: ... and a call of it as an optimizer step, guarded or not
        if any(isinstance(n, ast.Attribute) and n.attr == "step" for n in body):
            if scan.loop_facts is None:
                scan.loop_facts = LoopFacts(ctx)
            guarded = guarded_in(scan.loop_facts, node.body)
            s.steps = "guarded" if type(guarded) is int else "always" if guarded is False else None

    def _returned_calls(
        self,
        ctx: FileContext,
        scan: _FileScan,
        qual: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        is_method: bool,
    ) -> tuple[tuple[str, str], ...]:
        """The project calls ``node`` returns whole (``return self.forward_train(**batch)``, ``return
        self.parse_losses(losses)``): what it returns is what they return (Summary.returned_calls)."""
        out: list[tuple[str, str]] = []
        for r in ctx.local(node):
            if not isinstance(r, ast.Return) or not isinstance(r.value, ast.Call):
                continue
            func = r.value.func
            if (
                is_method
                and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                out.append((qual.rsplit(".", 1)[0], func.attr))
            elif (target := self._project_target(scan.imports, func)) is not None:
                out.append((target, ""))
        return tuple(out)

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
        switches: set[tuple[str, int]] = set()  # parameters its own BatchNorm is built under
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
                if bn:
                    self._scan_batchnorm_call(ctx, scan, s, n, q, m, (node, switches))
                    if (table := self._local_class_table(ctx, imports, n)) is not None:
                        s.bn_choices[f"table@{n.lineno}"] = table  # one of them: the majority rule decides
                if q in DATA_PARALLEL:
                    s.fsdp_only = (q != DDP) and (s.fsdp_only or not s.wraps_ddp)
                    s.wraps_ddp = True
                    handed = wraps_parameter(ctx, node, n)
                    s.wraps_param |= handed
                    s.wraps_built |= not handed
                    s.wrap_kwargs |= forwards_kwargs(node, n)
                    if id(n) in returned:
                        s.returns_ddp = True
                    parent = ctx.parents.get(n)
                    if isinstance(parent, ast.Assign):
                        ddp_names |= {d for t in parent.targets if (d := dotted(t))}
                target = self._project_target(imports, n.func)
                if target:
                    s.callees.add(target)
                    s.switch_calls.setdefault(target, []).append(call_shape(n))
                    if bn:
                        _sort_bn_callee(ctx, s, n, target, required)
                    # ``model = build(...).cuda(); return model`` (semseg_benchmark's trainer
                    # ``build_model``): a move returns the module it is given
                    built = moved_result(ctx, n)
                    parent = ctx.parents.get(built)
                    if id(built) in returned or (  # model = build(...); ...; return model
                        isinstance(parent, (ast.Assign, ast.AnnAssign))
                        and parent.value is built
                        and {dotted(t) for t in assign_targets(parent)} & returned_names
                    ):
                        s.returned_callees.add(target)
            elif isinstance(n, ast.Attribute):
                if scan.sync and n.attr in ("require_backward_grad_sync",):
                    s.toggles_sync = True
                if bn and batchnorm_reference(ctx, n):  # norm_layer=nn.BatchNorm2d
                    s.builds_batchnorm = True
            elif (
                isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name)
                and n.value.id in scan.bn_tables
            ):
                s.builds_batchnorm = True  # norm_cls = REGISTERED_NORM_DICT[name]; norm_cls(**args)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in scan.class_tables:
                # pycls ``_models[cfg.MODEL.TYPE]``; YOLOP ``m_block_cfg = YOLOP; MCnet(m_block_cfg)``
                s.refs |= scan.class_tables[n.id]
            elif isinstance(n, ast.Name) and bn and n.id in imports:
                target = self._project_target(imports, n)
                if target and not off_by_default(ctx, n):
                    s.refs.add(target)
        s.bn_optional -= required
        s.refs -= s.bn_optional
        for target in required:
            s.bn_option_callees.pop(target, None)  # also built unconditionally
        _settle_switch(s, switches)
        return ddp_names

    def _scan_batchnorm_call(
        self,
        ctx: FileContext,
        scan: _FileScan,
        s: Summary,
        n: ast.Call,
        q: str,
        m: tuple[str | None, str] | None,
        switches: tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, set[tuple[str, int]]],
    ) -> None:
        """A call's part in what a def builds: BatchNorm layers (built only under a parameter of the
        def, ``switches[0]``, that defaults to off: that parameter goes to ``switches[1]``, see
        ``Summary.bn_switch``), a conversion (perhaps under one of its parameters), a model picked by
        name or from a registry."""
        switch = _own_switch(ctx, switches[0], n) if BATCHNORM.match(q) else None
        options = option_switches(ctx, n) if BATCHNORM.match(q) and switch is None else ()
        named = factory_name(ctx, n)
        if (target := self._project_target(scan.imports, n.func)) is not None:
            # the model names each call hands a project def (``Summary.model_names``)
            s.model_names.setdefault(target, []).append(names_other_model(n))
        if switch is not None:
            switches[1].add(switch)
        elif options:
            s.bn_options.append(options)  # settled by the project's option defaults
        elif isinstance(named, tuple):
            if _own_parameter(ctx, switches[0], n):
                s.bn_name_param = named  # settled by what the project's calls hand it
        elif (
            BATCHNORM.match(q)
            or named is True
            or library_batchnorm(ctx, n)
            or torchvision_pick(ctx, n)
            or mmcv_batchnorm(ctx, n)
        ):
            s.builds_batchnorm = True
        if "convert_sync_batchnorm" in q or (m and m[1] == "convert_sync_batchnorm"):
            guard = conversion_parameter(ctx, n)
            if guard is None:
                s.converts_syncbn = True
            else:  # Group-Free-3D ``if self.sync_bn: convert_sync_batchnorm(self)``
                s.syncbn_param = guard
        if (pick := pick_key(ctx, bound_callee(ctx, n))) is not None:
            s.refs.add(f"pick:{pick}")  # voxceleb ``import_module(...).__getattribute__(...)``
        built = _alternate_constructor(ctx, scan.module, self._local_names, n)
        if built is not None:
            s.refs.add(built)
        picked = _module_picked_by_name(ctx, n)
        if picked is not None:
            # ``import archs`` then ``archs.__dict__[name]``: the name is a module, not a def of one
            target = self._project_target(scan.imports, picked) or scan.imports.get(dotted(picked) or "")
            module = self.resolve_module(target) if target else None
            if module is not None:
                # a def of that project module, chosen at run time, that it builds or returns:
                # what the module's defs build (``*`` as for a star import)
                s.refs.add(f"{module}.*")
        # the registry a model is taken from: ``MODEL_REGISTRY.get(name)(cfg)``, lufficc SSD
        # ``registry.BACKBONES[name](cfg)``, OroModelZoo ``build_from_cfg(cfg, MODELS)`` (the registry
        # handed to a generic builder); its classes are the candidates (majority rule at propagation)
        spelled = [m[0]] if m and m[1] in ("get", "build") and m[0] else []
        if isinstance(n.func, ast.Subscript):
            spelled.append(dotted(n.func.value) or "")
        spelled += [d for a in n.args if isinstance(a, (ast.Name, ast.Attribute)) and (d := dotted(a))]
        for text in spelled:
            registry = (
                self._registry_name(scan.imports, scan.module, scan.module_names, text) if text else None
            )
            if registry is not None:
                s.refs.add(f"registry:{registry}")

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

    def _local_class_table(
        self, ctx: FileContext, imports: dict[str, str], call: ast.Call
    ) -> set[str] | None:
        """The project classes of a function-local dict that ``call`` builds one of by a configured
        key (SECOND-style detectors: ``middle_class_dict = {"SpMiddleFHD": middle.SpMiddleFHD, ...}``
        then ``middle_class_dict[cfg.type](...)``, or through a name, ``rpn_class =
        rpn_class_dict[name]`` ... ``rpn_class(...)``: 3D-Detection-Code's VoxelNet); the dict bound once."""
        func = bound_callee(ctx, call)
        if not (isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)):
            return None
        binds = ctx.bindings(ctx.enclosing_function(call)).get(func.value.id, [])
        if (
            len(binds) != 1
            or not isinstance(binds[0], ast.Assign)
            or not isinstance(binds[0].value, ast.Dict)
        ):
            return None
        found = {
            t for v in binds[0].value.values if v is not None and (t := self._project_target(imports, v))
        }
        return found or None

    def _class_tables(self, ctx: FileContext, imports: dict[str, str], module: str) -> dict[str, set[str]]:
        """Module-level tables of project classes: a dict (pycls ``_models = {"resnet": ResNet, ...}``)
        or a list/tuple, nested (YOLOP's ``YOLOP = [[-1, Focus, [3, 32, 3]], [-1, Conv, ...], ...]``
        that ``get_net`` hands to ``MCnet``, which builds each entry): the classes any lookup or
        hand-over of the table can build."""
        out: dict[str, set[str]] = {}
        # PyTorch-Encoding's ``model_zoo.py``: ``from .backbone import *`` then ``models = {"resnet50":
        # resnet50, ...}``; a name the file neither imports nor defines may come from a star import
        starred = [
            m
            for node in ctx.tree.body
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
            if (m := absolute_module(node, relative_base(ctx, module))) is not None
        ]
        for node in ctx.tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            value = getattr(node, "value", None)
            if not isinstance(target, ast.Name) or not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
                continue
            entries = value.values if isinstance(value, ast.Dict) else list(_table_entries(value))
            found = {t for v in entries if (t := self._project_target(imports, v))}
            found |= {
                f"{m}.{v.id}"
                for v in entries
                if isinstance(v, ast.Name) and v.id not in imports and v.id not in self._local_names
                for m in starred
            }
            if found:
                out[target.id] = found
        return out

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


def _module_picked_by_name(ctx: FileContext, call: ast.Call) -> ast.expr | None:
    """``M`` of ``getattr(M, name)`` with a name known at run time, where the def picked is built
    (``getattr(M, name)(...)``) or returned to be built by the caller (wespeaker's
    ``get_speaker_model(name)``: ``if name.startswith("ResNet"): return getattr(resnet, name)``);
    a literal name names one def, a pick only read or tested builds nothing. The module's namespace
    indexed by a name, ``M.__dict__[name](...)``, is the same pick (audio-ssl's LightningModule
    building ``architectures.__dict__[config['model']['arch_name']](**kwargs)``)."""
    func = call.func
    if (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
        and isinstance(func.value.value, (ast.Name, ast.Attribute))
        and not isinstance(func.slice, ast.Constant)
    ):
        return func.value.value
    if not (
        isinstance(call.func, ast.Name)
        and call.func.id == "getattr"
        and len(call.args) == 2
        and isinstance(call.args[0], (ast.Name, ast.Attribute))
        and not isinstance(call.args[1], ast.Constant)
    ):
        return None
    parent = ctx.parents.get(call)
    if (isinstance(parent, ast.Call) and parent.func is call) or isinstance(parent, ast.Return):
        return call.args[0]
    return None


def _alternate_constructor(ctx: FileContext, module: str, local: set[str], call: ast.Call) -> str | None:
    """What a call builds through a class's own constructor methods: ``cls(config, ...)`` in a
    classmethod builds an instance of its class (a ``from_pretrained`` override), and
    ``LMGNN.from_pretrained(...)`` on a class of the same file runs that method (a class imported from
    another module resolves through the imports like any callee)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "cls":
        fn = ctx.enclosing_function(call)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        owner = ctx.method_owner(fn)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if owner is not None and params[:1] == ["cls"] and ctx.parents.get(owner) is ctx.tree:
            return f"{module}.{owner.name}"
        return None
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in local
        and func.value.id not in ctx.absolute_imports
    ):
        return f"{module}.{func.value.id}.{func.attr}"
    return None


def _table_entries(value: ast.List | ast.Tuple) -> Iterator[ast.expr]:
    """The names in a (nested) list/tuple table, not its literals."""
    for e in value.elts:
        if isinstance(e, (ast.List, ast.Tuple)):
            yield from _table_entries(e)
        elif isinstance(e, (ast.Name, ast.Attribute)):
            yield e


def _scaler_classes(ctx: FileContext, module: str) -> set[str] | None:
    """The classes of this file that hold its every GradScaler (named in their bodies), or None when
    one is named outside a class (a trainer's ``scaler = GradScaler()``): a scaler class only scales
    where it is instantiated."""
    owners: set[str] = set()
    named: list[ast.expr] = [n for n in ctx.of_type(ast.Name) if "GradScaler" in n.id]
    named += [n for n in ctx.of_type(ast.Attribute) if "GradScaler" in n.attr]
    for node in named:
        cur = ctx.parents.get(node)
        top: ast.ClassDef | None = None
        while cur is not None:
            if isinstance(cur, ast.ClassDef):
                top = cur
            cur = ctx.parents.get(cur)
        if top is None or ctx.parents.get(top) is not ctx.tree:
            return None
        owners.add(f"{module}.{top.name}")
    return owners or None


def _own_switch(
    ctx: FileContext, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, call: ast.Call
) -> tuple[str, int] | None:
    """``(parameter, position)`` when ``call`` (a BatchNorm layer) runs only under a parameter that
    defaults to off of ``node`` itself, or of its ``__init__`` for a class (what a call of the class
    fills); None otherwise."""
    found = layer_switch(ctx, call)
    if found is None:
        return None
    fn, switch = found
    if isinstance(node, ast.ClassDef):
        return switch if fn.name == "__init__" and fn in node.body else None
    return switch if fn is node else None


def _own_parameter(
    ctx: FileContext, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, call: ast.Call
) -> bool:
    """``call`` sits in ``node`` itself, or in its ``__init__`` for a class: a parameter of that def
    is what a call of ``node`` fills."""
    fn = ctx.enclosing_function(call)
    if isinstance(node, ast.ClassDef):
        return fn is not None and fn is init_of(node)
    return fn is node


def _sort_bn_callee(ctx: FileContext, s: Summary, call: ast.Call, target: str, required: set[str]) -> None:
    """Whether the project callee ``target`` of ``call`` is on the def's path for BatchNorm: optional
    (``bn_optional``) under a parameter that defaults to off or with another norm selected, a candidate
    of a pick by a parameter's type (``bn_choices``), under configuration options
    (``bn_option_callees``, settled by the project's defaults), else ``required``."""
    optional = off_by_default(ctx, call) or chooses_other_norm(call)
    chosen = type_chosen_slot(ctx, call)
    if chosen is not None:  # one of two candidates: the majority rule decides
        s.bn_choices.setdefault(chosen, set()).add(target)
    options = option_switches(ctx, call) if not optional and chosen is None else ()
    if any(o[1] is not UNKNOWN for o in options):
        # a comparison (``if audio_cfg.model_name == "tiny":``) picks one model among others by a
        # name whose option may be another's: a pick, not a switch (only ``if self.use_postnet:``)
        options = ()
    selector = norm_option_selector(ctx, call) if not optional and chosen is None else None
    if selector is not None:  # also a norm named by an option (``ConvBlock(c, c, self.opt.norm)``)
        options = (*options, selector)
    if options:
        s.bn_option_callees.setdefault(target, []).append(options)
    else:
        (s.bn_optional if optional or chosen is not None else required).add(target)


def _settle_switch(s: Summary, switches: set[tuple[str, int]]) -> None:
    """``s.bn_switch`` from the parameters its own BatchNorm is built under."""
    if len(switches) == 1 and not s.builds_batchnorm:
        s.bn_switch = next(iter(switches))
    elif switches:
        s.builds_batchnorm = True  # under several switches: not modelled, counted as built


def _calling_backward_defs(ctx: FileContext, backward_defs: set[int]) -> set[int]:
    """Ids of the top-level functions that call a top-level function of the file holding a
    ``.backward`` (GFNet's ``train_k_steps_cosine`` loop calling the module's ``train_step``): they
    train too, one call deep."""
    top = [f for f in ctx.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    names = {f.name for f in top if id(f) in backward_defs}
    if not names:
        return set()
    return {
        id(f)
        for f in top
        if id(f) not in backward_defs
        and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in names
            for c in ast.walk(f)
        )
    }
