"""set-epoch-missing: a shuffling DistributedSampler over several epochs, and no ``set_epoch``.

DistributedSampler seeds its shuffle with ``seed + epoch``; without ``set_epoch(epoch)`` every
epoch uses the same permutation (torch docs, DistributedSampler: "calling set_epoch() at the
beginning of each epoch before creating the DataLoader iterator is necessary to make shuffling
work properly across multiple epochs"). Flagged when: the sampler shuffles (default), no
``set_epoch`` of the file can run for it (none at all, or only in module-level defs that neither
the sampler's nor the epoch loop's def runs, is run by, or is run after: a second entry point of
the file that sets its own sampler's epoch; ``samplers.set_epoch_units``), and the loader is
iterated inside an outer loop
(or handed to a function from a loop over epochs, or to a same-file generator that re-iterates it
forever: ``def sample_data(loader): while True: for b in loader: yield b``). A sampler built by a
helper (``sampler=data_sampler(ds, shuffle=True, distributed=True)`` where ``data_sampler`` returns
the DistributedSampler) is followed to its loader; so is a DistributedSampler chosen at run time
(``RandomSampler(ds) if args.local_rank == -1 else DistributedSampler(ds)``, or a class alias
``S = ... if ... else DistributedSampler; S(ds)``): the bug exists whenever that branch runs, which
is whenever training is distributed. A loader returned by helpers of the file and handed to the
constructor of a class of the file that keeps it on ``self`` is followed to the method iterating it,
and the loop around every call of that method, when it walks epochs, is the epoch loop (BiRefNet
``Trainer(data_loaders=init_data_loaders(...))``, ``trainer.train_epoch(epoch)``;
``rules/_carried_loaders.py``). In project mode, a loader handed to project code of another
file that re-iterates it every epoch and never calls ``set_epoch`` there either (neuralop's entry
script builds the sampler, ``Trainer.train`` loops the epochs) is flagged at the sampler; a loader that a builder of another file returns (hysts
``train_loader, val_loader = create_dataloader(config)``, also through a ``BatchSampler``) and this
file loops over epochs is flagged at the epoch loop, unless a file the loader is handed to in that
loop calls ``set_epoch``. Autofix: ``sampler.set_epoch(epoch)`` as the
first statement of that outer loop, when the sampler has a name and the loop variable is a name.
Round 21: a ``set_epoch`` that exists but passes a value the epoch loop never changes
(What-changes-you ``for epoch in range(args.epoch): train_sampler.set_epoch(args.epoch)``, a
constant) is the same bug; autofix passes the loop variable. A sampler drawn through a batch sampler
(torch's ``BatchSampler``, or any call taking it first or as ``sampler=`` whose result a DataLoader takes
as its ``batch_sampler``) is followed to that loader; so are dict entries by constant key and by a loop
variable over literal keys (``FileContext.names_of``: the torchvision fine-tuning tutorial's
``dataloaders[phase]``). Round 24: one loader per task kept as an entry of a list or dict filled per
task, picked by a variable and re-iterated when it runs out (DocRes: ``except StopIteration:
its[k] = iter(loaders[k]['loader'])``), is the loader read as any entry (``loaders[*]``). A sampler class of the file that orders its samples
by ``self.epoch`` and changes it only in ``set_epoch`` (MagFace's ``ParallelDistributedSampler``, a copy
of torch's; a subclass of DistributedSampler) is a DistributedSampler (``samplers.distributed_sampler_call``).
Round 25: ``sampler.set_epoch(0)`` with a literal, outside every loop (Copyisallyouneed sets it once before
the epoch loop), fixes one epoch for good: it counts as no ``set_epoch`` (``_set_once_to_a_literal``).
So does one under ``if self.ddp:`` where ``self.ddp`` holds a constructor parameter that defaults to
False and that no construction passes (kpgt's ``Trainer(...)`` built without ``ddp=``;
``call_arguments.dead_by_constructor_default``); in project mode the module then counts as one without
``set_epoch`` once every construction is seen (``ProjectIndex._finish_set_epoch_gates``).
Round 27: (project) the project's own epoch-ordered sampler class may live in a module of its own and be
built in another (3D-Detection-Code's ``from lib.datasets.loader.sampler import DistributedSampler``, a
copy of torch's): ``Summary.epoch_sampler``, read by ``samplers.distributed_sampler_call`` through the
index, and by the index itself once every class is known (``ProjectIndex._finish_project_samplers``).
A builder of another file bound per dataset in an ``if``/``elif`` chain (exp_torch_byol's
``loader_method = get_data_k400 ... else: loader_method = get_data_ucf``) returns a loader over a
shuffling DistributedSampler when every builder it may name does (``_returned_loaders``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.accelerate_sinks import accelerate_prepare
from ddp_doctor.lint.call_arguments import dead_by_constructor_default, dead_unless_passed
from ddp_doctor.lint.context import FileContext, dotted, holder, keyword, parameter_names, positional_params
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.rank0 import bound_argument
from ddp_doctor.lint.rules._carried_loaders import caller_epoch_loop, carried_loaders, walks_epochs
from ddp_doctor.lint.rules._data import (
    bound_here_only_to,
    bound_names,
    enclosing_loop,
    evaluation_loader,
    loops_iterating,
    unreached_branch,
)
from ddp_doctor.lint.rules._returned_loaders import returned_loader, sets_epoch_elsewhere
from ddp_doctor.lint.rules.base import (
    Edit,
    Rule,
    Violation,
    insert_line_before,
    replace_node,
    starts_own_line,
)
from ddp_doctor.lint.rules.fp16_no_scaler import EVAL_FUNCTION
from ddp_doctor.lint.samplers import (
    DISTRIBUTED_SAMPLER,
    WHOLE,
    batch_sampler_bindings,
    distributed_sampler_call,
    is_dataloader_call,
    loader_sampler,
    rank0_set_epoch_calls,
    set_epoch_calls,
    set_epoch_units,
    top_unit,
)


class SetEpochMissing(Rule):
    id = "set-epoch-missing"
    flagged = (
        "a shuffling DistributedSampler (also returned by a same-file helper, or chosen at run time: "
        "`RandomSampler(ds) if local_rank == -1 else DistributedSampler(ds)`), no `set_epoch` "
        "in the file that its def or the epoch loop's runs (one only in another entry point of the file "
        "does not count), and its loader iterated inside an outer (epoch) loop, passed to a "
        "function from a loop over epochs, or re-iterated forever by a same-file generator (`while "
        "True: for b in loader: yield b`), or returned by helpers and kept by a trainer class of the file "
        "whose epoch method the epoch loop calls (`Trainer(loader)` ... `for epoch in ...: "
        "trainer.train_epoch(epoch)`); a progress bar rebuilt each pass (`it = tqdm(loader)` in "
        "`while step < max_steps:`), a loader unpacked from a helper's tuple (`_, loader = "
        "get_loader(ds)`) handed on from `while epoch <= max_epoch:`; (project) a loader returned by "
        "a builder of another file (`train_loader, val_loader = create_dataloader(cfg)`, also with "
        "`sampler=DistributedSampler(ds)` inside its DataLoader call, or returning the whole result of a "
        "builder of its file: `if status == 'train': return build_train_dataloader(...)`) looped over epochs here or kept by "
        "a trainer class of this file; the loader handed by keyword (`train(dataloader=loader)`) from a "
        "loop whose range names epochs (`for e in range(cfg['epoch'])`); a method binding `pbar = "
        "tqdm(self.loader)` or `pbar = self.loader` and iterating `pbar`, called once per epoch; (project) "
        "a shuffling DistributedSampler that project code of another file returns (`sampler = "
        "dist.data_sampler(ds, shuffle=True, distributed=...)`), a loader handed to a trainer class "
        "whose methods re-iterate what its constructor kept (`Trainer(model, loader, epochs).fit()` with "
        "`for epoch in ...: for b in self.train_loader:`, also from a method the loop calls), a builder "
        "reached through a local alias (`get_loader = dist.get_loader if cuda else data.get_loader`: the "
        "branch named or tested for distribution; or bound per dataset in an `if`/`elif` chain to builders "
        "that all return one: `if args.k400: loader_method = get_data_k400 ... else: loader_method = "
        "get_data_ucf`); a `set_epoch` that passes the same value on every pass "
        "of the epoch loop (`for epoch in range(args.epoch): sampler.set_epoch(args.epoch)`, a constant); "
        "the sampler drawn through a batch sampler (`DataLoader(ds, batch_sampler=BatchSampler(sampler, 8, "
        "False))`, a project's `BucketBatchSampler(sampler, ...)`); loaders and samplers kept in dicts by "
        "phase (`loaders['train']`, `{x: DataLoader(...) for x in ['train', 'val']}` read as "
        "`loaders[phase]` in `for phase in ['train', 'val']:`); (project) a function's loader parameter that "
        "every call binds to the loader a builder of another file returns over a shuffling DistributedSampler "
        "(`loader_train, _ = configure_data(cfg)` then `train_loop(..., loader_train=loader_train)`), drawn "
        "there every epoch; (project) a `set_epoch` under `if sampler is not None:` in a def no call hands "
        "that parameter does not count; a loader built in place as the argument of a same-file generator "
        "that re-iterates it (`cycle_loader(DataLoader(ds, sampler=s))`); (project) `obj.load_data()` on an "
        "instance a project class or factory built, returning what its class keeps on `self` over the sampler; one loader per task kept as a list or dict "
        "entry (`[DataLoader(d, sampler=DistributedSampler(d)) for d in datasets]`, `loaders[task] = "
        "DataLoader(...)`, `.append(...)`, also `[{'loader': DataLoader(...)} for ...]`) picked by a variable and "
        "re-created as an iterator in the step loop (`except StopIteration: its[k] = iter(loaders[k])`); a "
        "sampler class of the project's own that orders its samples by `self.epoch`, which only its `set_epoch` "
        "changes (a subclass of DistributedSampler, or a copy: `g.manual_seed(self.epoch)` in `__iter__`; "
        "(project) also one of another file: `from lib.loader.sampler import DistributedSampler`); a "
        "`set_epoch` passing a literal outside every loop (`sampler.set_epoch(0)` once before the epoch loop) "
        "counts as none; (project) so does one under `if self.ddp:` where `self.ddp` is set once, in "
        "`__init__`, from a parameter defaulting to False that no construction of the class passes (nor a "
        "subclass, nor `trainer.ddp = ...` from outside); (project) a loader a method of a handed dataset "
        "returns (`self.train_dataset.get_loader(rank=r, world_size=n)`) where every project method of that "
        "name returns one over a shuffling DistributedSampler; a trainer class whose step loop remakes "
        "`iter(self.train_dataloader)` each time it runs out, from a loop over epochs or steps"
    )
    not_flagged = (
        "`shuffle=False`, `loader.sampler.set_epoch(e)`, a loader handed to `accelerator.prepare` (its "
        "prepared loader sets the sampler's epoch each pass), a single pass, an evaluation loop (no "
        "backward, in a function named for evaluation) inside another loop, an inline evaluation "
        "pass in the epoch loop (no backward or step, after `model.eval()` or under `no_grad`), a loader "
        "named for evaluation (`val_loader`, `dl_valid`), a loader whose dataset or sampler the trainer "
        "tells each pass (`self.loader.dataset.shuffle(epoch)`), a `set_epoch` in the file of the function "
        "the epoch loop hands the loader to, a loop that also passes its epoch (`set_epoch(0)` before an "
        "evaluation after `set_epoch(epoch)`), `set_epoch(self.epoch)` or an attribute the file assigns, "
        "a sampler built only in a builder's `if kind == 'toy':` branch that every call of the file "
        "passes another literal for, `prepare` on any name bound to `Accelerator(...)`, a sampler of a helper that "
        "shares its local names (`train_sampler`, `dataloader`) with another helper of the file building and "
        "re-iterating its own"
    )
    autofix = (
        "inserts `sampler.set_epoch(epoch)` as the first line of the epoch loop (when both names are "
        "in scope there); passes the loop variable instead of an unchanging value"
    )
    required = (("DistributedSampler", "set_epoch"),)
    # project mode: the sampler may be built by a loader builder of another file (hysts
    # ``create_dataloader``), the epochs looped here
    required_in_project = (("DistributedSampler", "epoch"),)
    project_facts = frozenset({"epochs", "call_arguments"})

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        # a ``set_epoch`` that exists but passes the same value every epoch (not silenced by itself)
        yield from self._same_epoch_every_pass(ctx)
        # (project) ``if sampler is not None: sampler.set_epoch(...)`` in a def no call hands a
        # sampler (SEDD's ``cycle_loader(DataLoader(..., sampler=train_sampler))``): it never runs
        # a literal epoch set once, outside every loop (Copyisallyouneed's ``sampler.set_epoch(0)`` before
        # ``for _ in range(...): for batch in train_iter:``), never changes the order either
        # (project) ``if self.ddp: sampler.set_epoch(e)`` where ``self.ddp`` holds a constructor
        # parameter defaulting to False that no construction passes (kpgt's ``Trainer``): never runs
        units = set_epoch_units(
            ctx,
            dead=lambda c: (
                dead_unless_passed(ctx, c) is not None
                or dead_by_constructor_default(ctx, c) is not None
                or _set_once_to_a_literal(ctx, c)
            ),
        )
        for v, involved in self._check(ctx, facts, _never_called(ctx, units)):
            # a ``set_epoch`` of the file counts unless every def the finding involves (the
            # sampler's, the epoch loop's) is one that neither runs it nor is run after it
            if units is None or not any((u := top_unit(ctx, n)) is None or id(u) in units for n in involved):
                yield v

    def _check(
        self, ctx: FileContext, facts: LoopFacts, never: Text
    ) -> Iterator[tuple[Violation, tuple[ast.AST, ...]]]:
        calls = [n for n in ctx.nodes if isinstance(n, ast.Call)]
        yield from self._from_builders(ctx, facts, calls, never)
        yield from self._handed_from_builders(ctx, facts, never)
        # once, not per sampler: a notebook of many cells repeating the loop was quadratic (minutes)
        dataloaders: list[tuple[ast.Call, ast.expr | None, set[str], set[str]]] = [
            (
                node,
                arg,
                ctx.names_of(arg) if arg is not None else set(),
                bound_names(ctx, node) | _held_in_list(ctx, node),
            )
            for node in calls
            if is_dataloader_call(ctx, node)
            for arg in (loader_sampler(node) or [None])
        ]
        for call in calls:
            direct = distributed_sampler_call(ctx, call)
            built_at = None if direct else _sampler_of_project(ctx, call)
            if not direct and built_at is None:
                continue
            if unreached_branch(ctx, call):
                continue  # ``if type == "shakespeare":`` of a builder every call gives another type
            shuffle = keyword(call, "shuffle")
            if (
                isinstance(shuffle, ast.Constant)
                and not shuffle.value
                or (built_at is None and len(call.args) > 3)
            ):
                continue  # shuffle=False (or positional, unreadable): the order is meant to repeat
            what = (
                Text(f"DistributedSampler (line {call.lineno}", f"DistributedSampler（第 {call.lineno} 行")
                if built_at is None
                else Text(
                    f"The DistributedSampler that `{ctx.segment(call.func)}(...)` returns (line {call.lineno}, built at {built_at}",
                    f"`{ctx.segment(call.func)}(...)` 返回的 DistributedSampler（第 {call.lineno} 行，构造于 {built_at}",
                )
            )
            samplers = bound_names(ctx, call)
            # batch samplers drawing from it lead to its loaders, but have no ``set_epoch`` of their
            # own (torch's ``BatchSampler``): the autofix's handle stays the sampler
            drawing = _batch_samplers_over(ctx, samplers, dataloaders)
            loaders, ours = self._loaders(ctx, dataloaders, call, samplers | drawing)
            if _prepared_by_accelerate(ctx, facts, loaders) or evaluation_loader(loaders):
                continue
            # a loop of another function drawing its own loader under the same local name
            others = [n for n, *_ in dataloaders if not any(n is o for o in ours)]
            epoch_loop = self._epoch_loop(ctx, facts, loaders, others)
            if epoch_loop is None and not loaders:
                epoch_loop = _generator_over_inline_loader(ctx, calls, call, samplers | drawing)
            if epoch_loop is None and loaders:
                # returned by helpers and kept by a trainer class of the file (BiRefNet)
                loaders = carried_loaders(ctx, loaders)
                epoch_loop = self._epoch_loop(ctx, facts, loaders, others)
            if epoch_loop is None:
                handed = self._handed_to_epochs(ctx, calls, loaders)
                if handed is not None:
                    yield (
                        self.violation(
                            call,
                            Text(
                                f"{what.en}) shuffles but {never.en}: "
                                f"`{ctx.segment(handed.func)}(...)` (line {handed.lineno}) iterates its loader again "
                                "every epoch in code of another file that never calls it either, so every epoch "
                                "sees the same order.",
                                f"{what.zh}）开启了 shuffle 但{never.zh}："
                                f"`{ctx.segment(handed.func)}(...)`（第 {handed.lineno} 行）在另一个文件的代码里每个 epoch "
                                "重新遍历它的 DataLoader，那里也没有调用 `set_epoch`，所以每个 epoch 顺序都相同。",
                            ),
                            handed_to_line=handed.lineno,
                        ),
                        (call, handed),
                    )
                continue
            if sets_epoch_elsewhere(ctx, epoch_loop, loaders | samplers | drawing):
                continue  # ``train_one_epoch(loader, epoch)`` of another file sets it
            handle = min(samplers) if samplers else (f"{min(loaders)}.sampler" if loaders else None)
            always = built_at is None and _always_distributed(ctx, call)
            when = Text("", "") if always else Text(", chosen when distributed", "，分布式时选用")
            yield (
                self.violation(
                    call,
                    Text(
                        f"{what.en}{when.en}) shuffles but {never.en}: the loop "
                        f"at line {epoch_loop.lineno} sees the same order every epoch.",
                        f"{what.zh}{when.zh}）开启了 shuffle 但{never.zh}：第 {epoch_loop.lineno} "
                        "行的循环每个 epoch 顺序都相同。",
                    ),
                    # chosen at run time, the sampler may be a RandomSampler, which has no set_epoch
                    edits=self._fix(ctx, epoch_loop, handle) if always else (),
                    epoch_loop_line=epoch_loop.lineno,
                ),
                (call, epoch_loop),
            )

    def _from_builders(
        self, ctx: FileContext, facts: LoopFacts, calls: list[ast.Call], never: Text
    ) -> Iterator[tuple[Violation, tuple[ast.AST, ...]]]:
        """(project) ``train_loader, val_loader = create_dataloader(config)``: a project builder of
        another file returns a loader over a shuffling DistributedSampler, and this file iterates it
        over epochs; neither file calls ``set_epoch``. Reported at the epoch loop."""
        if ctx.project is None:
            return
        for call in calls:
            parent = ctx.parents.get(call)
            if not isinstance(parent, ast.Assign) or len(parent.targets) != 1 or parent.value is not call:
                continue
            target = parent.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            # the loop draws the name here, or (CMGAN ``Trainer(train_ds, ...)``) a trainer class of
            # this file keeps it on ``self`` and its epoch method iterates it
            looped = {
                i: loop
                for i, n in enumerate(names)
                if (name := dotted(n)) is not None
                and not evaluation_loader({name})
                and (
                    (loop := self._epoch_loop(ctx, facts, {name})) is not None
                    or (loop := self._epoch_loop(ctx, facts, carried_loaders(ctx, {name}))) is not None
                )
            }
            if not looped or _prepared_by_accelerate(ctx, facts, {d for n in names if (d := dotted(n))}):
                continue
            found = returned_loader(ctx, call) or {}
            picked = [
                (loop, found[p])
                for i, loop in looped.items()
                if (p := i if isinstance(target, ast.Tuple) else WHOLE) in found
            ]
            if not picked:
                continue
            loop, where = picked[0]
            if sets_epoch_elsewhere(ctx, loop, {d for n in names if (d := dotted(n))}):
                continue
            builder = ctx.segment(call.func)
            yield (
                self.violation(
                    loop,
                    Text(
                        f"`{builder}(...)` (line {call.lineno}) returns a loader over a shuffling DistributedSampler "
                        f"({where}) and {never.en}: the loop at line {loop.lineno} sees the same "
                        "order every epoch.",
                        f"`{builder}(...)`（第 {call.lineno} 行）返回的 DataLoader 使用开启 shuffle 的 "
                        f"DistributedSampler（{where}），但{never.zh}：第 {loop.lineno} 行的循环每个 epoch "
                        "顺序都相同。",
                    ),
                    epoch_loop_line=loop.lineno,
                ),
                (call, loop),
            )

    def _handed_from_builders(
        self, ctx: FileContext, facts: LoopFacts, never: Text
    ) -> Iterator[tuple[Violation, tuple[ast.AST, ...]]]:
        """(project) ``def train_loop(..., loader_train, ...)`` loops over epochs drawing a parameter
        that every call of it in the project binds to the loader a builder of another file returns
        over a shuffling DistributedSampler (comp4471: ``loader_train, loader_val =
        configure_data(cfg)`` in main.py, then ``train_loop(..., loader_train=loader_train)``); no
        file involved calls ``set_epoch``. Reported at the epoch loop."""
        if ctx.project is None:
            return
        for fn in ctx.tree.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for param, where in sorted(ctx.project.sampler_loader_params(ctx, fn).items()):
                if where.split(":")[0] == os.path.basename(ctx.path) or evaluation_loader({param}):
                    continue  # a builder of this file is read where it is called
                loop = self._epoch_loop(ctx, facts, {param})
                if loop is None or not (fn.lineno <= loop.lineno <= (fn.end_lineno or fn.lineno)):
                    continue
                if _prepared_by_accelerate(ctx, facts, {param}) or sets_epoch_elsewhere(ctx, loop, {param}):
                    continue
                yield (
                    self.violation(
                        loop,
                        Text(
                            f"`{param}` is, at every call of `{fn.name}`, a loader over a shuffling "
                            f"DistributedSampler ({where}) and {never.en}: the loop at line {loop.lineno} "
                            "sees the same order every epoch.",
                            f"每次调用 `{fn.name}` 时 `{param}` 都是使用开启 shuffle 的 DistributedSampler 的 "
                            f"DataLoader（{where}），但{never.zh}：第 {loop.lineno} 行的循环每个 epoch 顺序都相同。",
                        ),
                        epoch_loop_line=loop.lineno,
                    ),
                    (fn, loop),
                )

    def _same_epoch_every_pass(self, ctx: FileContext) -> Iterator[Violation]:
        """``for epoch in range(args.epoch): train_sampler.set_epoch(args.epoch)``: every ``set_epoch``
        of an epoch loop passes a value the loop never changes (a constant, or names and attributes
        that are neither the loop's target nor assigned in it, nor an attribute the file assigns
        anywhere, nor on ``self``), so the sampler reshuffles to the same order every epoch.
        Reported at the first such call; a loop that also passes its epoch (flow_matching's
        ``set_epoch(epoch)`` at the top, ``set_epoch(0)`` before its evaluation) is fine."""
        by_loop: dict[int, tuple[ast.For | ast.AsyncFor | ast.While, list[ast.Call]]] = {}
        for call in set_epoch_calls(ctx):
            loop = enclosing_loop(ctx, call)
            if loop is not None and walks_epochs(ctx, loop):
                by_loop.setdefault(id(loop), (loop, []))[1].append(call)
        for loop, found in by_loop.values():
            changed = _changed_by(loop)
            if not all(_same_every_pass(ctx, changed, c) for c in found):
                continue
            call = found[0]
            value = ctx.segment(call.args[0]) if call.args else ""
            yield self.violation(
                call,
                Text(
                    f"`{ctx.segment(call.func)}({value})` (line {call.lineno}) passes the same value on every "
                    f"pass of the epoch loop at line {loop.lineno} (`{value}` is not the loop's epoch and does "
                    "not change in it): the sampler reshuffles to the same order every epoch.",
                    f"`{ctx.segment(call.func)}({value})`（第 {call.lineno} 行）在第 {loop.lineno} 行的 epoch "
                    f"循环里每次都传入相同的值（`{value}` 不是循环的 epoch，也不在循环中改变）：每个 epoch "
                    "的打乱顺序都相同。",
                ),
                epoch_loop_line=loop.lineno,
                edits=_pass_loop_target(ctx, loop, call),
            )

    @staticmethod
    def _loaders(
        ctx: FileContext,
        dataloaders: list[tuple[ast.Call, ast.expr | None, set[str], set[str]]],
        sampler: ast.Call,
        names: set[str],
    ) -> tuple[set[str], list[ast.Call]]:
        """Names bound to the DataLoader(sampler=...) calls that take this sampler (directly, by
        name, or as the result of the same-file helper that returns it), and those calls. A call in a
        function that builds its own sampler under the sampler's name takes that one, not this."""
        builder = (
            ctx.enclosing_function(sampler) if isinstance(ctx.parents.get(sampler), ast.Return) else None
        )
        out: set[str] = set()
        ours: list[ast.Call] = []
        for node, arg, arg_names, bound in dataloaders:
            from_helper = isinstance(arg, ast.Call) and builder is not None and ctx.helper(arg) is builder
            if (
                arg is sampler
                or from_helper
                or (shared := arg_names & names)
                and not (
                    ctx.enclosing_function(node) is not ctx.enclosing_function(sampler)
                    and all(
                        bound_here_only_to(
                            ctx, node, n, lambda v: _builds_another_sampler(ctx, v, sampler, names)
                        )
                        for n in shared
                    )
                )
            ):
                out |= bound
                ours.append(node)
        return out, ours

    @staticmethod
    def _epoch_loop(
        ctx: FileContext, facts: LoopFacts, loaders: set[str], others: Sequence[ast.Call] = ()
    ) -> ast.For | ast.AsyncFor | ast.While | None:
        """The loop whose passes repeat the loaders' order. ``others``: the file's DataLoader calls
        that are not these loaders; a loop drawing a local its function binds only to one of them
        draws that loader, whatever its name."""
        if not loaders:
            return None
        direct = loaders | _wrapped_loaders(ctx, loaders)
        aliases = _method_aliases(ctx, loaders)
        for loop in loops_iterating(ctx, direct | set(aliases), follow_aliases=False):
            if isinstance(loop, (ast.For, ast.AsyncFor)) and not _draws_in_scope(ctx, loop, direct, aliases):
                continue
            if others and _draws_another_loader(ctx, loop, direct, others):
                continue
            # in its own method, the loop around every call of that method (``for epoch in ...:
            # trainer.train_epoch(epoch)``)
            outer = _epoch_of(ctx, loop) or caller_epoch_loop(ctx, loop)
            if (
                outer is not None
                and isinstance(loop, (ast.For, ast.AsyncFor))
                and not _evaluates(ctx, facts, loop)
                and not _evaluation_pass(ctx, facts, loop, outer)
            ):
                return outer
        for node in ctx.of_type(ast.Call):  # `it = iter(loader)` re-created inside a loop
            if (
                isinstance(node.func, ast.Name)
                and node.func.id == "iter"
                and node.args
                and _entries(node.args[0]) & loaders
            ):
                outer = enclosing_loop(ctx, node)
                if outer is not None:
                    return outer
        for node in ctx.of_type(ast.Call):  # `sample_data(loader)`: a generator that re-iterates it forever
            fn = ctx.helper(node)
            if fn is None or not any(dotted(a) in loaders for a in node.args):
                continue
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
            fed = {params[i] for i, a in enumerate(node.args) if i < len(params) and dotted(a) in loaders}
            for inner in loops_iterating(ctx, fed, follow_aliases=False):
                outer = enclosing_loop(ctx, inner)
                if outer is not None and ctx.enclosing_function(inner) is fn:
                    return outer
        # `for epoch in ...: train(loader)`, also `while epoch <= max_epoch: train(loader)`, `for e in
        # range(cfg['epoch']): train(dataloader=loader)` (the loop counts epochs when its target or
        # its range names them; the loader is handed on positionally or by keyword)
        for loop in ctx.of_type(ast.For) + ctx.of_type(ast.AsyncFor) + ctx.of_type(ast.While):
            if walks_epochs(ctx, loop):
                for n in ctx.local(loop):
                    if isinstance(n, ast.Call) and any(
                        dotted(a) in loaders for a in (*n.args, *(k.value for k in n.keywords))
                    ):
                        if _wraps_into_name(ctx, n) or _iterated_here(ctx, n) or dotted(n.func) == "len":
                            # ``bar = tqdm(loader)`` or ``for b in tqdm(loader)``: the loop drawing
                            # from it is decided above; ``len(loader)`` draws no batch
                            continue
                        if _trains_nothing(facts, ctx.helper(n)):
                            continue
                        return loop
        return None

    @staticmethod
    def _handed_to_epochs(ctx: FileContext, calls: list[ast.Call], loaders: set[str]) -> ast.Call | None:
        """(project) A call, outside any loop here, that hands the loader to project code iterating
        it on every pass of an outer loop: a trainer class's ``train(train_loader=...)``."""
        if ctx.project is None or not loaders:
            return None
        for node in calls:
            if enclosing_loop(ctx, node) is None and ctx.project.reiterates_argument(ctx, node, loaders):
                return node
        return None

    @staticmethod
    def _fix(
        ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While, handle: str | None
    ) -> tuple[Edit, ...]:
        target = getattr(loop, "target", None)
        if (
            handle is None
            or not isinstance(target, ast.Name)
            or target.id == "_"
            or isinstance(loop, ast.While)
        ):
            return ()
        if not _visible(ctx, handle, loop):
            return ()
        first = loop.body[0]
        if first.lineno == loop.lineno or not starts_own_line(ctx, first):
            return ()
        return (insert_line_before(ctx, first, f"{handle}.set_epoch({target.id})"),)


def _generator_over_inline_loader(
    ctx: FileContext, calls: list[ast.Call], sampler: ast.Call, names: set[str]
) -> ast.For | ast.AsyncFor | ast.While | None:
    """``cycle_loader(DataLoader(ds, sampler=train_sampler))``: a DataLoader over the sampler built in
    place as an argument of a same-file def that re-iterates that parameter inside an outer loop
    (``def cycle_loader(dataloader): while 1: for data in dataloader: yield data``, SEDD): the outer
    loop is the one whose passes repeat the order."""
    for node in calls:
        if not is_dataloader_call(ctx, node):
            continue
        if not any(
            arg is sampler or (arg is not None and ctx.names_of(arg) & names) for arg in loader_sampler(node)
        ):
            continue
        parent = ctx.parents.get(node)
        if not isinstance(parent, ast.Call) or not any(a is node for a in parent.args):
            continue
        fn = ctx.helper(parent)
        if fn is None or evaluation_loader(bound_names(ctx, parent)):
            continue  # ``valid_loader = cycle_loader(DataLoader(valid_set, sampler=test_sampler))``
        params = positional_params(fn, bound=isinstance(parent.func, ast.Attribute))
        at = next(i for i, a in enumerate(parent.args) if a is node)
        if at >= len(params) or any(isinstance(a, ast.Starred) for a in parent.args[:at]):
            continue
        for inner in loops_iterating(ctx, {params[at]}, follow_aliases=False):
            outer = enclosing_loop(ctx, inner)
            if outer is not None and ctx.enclosing_function(inner) is fn and ctx.within(outer, fn):
                return outer
    return None


def _builds_another_sampler(ctx: FileContext, value: ast.expr, sampler: ast.Call, names: set[str]) -> bool:
    """``value`` constructs a sampler (a DistributedSampler, or any ``...Sampler(...)`` class) and
    neither is ``sampler`` nor reads a name holding it (``BatchSampler(sampler, 8, False)`` draws from
    it): the name it is bound to holds another sampler."""
    if ctx.within(sampler, value) or any(dotted(n) in names for n in ast.walk(value)):
        return False
    return any(
        isinstance(c, ast.Call)
        and (
            distributed_sampler_call(ctx, c) or (dotted(c.func) or "").rsplit(".", 1)[-1].endswith("Sampler")
        )
        for c in ast.walk(value)
    )


def _draws_another_loader(
    ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While, names: set[str], others: Sequence[ast.Call]
) -> bool:
    """Every loader name ``loop`` draws is a local its function binds only to one of ``others``
    (``dataloader = DataLoader(...)`` over its own sampler): the loop draws that loader."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    drawn = {d for n in ast.walk(loop.iter) if (d := dotted(n)) in names}

    def another(value: ast.expr) -> bool:
        return any(value is o for o in others)

    return bool(drawn) and all(bound_here_only_to(ctx, loop, d, another) for d in drawn)


def _batch_samplers_over(
    ctx: FileContext, names: set[str], dataloaders: list[tuple[ast.Call, ast.expr | None, set[str], set[str]]]
) -> set[str]:
    """Names of batch samplers drawing from the sampler ``names`` hold (``batch_sampler =
    BatchSampler(sampler, 8, False)``, a project's ``BucketBatchSampler(sampler, ...)``) that a
    DataLoader of the file takes as its ``batch_sampler``: its order is the sampler's."""
    given = {n for _, _, arg_names, _ in dataloaders for n in arg_names}
    return {
        t
        for targets, source in batch_sampler_bindings(ctx, ctx.of_type(ast.Assign), given)
        if ctx.names_of(source) & names
        for t in targets & given
    }


def _pass_loop_target(
    ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While, call: ast.Call
) -> tuple[Edit, ...]:
    """Autofix: pass the epoch loop's own variable (``set_epoch(args.epoch)`` -> ``set_epoch(epoch)``)."""
    target = getattr(loop, "target", None)
    if not isinstance(target, ast.Name) or target.id == "_" or len(call.args) != 1:
        return ()
    return (replace_node(ctx, call.args[0], target.id),)


def _changed_by(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names and attributes a pass of ``loop`` may change: its target and what its body stores."""
    changed = {
        d for n in ast.walk(loop) if isinstance(getattr(n, "ctx", None), ast.Store) and (d := dotted(n))
    }
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        changed |= {d for n in ast.walk(loop.target) if (d := dotted(n))}
    return changed


def _set_once_to_a_literal(ctx: FileContext, call: ast.Call) -> bool:
    """``sampler.set_epoch(0)`` outside every loop of its def: it sets one epoch for good, so each pass
    of a later epoch loop draws the same order, as if it were not written. One inside a loop is
    ``_same_epoch_every_pass``'s (reported there)."""
    given = call.args[0] if len(call.args) == 1 and not call.keywords else None
    return isinstance(given, ast.Constant) and enclosing_loop(ctx, call) is None


def _same_every_pass(ctx: FileContext, changed: set[str], call: ast.Call) -> bool:
    """The epoch ``call`` passes cannot change from one pass of its loop to the next (``changed``:
    what the loop changes; see ``_same_epoch_every_pass``); unknown (a call, a subscript,
    ``self.epoch``) is not."""
    value = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int) and not isinstance(value.value, bool)
    if value is None or any(not isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(value)):
        return False
    name = dotted(value)
    if name is None or name.split(".")[0] in ("self", "cls"):
        return False
    roots = {name, name.split(".")[0]}
    if roots & changed:
        return False
    if isinstance(value, ast.Attribute):
        # ``args.epoch`` that some function of the file sets (``args.epoch = epoch`` in a helper the
        # loop calls): it may change
        attr = value.attr
        return not any(
            isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store)
            for n in ctx.nodes
        )
    return not any(isinstance(n, ast.Global) and name in n.names for n in ctx.nodes)


def _sampler_of_project(ctx: FileContext, call: ast.Call) -> str | None:
    """(project) ``sampler = dist.data_sampler(dataset, shuffle=True, distributed=...)``: where the
    shuffling DistributedSampler that project code of another file returns is built (in this file the
    sampler call in the helper is the one read)."""
    project: ProjectIndex | None = ctx.project
    if project is None or not isinstance(ctx.parents.get(call), ast.Assign):
        return None
    return project.sampler_built_by(ctx, call)


def _never_called(ctx: FileContext, units: set[int] | None) -> Text:
    """How the message says that no ``set_epoch`` reaches the sampler: none in the file, or (a file
    with two entry points, only one of which sets its sampler's epoch) only in defs that the
    finding's sampler and epoch loop neither run nor are run by (``set_epoch_units``)."""
    if units is None:
        only_rank0 = sorted(c.lineno for c in rank0_set_epoch_calls(ctx))
        if only_rank0:
            at = ", ".join(str(n) for n in only_rank0[:3])
            return Text(
                f"`set_epoch` is called only under a rank-0 test (line {at}), so the other ranks never call it",
                f"`set_epoch` 只在 rank 0 判断下调用（第 {at} 行），其他 rank 从不调用",
            )
        dead = sorted(c.lineno for c in set_epoch_calls(ctx))
        if dead:
            at = ", ".join(str(n) for n in dead[:3])
            return Text(
                f"`set_epoch` is called only under a test of a parameter that no call passes (line {at}), "
                "so it never runs",
                f"`set_epoch` 只在检查某个从未被传入的参数的条件下调用（第 {at} 行），因此从不执行",
            )
        return Text("`set_epoch` is never called", "从未调用 `set_epoch`")
    lines = sorted(c.lineno for c in set_epoch_calls(ctx))
    at = ", ".join(str(n) for n in lines[:3]) + (", ..." if len(lines) > 3 else "")
    return Text(
        f"`set_epoch` is called only in code this loop never runs (line {at})",
        f"`set_epoch` 只在这个循环不会执行的代码里调用（第 {at} 行）",
    )


def _visible(ctx: FileContext, handle: str, loop: ast.AST) -> bool:
    """The handle's root name is bound in the loop's function (or is ``self`` in the same class
    that assigns the attribute), so the inserted ``set_epoch`` line cannot raise NameError."""
    root, _, attr = handle.partition(".")
    scope = ctx.enclosing_function(loop)
    if root == "self":
        cls = ctx.parents.get(scope)
        attr_root = f"self.{attr.split('.')[0]}"
        return isinstance(cls, ast.ClassDef) and any(
            isinstance(n, ast.Assign) and any(dotted(t) == attr_root for t in n.targets)
            for n in ast.walk(cls)
        )
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and root in parameter_names(scope):
        return True
    return any(
        isinstance(n, ast.Name) and n.id == root and isinstance(n.ctx, ast.Store) for n in ctx.local(scope)
    )


def _always_distributed(ctx: FileContext, call: ast.Call) -> bool:
    """The sampler is a DistributedSampler on every path (not one branch of a run-time choice)."""
    return ctx.call_qualname(call) == DISTRIBUTED_SAMPLER and not isinstance(ctx.parents.get(call), ast.IfExp)


def _trains_nothing(facts: LoopFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """A same-file function (``self.val(val_loader)`` from the epoch loop) that neither backprops nor
    steps an optimizer, also through its own helpers: the order in which it draws the loader never
    reaches the weights (an evaluation pass), so repeating it each epoch changes nothing."""
    return fn is not None and not facts.has_backward(fn.body) and not facts.has_optimizer_step(fn.body)


def _prepared_by_accelerate(ctx: FileContext, facts: LoopFacts, loaders: set[str]) -> bool:
    """A loader handed to ``accelerator.prepare(...)`` (or bound from its result): accelerate's
    prepared loader calls ``set_epoch`` on its sampler at the start of every iteration
    (``DataLoaderShard.__iter__``), so the order changes each epoch without the script calling it."""
    if not loaders:
        return False
    if loaders & facts.prepared:
        return True
    return ctx.mentions("prepare") and any(
        accelerate_prepare(ctx, c) and any(dotted(a) in loaders for a in c.args)
        for c in ctx.of_type(ast.Call)
    )


def _evaluates(ctx: FileContext, facts: LoopFacts, loop: ast.For | ast.AsyncFor) -> bool:
    """An evaluation pass: the loop backprops nothing and sits in a function named for evaluation
    (``evaluate``, ``validate``, ``test`` ...): its order never reaches the weights, and it is run
    once per evaluation, not once per epoch of training (CodeBERT's ``evaluate`` looping its
    DistributedSampler loader inside a loop over task names)."""
    fn = ctx.enclosing_function(loop)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not EVAL_FUNCTION.match(fn.name):
        return False
    return not any(facts.backward(n) for n in facts.nodes(loop.body))


# Calls that hand back an iterator over their first argument, in its order: a progress bar or an
# enumeration of the loader is the loader, drawn again each time it is iterated.
_ITERATOR_WRAPPERS = frozenset({"tqdm", "enumerate", "iter", "trange", "track"})
# Of those, the ones whose iteration starts the wrapped iterable again (tqdm's ``__iter__`` loops
# over ``self.iterable``): bound once, they still draw the loader anew on every pass.
_REITERABLE_WRAPPERS = frozenset({"tqdm", "track"})


def _wrapped_loaders(ctx: FileContext, loaders: set[str]) -> set[str]:
    """Local names bound, in a loop, to a progress bar or enumeration over a loader
    (``epoch_iterator = tqdm(train_dataloader)`` inside ``while global_step < max_steps:``): the
    loop over that name draws the loader's order once per pass of the outer loop. Only the direct
    wrap counts (``len(loader)`` or a batch count is no alias), and only where it is rebuilt in a loop,
    so the name is iterated once per pass."""
    out: set[str] = set()
    for node in ctx.of_type(ast.Assign):
        value = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(value, ast.Call)
            and (dotted(value.func) or "").split(".")[-1] in _ITERATOR_WRAPPERS
            and value.args
            and dotted(value.args[0]) in loaders
            and enclosing_loop(ctx, node) is not None
        ):
            out.add(node.targets[0].id)
    return out


def _epoch_of(ctx: FileContext, loop: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
    """The loop around ``loop`` that repeats it: the nearest enclosing loop that names epochs
    (``for epoch in ...: for phase in ["train", "val"]: for b in loaders[phase]``), else the nearest."""
    nearest = cur = enclosing_loop(ctx, loop)
    while cur is not None:
        if walks_epochs(ctx, cur):
            return cur
        cur = enclosing_loop(ctx, cur)
    return nearest


def _method_aliases(ctx: FileContext, loaders: set[str]) -> dict[str, set[int]]:
    """Local names a function binds to a loader (or to what holds one), with the functions (by id)
    that bind them. Only a loop of the binding function counts: another function's ``pbar`` is
    another bar. Followed through the file until nothing new:

    - a progress bar over the loader bound outside any loop (``if rank == 0: pbar = tqdm(self.loader)``
      / ``else: pbar = self.loader``): tqdm's ``__iter__`` iterates its iterable again, so a loop over
      the name draws the loader's order once per call of the function, and the caller's epoch loop
      decides whether that is once per epoch (a bar rebuilt inside a loop is ``_wrapped_loaders``');
    - the loader itself under another name, or a dict that holds it (``loaders = {"train":
      train_loader, "val": val_loader}``) and what is picked from that dict (``it = loaders[phase]``);
    - the parameter of a same-file def that a call fills with any of these (``fit(model,
      train_loader)`` binds ``fit``'s ``data_loader``; the PyTorch tutorial's ``train_model(model,
      dataloaders, ...)`` iterates ``dataloaders[phase]`` for every epoch)."""
    out: dict[str, set[int]] = {}

    def held(expr: ast.expr | None, fn: ast.AST | None) -> bool:
        if expr is None:
            return False
        name = dotted(expr)
        if name in loaders or (name is not None and id(fn) in out.get(name, set())):
            return True
        if isinstance(expr, ast.Dict):
            return any(held(v, fn) for v in expr.values)
        return isinstance(expr, ast.Subscript) and held(expr.value, fn)

    def add(name: str, fn: ast.AST) -> bool:
        if name in loaders or id(fn) in out.get(name, set()):
            return False
        out.setdefault(name, set()).add(id(fn))
        return True

    for _ in range(4):  # a handful of hand-offs: a loader passed down deeper is rare, and each pass is linear
        grew = False
        for node in ctx.of_type(ast.Assign):
            value = node.value
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            fn = ctx.enclosing_function(node)
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            bar = (
                isinstance(value, ast.Call)
                and (dotted(value.func) or "").split(".")[-1] in _REITERABLE_WRAPPERS
                and bool(value.args)
                and held(value.args[0], fn)
                and enclosing_loop(ctx, node) is None
            )
            if bar or held(value, fn):
                grew |= add(node.targets[0].id, fn)
        for call in ctx.of_type(ast.Call):
            callee = ctx.helper(call)
            if callee is None:
                continue
            caller = ctx.enclosing_function(call)
            for param in parameter_names(callee):
                if param not in ("self", "cls") and held(bound_argument(callee, call, param), caller):
                    grew |= add(param, callee)
        if not grew:
            break
    return out


def _draws_in_scope(
    ctx: FileContext, loop: ast.For | ast.AsyncFor, direct: set[str], aliases: dict[str, set[int]]
) -> bool:
    """The loop draws from a loader or wrap, or from a method alias bound in the loop's own function."""
    names = {dotted(n) for n in ast.walk(loop.iter)}
    if not names & set(aliases) or names & direct:
        return True  # found as before, not through a method alias
    fn = id(ctx.enclosing_function(loop))
    return any(fn in aliases[n] for n in names if n in aliases)


def _wraps_into_name(ctx: FileContext, call: ast.Call) -> bool:
    """``bar = tqdm(loader)``: a wrap bound to a name, which ``_wrapped_loaders`` follows to its loop."""
    parent = ctx.parents.get(call)
    return (
        (dotted(call.func) or "").split(".")[-1] in _ITERATOR_WRAPPERS
        and isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    )


def _iterated_here(ctx: FileContext, call: ast.Call) -> bool:
    """``for b in tqdm(loader):``: the wrap is (part of) a loop's iterable, a loop the first search
    already judged."""
    cur: ast.AST | None = call
    while cur is not None:
        parent = ctx.parents.get(cur)
        if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is cur:
            return True
        if not isinstance(parent, ast.Call):
            return False
        cur = parent
    return False


def _evaluation_pass(
    ctx: FileContext, facts: LoopFacts, loop: ast.For | ast.AsyncFor, outer: ast.AST
) -> bool:
    """An evaluation pass written inline in the epoch loop (``model.eval()`` then ``for batch in
    valid_dataloader:`` with no backward, or the loop under ``torch.no_grad()``): the order of a
    loader nothing is trained on never reaches the weights, even when its DistributedSampler
    shuffles by default. Needs both facts: nothing backprops or steps in the loop, and the model is
    put in eval mode before it in the same function (or the loop runs without gradients)."""
    if facts.has_backward(loop.body) or facts.has_optimizer_step(loop.body):
        return False
    cur = ctx.parents.get(loop)
    while (
        cur is not None and cur is not outer and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef))
    ):
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
            isinstance(i.context_expr, ast.Call)
            and (dotted(i.context_expr.func) or "").split(".")[-1] in ("no_grad", "inference_mode")
            for i in cur.items
        ):
            return True
        cur = ctx.parents.get(cur)
    body_of = getattr(ctx.parents.get(loop), "body", None)
    if not isinstance(body_of, list) or loop not in body_of:
        return False
    # ``model.eval()`` among the statements before the loop in its block, with no ``.train()`` after it
    mode = None
    for stmt in body_of[: body_of.index(loop)]:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and not n.args:
                if n.func.attr == "eval":
                    mode = "eval"
                elif n.func.attr == "train":
                    mode = "train"
    return mode == "eval"


def _held_in_list(ctx: FileContext, loader: ast.Call) -> set[str]:
    """``loaders[*]``: a DataLoader kept as one entry of a list or dict filled per dataset or task
    (``loaders = [DataLoader(d, sampler=DistributedSampler(d)) for d in datasets]``, ``loaders[task] =
    DataLoader(...)``, ``loaders.append(DataLoader(...))``, also under a constant key of a dict built
    per entry: ``[{'loader': DataLoader(...)} for ...]`` is ``loaders[*]['loader']``). Multi-task
    trainers pick an entry by a variable and re-iterate it when it runs out (DocRes: ``except
    StopIteration: its[k] = iter(loaders[k]['loader'])``); ``_entries`` reads that pick."""
    value, parent = holder(ctx, loader)
    suffix = ""
    if isinstance(parent, ast.Dict) and value in parent.values:
        key = parent.keys[parent.values.index(value)]
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier()):
            return set()
        suffix = f"[{key.value!r}]"
        value, parent = parent, ctx.parents.get(parent)
    bases: set[str] = set()
    if isinstance(parent, ast.ListComp) and value is parent.elt:
        assign = ctx.parents.get(parent)
        if isinstance(assign, ast.Assign) and assign.value is parent:
            bases = {d for t in assign.targets if (d := dotted(t))}
    elif isinstance(parent, ast.Assign) and parent.value is value:
        bases = {
            d
            for t in parent.targets
            if isinstance(t, ast.Subscript) and dotted(t) is None and (d := dotted(t.value))
        }
    elif (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "append"
        and parent.args == [value]
    ):
        bases = {d for d in (dotted(parent.func.value),) if d}
    return {f"{b}[*]{suffix}" for b in bases if not evaluation_loader({b})}


def _entries(expr: ast.expr) -> set[str]:
    """The names ``expr`` reads a loader under: ``dotted``, with a key that is not a constant read as
    any entry (``loaders[k]['loader']`` is ``loaders[*]['loader']``; ``_held_in_list``)."""
    if (d := dotted(expr)) is not None:
        return {d}
    if not isinstance(expr, ast.Subscript):
        return set()
    key = expr.slice
    part = (
        f"[{key.value!r}]"
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier()
        else "[*]"
    )
    return {f"{n}{part}" for n in _entries(expr.value)}
