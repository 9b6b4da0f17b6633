"""A loader over a shuffling DistributedSampler, built and returned by project code of another file
(set-epoch-missing, project mode).

hysts/pytorch_image_classification's ``create_dataloader(config, is_train)`` returns ``train_loader,
val_loader`` over a ``DistributedSampler``; HigherHRNet's ``make_dataloader(cfg, ...)`` returns its
``DataLoader(sampler=DistributedSampler(dataset))``. Neither module calls ``set_epoch``, and the
entry scripts loop the epochs over what they got. The builder's file has no epoch loop and the
looping file builds no sampler, so the rule asks the project index, at the call, which returned
value (the whole result or a tuple position) is such a loader: ``Summary.sampler_loaders`` and
``ProjectIndex.set_epoch_modules``, recorded from each file's tree when the index is built
(lint/samplers.py).
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.project import ProjectIndex


def returned_loader(ctx: FileContext, call: ast.Call) -> dict[int, str] | None:
    """``{position: "file.py:line"}`` when ``call`` runs project code of another file that returns a
    DataLoader over a shuffling DistributedSampler (``WHOLE``, or its index in a returned tuple) from
    a module that never calls ``set_epoch``; the place is the sampler's."""
    project: ProjectIndex | None = ctx.project
    if project is None:
        return None
    # a function, or (``dataset = data_loader.load_data()``) the method of the instance a project
    # class or factory built here
    summary = project.summary_for(ctx, call.func) or project.instance_method(ctx, call)
    if summary is None:
        # a method of a value of unknown type: every project method of that name returns one
        # (CHORE's ``self.train_dataset.get_loader(rank=..., world_size=...)``)
        return _builder_picked_in_branches(ctx, project, call.func) or project.same_name_sampler_loaders(
            ctx, call
        )
    if summary.module == ctx.module:
        return None
    return summary.sampler_loaders or None


def _builder_picked_in_branches(
    ctx: FileContext, project: ProjectIndex, func: ast.expr
) -> dict[int, str] | None:
    """``loader_method`` bound in each branch of an ``if``/``elif`` chain to one builder of another
    file per dataset (exp_torch_byol: ``if args.k400: loader_method = get_data_k400 ... else:
    loader_method = get_data_ucf``, then ``train_loader = loader_method(..., ddp=True)``): whichever
    branch runs, the call returns a loader over a shuffling DistributedSampler when every builder it
    may name does, at the same place in what it returns. None when one binding is anything else (a
    call, a lambda, a def of this file) or one builder returns no such loader there."""
    if not isinstance(func, ast.Name):
        return None
    common: dict[int, str] | None = None
    for found in project.bound_in_branches(ctx, func):
        if found.module == ctx.module or not found.sampler_loaders:
            return None
        mine = found.sampler_loaders
        common = dict(mine) if common is None else {p: w for p, w in common.items() if p in mine}
    return common or None


def sets_epoch_elsewhere(ctx: FileContext, loop: ast.AST, names: set[str]) -> bool:
    """A call in ``loop`` hands one of ``names`` to project code of a file that calls ``set_epoch``
    (``train_one_epoch(loader, epoch)`` doing ``loader.sampler.set_epoch(epoch)``)."""
    project: ProjectIndex | None = ctx.project
    if project is None:
        return False
    for node in ctx.local(loop):
        if isinstance(node, ast.Call) and any(
            dotted(a) in names for a in (*node.args, *(k.value for k in node.keywords))
        ):
            summary = project.summary_for(ctx, node.func)
            if (
                summary is not None
                and summary.module != ctx.module
                and summary.module in project.set_epoch_modules
            ):
                return True
    return False
