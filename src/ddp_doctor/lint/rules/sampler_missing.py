"""sampler-missing: a training DataLoader in a DDP/FSDP script with no sampler and no sharding.

Without a DistributedSampler (or equivalent sharding) every rank iterates the full dataset, so
the global batch holds world-size copies of each sample (torch docs, DistributedSampler). To stay
precise, a DataLoader is flagged only when all hold: the file wraps a model in DDP/FSDP; the
loader gets no ``sampler``/``batch_sampler``; a loop that backprops iterates it; the dataset's
construction mentions no rank/world/shard (per-rank seeds or file shards are valid sharding); the
dataset is not an IterableDataset (those usually shard themselves); and neither accelerate's
``prepare`` (which shards loaders) nor Lightning (which adds the sampler) is in use.

What reaches the training loop is read from the code, not only from names: a loader whose name is
rebound (to the sampled training loader) on every path before the loop is not the one it draws; a
builder's ``return`` under ``if val_mode:`` is not what calls passing ``val_mode=False`` (or leaving
its False default) get; a ``RandomSampler`` drawn after ``torch.manual_seed(rank + seed)`` gives each
rank its own order. In a file of several top-level classes, accelerate's ``prepare`` does not cover a
loader kept by a class that prepares nothing (``_under_accelerate``), and a class that wraps nothing
and reads no rank, next to the classes that do all the wrapping, is the single-process trainer.

A sampler that is not distributed (``RandomSampler``, ``WeightedRandomSampler``,
``SubsetRandomSampler``, ``SequentialSampler``) is as much a missing sampler: every rank draws from
the whole dataset. It is flagged when the ``sampler=`` value is such a call, or a name whose only
binding is one; a choice (``S = DistributedSampler if ddp else RandomSampler``, a helper that
returns either) is left alone.

A loader in one branch of an ``if``/``elif``/``else`` chain whose other branch builds a
``DistributedSampler`` over the same dataset, outside any further condition (``if dist: sampler =
DistributedSampler(d_train) ... else: DataLoader(d_train, shuffle=True)``, ``if mode == 'single':
... elif mode == 'multi': ...``) is the path the condition takes when the run is not distributed.
So is a loader in a branch whose other branches alone bind the sampler that the function later
calls ``set_epoch`` on under a test of distribution (SemCKD's CIFAR branch beside the ImageNet one
that binds ``train_sampler``): a distributed run of that branch stops at the unbound name.
A top-level function that trains a model it builds from a class and never wraps, beside the
functions of the file that do wrap, runs single-process (``single_process.trains_own_unwrapped_model``).
So does a loader built in the single-process branch of a test of distribution (``else`` of ``if
self.config.is_use_DDP is True:``, ``single_process.single_process_only``), and one a builder returns
where only such a branch binds it to the name trained on (``_bound_single_process``).

In project mode a builder whose loader takes its ``sampler`` from a call handed the builder's own
distribution flag, a parameter defaulting to False (WavCaps' ``train_dataloader(self,
is_distributed=False, num_tasks=0, global_rank=0)``), gives a call that leaves the flag at its
default the non-distributed choice (``samplers.flag_gated_loaders``): every rank draws the whole set.

Without a DataLoader, nanoGPT-style batches drawn by hand (``ix = torch.randint(len(data) - n,
(bs,))``) come from torch's default generator, which starts from the same seed in every process:
unless some process seeds it by rank, every rank trains on the same positions (``_index_draws``).

In project mode a fact from another file must not make a single-process script distributed: the
file itself wraps a model (directly or through a project helper), or hands the loader to project
code that trains on it and wraps the model, or at least shows it runs distributed (uses
``torch.distributed`` or reads a rank / world size) while some file of the project wraps.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.accelerate_sinks import accelerate_prepare
from ddp_doctor.lint.context import FileContext, dotted, holder, keyword, parameter_names, word
from ddp_doctor.lint.dist_tests import asks_if_distributed
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.rules._data import (
    bound_names,
    evaluation_loader,
    guarding_parameter,
    loops_iterating,
    passes_off,
    trains_on,
    unreached_branch,
)
from ddp_doctor.lint.rules._index_draws import shared_index_draws
from ddp_doctor.lint.rules.base import Rule, Violation
from ddp_doctor.lint.samplers import (
    SAMPLER_POSITION,
    WHOLE,
    batch_sampler_source,
    batches_itself,
    distributed_sampler_call,
    is_dataloader_call,
    top_unit,
)
from ddp_doctor.lint.single_process import single_process_only, trains_own_unwrapped_model

DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
)
SHARDING_WORDS = re.compile(
    r"rank|world|shard|replica|process_index|num_processes|split_dataset_by_node", re.IGNORECASE
)
LOCAL_SAMPLERS = frozenset(
    f"torch.utils.data.{name}"
    for name in ("RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler", "SequentialSampler")
) | frozenset(
    f"torch.utils.data.sampler.{name}"
    for name in ("RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler", "SequentialSampler")
)
# Words that show a file runs under a process group (not just that some other file wraps DDP).
DISTRIBUTED_WORDS = (
    "init_process_group",
    "get_rank",
    "get_world_size",
    "local_rank",
    "LOCAL_RANK",
    "world_size",
    "WORLD_SIZE",
    "is_initialized",
)


class SamplerMissing(Rule):
    id = "sampler-missing"
    project_facts = frozenset({"training_params", "plain_loaders"})
    flagged = (
        "a DataLoader without `sampler`/`batch_sampler` (and no `**kwargs`), or with a sampler that "
        "is not distributed (`RandomSampler`, `WeightedRandomSampler`, `SubsetRandomSampler`, "
        "`SequentialSampler`: the call, or a name bound only to one; also drawn through a batch sampler, "
        "`batch_sampler=BatchSampler(RandomSampler(ds), 8, False)`), iterated by a loop that "
        "backprops (project mode: or handed to project code that trains on it), in a file that wraps "
        "a model in DDP/FSDP (project: see project mode); a loader rebound to a wrap over itself "
        "(`train_loader = sample_data(train_loader)`) is still the loader drawn; (project) a loader "
        "returned by a builder of another file, also through the project calls whose result it returns "
        "(`train_dat, valid_dat = pre_processing(path)` → `prepare_data(...)`), built there with "
        "`shuffle=True` and no sampler in defs that read or take no rank, handed no rank, and trained on "
        "in a distributed file outside its single-process branch; (project) such a builder whose "
        "`shuffle=` is its own parameter, called with a literal `True` (or a true default); (project) a builder "
        "(also a method of an instance of one project class: `dm.train_dataloader()`) whose `sampler=` is bound "
        "to a call handed its distribution flag (`def train_dataloader(self, is_distributed=False, global_rank=0)`: "
        "`sampler = self._get_sampler(ds, is_distributed, ...)`), called without that flag, the rank read there "
        "only as its parameters handed to that call; no DataLoader: batch positions drawn by hand from "
        "torch's default generator (`ix = torch.randint(len(data) - block, (bs,))` then `data[i:i + block] "
        "for i in ix`, also `torch.randperm(len(data))`) for a loop that only counts steps and backprops, in "
        "a file that seeds no process by rank; a loader drawn only through `it = iter(DataLoader(...))` (the iterator "
        "handed on and drawn with `next(it)` by a step loop that backprops)"
    )
    not_flagged = (
        "dataset built from rank/world/shard values (per-rank seeds, a random order drawn after "
        "`torch.manual_seed(rank + seed)`, file shards, `split_dataset_by_node`), IterableDatasets, "
        "`batch_size=None` (the dataset batches itself), a sampler chosen at run time (`S = "
        "DistributedSampler if ddp else RandomSampler`), accelerate `prepare` (shards loaders; not one "
        "kept by a class of the file that prepares nothing), Lightning, loaders never "
        "trained on (eval; also a name rebound to another loader before the training loop, a builder's "
        "`if val_mode: return DataLoader(...)` that the training calls never reach; a loader named for "
        "evaluation, `dl_valid`, even when a shared `epoch(model, train)` pass backprops on its other "
        "loader; a loader of another function that only shares the name of the one trained on), single-process "
        "scripts of a DDP project, a trainer class that wraps nothing and reads no rank beside the "
        "classes that wrap, (project) a dataset from a project function that reads the rank and world "
        "size (or whose callee does), (project) a dataset class of another file that is an "
        "IterableDataset or whose methods read the rank and world size, a loader in the branch of an "
        "`if`/`elif` chain beside a branch that builds `DistributedSampler(ds)` over the same dataset "
        "(`if dist: ... else: DataLoader(ds, shuffle=True)`: the single-process path), a loader built "
        "only in a builder's `if kind == 'toy':` branch that every call of the file passes another "
        "literal for, `prepare` on any name bound to `Accelerator(...)`, batch positions drawn after a seed that reads the "
        "rank (nanoGPT's `torch.manual_seed(1337 + seed_offset)`) or from this rank's shard of the data, a "
        "draw whose result indexes something its bound is not the length of, or one inside a loop over a "
        "DataLoader (a diffusion timestep), a loader in a branch of an `if`/`elif` chain whose other branch "
        "alone binds the sampler the function later calls `set_epoch` on when distributed (`elif imagenet: "
        "..., train_sampler = get_imagenet_dataloader(...)` ... `if opt.distributed: train_sampler.set_epoch(e)`: "
        "a distributed run of this branch stops there before training), a top-level function that builds its "
        "model from a class (`model = Net().to(device)`), its optimizer over `model.parameters()`, and wraps "
        "nothing nor syncs gradients by hand, beside the file's functions that wrap (a single-process path), a "
        "loader built in the single-process branch of a test of distribution (the `else` of `if args.ddp:`, "
        "also spelled `if self.config.use_ddp is True:`), or returned by a builder that only such a branch calls "
        "for the loader it trains on, a loader in a branch of a chain whose other branch draws the same dataset through a "
        "name bound only to `DistributedSampler(ds)` earlier (`if device_count() == 1: DataLoader(ds, shuffle=True) elif "
        "device_count() > 1: DataLoader(ds, sampler=train_sampler)`), a loader trained only in a function that wraps "
        "its model under `if ddp:` and that every call of the file gives `ddp=False` (a single-process twin of a DDP script)"
    )
    # ``randint``/``randperm``: batches drawn by hand, with no DataLoader (``_index_draws``)
    required = (("DataLoader", "randint", "randperm"), tuple(q.split(".")[-1] for q in DATA_PARALLEL))
    required_in_project = (("DataLoader", "randint", "randperm"),)

    def project_words(self, project: ProjectIndex) -> tuple[str, ...]:
        return project.plain_loader_builder_names()

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if ctx.imports_module("lightning") or ctx.imports_module("pytorch_lightning"):
            return
        calls = ctx.of_type(ast.Call)
        project = ctx.project
        wraps = [
            c
            for c in calls
            if ctx.call_qualname(c) in DATA_PARALLEL
            or (project is not None and project.call_wraps_ddp(ctx, c))
        ]
        wraps_here = bool(wraps)
        if not wraps_here and not (project is not None and project.wraps_ddp):
            return  # no DDP/FSDP wrap in this file (or, in project mode, anywhere in the project)
        distributed_file = (
            wraps_here
            or ctx.uses_module("torch.distributed")
            or ctx.mentions(*DISTRIBUTED_WORDS)
            # used, not only imported: HF-style single-process scripts import it and never build one
            or any(n.id == "DistributedSampler" for n in ctx.of_type(ast.Name))
            or any(n.attr == "DistributedSampler" for n in ctx.of_type(ast.Attribute))
        )
        for call in calls:
            if not is_dataloader_call(ctx, call) or len(call.args) > SAMPLER_POSITION:
                continue
            sampler = keyword(call, "sampler")
            batch_sampler = keyword(call, "batch_sampler")
            local_sampler = (
                _local_sampler(ctx, call, sampler)
                if sampler is not None
                else _batch_sampler_draws_locally(ctx, call, batch_sampler)
                if batch_sampler is not None
                else None
            )
            if (sampler is not None or batch_sampler is not None) and local_sampler is None:
                continue
            if any(
                k.arg is None and not _known_keys_without_sampler(ctx, call, k.value) for k in call.keywords
            ) or any(isinstance(a, ast.Starred) for a in call.args):
                continue  # DataLoader(ds, **kwargs): the sampler may be in there
            if facts.prepared and _under_accelerate(ctx, call):
                continue
            if _single_process_sibling(ctx, call, wraps) or trains_own_unwrapped_model(
                ctx, ctx.enclosing_function(call), wraps
            ):
                continue
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            if dataset is None or _sharded(ctx, dataset) or batches_itself(call):
                continue
            if _distributed_alternative(ctx, call, dataset):
                continue
            if _rank_seeded(ctx, call, local_sampler) or unreached_branch(ctx, call):
                continue  # (the latter: a builder's ``if name == "mnist":`` branch no call picks)
            if _sampler_unbound_here(ctx, call) or single_process_only(ctx, call):
                continue  # this branch stops a distributed run before it trains; runs only single-process
            names = (bound_names(ctx, call) or _iterator_names(ctx, call)) - _bound_single_process(ctx, call)
            if evaluation_loader(names) or not trains_on(facts, names, call):
                continue
            if _trained_only_with_the_wrap_turned_off(ctx, facts, names):
                continue  # every call of the training function in this file passes its DDP flag False
            if not distributed_file and not (project is not None and project.hands_to_ddp_code(ctx, names)):
                continue  # a single-process script of a project where some other file wraps DDP
            head = ctx.segment(call).splitlines()[0]
            if local_sampler is not None:
                yield self.violation(
                    call,
                    Text(
                        f"`{head}` draws with `{local_sampler}`, which is not distributed, and the dataset is not "
                        "sharded by rank: every rank samples from the whole dataset.",
                        f"该 DataLoader 使用的 `{local_sampler}` 不是分布式采样器，数据集也未按 rank 分片：每个 rank "
                        "都从整个数据集中采样。",
                    ),
                    loader=sorted(names),
                    sampler=local_sampler,
                )
                continue
            yield self.violation(
                call,
                Text(
                    f"`{head}` has no DistributedSampler and the dataset is not "
                    "sharded by rank: every rank trains on the same samples.",
                    "该 DataLoader 没有 DistributedSampler，数据集也未按 rank 分片：每个 rank 都在相同的样本上训练。",
                ),
                loader=sorted(names),
            )
        if project is not None and (distributed_file or wraps_here):
            yield from self._from_builders(ctx, facts, project)
        if distributed_file:
            yield from self._drawn_by_hand(ctx, facts)

    def _drawn_by_hand(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        """No DataLoader: ``ix = torch.randint(len(data) - n, (bs,))`` picks each batch from torch's
        default generator, seeded the same in every process unless seeded by rank
        (``rules/_index_draws.py``). Reported at the draw."""
        for draw, loop in shared_index_draws(ctx, facts):
            yield self.violation(
                draw,
                Text(
                    f"`{ctx.segment(draw)}` picks the batch positions from torch's default generator, which "
                    "no process seeds by rank, for the training loop at line "
                    f"{loop.lineno}: every rank draws the same positions and trains on the same samples.",
                    f"`{ctx.segment(draw)}` 用 torch 的默认随机数生成器选取批次位置，而没有进程按 rank 设置种子"
                    f"（第 {loop.lineno} 行的训练循环）：每个 rank 抽到相同的位置，在相同的样本上训练。",
                ),
                training_loop_line=loop.lineno,
            )

    def _from_builders(
        self, ctx: FileContext, facts: LoopFacts, project: ProjectIndex
    ) -> Iterator[Violation]:
        """(project) ``train_dat, valid_dat = preProcessing(path)``: a builder of another file returns a
        DataLoader drawing without a sampler (built in a def that reads no rank), and this distributed
        file trains on it. Reported at the call."""
        for node in ctx.of_type(ast.Assign):
            call = node.value
            if len(node.targets) != 1 or not isinstance(call, ast.Call):
                continue
            found = project.returned_plain_loader(ctx, call)
            if not found:
                continue
            if single_process_only(ctx, call) or any(
                _reads_rank(ctx, a) for a in [*call.args, *(k.value for k in call.keywords)]
            ):
                continue  # ``if args.local_rank == -1: loader = get_dataloader(ds)``; a builder handed the rank
            if _sampler_unbound_here(ctx, call):
                continue  # this branch stops a distributed run before it trains
            target = node.targets[0]
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            for i, elt in enumerate(elts):
                where = found.get(i if isinstance(target, ast.Tuple) else WHOLE)
                name = dotted(elt)
                if where is None or name is None:
                    continue
                if facts.prepared and _under_accelerate(ctx, call):
                    continue
                if _used_as_dataset(ctx, name) or not trains_on(facts, {name}, call):
                    continue  # ``train_dset, _ = build(..., dset_only=True)`` then ``DataLoader(train_dset, ...)``
                yield self.violation(
                    call,
                    Text(
                        f"`{name}` comes from `{ctx.segment(call.func)}(...)`, whose DataLoader ({where}) has no "
                        "DistributedSampler and is built without the rank: every rank trains on the same samples.",
                        f"`{name}` 来自 `{ctx.segment(call.func)}(...)`，其 DataLoader（{where}）没有 "
                        "DistributedSampler，构建时也未用到 rank：每个 rank 都在相同的样本上训练。",
                    ),
                    loader=[name],
                    built_at=where,
                )
                break


def _bound_single_process(ctx: FileContext, loader: ast.Call) -> set[str]:
    """For a loader its builder returns: the names that only calls of the builder in a single-process
    branch bind (TAP_ASR's ``if self.config.is_use_DDP is True: self.train_dataloader =
    self.create_DDP_dataloader(...) else: self.train_dataloader = self.create_dataloader(...)``): in a
    distributed run those names hold another builder's loader, not this one."""
    _, parent = holder(ctx, loader)
    if not isinstance(parent, ast.Return):
        return set()
    fn = ctx.enclosing_function(parent)
    single: set[str] = set()
    other: set[str] = set()
    for node in ctx.of_type(ast.Assign):
        if isinstance(node.value, ast.Call) and ctx.helper(node.value) is fn:
            targets = {d for t in node.targets if (d := dotted(t))}
            (single if single_process_only(ctx, node) else other).update(targets)
    return single - other


def _used_as_dataset(ctx: FileContext, name: str) -> bool:
    """The file hands ``name`` to a DataLoader or a sampler as the dataset it draws from: what the
    builder returned there is a dataset (Recurrent-Attention-Unets' ``stratified_data_gen(...,
    dset_only=True)``), not one of its loaders."""
    for call in ctx.of_type(ast.Call):
        if is_dataloader_call(ctx, call) or distributed_sampler_call(ctx, call):
            given = call.args[0] if call.args else keyword(call, "dataset")
            if given is not None and dotted(given) == name:
                return True
    return False


def _local_sampler(ctx: FileContext, loader: ast.Call, sampler: ast.expr) -> str | None:
    """The class name when ``sampler`` is certainly a non-distributed torch sampler: the call
    itself, or a name whose only binding in the loader's function is such a call."""
    value = _only_value(ctx, loader, sampler)
    if not isinstance(value, ast.Call):
        return None
    qual = ctx.call_qualname(value)
    return qual.rsplit(".", 1)[-1] if qual in LOCAL_SAMPLERS else None


def _batch_sampler_draws_locally(ctx: FileContext, loader: ast.Call, batch_sampler: ast.expr) -> str | None:
    """The class name when the loader's ``batch_sampler`` certainly draws from a non-distributed torch
    sampler (``BatchSampler(RandomSampler(ds), 8, False)``, a project's ``BucketBatchSampler(sampler,
    ...)`` over one; also through names bound once)."""
    value = _only_value(ctx, loader, batch_sampler)
    source = batch_sampler_source(value) if isinstance(value, ast.expr) else None
    return _local_sampler(ctx, loader, source) if source is not None else None


def _only_value(ctx: FileContext, loader: ast.Call, expr: ast.expr) -> ast.AST | None:
    """``expr`` itself, or for a name the value of its only binding in the loader's function (None
    when it is bound several times, augmented, or under a condition: the other path may shard)."""
    name = dotted(expr)
    if name is None:
        return expr
    scope = ctx.enclosing_function(loader)
    binds = [
        n
        for n in ctx.local(scope)
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and any(dotted(t) == name for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
    ]
    value = binds[0].value if len(binds) == 1 and not isinstance(binds[0], ast.AugAssign) else None
    if value is not None and any(isinstance(p, ast.If) for p in _ancestors(ctx, binds[0], scope)):
        return None
    return value


def _branches(chain: ast.If) -> list[list[ast.stmt]]:
    """The bodies of an ``if``/``elif``/``else`` chain, one list per branch."""
    out = [chain.body]
    while len(chain.orelse) == 1 and isinstance(chain.orelse[0], ast.If):
        chain = chain.orelse[0]
        out.append(chain.body)
    if chain.orelse:
        out.append(chain.orelse)
    return out


def _distributed_alternative(ctx: FileContext, loader: ast.Call, dataset: ast.expr) -> bool:
    """The loader sits in one branch of a condition whose other branch builds a DistributedSampler
    over the same dataset on every pass through it (``if dist: sampler = DistributedSampler(ds);
    loader = DataLoader(ds, sampler=sampler) else: loader = DataLoader(ds, shuffle=True)``, also
    ``if mode == 'single': ... elif mode == 'multi': ...``): the condition is what chooses the
    distributed run, and this branch is the one that runs single-process."""
    name = dotted(dataset)
    if name is None:
        return False
    cur: ast.AST = loader
    while (parent := ctx.parents.get(cur)) is not None and not isinstance(
        parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)
    ):
        above = ctx.parents.get(parent)
        if isinstance(parent, ast.If) and not (isinstance(above, ast.If) and above.orelse == [parent]):
            for branch in _branches(parent):
                if any(ctx.within(loader, stmt) for stmt in branch):
                    continue
                if any(_samples_dataset(ctx, stmt, name) for stmt in branch):
                    return True
        cur = parent
    return False


def _sampler_unbound_here(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` sits in one branch of an ``if``/``elif`` chain whose other branches alone bind a name
    that the function later calls ``set_epoch`` on under a test of distribution (SemCKD, after
    RepDistiller/CRD: ``if opt.dataset == 'cifar100': train_loader, val_loader = get_cifar100_...(...)
    elif opt.dataset in imagenet_list: ..., train_sampler = get_imagenet_dataloader(...)``, then ``if
    opt.multiprocessing_distributed: train_sampler.set_epoch(epoch)``). On this branch a distributed
    run stops at that line (the name is unbound) before its first step, so its sampler-less loader
    never trains distributed. A guard that tests what the chain tests may skip the call: not read."""
    fn = ctx.enclosing_function(node)
    bound = ctx.bindings(fn)
    params = set(parameter_names(fn)) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    cur: ast.AST = node
    while (parent := ctx.parents.get(cur)) is not None and parent is not fn:
        above = ctx.parents.get(parent)
        if isinstance(parent, ast.If) and not (isinstance(above, ast.If) and above.orelse == [parent]):
            branches = _branches(parent)
            mine = [b for b in branches if any(ctx.within(node, stmt) for stmt in b)]
            others = [stmt for b in branches if b not in mine for stmt in b]
            for name, binds in bound.items():
                if name in params or not binds:
                    continue
                # every binding of the name is in another branch of this chain
                if all(
                    any(ctx.within(b, stmt) for stmt in others) for b in binds
                ) and _set_epoch_when_distributed(ctx, fn, name, parent):
                    return True
        cur = parent
    return False


def _set_epoch_when_distributed(ctx: FileContext, fn: ast.AST, name: str, chain: ast.If) -> bool:
    """``fn`` calls ``name.set_epoch(...)`` after ``chain``, under a test of distribution, and under no
    test reading what the chain's tests read."""
    chain_words = _tested_words(_chain_tests(chain))
    for call in ctx.local(fn):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "set_epoch"
            and dotted(call.func.value) == name
            and call.lineno > (chain.end_lineno or chain.lineno)
        ):
            continue
        guards = [p.test for p in _ancestors(ctx, call, fn) if isinstance(p, ast.If)]
        if _tested_words(guards) & chain_words:
            continue
        if any(asks_if_distributed(g, ctx.segment(g)) for g in guards):
            return True
    return False


def _chain_tests(chain: ast.If) -> list[ast.expr]:
    tests = [chain.test]
    while len(chain.orelse) == 1 and isinstance(chain.orelse[0], ast.If):
        chain = chain.orelse[0]
        tests.append(chain.test)
    return tests


def _tested_words(tests: list[ast.expr]) -> set[str]:
    """The names and attribute paths the tests read (``opt.dataset``), less the receivers of those
    paths (``opt``: a shared options object says nothing of what is tested)."""
    out = {
        d for t in tests for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute)) if (d := dotted(n))
    }
    return {w for w in out if not any(o.startswith(w + ".") for o in out)}


def _samples_dataset(ctx: FileContext, stmt: ast.stmt, dataset: str) -> bool:
    """``stmt`` builds ``DistributedSampler(dataset, ...)`` outside any further condition of its own,
    or a DataLoader over ``dataset`` whose ``sampler=`` is a name that every binding of its function
    binds to ``DistributedSampler(dataset)`` (rgb_matters: the samplers made in an earlier ``if
    device_count() > 1:`` block, the loaders in the ``elif device_count() > 1:`` of the chain whose
    first branch is the single-GPU one)."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(
            node, (ast.If, ast.IfExp, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            continue
        if (
            isinstance(node, ast.Call)
            and _dataset_name(node) == dataset
            and (
                distributed_sampler_call(ctx, node)
                or is_dataloader_call(ctx, node)
                and _bound_to_distributed_sampler(ctx, node, keyword(node, "sampler"), dataset)
            )
        ):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _dataset_name(call: ast.Call) -> str | None:
    given = call.args[0] if call.args else keyword(call, "dataset")
    return dotted(given) if given is not None else None


def _bound_to_distributed_sampler(
    ctx: FileContext, loader: ast.Call, sampler: ast.expr | None, dataset: str
) -> bool:
    """``sampler`` is a plain name that every binding in the loader's function (at least one) binds to
    ``DistributedSampler(dataset)``."""
    if not isinstance(sampler, ast.Name):
        return False
    binds = ctx.bindings(ctx.enclosing_function(loader)).get(sampler.id, [])
    return bool(binds) and all(
        isinstance(b, ast.Assign)
        and isinstance(b.value, ast.Call)
        and distributed_sampler_call(ctx, b.value)
        and _dataset_name(b.value) == dataset
        for b in binds
    )


def _iterator_names(ctx: FileContext, loader: ast.Call) -> set[str]:
    """``it = iter(DataLoader(...))``: the loader has no name of its own, and ``it`` is what the
    training draws batches from with ``next(it)`` (GFNet's ``mega_dataloader``)."""
    parent = ctx.parents.get(loader)
    if not (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "iter"
        and parent.args == [loader]
    ):
        return set()
    assign = ctx.parents.get(parent)
    if not isinstance(assign, ast.Assign) or assign.value is not parent:
        return set()
    return {d for t in assign.targets if (d := dotted(t))}


def _trained_only_with_the_wrap_turned_off(ctx: FileContext, facts: LoopFacts, names: set[str]) -> bool:
    """Every loop of the file that backprops on the loader is in a function that wraps its model only
    under ``if <parameter>:`` testing distribution, and every call of that function in the file gives
    the parameter a literal False, written or by default (NARF's train.py: ``train_func(config,
    dataset, data_loader, rank=0, ddp=False)``, while its DDP twin train_ddp.py calls the same
    ``train_func(..., ddp=True)`` with a sampled loader of its own): in this file that loader trains
    an unwrapped model, a single-process run."""
    loops = [loop for loop in loops_iterating(ctx, names) if facts.has_backward(loop.body)]
    return bool(loops) and all(
        _wrap_turned_off_by_callers(ctx, ctx.enclosing_function(loop)) for loop in loops
    )


def _wrap_turned_off_by_callers(ctx: FileContext, fn: ast.AST | None) -> bool:
    """``fn`` wraps a model only under ``if p:`` (``p`` a parameter of ``fn`` naming distribution), and
    it has calls in the file, each passing ``p`` a literal False."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    project = ctx.project
    wraps = [
        c
        for c in ctx.local(fn)
        if isinstance(c, ast.Call)
        and (
            ctx.call_qualname(c) in DATA_PARALLEL or (project is not None and project.call_wraps_ddp(ctx, c))
        )
    ]
    flags = {_gating_parameter(ctx, fn, w) for w in wraps}
    if not wraps or None in flags:
        return False
    calls = [c for c in ctx.of_type(ast.Call) if ctx.helper(c) is fn]
    return bool(calls) and all(passes_off(fn, c, flag) for c in calls for flag in flags if flag is not None)


def _gating_parameter(
    ctx: FileContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.AST
) -> str | None:
    """The parameter ``p`` of ``fn`` when ``node`` sits in the body of an ``if p:`` of ``fn`` whose
    name asks whether the run is distributed (``if ddp:``)."""
    return guarding_parameter(ctx, fn, node, lambda test: asks_if_distributed(test, test.id))


def _single_process_sibling(ctx: FileContext, loader: ast.Call, wraps: list[ast.Call]) -> bool:
    """A file of several trainer classes where every DDP/FSDP wrap is made inside the methods of
    other classes (the distributed trainer wraps its own model), and the loader's class wraps
    nothing and reads no rank, world size or process group: that sibling is the single-process
    trainer, and its plain loader is right."""
    cls = top_unit(ctx, loader)
    if not isinstance(cls, ast.ClassDef) or not wraps:
        return False
    if any(not isinstance(top := top_unit(ctx, w), ast.ClassDef) or top is cls for w in wraps):
        return False
    words = set(DISTRIBUTED_WORDS) | {"DistributedSampler", "distributed", "dist", "rank"}
    return not any(
        (n.id if isinstance(n, ast.Name) else n.attr) in words
        for n in ast.walk(cls)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


def _under_accelerate(ctx: FileContext, loader: ast.Call) -> bool:
    """accelerate's ``prepare`` shards the loaders it is handed. Without following every loader into
    it, the file's prepare call covers its loaders, except one kept by a top-level class that never
    prepares anything and does not hand the loader back (an FSDP trainer next to an accelerate
    trainer in one file: ``self.train_dataloader = DataLoader(...)`` in its ``__init__``). A loader
    built by a function and returned (``get_dataloaders``, prepared by its caller) stays covered."""
    top = top_unit(ctx, loader)
    if not isinstance(top, ast.ClassDef):
        return True
    if any(accelerate_prepare(ctx, n) for n in ast.walk(top)):
        return True
    fn = ctx.enclosing_function(loader)
    names = bound_names(ctx, loader)
    return isinstance(ctx.parents.get(loader), ast.Return) or any(
        isinstance(r, ast.Return)
        and r.value is not None
        and any(dotted(v) in names for v in ast.walk(r.value))
        for r in ctx.local(fn)
    )


RANDOM_SAMPLERS = frozenset({"RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler"})


def _rank_seeded(ctx: FileContext, loader: ast.Call, local_sampler: str | None) -> bool:
    """The loader shuffles from torch's global generator (``RandomSampler``, or ``shuffle=True`` with
    no sampler) and its function seeds that generator by rank first (``torch.manual_seed(
    opt.global_rank + opt.seed)``): each rank draws its own random order of the data, the per-rank
    seeding the rule accepts, not the same batches on every rank. A sequential loader or a sampler
    with its own generator is not helped by it."""
    if local_sampler is None:
        shuffle = keyword(loader, "shuffle")
        if not (isinstance(shuffle, ast.Constant) and shuffle.value is True):
            return False
    elif local_sampler not in RANDOM_SAMPLERS:
        return False
    scope = ctx.enclosing_function(loader)
    return any(
        isinstance(n, ast.Call)
        and ctx.call_qualname(n) == "torch.manual_seed"
        # before the loader in its own function, or anywhere in another function of the file: the
        # entry seeds the process by rank and then calls the function that builds the loader
        # (``seed = cfg.SEED + dist.get_rank(); torch.manual_seed(seed)`` in ``main``, then ``train()``)
        and (n.lineno <= loader.lineno or ctx.enclosing_function(n) is not scope)
        and any(_reads_rank(ctx, a) for a in n.args)
        for n in ctx.of_type(ast.Call)
    )


def _reads_rank(ctx: FileContext, expr: ast.expr) -> bool:
    """``expr`` reads a rank or shard value, itself or through the local name it is
    (``seed = config.SEED + dist.get_rank()`` ... ``torch.manual_seed(seed)``)."""
    exprs: list[ast.AST] = [expr]
    if isinstance(expr, ast.Name):
        scope = ctx.enclosing_function(expr)
        exprs += [
            n.value
            for n in ctx.local(scope)
            if isinstance(n, ast.Assign) and any(dotted(t) == expr.id for t in n.targets)
        ]
    return any(
        SHARDING_WORDS.search(w.id if isinstance(w, ast.Name) else w.attr)
        for e in exprs
        for w in ast.walk(e)
        if isinstance(w, (ast.Name, ast.Attribute))
    )


def _ancestors(ctx: FileContext, node: ast.AST, stop: ast.AST) -> Iterator[ast.AST]:
    cur = ctx.parents.get(node)
    while cur is not None and cur is not stop:
        yield cur
        cur = ctx.parents.get(cur)


def _sharded(ctx: FileContext, dataset: ast.expr) -> bool:
    """The dataset expression or its construction mentions ranks/shards, or it is iterable-style."""
    exprs: list[ast.AST] = [dataset]
    name = dotted(dataset)
    if name:
        exprs += [n.value for n in ctx.of_type(ast.Assign) if any(dotted(t) == name for t in n.targets)]
    exprs += _lineage(ctx, dataset)
    for expr in exprs:
        for node in ast.walk(expr):
            spelled = word(node)
            if spelled and SHARDING_WORDS.search(spelled):
                return True
            if isinstance(node, ast.Call) and _self_sharding_class(ctx, node):
                return True
            if (
                isinstance(node, ast.Call)
                and ctx.project is not None
                and ctx.project.call_shards_by_rank(ctx, node)
            ):
                return True
    return False


LINEAGE_DEPTH = 6  # wrapper datasets rarely stack deeper; bounds the walk


def _lineage(ctx: FileContext, dataset: ast.expr) -> list[ast.AST]:
    """Earlier values the dataset is made from, in its function: ``ds = Wrap(ds)``,
    ``ds = ds.shard(num_shards=world, index=rank)``, ``ds = ds.select(...)``. Data flows through a
    call's receiver or its first positional argument, so only those names are followed (not every
    name of the call: a ``device`` built from ``local_rank`` does not shard the data)."""
    scope = ctx.enclosing_function(dataset)
    assigns = [n for n in ctx.local(scope) if isinstance(n, ast.Assign)]
    seen: set[str] = set()
    todo = [d for d in (dotted(dataset),) if d]
    out: list[ast.AST] = []
    for _ in range(LINEAGE_DEPTH):
        names, todo = [n for n in todo if n not in seen], []
        seen.update(names)
        for a in assigns:
            if any(dotted(t) in names for t in a.targets):
                out.append(a.value)
                todo += _sources(a.value)
        if not todo:
            break
    return out


def _sources(value: ast.expr) -> list[str]:
    """Names a value's data comes from: itself, a call's receiver, a call's first argument."""
    found: list[str] = []
    while True:
        if (d := dotted(value)) is not None:
            return [*found, d]
        if not isinstance(value, ast.Call):
            return found
        if value.args and (d := dotted(value.args[0])) is not None:
            found.append(d)
        if not isinstance(value.func, ast.Attribute):
            return found
        value = value.func.value


def _self_sharding_class(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` builds a class of this file that is iterable-style or reads the rank itself."""
    qual = ctx.call_qualname(call) or ""
    if "IterableDataset" in qual:
        return True
    if not isinstance(call.func, ast.Name):
        return False
    for node in ctx.of_type(ast.ClassDef):
        if node.name == call.func.id:
            if any("IterableDataset" in (dotted(b) or "") for b in node.bases):
                return True
            return any(
                SHARDING_WORDS.search(n.id if isinstance(n, ast.Name) else n.attr)
                for n in ast.walk(node)
                if isinstance(n, (ast.Name, ast.Attribute))
            )
    return False


def _known_keys_without_sampler(ctx: FileContext, call: ast.Call, spread: ast.expr) -> bool:
    """``DataLoader(train_set, shuffle=True, **loader_args)`` with ``loader_args =
    dict(batch_size=..., num_workers=...)`` (or a ``{...}`` of constant keys) bound once in the
    function: the spread names its keys, and none is a sampler."""
    if isinstance(spread, ast.Name):
        binds = ctx.bindings(ctx.enclosing_function(call)).get(spread.id, [])
        if len(binds) != 1 or not isinstance(binds[0], ast.Assign) or binds[0].lineno > call.lineno:
            return False
        spread = binds[0].value
    if isinstance(spread, ast.Dict):
        if any(k is None or not isinstance(k, ast.Constant) for k in spread.keys):
            return False
        keys = {k.value for k in spread.keys if isinstance(k, ast.Constant)}
    elif (
        isinstance(spread, ast.Call)
        and isinstance(spread.func, ast.Name)
        and spread.func.id == "dict"
        and not spread.args
    ):
        if any(k.arg is None for k in spread.keywords):
            return False
        keys = {k.arg for k in spread.keywords}
    else:
        return False
    return not keys & {"sampler", "batch_sampler"}
