"""One definition each (round 10, fix10c): the calls that return the module they are given
(lint/module_moves.py) and the models a scope freezes (lint/frozen_wrap.py ``frozen_names``)."""

from __future__ import annotations

import ast
import textwrap

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.frozen_wrap import frozen_names
from ddp_doctor.lint.module_moves import unmoved


def _ctx(source: str) -> FileContext:
    source = textwrap.dedent(source)
    return FileContext.build("m.py", source, ast.parse(source))


def _wrapped(source: str, through_syncbn: bool = False) -> str | None:
    ctx = _ctx(source)
    call = next(c for c in ctx.of_type(ast.Call) if dotted(c.func) == "DDP")
    return dotted(unmoved(ctx, call.args[0], through_syncbn=through_syncbn))


def test_moves_casts_and_mode_switches_keep_the_model() -> None:
    assert _wrapped("DDP(model.to(dev).cuda().bfloat16().train())") == "model"
    assert _wrapped("DDP(model.double().eval().requires_grad_(False).cpu())") == "model"
    assert _wrapped("DDP(build(model).cuda())") is None  # a call of something else: not the model


def test_a_syncbn_conversion_is_seen_through_only_when_asked() -> None:
    source = """
        import torch
        DDP(torch.nn.SyncBatchNorm.convert_sync_batchnorm(model).cuda())
    """
    assert _wrapped(source) is None
    assert _wrapped(source, through_syncbn=True) == "model"


def test_a_function_reached_by_name_is_not_a_method_of_the_model() -> None:
    assert _wrapped("import torch\nDDP(torch.cuda(model))") is None


def test_frozen_names_are_frozen_and_never_thawed() -> None:
    ctx = _ctx(
        """
        teacher.eval()
        self.ref.requires_grad_(False)
        student.requires_grad_(False)
        student.train()
        critic.requires_grad_(True)
        """
    )
    assert frozen_names(ctx.nodes) == {"teacher": 2, "self.ref": 3}


def test_over_a_whole_file_only_requires_grad_freezes() -> None:
    # batchnorm-unsynced reads the whole file: ``model.eval()`` in ``validate`` is no frozen model
    ctx = _ctx(
        """
        model.eval()
        teacher.requires_grad_(False)
        """
    )
    assert frozen_names(ctx.nodes, mode_switches=False) == {"teacher": 3}
