"""`compile=off`: the model runs eager although the script compiles it."""

from __future__ import annotations

from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, TAG, Intervention, choice, guard_name
from ddp_doctor.probe.state import guarded, patch

KEY = "compile"


@guarded(guard_name(KEY), everywhere=True)
def _count() -> None:
    EFFECTS[KEY] += 1


def _apply(_: object) -> None:
    import torch

    def make_compile(original: Any) -> Any:
        def compile_off(model: Any = None, *args: Any, **kwargs: Any) -> Any:
            _count()
            if model is None:  # used as @torch.compile(...) with options: an identity decorator
                return lambda fn: fn
            return model

        return compile_off

    def make_module_compile(original: Any) -> Any:
        def module_compile_off(self: Any, *args: Any, **kwargs: Any) -> None:
            _count()

        return module_compile_off

    patch(torch, "compile", make_compile, tag=TAG)
    patch(torch.nn.Module, "compile", make_module_compile, tag=TAG)


INTERVENTIONS = (
    Intervention(
        KEY,
        "`off`",
        choice("off"),
        "`torch.compile` returns its input (or an identity decorator); `nn.Module.compile` does nothing.",
        "compile=off",
        apply=_apply,
    ),
)
