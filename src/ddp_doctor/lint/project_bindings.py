"""Project-wide spellings and call sites, recorded file by file while the index is built:
objects whose ``__call__`` runs backward, objects that exist only on rank 0, rank-0 predicates
and logging/print silencers, meters, whether each call of project code sits under a rank-0 test,
and the arguments every call binds to a rank-0 test (lint/rank0_handoff.py).
"""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.batchnorm_syntax import BATCHNORM, LIBRARY_BN
from ddp_doctor.lint.call_arguments import record as record_arguments
from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.handed_models import record as record_handed
from ddp_doctor.lint.module_moves import SAME_MODULE_METHODS
from ddp_doctor.lint.project_core import IndexCore
from ddp_doctor.lint.project_def_facts import is_none
from ddp_doctor.lint.project_modules import absolute_module, relative_base
from ddp_doctor.lint.rank0 import is_log_sink
from ddp_doctor.lint.rank0_sinks import attached_writer_classes, guarded_sink_names, rank0_sink_classes
from ddp_doctor.lint.samplers import WHOLE

CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "collections.defaultdict"})


SCOPES_UP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)  # a guard is searched up to its function


def _call_results(
    index: IndexCore, nodes: list[ast.AST], imports: dict[str, str], whole: bool = True
) -> dict[str, tuple[str, int]]:
    """Names a function binds only to the result of one call of project code: ``{name: (callee,
    position)}``, the index for an unpacked tuple (``loader_train, loader_val = configure_data(cfg)``,
    ``device, is_logger = setup(config)``) and, with ``whole``, ``WHOLE`` for the result itself
    (``loader = build_loader(cfg)``). Without ``whole`` a plain name binding makes the name unknown and
    a tuple unpacked from anything but a call is not read."""
    out: dict[str, tuple[str, int] | None] = {}
    for n in nodes:
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            if not whole and not (isinstance(t, ast.Tuple) and isinstance(n.value, ast.Call)):
                if isinstance(t, ast.Name):
                    out[t.id] = None
                continue
            target = index._project_target(imports, n.value.func) if isinstance(n.value, ast.Call) else None
            named = list(enumerate(t.elts)) if isinstance(t, ast.Tuple) else [(WHOLE, t)]
            for k, e in named:
                if isinstance(e, ast.Name):
                    out[e.id] = (target, k) if target and e.id not in out else None
    return {k: v for k, v in out.items() if v is not None}


def _keep_common(
    table: dict[str, dict[str | int, frozenset[tuple[str, int]]]],
    key: str,
    found: dict[str | int, frozenset[tuple[str, int]]],
) -> None:
    """Record the arguments this call of ``key`` binds (``found``, each with the returned positions
    it relies on), keeping only those every call so far binds: a first call sets them."""
    before = table.get(key)
    table[key] = found if before is None else {a: before[a] | d for a, d in found.items() if a in before}


# words without which a file spells no rank-0 test to hand on (``verbose=(args.gpu == 0)``)
RANKISH = re.compile(r"rank|gpu|main|master|primary|zero", re.IGNORECASE)


class IndexBindings(IndexCore):
    """Records the project-wide spellings and call sites of each file (see the module docstring)."""

    def _star_modules(self, ctx: FileContext, module: str) -> tuple[str, ...]:
        """The project modules this file star-imports."""
        return tuple(
            m
            for node in ctx.of_type(ast.ImportFrom)
            if any(a.name == "*" for a in node.names)
            and (m := self.resolve_module(absolute_module(node, relative_base(ctx, module)) or ""))
            is not None
        )

    def _bindings(self, ctx: FileContext, imports: dict[str, str], module: str) -> None:
        """Project-wide spellings: backward-running objects, rank-0-only objects, meters."""
        from ddp_doctor.lint.dist_tests import distributed_predicates
        from ddp_doctor.lint.rank0 import (
            is_builtin_print,
            is_rank0_test,
            rank0_predicates,
            rank_aliases,
            silenced_stdout,
            silences_other_ranks,
        )

        rank0 = "rank0_logging" in self.facts
        loss = "loss_flow" in self.facts
        if "call_arguments" in self.facts:
            record_arguments(ctx, lambda f: self._project_target(imports, f), self.passed_arguments)
        if "batchnorm" in self.facts:
            record_handed(
                ctx,
                lambda f: self._project_target(imports, f),
                lambda q: bool(BATCHNORM.match(q) or LIBRARY_BN.match(q)),
                self.handed_models,
                module,
                self._star_modules(ctx, module),
            )
        predicates = (
            rank0_predicates(ctx.tree, [f for defs in ctx.functions.values() for f in defs])
            if rank0
            else set()
        )
        self.rank0_predicates |= predicates
        if rank0:  # the file's own rank names (``main_worker(worker_idx, ...)``): not project-wide
            predicates = predicates | rank_aliases(ctx)
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
        if rank0 or "epochs" in self.facts:
            self._call_sites(ctx, imports, predicates)
        for node in ctx.of_type(ast.Assign):
            names = {d for t in node.targets if (d := dotted(t))}
            value = node.value
            while (  # ``VQLoss(...).to(device)``: the instance the constructor built
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in SAME_MODULE_METHODS
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
                and is_none(value.orelse)
                and is_rank0_test(value.test, predicates)
                and is_log_sink(value.body)
            ):
                self.rank0_objects |= {n.split(".")[-1] for n in names}
        if rank0:
            self.rank0_objects |= guarded_sink_names(ctx, predicates)
            self.rank0_sink_classes |= {f"{module}.{c}" for c in rank0_sink_classes(ctx, predicates)}
            for c, attach in attached_writer_classes(ctx).items():
                self.attached_writer_classes[f"{module}.{c}"] = attach

    def _call_sites(self, ctx: FileContext, imports: dict[str, str], predicates: set[str]) -> None:
        """Record, for every call of project code (or ``obj.name(...)``), whether it sits under a
        rank-0 test, the rank-0 tests it hands on, and the loaders from project builders it hands on."""
        from ddp_doctor.lint.rank0 import enclosing_rank0_if, is_not_rank0_test, is_rank0_test

        rank0 = "rank0_logging" in self.facts  # (else only the loaders handed on are recorded)
        # a file without any rank test guards no call (most library files): no parent walks
        guarded_file = rank0 and any(
            is_rank0_test(n.test, predicates) or is_not_rank0_test(n.test, predicates)
            for n in ctx.of_type(ast.If)
        )
        scopes: dict[int, tuple[set[str], dict[str, tuple[str, int]]]] = {}
        results: dict[int, dict[str, tuple[str, int]]] = {}
        ranked = bool(predicates) or any(RANKISH.search(w) for w in ctx.words)
        if guarded_file:
            # a writer or logger built on rank 0 only (None elsewhere) handed on is a rank-0 test where
            # it arrives (``if self.logger: self.logger.info(...)`` of ImbalancedSSL's TrainEngine)
            predicates = set(predicates) | {f"?{n}" for n in guarded_sink_names(ctx, predicates)}
        for call in ctx.of_type(ast.Call):
            func = call.func
            # a function of an imported project module (``distributed_train.train(..., is_logger,
            # ...)``) is that function, not every ``obj.train()`` of the project (``model.train()``)
            key = self._project_target(imports, func)
            if key is None and isinstance(func, ast.Attribute):
                key = None if func.attr.startswith("__") else f".{func.attr}"
            if key is None:
                continue
            guarded = (
                guarded_file and enclosing_rank0_if(ctx.parents, call, SCOPES_UP, predicates) is not None
            )
            self._guarded_calls[key] = self._guarded_calls.get(key, True) and guarded
            # ``obj.name(...)`` too, in a file that can spell a rank test at all (most library files
            # cannot: no per-function flag scans there)
            if rank0 and (not key.startswith(".") or ranked):
                self._record_rank0_args(ctx, imports, predicates, key, call, scopes)
            if rank0 and not key.startswith("."):
                self._record_rank_args(predicates, key, call)
            if "epochs" in self.facts and not key.startswith("."):
                self._record_loader_args(ctx, imports, key, call, results)

    def _record_loader_args(
        self,
        ctx: FileContext,
        imports: dict[str, str],
        key: str,
        call: ast.Call,
        results: dict[int, dict[str, tuple[str, int]]],
    ) -> None:
        """Keep, for ``key``, the arguments every call so far binds to a name bound to what a call of
        project code returned (checked for loaders when the index is complete)."""
        fn = ctx.enclosing_function(call)
        if id(fn) not in results:
            results[id(fn)] = _call_results(self, ctx.local(fn), imports)
        bound = results[id(fn)]
        found: dict[str | int, frozenset[tuple[str, int]]] = {}
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Name) and arg.id in bound:
                found[i] = frozenset({bound[arg.id]})
        for kw in call.keywords:
            if kw.arg is not None and isinstance(kw.value, ast.Name) and kw.value.id in bound:
                found[kw.arg] = frozenset({bound[kw.value.id]})
        _keep_common(self._loader_args, key, found)

    def _record_rank_args(self, predicates: set[str], key: str, call: ast.Call) -> None:
        """Keep, for ``key`` (a project callee), the arguments every call so far binds to the rank
        itself (``Runner_Distributed(..., main_pod=args.rank)``; lint/rank0_handoff.py)."""
        from ddp_doctor.lint.rank0_handoff import rank_arguments

        found = rank_arguments(call, predicates) if call.args or call.keywords else set()
        _keep_common(self._rank_args, key, {a: frozenset() for a in found})

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
                unpacked = _call_results(self, nodes, imports, whole=False)
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
        _keep_common(self._rank0_args, key, found)
