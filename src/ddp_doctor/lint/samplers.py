"""DataLoaders over a DistributedSampler: the facts the project index and the data-order rules share.

Which call builds a DistributedSampler (also through a class alias chosen by a condition), whether
a module calls ``set_epoch``, and which values a function returns a DataLoader over a shuffling
DistributedSampler in (hysts/pytorch_image_classification's ``create_dataloader(config, is_train)``
builds ``DistributedSampler(train_dataset)`` inside a ``BatchSampler`` and returns ``train_loader,
val_loader``; HigherHRNet's ``make_dataloader(cfg, ...)`` returns its ``DataLoader(sampler=
DistributedSampler(dataset))``). The project index (lint/project.py) records the last two as facts of
each module and function, once, from the tree it already parsed; set-epoch-missing asks it at the
call (lint/rules/_returned_loaders.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path

from ddp_doctor.lint.context import (
    FileContext,
    branches,
    dotted,
    holder,
    init_of,
    keyword,
    method,
    param_defaults,
    parameter_names,
    positional_params,
)
from ddp_doctor.lint.rank0 import SCOPES, enclosing_rank0_if, rank0_predicates

DATALOADER = "torch.utils.data.DataLoader"
DISTRIBUTED_SAMPLER = "torch.utils.data.DistributedSampler"
BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
WHOLE = -1  # the function returns the loader itself, not inside a tuple
SAMPLER_POSITION = 3  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
# A name that reads the rank or world size (a def reading one may shard its data by rank).
_RANK_WORD = re.compile(r"rank|world_size|num_replicas", re.IGNORECASE)


def is_dataloader_call(ctx: FileContext, call: ast.Call) -> bool:
    """``DataLoader(...)``, or a class of this file that subclasses it (DistilCSE's ``class
    DataLoaderX(DataLoader)`` adding a prefetcher): the same loader, the same ``sampler``."""
    if ctx.call_qualname(call) == DATALOADER:
        return True
    return isinstance(call.func, ast.Name) and DATALOADER in ctx.base_qualnames(call.func.id)


def loader_sampler(call: ast.Call) -> list[ast.expr | None]:
    """What a loader's ``sampler=`` may be: the value, or both branches of ``DistributedSampler(ds)
    if ddp else None`` (English_Hindi_Translation); with ``batch_sampler=`` instead, the sampler the
    batch sampler draws from when it is built in place (``BatchSampler(sampler, 8, False)``, a project's
    ``BucketBatchSampler(sampler, ...)``: its first argument or ``sampler=``), else the batch sampler."""
    value = keyword(call, "sampler")
    if value is None:
        value = keyword(call, "batch_sampler")
        if value is None:
            return []
        return [batch_sampler_source(v) or v for v in branches(value)]
    return list(branches(value))


def batch_sampler_source(value: ast.expr) -> ast.expr | None:
    """The sampler a batch sampler built by ``value`` draws from: ``BatchSampler(sampler, 8, False)``,
    ``BucketBatchSampler(sampler=s, ...)`` (its first argument or ``sampler=``); None for anything else."""
    if not isinstance(value, ast.Call):
        return None
    given = keyword(value, "sampler")
    if given is None and value.args and not isinstance(value.args[0], ast.Starred):
        given = value.args[0]
    return given


def batch_sampler_bindings(
    ctx: FileContext, nodes: Iterable[ast.AST], given: Collection[str | None]
) -> Iterator[tuple[set[str], ast.expr]]:
    """``(names bound, the sampler drawn from)`` for each ``x = <batch sampler>(sampler, ...)`` among
    ``nodes``, in order: torch's ``BatchSampler``, or any call drawing from a sampler (its first
    argument or ``sampler=``) whose name is in ``given`` (the names DataLoaders take as their batch
    sampler)."""
    for node in nodes:
        if not isinstance(node, ast.Assign) or (source := batch_sampler_source(node.value)) is None:
            continue
        targets = {d for t in node.targets if (d := dotted(t))}
        if (ctx.call_qualname(node.value) or "") in BATCH_SAMPLERS or targets & set(given):
            yield targets, source


def batches_itself(call: ast.Call) -> bool:
    """``DataLoader(ds, batch_size=None)``: automatic batching is off, so the dataset yields whole
    batches — an iterable pipeline that also decides which rank reads what (wenet, WebDataset); a
    sampler has nothing to shard."""
    size = keyword(call, "batch_size")
    if size is None and len(call.args) > 1:
        size = call.args[1]
    return isinstance(size, ast.Constant) and size.value is None


def distributed_sampler_call(
    ctx: FileContext, call: ast.Call, also: Callable[[ast.Call], bool] | None = None
) -> bool:
    """``DistributedSampler(ds)``, also through a class alias chosen by a condition (``S =
    RandomSampler if args.local_rank == -1 else DistributedSampler; S(ds)``): a DistributedSampler
    whenever that branch runs; also a sampler class of this file ordered by its ``self.epoch``
    (``_epoch_ordered_sampler_class``), or (project mode) one of another project file (3D-Detection-Code's
    ``from lib.datasets.loader.sampler import DistributedSampler``, a copy of torch's). ``also``: what
    the project index, while it is still being built, counts as one (``project_scan``)."""
    if ctx.call_qualname(call) == DISTRIBUTED_SAMPLER:
        return True
    if also is not None and also(call):
        return True
    if ctx.project is not None and ctx.project.epoch_sampler_call(ctx, call):
        return True
    if not isinstance(call.func, ast.Name):
        return False
    if _epoch_ordered_sampler_class(ctx, call):
        return True
    scope = ctx.enclosing_function(call)
    binds = [b for b in ctx.bindings(scope).get(call.func.id, []) if b.lineno <= call.lineno]
    last = binds[-1] if binds else None
    if not isinstance(last, ast.Assign) or not isinstance(last.value, ast.IfExp):
        return False
    return DISTRIBUTED_SAMPLER in {ctx.qualname(last.value.body), ctx.qualname(last.value.orelse)}


def defines_epoch_sampler(ctx: FileContext) -> bool:
    """The module defines a class with a ``set_epoch`` method (a sampler of its own that may order its
    samples by epoch, ``_epoch_ordered_sampler_class``): a cheap pre-check for files that never name
    torch's DistributedSampler."""
    return any(
        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "set_epoch"
        for c in ctx.of_type(ast.ClassDef)
        for f in c.body
    )


def _epoch_ordered_sampler_class(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` builds a sampler class of this file whose order is drawn from ``self.epoch``, which
    only its ``set_epoch`` changes: a subclass of DistributedSampler that keeps its ``__iter__`` (or
    whose own reads ``self.epoch``), or a copy of it (MagFace's ``ParallelDistributedSampler(Sampler)``:
    ``g.manual_seed(self.epoch)`` in ``__iter__``, ``def set_epoch(self, epoch): self.epoch = epoch``).
    Like torch's, it repeats its order every epoch unless ``set_epoch`` is called. One whose shuffle
    the call leaves at a false default is not shuffling."""
    assert isinstance(call.func, ast.Name)
    cls = next((c for c in ctx.of_type(ast.ClassDef) if c.name == call.func.id), None)
    if cls is None or not isinstance(ctx.parents.get(cls), ast.Module) or not orders_by_epoch(ctx, cls):
        return False
    if keyword(call, "shuffle") is None and _shuffle_off_by_default(cls):
        return False
    return not passes_epoch(passed_arguments_shape(call), init_epoch_param(cls))


CallShape = tuple[frozenset[str | None], int]  # (keyword names, None for ``**kw``; positional count)


def passed_arguments_shape(call: ast.Call) -> CallShape:
    """What a call passes: its keyword names and how many positional arguments (a ``*args`` counts
    as many)."""
    count = 99 if any(isinstance(a, ast.Starred) for a in call.args) else len(call.args)
    return frozenset(k.arg for k in call.keywords), count


def init_epoch_param(cls: ast.ClassDef) -> tuple[str, int] | None:
    """``def __init__(self, dataset, ..., epoch=0): self.epoch = epoch``: the constructor parameter the
    sampler's epoch starts from (name, position among those a call fills by position, or -1)."""
    init = init_of(cls)
    if init is None:
        return None
    params = parameter_names(init)
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Assign)
            and any(dotted(t) == "self.epoch" for t in node.targets)
            and isinstance(node.value, ast.Name)
            and node.value.id in params
        ):
            positional = positional_params(init)
            name = node.value.id
            return name, positional.index(name) if name in positional else -1
    return None


def passes_epoch(shape: CallShape, param: tuple[str, int] | None) -> bool:
    """The construction hands the sampler its epoch (X-LAN's ``DistributedSampler(coco_set,
    epoch=epoch)``, the loader rebuilt every epoch): its order changes with the epoch without
    ``set_epoch``."""
    if param is None:
        return False
    keywords, count = shape
    name, position = param
    return name in keywords or None in keywords or 0 <= position < count


def epoch_sampler_class(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """A top-level sampler class ordered by its ``self.epoch`` (``orders_by_epoch``) that shuffles unless
    told not to (no ``shuffle`` parameter defaulting to false): built anywhere with no
    ``shuffle=False``, it repeats its order every epoch unless ``set_epoch`` is called (the project
    index's fact for a class built in another file)."""
    return orders_by_epoch(ctx, cls) and not _shuffle_off_by_default(cls)


def _shuffle_off_by_default(cls: ast.ClassDef) -> bool:
    """The class's own ``__init__`` has a ``shuffle`` parameter defaulting to false: a construction
    that does not pass it builds a sampler that keeps one order."""
    init = init_of(cls)
    default = param_defaults(init).get("shuffle") if init is not None else None
    return isinstance(default, ast.Constant) and not default.value


def orders_by_epoch(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """``cls`` draws its order from ``self.epoch``, which only its ``set_epoch`` (and ``__init__``)
    changes: a subclass of DistributedSampler that keeps its ``__iter__`` (or whose own reads
    ``self.epoch``), or a copy of it with both methods."""
    methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    subclass = DISTRIBUTED_SAMPLER in ctx.base_qualnames(cls.name)
    own_iter = methods.get("__iter__")
    if not subclass and ("set_epoch" not in methods or own_iter is None):
        return False
    if own_iter is not None and not any(dotted(n) == "self.epoch" for n in ast.walk(own_iter)):
        return False
    # ``self.epoch`` changed only by ``__init__`` and ``set_epoch`` (not advanced by the sampler itself)
    for name, f in methods.items():
        if name in ("__init__", "set_epoch"):
            continue
        for n in ast.walk(f):
            targets = (
                n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            )
            if any(dotted(t) == "self.epoch" for t in targets):
                return False
    return True


def set_epoch_calls(ctx: FileContext) -> list[ast.Call]:
    """The module's ``x.set_epoch(...)`` calls that every rank runs (read from the tree: a comment or a
    string naming it does not count). One under a rank-0 test (InSPyReNet's ``if args.local_rank <= 0
    and args.verbose: ... train_sampler.set_epoch(epoch)``) leaves the other ranks' samplers at epoch
    0: their order repeats every epoch (``rank0_set_epoch_calls``)."""
    return [c for c in _set_epoch_calls(ctx) if not _under_rank0_test(ctx, c)]


def rank0_set_epoch_calls(ctx: FileContext) -> list[ast.Call]:
    """The module's ``x.set_epoch(...)`` calls that only rank 0 runs."""
    return [c for c in _set_epoch_calls(ctx) if _under_rank0_test(ctx, c)]


def _set_epoch_calls(ctx: FileContext) -> list[ast.Call]:
    if "set_epoch" not in ctx.words:
        return []
    return [c for c in ctx.of_type(ast.Call) if (m := method(c)) is not None and m[1] == "set_epoch"]


def _under_rank0_test(ctx: FileContext, call: ast.Call) -> bool:
    key = (_under_rank0_test, "predicates")
    if key not in ctx.memo:
        ctx.memo[key] = rank0_predicates(ctx.tree, [f for defs in ctx.functions.values() for f in defs])
    return enclosing_rank0_if(ctx.parents, call, SCOPES, ctx.memo[key]) is not None


def calls_set_epoch(ctx: FileContext) -> bool:
    """The module calls ``x.set_epoch(...)`` somewhere."""
    return bool(set_epoch_calls(ctx))


def top_unit(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The module-level def or class holding ``node`` (None at module level)."""
    cur: ast.AST | None = node
    while cur is not None:
        parent = ctx.parents.get(cur)
        if isinstance(parent, ast.Module):
            return cur if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
        cur = parent
    return None


def set_epoch_units(ctx: FileContext, dead: Callable[[ast.Call], bool] | None = None) -> set[int] | None:
    """Ids of the module-level defs and classes from which a ``set_epoch`` call of the module can run
    before their loops draw: the ones that hold one (a class: in any of its methods, which call one
    another through ``self``), the ones that name one of those (a caller, directly or through other
    defs of the module: ``train_epoch`` setting the epoch for ``train``), and the ones a holder names
    (``sampler.set_epoch(e); fit(loader)``: the call runs after the epoch is set). None when the
    module calls no ``set_epoch``; every unit when a call sits in module-level code.

    A ``set_epoch`` in a def that neither runs nor is run by another (a second entry point of the
    file: ``pretrain_a`` sets it, ``pretrain_b`` never does) sets the epoch of the sampler that def
    draws from, not of the loader handed to the other one. ``dead``: the calls that never run (left
    out, as if not written)."""
    calls = [c for c in set_epoch_calls(ctx) if dead is None or not dead(c)]
    if not calls:
        return None
    units = {
        u.name: u
        for u in ctx.tree.body
        if isinstance(u, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    holders = {top_unit(ctx, c) for c in calls}
    if None in holders:
        return {id(u) for u in units.values()}
    named = {
        id(u): {n.id for n in ast.walk(u) if isinstance(n, ast.Name)} & set(units) for u in units.values()
    }
    reach = {id(u) for u in holders if u is not None}
    grew = True
    while grew:  # callers of a def that reaches one, transitively
        grew = False
        for u in units.values():
            if id(u) not in reach and any(id(units[n]) in reach for n in named[id(u)]):
                reach.add(id(u))
                grew = True
    # what a holder runs after setting the epoch (not the callers of those: they share a helper,
    # not the epoch)
    after = {id(units[n]) for u in holders if u is not None for n in named[id(u)]}
    return reach | after


def _inline_samplers(
    ctx: FileContext, nodes: list[ast.AST], also: Callable[[ast.Call], bool] | None = None
) -> dict[int, int]:
    """``{id(value): line}`` for ``sampler=`` values of DataLoader calls that build a shuffling
    DistributedSampler in place (``sampler=DistributedSampler(ds)``, also ``sampler=
    DistributedSampler(ds) if distributed else None``: held whenever the run is distributed)."""
    out: dict[int, int] = {}
    for node in nodes:
        if not (isinstance(node, ast.Call) and is_dataloader_call(ctx, node)):
            continue
        given = keyword(node, "sampler")
        if given is None:
            continue
        for value in branches(given):
            if isinstance(value, ast.Call) and distributed_sampler_call(ctx, value, also):
                shuffle = keyword(value, "shuffle")
                if not (isinstance(shuffle, ast.Constant) and not shuffle.value):
                    out[id(given)] = value.lineno
    return out


def returned_sampler(ctx: FileContext, fn: ast.AST) -> tuple[int, str | None, int | None] | None:
    """``(line, shuffle parameter, its position)`` when ``fn`` returns a DistributedSampler that
    shuffles (rosinality's ``data_sampler(dataset, shuffle, distributed)``: ``if distributed: return
    DistributedSampler(dataset, shuffle=shuffle)``), also held in a name first or as a branch of a
    conditional; the parameter (name, position; None when it always shuffles) that a caller turns
    off. None when it returns none, or one with ``shuffle=False``."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = positional_params(fn)
    nodes = ctx.local(fn)
    held: dict[str, ast.Call] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            held |= {t.id: node.value for t in node.targets if isinstance(t, ast.Name)}
    for node in nodes:
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        for value in branches(node.value):
            if isinstance(value, ast.Name) and value.id in held:
                value = held[value.id]
            if not (isinstance(value, ast.Call) and distributed_sampler_call(ctx, value)):
                continue
            shuffle = keyword(value, "shuffle")
            if shuffle is None and len(value.args) >= 4:
                shuffle = value.args[3]
            if isinstance(shuffle, ast.Constant) and not shuffle.value:
                continue
            if isinstance(shuffle, ast.Name) and shuffle.id in params:
                return value.lineno, shuffle.id, params.index(shuffle.id)
            return value.lineno, None, None
    return None


def returned_sampler_loaders(
    ctx: FileContext, fn: ast.AST, depth: int = 2, also: Callable[[ast.Call], bool] | None = None
) -> dict[int, str]:
    """``{position: "file.py:line"}``: ``fn`` returns a DataLoader over a shuffling DistributedSampler
    (``WHOLE``, or its index in a returned tuple; a def may return one on one path, ``train_loader,
    val_loader``, and another on the other, ``test_loader``); the place is the sampler's. A method
    returning what another method of its class keeps on ``self`` returns that loader (pix2pixHD's
    ``CustomDatasetDataLoader``: ``initialize`` builds ``self.dataloader = DataLoader(...,
    sampler=sampler)``, ``load_data`` returns ``self.dataloader``). A builder that dispatches, returning
    the whole result of a def of its file (``if status == 'train': return build_train_dataloader(...)``,
    lw_pytorch_template), returns what that def returns, ``depth`` calls deep. ``also``: further calls
    that build one (``distributed_sampler_call``)."""
    loaders, returned = _sampler_loader_places(ctx, fn, also)
    if depth:
        for node in ctx.local(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                callee = ctx.helper(node.value)
                if callee is not None and callee is not fn:
                    for position, place in returned_sampler_loaders(ctx, callee, depth - 1, also).items():
                        returned.setdefault(position, place)
    cls = ctx.parents.get(fn)
    if (
        returned
        or not isinstance(cls, ast.ClassDef)
        or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    ):
        return returned
    kept: dict[str, int] = {}
    for other in cls.body:
        if isinstance(other, (ast.FunctionDef, ast.AsyncFunctionDef)) and other is not fn:
            kept |= {
                n: line
                for n, line in _sampler_loader_places(ctx, other, also)[0].items()
                if n.startswith("self.")
            }
    return _returned_places(ctx, fn, kept) if kept else {}


def _returned_places(ctx: FileContext, fn: ast.AST, loaders: dict[str, int]) -> dict[int, str]:
    """``{position: "file.py:line"}`` of the names in ``loaders`` that ``fn`` returns (whole or in a tuple)."""
    returned: dict[int, str] = {}
    for node in ctx.local(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for i, value in enumerate(values):
                name = dotted(value)
                if name in loaders:
                    position = i if isinstance(node.value, ast.Tuple) else WHOLE
                    returned.setdefault(position, f"{Path(ctx.path).name}:{loaders[name]}")
    return returned


def _sampler_loader_places(
    ctx: FileContext, fn: ast.AST, also: Callable[[ast.Call], bool] | None = None
) -> tuple[dict[str, int], dict[int, str]]:
    """(names ``fn`` binds to a DataLoader over a shuffling DistributedSampler -> the sampler's line,
    what it returns of those: ``returned_sampler_loaders``)."""
    nodes = ctx.local(fn)
    samplers: dict[str, int] = {}  # name -> line of the shuffling DistributedSampler it holds
    for node in nodes:
        if isinstance(node, ast.Call) and distributed_sampler_call(ctx, node, also):
            shuffle = keyword(node, "shuffle")
            if isinstance(shuffle, ast.Constant) and not shuffle.value:
                continue
            _, parent = holder(ctx, node)  # ``None if rank == -1 else DistributedSampler(ds)``
            if isinstance(parent, ast.Assign):
                samplers |= {d: node.lineno for t in parent.targets if (d := dotted(t))}
    inline = _inline_samplers(ctx, nodes, also)
    if not samplers and not inline:
        return {}, {}
    # ``BatchSampler(sampler, ...)`` holds it too, as does a project's batch sampler drawing from it
    # that a DataLoader takes as its ``batch_sampler`` (TAPE's ``BucketBatchSampler(sampler, ...)``)
    batch_given = {
        dotted(keyword(n, "batch_sampler"))
        for n in nodes
        if isinstance(n, ast.Call) and is_dataloader_call(ctx, n)
    }
    for targets, source in batch_sampler_bindings(ctx, nodes, batch_given):
        if dotted(source) in samplers:
            samplers |= dict.fromkeys(targets, samplers[dotted(source) or ""])
    loaders: dict[str, int] = {}
    returned: dict[int, str] = {}
    for node in nodes:
        if isinstance(node, ast.Call) and is_dataloader_call(ctx, node):
            given = keyword(node, "sampler") or keyword(node, "batch_sampler")
            name = dotted(given) if given is not None else None
            parent = ctx.parents.get(node)
            if given is not None and id(given) in inline:
                # ``DataLoader(ds, sampler=DistributedSampler(ds))``: the sampler built in the call
                name = f"<inline {id(given)}>"
                samplers[name] = inline[id(given)]
            if name in samplers and isinstance(parent, ast.Assign):
                loaders |= {d: samplers[name] for t in parent.targets if (d := dotted(t))}
            elif name in samplers and isinstance(parent, ast.Return):
                # ``return DataLoader(ds, sampler=sampler)``: the whole result is that loader
                returned.setdefault(WHOLE, f"{Path(ctx.path).name}:{samplers[name]}")
    return loaders, _returned_places(ctx, fn, loaders) | returned


ShuffleParam = tuple[str, str, int, bool]  # (where, parameter, its position or -1, default is True)


def returned_plain_loaders(
    ctx: FileContext, fn: ast.AST, target: Callable[[ast.expr], str | None]
) -> tuple[dict[int, str], dict[int, str], dict[int, ShuffleParam]]:
    """What ``fn`` returns of DataLoaders that draw without a sampler, ``({position: "file.py:line"},
    {position: callee qualname}, {position: (where, shuffle parameter, ...)})``: a DataLoader call with
    ``shuffle=True`` and no ``sampler``/``batch_sampler`` (and no
    ``*args``/``**kwargs`` that may hold one, nor ``batch_size=None``), returned whole or at its index
    in a returned tuple, directly or through a local name every binding of which is such a call; or
    (the second map) the whole result of a project call bound to the returned name, resolved once
    every def is known (cloud-phase-prediction: ``preProcessing`` returns ``prepare_data(...)``'s
    loader); or (the third map) such a call whose ``shuffle`` is a parameter of ``fn`` it never rebinds
    (rDL-SIM's ``get_loader_SR(..., shuffle=False)`` returning ``DataLoader(dataset, shuffle=shuffle)``):
    a sampler-less loader where a call passes a literal true for it (or leaves a true default). A def
    that reads (or takes) the rank or world size may shard its data by rank: none."""
    nodes = ctx.local(fn)
    returned = [n.value for n in nodes if isinstance(n, ast.Return) and n.value is not None]
    if not returned:
        return {}, {}, {}
    words = {n.id for n in nodes if isinstance(n, ast.Name)} | {
        n.attr for n in nodes if isinstance(n, ast.Attribute)
    }
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):  # ``get_dummy_loader(cfg, rank, world_size)``
        words |= set(parameter_names(fn))
    if any(_RANK_WORD.search(w) for w in words):
        return {}, {}, {}
    bindings: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bindings.setdefault(t.id, []).append(node.value)
                elif isinstance(t, ast.Tuple):
                    for e in t.elts:  # ``a, b = ...``: no single value to follow
                        if isinstance(e, ast.Name):
                            bindings.setdefault(e.id, []).append(t)

    def shuffle_of(value: ast.expr) -> ast.expr | None:
        shuffle = keyword(value, "shuffle") if isinstance(value, ast.Call) else None
        if shuffle is None and isinstance(value, ast.Call) and len(value.args) > 2:
            shuffle = value.args[2]
        return shuffle

    def plain(value: ast.expr, shuffles: Callable[[ast.expr | None], bool]) -> bool:
        # only a loader that shuffles (``shuffle=True``): one that reads in order may be an evaluation
        # loader, or one each rank slices by its rank as it trains (DLRM's ``get_my_slice``)
        return (
            isinstance(value, ast.Call)
            and is_dataloader_call(ctx, value)
            and shuffles(shuffle_of(value))
            and keyword(value, "sampler") is None
            and keyword(value, "batch_sampler") is None
            and not any(k.arg is None for k in value.keywords)
            and not any(isinstance(a, ast.Starred) for a in value.args)
            and len(value.args) <= SAMPLER_POSITION
            and not batches_itself(value)
        )

    def literal_true(shuffle: ast.expr | None) -> bool:
        return isinstance(shuffle, ast.Constant) and shuffle.value is True

    # ``shuffle=shuffle``: a parameter of ``fn`` that nothing in it rebinds, so the caller's value
    params = parameter_names(fn) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    rebound = set(ctx.bindings(fn)) if params else set()

    def from_param(shuffle: ast.expr | None) -> bool:
        return isinstance(shuffle, ast.Name) and shuffle.id in params and shuffle.id not in rebound

    direct: dict[int, str] = {}
    via: dict[int, str] = {}
    by_param: dict[int, ShuffleParam] = {}
    for result in returned:
        values = result.elts if isinstance(result, ast.Tuple) else [result]
        for i, value in enumerate(values):
            position = i if isinstance(result, ast.Tuple) else WHOLE
            held = bindings.get(value.id, []) if isinstance(value, ast.Name) else [value]
            if held and all(plain(v, literal_true) for v in held):
                direct.setdefault(position, f"{Path(ctx.path).name}:{held[0].lineno}")
            elif len(held) == 1 and plain(held[0], from_param):
                by_param.setdefault(position, _shuffle_param(ctx, fn, held[0], shuffle_of(held[0])))
            elif len(held) == 1 and isinstance(held[0], ast.Call) and (callee := target(held[0].func)):
                via.setdefault(position, callee)
    return direct, via, by_param


FlagParam = tuple[str, str, int]  # (where, flag parameter, its position among positional ones or -1)


def flag_gated_loaders(ctx: FileContext, fn: ast.AST) -> dict[int, FlagParam]:
    """WavCaps' ``def train_dataloader(self, is_distributed=False, num_tasks=0, global_rank=0)``: ``fn``
    returns a DataLoader (whole or at its index in a returned tuple) whose ``sampler`` is a local name
    bound once, to a call handing on ``is_distributed``, a parameter of ``fn`` named for distribution
    with a ``False``/``None`` default that ``fn`` never rebinds (``sampler = self._get_sampler(ds,
    is_distributed=is_distributed, num_tasks=num_tasks, global_rank=global_rank)``). A call leaving
    the flag at its default gets the non-distributed choice: every rank draws from the whole dataset.
    ``fn`` reads rank words only as its own parameters handed to that call (no ``dist.get_rank()``,
    no other use that may shard); the loader does not turn shuffling off with a literal false.
    ``{position: ("file.py:line" of the DataLoader, flag, its position or -1)}``."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    nodes = ctx.local(fn)
    params = parameter_names(fn)
    defaults = param_defaults(fn)
    bound = ctx.bindings(fn)
    positional = positional_params(fn)
    out: dict[int, FlagParam] = {}
    for result in (n.value for n in nodes if isinstance(n, ast.Return) and n.value is not None):
        values = result.elts if isinstance(result, ast.Tuple) else [result]
        for i, returned in enumerate(values):
            value: ast.expr | None = returned
            if isinstance(returned, ast.Name):
                binds = bound.get(returned.id, [])
                value = binds[0].value if len(binds) == 1 and isinstance(binds[0], ast.Assign) else None
            if not (isinstance(value, ast.Call) and is_dataloader_call(ctx, value)):
                continue
            sampler = keyword(value, "sampler")
            shuffle = keyword(value, "shuffle")
            if (
                not isinstance(sampler, ast.Name)
                or keyword(value, "batch_sampler") is not None
                or any(k.arg is None for k in value.keywords)
                or any(isinstance(a, ast.Starred) for a in value.args)
                or len(value.args) > SAMPLER_POSITION
                or batches_itself(value)
                or (isinstance(shuffle, ast.Constant) and not shuffle.value)
            ):
                continue
            binds = bound.get(sampler.id, [])
            if (
                len(binds) != 1
                or not isinstance(binds[0], ast.Assign)
                or not isinstance(binds[0].value, ast.Call)
            ):
                continue
            chooser = binds[0].value
            handed = {
                id(n) for a in [*chooser.args, *(k.value for k in chooser.keywords)] for n in ast.walk(a)
            }
            flags = [
                a.id
                for a in [*chooser.args, *(k.value for k in chooser.keywords)]
                if isinstance(a, ast.Name)
                and a.id in params
                and DISTRIBUTED_FLAG_NAME.search(a.id)
                and isinstance(d := defaults.get(a.id), ast.Constant)
                and d.value in (False, None)
                and not bound.get(a.id)
            ]
            if len(flags) != 1:
                continue
            # rank words only as parameters handed to that call: nothing else here may shard by rank
            if any(
                _RANK_WORD.search(n.id if isinstance(n, ast.Name) else n.attr)
                and (isinstance(n, ast.Attribute) or n.id not in params or id(n) not in handed)
                for n in nodes
                if isinstance(n, (ast.Name, ast.Attribute))
            ):
                continue
            position = i if isinstance(result, ast.Tuple) else WHOLE
            flag = flags[0]
            out.setdefault(
                position,
                (
                    f"{Path(ctx.path).name}:{value.lineno}",
                    flag,
                    positional.index(flag) if flag in positional else -1,
                ),
            )
    return out


# a parameter named as a switch for the distributed run (``is_distributed``, ``ddp``, ``use_dist``)
DISTRIBUTED_FLAG_NAME = re.compile(r"distributed|(^|_)(ddp|dist)(_|$)", re.IGNORECASE)


def _shuffle_param(ctx: FileContext, fn: ast.AST, loader: ast.expr, shuffle: ast.expr | None) -> ShuffleParam:
    """Where the loader is, and the parameter of ``fn`` its ``shuffle`` is (name, position among
    those a call fills by position or -1, whether its default is a literal true)."""
    assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(shuffle, ast.Name)
    positional = positional_params(fn)
    default = param_defaults(fn).get(shuffle.id)
    return (
        f"{Path(ctx.path).name}:{loader.lineno}",
        shuffle.id,
        positional.index(shuffle.id) if shuffle.id in positional else -1,
        isinstance(default, ast.Constant) and default.value is True,
    )
