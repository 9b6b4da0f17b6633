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
from ddp_doctor.lint.model_picks import bound_callee, pick_key
from ddp_doctor.lint.project import ProjectIndex


def builds_batchnorm_by_name(ctx: FileContext, project: ProjectIndex, call: ast.Call) -> bool:
    key = pick_key(ctx, bound_callee(ctx, call))
    return key is not None and project.pick_builds_batchnorm(key)
