"""What the rules ask the finished project index about a call, a def or a module: does this call
wrap in DDP, build BatchNorm, return the loss, log its arguments, compile, step an optimizer, run
on rank 0 only; does a GradScaler or a print/logging silencer cover this module.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

from ddp_doctor.lint.call_arguments import never_constructed_with, never_passed, result_discarded
from ddp_doctor.lint.context import (
    WRAPPERS,
    FileContext,
    dotted,
    keyword,
    method,
    parameter_names,
    positional_params,
)
from ddp_doctor.lint.handed_models import handed_builder, latest_assign
from ddp_doctor.lint.launch_scripts import launch_files, launch_settings
from ddp_doctor.lint.loops import argument
from ddp_doctor.lint.model_picks import picked_module
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.option_defaults import written_defaults, yaml_files, yaml_settings
from ddp_doctor.lint.project_core import (
    CONFLICT,
    GENERIC_METHODS,
    MAX_SAME_NAME_METHODS,
    IndexCore,
    most_build_batchnorm,
)
from ddp_doctor.lint.project_modules import attach, defs_of, is_test_module, module_level_names, parse_file
from ddp_doctor.lint.project_summary import Summary, is_class_summary
from ddp_doctor.lint.provenance import LossFlow, Shape, evaluation_function, merge, reads
from ddp_doctor.lint.rank0 import bound_argument
from ddp_doctor.lint.samplers import passed_arguments_shape, passes_epoch
from ddp_doctor.lint.state_logs import StateLog


class IndexQueries(IndexCore):
    """The rules' questions to the finished index (see the module docstring)."""

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

    def never_passed(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, in_class: bool, name: str
    ) -> bool:
        """Some call of ``fn`` is seen in the project and none passes its parameter ``name``."""
        return never_passed(self.passed_arguments, fn, module, in_class, name)

    def result_discarded(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, in_class: bool
    ) -> bool:
        """Some call of ``fn`` is seen in the project and every one throws its result away."""
        return result_discarded(self.passed_arguments, fn, module, in_class)

    def never_constructed_with(
        self, cls: str, init: ast.FunctionDef | ast.AsyncFunctionDef, name: str, attr: str
    ) -> bool:
        """Constructions of the class ``cls`` (a qualname) are seen and none passes its ``__init__``'s
        parameter ``name``; no project class subclasses it (a subclass's constructions pass it on
        unseen) and no code sets ``attr`` on an object from outside (``trainer.ddp = True``)."""
        passed = self.passed_arguments
        if self._subclasses().get(cls) or f".{attr}=" in passed or ".*=" in passed:
            return False
        return never_constructed_with(passed, init, cls, name)

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

    def call_returns_loss(self, ctx: FileContext, call: ast.Call) -> Shape | None:
        """What ``call`` returns of the local training loss, through project code: a function, or
        ``obj.method()`` with ``obj`` of unknown type when most project methods of that name return it
        (KAIR ``model.current_log()``)."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return None if is_class_summary(s) else s.returns_loss
        typed = self._annotated_method(ctx, call)  # its written type first, as for the other questions
        if typed is not None:
            return None if is_class_summary(typed) else typed.returns_loss
        return self.same_name_returns_loss(call)

    def same_name_returns_loss(self, call: ast.Call, declared: str | None = None) -> Shape | None:
        """What ``obj.name(...)`` returns of the loss when most project methods of that name return
        it (also ``self.name(...)`` whose own class only declares it, ``declared``, left out of the
        count: rl_games' ``A2CBase.train_actor_critic`` is ``pass``, the agents of other files
        return their losses)."""
        found = [m for m in self._same_name_methods(call.func) if m.qualname != declared]
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
        if s is None or is_class_summary(s) or s.steps is None:
            return None
        return s.steps, s.calls_backward

    def call_backward_param(self, ctx: FileContext, call: ast.Call) -> tuple[str, int, bool] | None:
        """``call`` runs a project function or method whose every backward is on one parameter:
        ``(name, position, scaled)`` of that parameter (method by name when most candidates agree)."""
        s = self._backprop_callee(ctx, call)
        return s.backward_param if s is not None else None

    def call_backprops_itself(self, ctx: FileContext, call: ast.Call) -> bool:
        """``call`` runs a project function or method that backprops the argument it is handed
        undivided (``Summary.backward_param_itself``)."""
        s = self._backprop_callee(ctx, call)
        return s is not None and s.backward_param_itself

    def _backprop_callee(self, ctx: FileContext, call: ast.Call) -> Summary | None:
        """The project function or method ``call`` runs, as the backward questions read it."""
        s = self.summary_for(ctx, call.func)
        if s is not None:
            return None if is_class_summary(s) else s
        typed = self._annotated_method(ctx, call)
        if typed is not None:
            return typed
        # by name only for a name that says what it does and that one project method defines: not
        # ``step``/``update``/``forward``, which optimizers, schedulers and meters define as well
        found = self._same_name_methods(call.func)
        if len(found) != 1 or not isinstance(call.func, ast.Attribute) or call.func.attr in GENERIC_METHODS:
            return None
        return found[0]

    def method_reduces_receiver(self, ctx: FileContext, call: ast.Call) -> bool:
        """``obj.m(...)`` runs a project method that combines ``obj``'s state across ranks: the one of
        the class ``obj`` is built from here, else every project method of that name (rrn's
        ``loss.all_reduct(device)`` on the ``MetricManager`` a helper returned)."""
        s = self._constructed_method(ctx, call)
        if s is not None:
            return s.reduces_self
        found = self._same_name_methods(call.func)
        return bool(found) and all(m.reduces_self for m in found)

    def sync_windows(self, ctx: FileContext, call: ast.Call) -> frozenset[str]:
        """What a meter still reports of this rank alone after ``meter.sync()`` (lint/meter_windows.py):
        the local statistics of the project class ``meter`` is built from here, or of the container
        it is (``MetricLogger``, whose sync syncs each ``SmoothedValue`` it holds) with the container's
        methods that read them (``latest_meter``). Empty when some class syncing by that name covers
        all it reports, or the class is unknown: a sync is taken to combine the whole meter then."""
        if not isinstance(call.func, ast.Attribute):
            return frozenset()
        name = call.func.attr
        direct: dict[str, tuple[str, ...]] = {}
        containers: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
        for s in self.summaries.values():
            for n, local in s.sync_windows:
                if n == name:
                    direct[s.qualname] = local
            for n, methods in s.delegated_syncs:
                if n == name:
                    containers[s.qualname] = methods
        funcs = ctx.constructors(call)
        built = {self._project_target(ctx.absolute_imports, f) for f in funcs or []}
        cls = self._defined_class(built.pop()) if len(built) == 1 else None
        if cls in direct:
            return frozenset(direct[cls])  # a meter class of its own: its own statistics
        if not direct or not all(direct.values()):
            return frozenset()
        elements = frozenset().union(*direct.values())
        if cls is not None and cls not in containers:
            return frozenset()
        held = [containers[cls]] if cls is not None else list(containers.values())
        return elements | {m for methods in held for m, read in methods if elements & set(read)}

    def call_state_logged(self, ctx: FileContext, call: ast.Call) -> StateLog | None:
        """What the project method ``obj.m(...)`` runs logs of what ``obj`` was built with
        (``progress.display(i)`` of a ``ProgressMeter`` built from the meters; lint/state_logs.py)."""
        s = self._constructed_method(ctx, call)
        return s.state_logged if s is not None else None

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

    def module_candidates(self, module: str) -> list[Summary]:
        """What ``getattr(module, name)`` can yield among project defs: its own public top-level
        functions and classes, what it re-exports, and what it star-imports."""
        names = {q for q in self.summaries if q.rpartition(".")[0] == module}
        names |= {self.name_alias[q] for q in self.name_alias if q.rpartition(".")[0] == module}
        for source in self._star_sources.get(module, ()):
            names |= {q for q in self.summaries if q.rpartition(".")[0] == source}
        return [
            s
            for q in sorted(names)
            if not q.rpartition(".")[2].startswith("_") and (s := self._get(q)) is not None
        ]

    def call_picked_module(self, ctx: FileContext, call: ast.Call) -> str | None:
        """The project module ``call`` hands a project def that returns an instance of one of that
        module's defs picked by a run-time name (``config.init_obj('arch', module_arch)``,
        ``Summary.picks_param``); None otherwise."""
        s = self.summary_for(ctx, call.func)
        # ``config.init_obj(...)`` on an object of unknown type: every project method so named agrees
        found = [s] if s is not None else self._same_name_methods(call.func)
        positions = {f.picks_param for f in found}
        if len(positions) != 1 or (position := positions.pop()) is None:
            return None
        return picked_module(ctx, call, position, self.resolve_module)

    def module_converts_syncbn(self, module: str) -> bool:
        """Every def ``getattr(module, name)`` can yield that builds BatchNorm converts it to
        SyncBatchNorm itself (PixPro's ``models.__dict__[args.model]``: its one model class ends its
        constructor with ``nn.SyncBatchNorm.convert_sync_batchnorm(self.encoder)``, in place)."""
        built = [s for s in self.module_candidates(module) if s.builds_batchnorm]
        return bool(built) and all(s.converts_syncbn for s in built)

    def call_builds_batchnorm(self, ctx: FileContext, call: ast.Call) -> bool:
        """``obj.method()`` with ``obj`` of unknown type builds BatchNorm when most project methods of
        that name do (YOLOX ``self.exp.get_model()``: four of the five experiment classes); a class
        picked from a project table (``MODELS[name](...)``) when most of the table's classes do."""
        inner = call.func
        if isinstance(inner, ast.Subscript) and ctx.module is not None:
            # ``__models__[args.model](maxdisp)``: a class picked from a module-level table of project
            # classes (ADL's ``backbones.__models__ = {"PSMNet": PSMNet, "GwcNet_G": ...}``)
            text = dotted(inner.value)
            table = (
                self._registry_name(ctx.absolute_imports, ctx.module, module_level_names(ctx.tree), text)
                if text
                else None
            )
            if table is not None and table in self.class_tables:
                return most_build_batchnorm(
                    [t for e in self.class_tables[table] if (t := self._get(e)) is not None]
                )
        if isinstance(inner, ast.Call):  # ``get_model(name)(**kw)``: the factory returns a builder
            factory = self.summary_for(ctx, inner.func)
            if factory is not None and factory.builds_batchnorm:
                return True
        if isinstance(inner, ast.Name) and (chosen := self._classes_bound_to(ctx, inner)):
            return most_build_batchnorm(chosen)
        m = method(inner) if isinstance(inner, ast.Call) else None
        if m and m[0] and m[1] in ("get", "build") and ctx.module is not None:
            # ``MODEL_REGISTRY.get(name)(cfg)``: a class of a registry of BatchNorm models
            registry = self._registry_name(
                ctx.absolute_imports, ctx.module, module_level_names(ctx.tree), m[0]
            )
            return registry is not None and self._registry_builds_batchnorm(registry)
        found = self._same_name_methods(call.func)
        builders = sum(m.builds_batchnorm for m in found)
        return builders > 0 and 2 * builders > len(found)

    def _classes_bound_to(self, ctx: FileContext, name: ast.Name) -> list[Summary]:
        """The project classes a local name is bound to, one per branch of a choice (audio-ssl's
        ``if 'ssl' in stem: module = LitSSL`` / ``else: module = LitClassifier`` then
        ``module(config)``): ``bound_in_branches`` when every one is a class; [] otherwise."""
        found = self.bound_in_branches(ctx, name)
        return found if all(is_class_summary(s) for s in found) else []

    def bound_in_branches(self, ctx: FileContext, name: ast.Name) -> list[Summary]:
        """The project defs or classes a local name is bound to, one per binding in its scope (each
        branch of a choice: ``if args.k400: loader_method = get_data_k400`` / ``else: loader_method =
        get_data_ucf``): every binding a plain ``name = other_name`` the index resolves; [] otherwise
        (a call, a lambda, a name bound once: that is ``summary_for``'s alias)."""
        binds = ctx.bindings(ctx.enclosing_function(name)).get(name.id, [])
        if len(binds) < 2:
            return []
        found: list[Summary] = []
        for bound in binds:
            if not (
                isinstance(bound, ast.Assign)
                and len(bound.targets) == 1
                and isinstance(bound.targets[0], ast.Name)
                and isinstance(bound.value, (ast.Name, ast.Attribute))
                and (summary := self.summary_for(ctx, bound.value)) is not None
            ):
                return []
            found.append(summary)
        return found

    def config_default(self, key: str) -> tuple[bool, object]:
        """``(known, value)``: the default a Python configuration of the project gives ``key``."""
        value = self.config_defaults.get(key, CONFLICT)
        return (value is not CONFLICT), value

    def option_default(self, key: str) -> tuple[bool, object]:
        """``(known, value)``: the default the project gives option ``key`` where the testing file
        gives none (lint/option_defaults.py): written the same everywhere in the code and in every
        shipped YAML configuration that sets it (or, written nowhere in the code, set alike by all of
        them)."""
        if key not in self._option_answers:
            self._option_answers[key] = self._option_default(key)
        return self._option_answers[key]

    def yaml_values(self, key: str) -> list[object]:
        """Every value the shipped YAML configurations give ``key`` (one per setting)."""
        if self._yaml_files is None:
            self._yaml_files = yaml_files(self.root) if self.root.is_dir() else []
        return yaml_settings(self._yaml_files, key)

    def _option_default(self, key: str) -> tuple[bool, object]:
        values = self.yaml_values(key)
        written = [self.option_defaults[key]] if key in self.option_defaults else []
        written += self._unscanned_values(key)
        if written:
            first = written[0]
            if any(w is CONFLICT or w != first or type(w) is not type(first) for w in written):
                return False, None
        elif values:
            first = values[0]  # written nowhere in the code: the shipped configurations decide
        else:
            return False, None
        if any(v != first or type(v) is not type(first) for v in values):
            return False, None
        return True, first

    def _unscanned_values(self, key: str) -> list[object]:
        """The defaults the files the word pre-check skipped write for ``key`` (a module-level
        ``Config = dict(MODEL=...)`` in a ``config.py`` naming no fact word): only files whose text
        holds the key are parsed, each once."""
        if "options" not in self.facts:
            return []
        found: list[object] = []
        for module, path in self._unscanned:
            if is_test_module(module):
                continue
            if path not in self._unscanned_defaults:
                try:
                    if key not in path.read_text(encoding="utf-8", errors="replace"):
                        continue
                except OSError:
                    continue
                ctx = parse_file(path)
                self._unscanned_defaults[path] = written_defaults(ctx) if ctx is not None else {}
            if key in self._unscanned_defaults[path]:
                found.append(self._unscanned_defaults[path][key])
        return found

    def returned_reduced_positions(self, s: Summary, depth: int = 4) -> frozenset[int] | None:
        """The positions of the tuples ``s`` returns, directly or through the project calls it returns
        whole (``forward`` → ``forward_train`` → ``parse_losses``), that hold values combined across
        ranks in every one of them; None when it returns no tuple seen."""
        found = [s.reduced_positions] if s.reduced_positions is not None else []
        for owner, name in s.returned_calls if depth > 0 else ():
            callee = self._inherited(owner, name) if name else self._get(owner)
            if callee is None or is_class_summary(callee):
                continue
            inner = self.returned_reduced_positions(callee, depth - 1)
            if inner is not None:
                found.append(inner)
        return frozenset.intersection(*found) if found else None

    def module_call_reduced_positions(self, ctx: FileContext, call: ast.Call) -> frozenset[int]:
        """``loss, log_vars = model(batch)`` where ``model`` holds an instance of project classes (built
        in this scope or by every same-file caller that hands it, under moves and a DDP wrap) whose
        ``forward`` returns a tuple with items combined across ranks at these positions (mmcv-style
        ``parse_losses``); empty when any class is unknown or returns a local value there."""
        classes = module_instance_classes(ctx, self.summary_for, call.func, call)
        out: frozenset[int] | None = None
        for cls in classes or ():
            forward = self._inherited(cls, "forward")
            found = self.returned_reduced_positions(forward) if forward is not None else None
            if not found:
                return frozenset()
            out = found if out is None else out & found
        return out or frozenset()

    def method_returns_reduced(self, func: ast.AST) -> bool:
        """``obj.update(...)`` where every project method of that name (at most 4) returns a value
        combined across ranks, or ``obj`` is a meter whose class all-reduces in its updates and a
        method of that name returns a combined value (jukebox's ``metrics.update``: ``Metrics.update``
        all-reduces the sum and the count and returns their ratio)."""
        found = self._same_name_methods(func)
        if not found:
            return False
        if len(found) <= MAX_SAME_NAME_METHODS and all(s.returns_reduced for s in found):
            return True
        receiver = dotted(func.value) if isinstance(func, ast.Attribute) else None
        return (
            receiver is not None
            and receiver.split(".")[-1] in self.synced_meter_names
            and any(s.returns_reduced for s in found)
        )

    def star_wrapper(self, ctx: FileContext, name: str) -> str | None:
        """The data-parallel wrapper that ``name``, a class of a project module the file star-imports,
        subclasses (filter_pruning_taylor's ``from utils.dist import *`` then ``DDP(model, ...)``)."""
        found = self._star_imported(ctx, name)
        return found.wrapper_base if found is not None else None

    def launched_values(self, options: tuple[str, ...]) -> list[tuple[object, str]]:
        """``(value, script)`` for every value the shipped shell launch scripts give one of the long
        spellings ``options`` (lint/launch_scripts.py)."""
        if options not in self._launch_answers:
            if self._launch_files is None:
                self._launch_files = launch_files(self.root) if self.root.is_dir() else []
            self._launch_answers[options] = launch_settings(self._launch_files, options, self.root)
        return self._launch_answers[options]

    def call_fp16_cast(self, ctx: FileContext, call: ast.Call) -> int | None:
        """The argument position whose weights ``call`` (a project function) casts to float16."""
        s = self.summary_for(ctx, call.func)
        return s.fp16_cast_param if s is not None else None

    def call_fp16_cast_return(
        self, ctx: FileContext, call: ast.Call
    ) -> tuple[ast.expr, frozenset[str]] | None:
        """``create_model(..., precision=args.precision)`` of a project function that returns a model
        cast to float16 when that parameter is one of some values: (the argument, the values)."""
        s = self.summary_for(ctx, call.func)
        if s is None:
            return None
        for helper, param, position, values in s.fp16_cast_returns:
            target = self._get(helper) if helper is not None else None
            if helper is not None and (target is None or target.fp16_cast_param != 0):
                continue
            handed = argument(call, param, position)
            if handed is not None:
                return handed, values
        return None

    def fp16_cast_names(self) -> tuple[str, ...]:
        """Bare names of project functions that cast the module they are handed, or one they return,
        to float16."""
        if self._fp16_cast_names is None:
            self._fp16_cast_names = tuple(
                sorted(
                    {
                        q.rsplit(".", 1)[-1]
                        for q, s in self.summaries.items()
                        if s.fp16_cast_param is not None or s.fp16_cast_returns
                    }
                )
            )
        return self._fp16_cast_names

    def builds_scaler_near(self, module: str | None) -> bool:
        """A module other than ``module`` that shares its code path (imports it or is imported by
        it) builds a GradScaler or a loss-scaling object of its own: not just a scaled backward on
        a scaler handed in."""
        if module is None:
            return self.uses_scaler
        reach = self.reachable(module)
        return any(
            m != module and m not in self.scaled_only_modules and (m in reach or module in self.reachable(m))
            for m in self.scaler_modules
        )

    def scales_module(self, module: str | None, own: bool = True) -> bool:
        """A GradScaler covers ``module``: one in training code that ``module`` imports (directly or
        not), or that imports ``module`` (the loop running its model code), or (for a test module) in
        a test. A scaler in a sibling script that shares neither code path does not. ``own=False``:
        the module's own scalers are judged by the caller (switched by their own flag)."""
        if module is None:
            return self.uses_scaler
        if self.tests_use_scaler and is_test_module(module):
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
        for qual, node in defs_of(ctx.module, ctx.tree)[0]:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and qual in self.backprop_targets:
                out.append(node)
        return out

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

    def rank_attributes(self, ctx: FileContext, cls: ast.ClassDef) -> set[str]:
        """``self.<attr>`` of a top-level class of ``ctx``'s file that holds the rank in every
        instance the project builds (Multi_Lanes_Detection's ``Runner_Distributed(...,
        main_pod=args.rank)`` kept as ``self.main_pod``), as rank-alias predicates (``=self.main_pod``:
        ``if self.main_pod == 0:`` is a rank-0 test)."""
        from ddp_doctor.lint.rank0_handoff import rank0_attributes

        handed = self.rank_handed.get(f"{ctx.module}.{cls.name}")
        return {f"={a}" for a in rank0_attributes(cls, handed)} if handed else set()

    def dead_override_base(self, ctx: FileContext, fn: ast.AST) -> bool:
        """``fn`` is a method of a top-level class of ``ctx``'s file that only declares some other
        method (not meant to run as is) and whose every project subclass overrides ``fn``: its code
        never runs (Amphion's ``TTSTrainer._train_epoch``, overridden by all six TTS trainers)."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.module is None:
            return False
        owner = ctx.method_owner(fn)
        if owner is None:
            return False
        cls = self.summaries.get(f"{ctx.module}.{owner.name}")
        return cls is not None and cls.declares_abstract and self._overridden(cls.qualname, fn.name, 0)

    def base_class_flags(self, ctx: FileContext, cls: ast.ClassDef) -> set[str]:
        """The rank-0 flags (``self.verbose``) the project base classes of ``cls``, of any file and a
        few levels up, keep (``Summary.rank0_flags``): VL-T5's ``Trainer(TrainerBase)`` tests
        ``self.verbose``, which ``TrainerBase.__init__`` lowers off gpu 0 in trainer_base.py."""
        if ctx.module is None:
            return set()
        out: set[str] = set()
        seen: set[str] = set()
        own = self.summaries.get(f"{ctx.module}.{cls.name}")
        todo = list(own.class_bases) if own is not None else []
        while todo and len(seen) < 16:
            current = self._defined_class(todo.pop(0)) or ""
            summary = self.summaries.get(current)
            if current in seen or summary is None:
                continue
            seen.add(current)
            out |= set(summary.rank0_flags)
            todo = [*summary.class_bases, *todo]
        return out

    def _overridden(self, cls: str, name: str, depth: int) -> bool:
        """Every subclass of ``cls`` in the project defines ``name`` (or leaves it to subclasses that
        all do); False when ``cls`` has none."""
        children = self._subclasses().get(cls, set())
        return (
            bool(children)
            and depth < 8
            and all(f"{c}.{name}" in self.summaries or self._overridden(c, name, depth + 1) for c in children)
        )

    def _subclasses(self) -> dict[str, set[str]]:
        if self._children is None:
            self._children = {}
            for s in self.summaries.values():
                for base in s.class_bases:
                    target = self._defined_class(base)
                    if target is not None:
                        self._children.setdefault(target, set()).add(s.qualname)
        return self._children

    def rank0_function_params(self, ctx: FileContext, fn: ast.AST) -> set[str]:
        """Parameters of ``fn`` (a top-level function of ``ctx``'s file) that every call of it in the
        project binds to a rank-0 test (``ddp_train(loader, model, verbose=verbose)`` with ``verbose =
        (worker_idx == 0)`` in the spawned worker of another file)."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.parents.get(fn) is not ctx.tree:
            return set()
        args = self.rank0_function_args.get(f"{ctx.module}.{fn.name}")
        if not args:
            return set()
        return set(_argument_params(fn, args, positional_params(fn)).values())

    def sampler_loader_params(self, ctx: FileContext, fn: ast.AST) -> dict[str, str]:
        """Parameters of ``fn`` (a top-level function of ``ctx``'s file) that every call of it in the
        project binds to a loader over a shuffling DistributedSampler that project code of a module
        without ``set_epoch`` returned: parameter -> "file.py:line" of the sampler."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.parents.get(fn) is not ctx.tree:
            return {}
        args = self.sampler_loader_args.get(f"{ctx.module}.{fn.name}")
        if not args:
            return {}
        names = _argument_params(fn, args, positional_params(fn))
        return {names[arg]: where for arg, where in args.items() if arg in names}

    def rank0_method_params(self, ctx: FileContext, fn: ast.AST) -> set[str]:
        """Parameters of ``fn`` (a method of a top-level class of ``ctx``'s file) that every call of its
        name in the project binds to a rank-0 test (voxceleb ``trainer.train_network(loader,
        verbose=(args.gpu == 0))`` from another file: ``tqdm(..., disable=not verbose)`` is rank 0's)."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return set()
        if ctx.method_owner(fn) is None:
            return set()
        args = self.rank0_method_args.get(fn.name)
        if not args:
            return set()
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]  # after ``self``
        return set(_argument_params(fn, args, params).values())

    def rank0_called(self, ctx: FileContext, fn: ast.AST) -> bool:
        """``fn`` (a top-level function or a method of a top-level class of ``ctx``'s file) is called
        only under rank-0 tests anywhere in the project: its logs run on rank 0 only."""
        qualname = ctx.def_qualname(fn) if self.rank0_callees else None
        return qualname is not None and qualname in self.rank0_callees

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
        for qual, node in defs_of(ctx.module, ctx.tree)[0]:
            found = self._handed.get(qual)
            if not found or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = positional_params(node)
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
            ctx = parse_file(Path(path), words)
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
                    # a method of an object whose type is written or built where it is kept
                    # (rsl_rl ``self.logger = Logger(...)`` ... ``self.logger.log(loss_dict=...)``)
                    s = (
                        self.summary_for(ctx, call.func)
                        or self._annotated_method(ctx, call)
                        or self._constructed_method(ctx, call)
                    )
                    if s is None or s.module == ctx.module or is_class_summary(s):
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

    def backprop_itself_names(self) -> tuple[str, ...]:
        """Bare names of project functions and methods that backprop the argument they are handed
        undivided: the words that let a file run a backward without naming ``backward``."""
        return tuple(
            sorted({q.rsplit(".", 1)[-1] for q, s in self.summaries.items() if s.backward_param_itself})
        )

    def inside_logger_names(self) -> tuple[str, ...]:
        """Bare names of project functions whose own file reports what they log of the loss they are
        handed (``Summary.logs_inside``): a word that lets that file be read by rank0-only-loss-log,
        whose calls of them are no findings of their own (ECG-Bench ``train_dev_break`` in a file
        that names neither ``log`` nor ``backward``)."""
        return tuple(sorted({q.rsplit(".", 1)[-1] for q, s in self.summaries.items() if s.logs_inside}))

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
        """Bare names of project functions returning a wrapped model, of methods wrapping in place and
        of project subclasses of a data-parallel wrapper (computed once): the words a file must contain
        to wrap through project code."""
        if self._wrapper_names is None:
            names = {
                q.rsplit(".", 1)[-1] for q, s in self.summaries.items() if s.returns_ddp or s.wrapper_base
            }
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
        if s is None:
            return False
        if is_class_summary(s):
            # a dataset class of the project built here: it reads the rank and world size itself
            # (``__iter__`` keeping every world_size-th element), or it is an IterableDataset
            return s.reads_rank_and_world
        return s.reads_rank_and_world or any(
            (c := self._get(q)) is not None and not is_class_summary(c) and c.reads_rank_and_world
            for q in s.callees
        )

    def reiterates_argument(self, ctx: FileContext, call: ast.Call, names: set[str]) -> bool:
        """``call`` hands one of ``names`` to project code in a module without ``set_epoch`` that
        iterates it again on every pass of an outer loop (a trainer's epoch loop); a method of an
        unknown object by name when every project method of that name (at most 4) does."""
        s = self.summary_for(ctx, call.func) or self._constructed_method(ctx, call)
        found = [s] if s is not None else self.method_summaries(call.func)
        if not found or len(found) > MAX_SAME_NAME_METHODS:
            return False
        if any(is_class_summary(c) for c in found) and not (s is not None and is_class_summary(s)):
            return False  # a method by name that is also a class's: unknown
        # the dict holding the loader by key (``train(data_loader=dataloader)`` with
        # ``dataloader['train'] = DataLoader(...)``): the callee iterates ``data_loader['train']``
        names = names | {n.split("[", 1)[0] for n in names if "[" in n}
        for i, arg in enumerate(call.args):
            if dotted(arg) in names and all(i in c.epoch_params for c in found):
                return True
        return any(
            dotted(k.value) in names and all(k.arg in c.epoch_params for c in found) for k in call.keywords
        )

    def sampler_built_by(self, ctx: FileContext, call: ast.Call) -> str | None:
        """``"file.py:line"`` of the shuffling DistributedSampler that ``call`` (project code of another file) returns
        (rosinality's ``sampler = dist.data_sampler(dataset, shuffle=True, distributed=...)``); None
        when it returns none, or the call turns its shuffle parameter off with a literal false."""
        s = self.summary_for(ctx, call.func)
        if s is None or s.returns_sampler is None or s.module == ctx.module:
            return None  # a def of this file: its own DistributedSampler call is the one read
        where, name, position = s.returns_sampler
        given = argument(call, name, position) if name is not None and position is not None else None
        if isinstance(given, ast.Constant) and not given.value:
            return None
        return where

    def epoch_sampler_call(self, ctx: FileContext, call: ast.Call) -> bool:
        """``call`` builds a sampler class of another project module that orders its samples by
        ``self.epoch`` and shuffles by default (``Summary.epoch_sampler``: 3D-Detection-Code's
        ``from lib.datasets.loader.sampler import DistributedSampler``)."""
        if not self.epoch_sampler_classes or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return False
        found = self.summary_for(ctx, call.func)
        return (
            found is not None
            and found.epoch_sampler
            and found.module != ctx.module
            and not passes_epoch(passed_arguments_shape(call), found.epoch_sampler_param)
        )

    def same_name_sampler_loaders(self, ctx: FileContext, call: ast.Call) -> dict[int, str] | None:
        """``{position: "file.py:line"}`` for ``obj.name(...)`` with ``obj`` of unknown type (not
        ``self``: its own class is read by ``summary_for``) when every project method of that name (at
        most ``MAX_SAME_NAME_METHODS``), each of another module, returns a loader over a shuffling
        DistributedSampler at that position (CHORE's trainer calls ``self.train_dataset.get_loader(rank=...,
        world_size=...)`` on the dataset it was handed; ``BaseDataset.get_loader`` builds the sampler)."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
        ):
            return None
        found = self._same_name_methods(func)
        if not found or len(found) > MAX_SAME_NAME_METHODS:
            return None
        common: dict[int, str] | None = None
        for m in found:
            if m.module == ctx.module or not m.sampler_loaders:
                return None
            common = (
                dict(m.sampler_loaders)
                if common is None
                else {p: w for p, w in common.items() if p in m.sampler_loaders}
            )
        return common or None

    def instance_method(self, ctx: FileContext, call: ast.Call) -> Summary | None:
        """The project method ``obj.m(...)`` runs when ``obj`` is bound in this scope only to what one
        project class or factory builds: ``obj = Cls(...)``, or ``obj = make(...)`` where ``make``
        returns an instance of one class (pix2pixHD's ``data_loader = CreateDataLoader(opt)``, a
        function named like a class that builds, initializes and returns a ``CustomDatasetDataLoader``);
        the method is the class's own or inherited."""
        funcs = ctx.constructors(call)
        targets = {self._project_target(ctx.absolute_imports, f) for f in funcs or []}
        if len(targets) != 1 or (target := targets.pop()) is None or not isinstance(call.func, ast.Attribute):
            return None
        name = call.func.attr
        cls = self._defined_class(target)
        found = self._inherited(cls, name) if cls else None
        built = self._get(target)
        if found is None and built is not None and len(built.returned_callees) == 1:
            # a factory: the one project class whose instance it returns
            made = self._defined_class(next(iter(built.returned_callees)))
            found = self._inherited(made, name) if made else None
        return found

    def plain_loader_builder_names(self) -> tuple[str, ...]:
        """Bare names of project defs returning a sampler-less DataLoader (computed once): a file that
        calls one may train on such a loader without spelling ``DataLoader`` itself."""
        if self._plain_loader_names is None:
            self._plain_loader_names = tuple(
                sorted(
                    {
                        q.rsplit(".", 1)[-1]
                        for q, s in self.summaries.items()
                        if s.plain_loaders or s.param_shuffled_loaders or s.flag_gated_loaders
                    }
                )
            )
        return self._plain_loader_names

    def returned_plain_loader(self, ctx: FileContext, call: ast.Call) -> dict[int, str]:
        """``{position: "file.py:line"}``: ``call`` runs project code of another file that returns a
        DataLoader drawing without a sampler (``WHOLE`` or its index in a returned tuple); the place
        is the DataLoader call's. Also a method of an instance of one project class (``datamodule =
        AudioCaptionDataModule(...)`` ... ``datamodule.train_dataloader()``), and a loader whose sampler
        a distribution flag chooses that the call leaves at its false default (``flag_gated_loaders``)."""
        s = self.summary_for(ctx, call.func)
        if s is None and isinstance(call.func, ast.Attribute):
            s = self._constructed_method(ctx, call)
        if s is None or s.module == ctx.module:
            return {}
        spread = any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args
        )
        # none from a def that may shard by rank (``_finish_plain_loaders``)
        found = dict(s.plain_loaders)
        for position, (where, name, index, default_true) in s.param_shuffled_loaders.items():
            given = argument(call, name, index) if index >= 0 else keyword(call, name)
            if given is None and spread:
                continue  # ``*args`` / ``**opts`` may pass it
            shuffles = (
                default_true if given is None else isinstance(given, ast.Constant) and given.value is True
            )
            if shuffles:
                found.setdefault(position, where)
        for position, (where, flag, index) in s.flag_gated_loaders.items():
            given = argument(call, flag, index) if index >= 0 else keyword(call, flag)
            if given is None and not spread:
                found.setdefault(position, where)  # the flag left at its default: the non-distributed sampler
        return found

    def builds_rank0_sink(self, ctx: FileContext, call: ast.Call) -> bool:
        """``call`` builds a writer that writes on rank 0 only: an instance of such a writer class
        (``DistSummaryWriter(work_dir)``), or what a project def returns that builds one and returns
        it (Ultra-Fast-Lane-Detection's ``get_logger(work_dir, cfg)``), or a factory that hands the
        other ranks a writer doing nothing (CenterNet's ``create_summary(local_rank, ...)`` returning an
        ``EmptySummaryWriter`` when ``distributed_rank > 0``)."""
        s = self.summary_for(ctx, call.func)
        if s is None:
            return False
        if s.qualname in self.rank0_sink_classes or bool(s.returned_callees & self.rank0_sink_classes):
            return True
        # a factory handing the other ranks a writer that does nothing (tape's ``visualization.get``)
        nulls = [self._get(q) for q in s.null_off_rank0]
        return bool(nulls) and all(n is not None and n.null_writer for n in nulls)

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


def _argument_params(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, args: Iterable[str | int], params: list[str]
) -> dict[str | int, str]:
    """The parameter of ``fn`` each recorded argument binds: a position into ``params`` (its
    positional parameters as calls count them), or a keyword that names one of its parameters."""
    named = set(parameter_names(fn))
    out: dict[str | int, str] = {}
    for arg in args:
        if isinstance(arg, int) and arg < len(params):
            out[arg] = params[arg]
        elif isinstance(arg, str) and arg in named:
            out[arg] = arg
    return out


MAX_HANDED_HOPS = 3


def module_instance_classes(
    ctx: FileContext,
    summary_for: Callable[[FileContext, ast.AST], Summary | None],
    expr: ast.AST,
    at: ast.AST,
    hops: int = MAX_HANDED_HOPS,
) -> set[str] | None:
    """The project classes a module expression holds at ``at`` (``model`` bound to
    ``DistributedDataParallel(SoftGroup(**cfg).cuda())``, or a parameter of a module-level def every
    call of which in this file hands it one): through moves (``.cuda()``), a DDP/FSDP wrap, name to
    name rebinding and same-file callers. None when any path reaches something else."""
    for _ in range(2 * MAX_HANDED_HOPS):
        expr = unmoved(ctx, expr)
        if isinstance(expr, ast.Call) and ctx.call_qualname(expr) in WRAPPERS and expr.args:
            expr = expr.args[0]
            continue
        if isinstance(expr, ast.Call):
            s = summary_for(ctx, expr.func)
            return {s.qualname} if s is not None and is_class_summary(s) else None
        if not isinstance(expr, ast.Name):
            return None
        binding = latest_assign(ctx, expr.id, at)
        if binding is not None:
            expr, at = binding.value, binding
            continue
        return _handed_classes(ctx, summary_for, expr.id, at, hops)
    return None


def _handed_classes(
    ctx: FileContext,
    summary_for: Callable[[FileContext, ast.AST], Summary | None],
    name: str,
    at: ast.AST,
    hops: int,
) -> set[str] | None:
    """What every same-file call of the module-level def around ``at`` hands its parameter ``name``."""
    fn = ctx.enclosing_function(at)
    if (
        hops <= 0
        or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        or ctx.parents.get(fn) is not ctx.tree
    ):
        return None
    if name not in parameter_names(fn):
        return None
    out: set[str] = set()
    calls = [c for c in ctx.of_type(ast.Call) if isinstance(c.func, ast.Name) and c.func.id == fn.name]
    for c in calls:
        arg = bound_argument(fn, c, name)
        found = module_instance_classes(ctx, summary_for, arg, c, hops - 1) if arg is not None else None
        if found is None:
            return None
        out |= found
    return out or None
