"""A model built by a name chosen at run time inside a project package (project mode).

HigherHRNet builds ``eval('models.' + cfg.MODEL.NAME + '.get_pose_net')(cfg, ...)``; hysts'
pytorch_image_classification does ``module = importlib.import_module('pytorch_image_classification
.models' f'.{config.model.type}.{config.model.name}')`` then ``getattr(module, 'Network')(config)``.
The name is configuration, but the package and the builder's own name are written: the candidates
are the project defs named so under that package, and when most of them build BatchNorm, so does
the call (the same majority rule as registries of BatchNorm models). Where the pick is read and
how a local name bound to it is followed: lint/model_picks.py.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.model_picks import bound_callee, handed_pick_param, pick_key, picked_module
from ddp_doctor.lint.project import ProjectIndex


def builds_batchnorm_by_name(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> bool:
    key = pick_key(ctx, bound_callee(ctx, call))
    return key is not None and project.pick_builds_batchnorm(key)


def builds_batchnorm_from_handed_module(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> bool:
    """``get_instance(models, 'arch', config, n)`` / ``config.init_obj('arch', module_arch)``: a helper
    (of this file or the project) returns ``getattr(module, cfg[name]['type'])(...)`` on the module it
    is handed (pytorch-template's shape; deeplabv3plus_DPDDP). The handed project module is the
    registry: the call builds BatchNorm when most of its defs do and they do not convert themselves."""
    fn = ctx.helper(call)
    if fn is not None:
        position = handed_pick_param(fn)
        module = picked_module(ctx, call, position, project.resolve_module) if position is not None else None
    else:
        module = project.call_picked_module(ctx, call)
    return (
        module is not None
        and project.module_builds_batchnorm(module)
        and not project.module_converts_syncbn(module)
    )
