"""A loader over a shuffling DistributedSampler, built and returned by project code of another file
(set-epoch-missing, project mode).

hysts/pytorch_image_classification's ``create_dataloader(config, is_train)`` builds
``DistributedSampler(train_dataset)`` inside a ``BatchSampler`` and returns ``train_loader,
val_loader``; HigherHRNet's ``make_dataloader(cfg, ...)`` returns its ``DataLoader(sampler=
DistributedSampler(dataset))``. Neither module calls ``set_epoch``, and the entry scripts loop the
epochs over what they got. The builder's file has no epoch loop and the looping file builds no
sampler, so the rule asks here, at the call, which returned value (the whole result or a tuple
position) is such a loader. The callee's file is read again, lazily, only for calls whose result
the caller iterates over epochs.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from ddp_doctor.lint.context import FileContext, dotted, keyword
from ddp_doctor.lint.project import ProjectIndex
from ddp_doctor.lint.rules._data import DATALOADER, distributed_sampler_call
from ddp_doctor.lint.source import read_source

BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
WHOLE = -1  # the function returns the loader itself, not inside a tuple


def returned_loader(ctx: FileContext, call: ast.Call) -> dict[int, str] | None:
    """``{position: "file.py:line"}`` when ``call`` runs project code of another file that returns a
    DataLoader over a shuffling DistributedSampler (``WHOLE``, or its index in a returned tuple) from
    a module that never calls ``set_epoch``; the place is the sampler's."""
    project: ProjectIndex | None = ctx.project
    if project is None:
        return None
    summary = project.summary_for(ctx, call.func)
    if summary is None or summary.module == ctx.module:
        return None
    return _scan(summary.path).get(summary.line)


def sets_epoch_elsewhere(ctx: FileContext, loop: ast.AST, names: set[str]) -> bool:
    """A call in ``loop`` hands one of ``names`` to project code of a file that calls ``set_epoch``
    (``train_one_epoch(loader, epoch)`` doing ``loader.sampler.set_epoch(epoch)``)."""
    project = ctx.project
    if project is None:
        return False
    for node in ctx.local(loop):
        if isinstance(node, ast.Call) and any(
            dotted(a) in names for a in (*node.args, *(k.value for k in node.keywords))
        ):
            summary = project.summary_for(ctx, node.func)
            if summary is not None and summary.module != ctx.module and _mentions_set_epoch(summary.path):
                return True
    return False


@lru_cache(maxsize=64)
def _mentions_set_epoch(path: str) -> bool:
    try:
        return "set_epoch" in read_source(Path(path))[0]
    except (OSError, ValueError):
        return True  # unreadable: assume it might


@lru_cache(maxsize=64)
def _scan(path: str) -> dict[int, dict[int, str]]:
    """def line -> what it returns where, for the defs of ``path`` returning such a loader (a def
    may return one on one path, ``train_loader, val_loader``, and another on the other, ``test_loader``)."""
    try:
        source, _ = read_source(Path(path))
        if "set_epoch" in source or "DistributedSampler" not in source:
            return {}
        other = FileContext.build(path, source, ast.parse(source))
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        return {}
    found: dict[int, dict[int, str]] = {}
    for fn in other.of_type(ast.FunctionDef) + other.of_type(ast.AsyncFunctionDef):
        result = _returned_sampler_loader(other, fn)
        if result:
            found[fn.lineno] = result
    return found


def _returned_sampler_loader(ctx: FileContext, fn: ast.AST) -> dict[int, str]:
    nodes = ctx.local(fn)
    samplers: dict[str, int] = {}  # name -> line of the shuffling DistributedSampler it holds
    for node in nodes:
        if isinstance(node, ast.Call) and distributed_sampler_call(ctx, node):
            shuffle = keyword(node, "shuffle")
            if isinstance(shuffle, ast.Constant) and not shuffle.value:
                continue
            parent = ctx.parents.get(node)
            if isinstance(parent, ast.Assign):
                samplers |= {d: node.lineno for t in parent.targets if (d := dotted(t))}
    if not samplers:
        return {}
    for node in nodes:  # ``BatchSampler(sampler, ...)`` holds it too
        if (
            isinstance(node, ast.Call)
            and ctx.call_qualname(node) in BATCH_SAMPLERS
            and node.args
            and dotted(node.args[0]) in samplers
        ):
            parent = ctx.parents.get(node)
            if isinstance(parent, ast.Assign):
                line = samplers[dotted(node.args[0]) or ""]
                samplers |= {d: line for t in parent.targets if (d := dotted(t))}
    loaders: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Call) and ctx.call_qualname(node) == DATALOADER:
            given = keyword(node, "sampler") or keyword(node, "batch_sampler")
            name = dotted(given) if given is not None else None
            parent = ctx.parents.get(node)
            if name in samplers and isinstance(parent, ast.Assign):
                loaders |= {d: samplers[name] for t in parent.targets if (d := dotted(t))}
    returned: dict[int, str] = {}
    for node in nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for i, value in enumerate(values):
                name = dotted(value)
                if name in loaders:
                    position = i if isinstance(node.value, ast.Tuple) else WHOLE
                    returned.setdefault(position, f"{Path(ctx.path).name}:{loaders[name]}")
    return returned
