"""The structured sources: the logging libraries a script hands its loss to.

Each is patched lazily, right after the program itself imports the library (state.after_import),
so a script that never imports wandb or lightning never pays for them and the probe never imports
them itself. Every wrapper calls the original first and outside the guard (state.patch), then
records the loss-like keys of what it was given (key contains "loss", any case) through sink.emit:

| source          | patched                                         | value, step                        |
|-----------------|-------------------------------------------------|------------------------------------|
| tensorboard     | torch.utils.tensorboard.writer.SummaryWriter.add_scalar / add_scalars | tag, scalar_value |
| wandb           | wandb.sdk.wandb_run.Run.log (wandb.log is bound to it)     | dict keys                |
| hf_trainer      | transformers.trainer.Trainer.log                | the logs dict (already all-reduced) |
| lightning       | LightningModule.log (lightning.pytorch, pytorch_lightning) | name, value; `sync_dist` → reduce |
| fabric          | Fabric.log_dict (Fabric.log calls it)           | dict keys                          |
| accelerate      | accelerate.Accelerator.log                      | dict keys                          |

A value that is a tensor is read without a device synchronisation: a CPU tensor at once, a CUDA
one copied to the host asynchronously and read once its copy has finished (sink.py's pending list).
Lightning's `sync_dist=True` averages the value over ranks before the user sees it: that record
carries ``"reduce": "mean"`` (the analysis averages it over ranks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ddp_doctor.probe.capture import sink
from ddp_doctor.probe.state import after_import, guarded, patch


def _is_loss(key: Any) -> bool:
    return isinstance(key, str) and "loss" in key.lower()


def _record(source: str, key: str, value: Any, reduce: str | None = None) -> None:
    if _is_loss(key):
        sink.emit_value(source, key, value, reduce=reduce)


def _record_dict(source: str, values: Any) -> None:
    if isinstance(values, Mapping):
        for key, value in list(values.items())[:256]:
            _record(source, key, value)


def _wrap(source: str, owner: Any, name: str, see: Callable[..., None]) -> None:
    """Patch owner.name: call the original, then `see(*args, **kwargs)` under the source's guard."""
    guarded_see = guarded(f"capture_{source}")(see)

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            guarded_see(*args, **kwargs)
            return result

        return wrapper

    patch(owner, name, make)


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


# --- one installer per library ------------------------------------------------------------------
def _tensorboard() -> None:
    from torch.utils.tensorboard import writer

    def scalar(self: Any, *args: Any, **kwargs: Any) -> None:
        _record("tensorboard", _arg(args, kwargs, 0, "tag"), _arg(args, kwargs, 1, "scalar_value"))

    def scalars(self: Any, *args: Any, **kwargs: Any) -> None:
        main = _arg(args, kwargs, 0, "main_tag")
        values = _arg(args, kwargs, 1, "tag_scalar_dict")
        if isinstance(values, Mapping):
            for key, value in values.items():
                _record("tensorboard", f"{main}/{key}", value)

    _wrap("tensorboard", writer.SummaryWriter, "add_scalar", scalar)
    _wrap("tensorboard", writer.SummaryWriter, "add_scalars", scalars)


def _wandb() -> None:
    from wandb.sdk import wandb_run

    def log(self: Any, *args: Any, **kwargs: Any) -> None:
        _record_dict("wandb", _arg(args, kwargs, 0, "data"))

    _wrap("wandb", wandb_run.Run, "log", log)


def _hf_trainer() -> None:
    from transformers import trainer

    def log(self: Any, *args: Any, **kwargs: Any) -> None:
        _record_dict("hf_trainer", _arg(args, kwargs, 0, "logs"))

    _wrap("hf_trainer", trainer.Trainer, "log", log)


def _lightning(module_name: str) -> Callable[[], None]:
    def install() -> None:
        import importlib

        module = importlib.import_module(module_name)

        def log(self: Any, *args: Any, **kwargs: Any) -> None:
            reduce = "mean" if kwargs.get("sync_dist") else None
            _record("lightning", _arg(args, kwargs, 0, "name"), _arg(args, kwargs, 1, "value"), reduce)

        _wrap("lightning", module.LightningModule, "log", log)

    return install


def _fabric(module_name: str) -> Callable[[], None]:
    def install() -> None:
        import importlib

        module = importlib.import_module(module_name)

        def log_dict(self: Any, *args: Any, **kwargs: Any) -> None:
            _record_dict("fabric", _arg(args, kwargs, 0, "metrics"))

        _wrap("fabric", module.Fabric, "log_dict", log_dict)

    return install


def _accelerate() -> None:
    from accelerate import accelerator

    def log(self: Any, *args: Any, **kwargs: Any) -> None:
        _record_dict("accelerate", _arg(args, kwargs, 0, "values"))

    _wrap("accelerate", accelerator.Accelerator, "log", log)


INSTALLERS: dict[str, Callable[[], None]] = {
    "torch.utils.tensorboard.writer": _tensorboard,
    "wandb.sdk.wandb_run": _wandb,
    "transformers.trainer": _hf_trainer,
    "lightning.pytorch.core.module": _lightning("lightning.pytorch.core.module"),
    "pytorch_lightning.core.module": _lightning("pytorch_lightning.core.module"),
    "lightning.fabric.fabric": _fabric("lightning.fabric.fabric"),
    "lightning_fabric.fabric": _fabric("lightning_fabric.fabric"),
    "accelerate.accelerator": _accelerate,
}


def install() -> None:
    for module, installer in INSTALLERS.items():
        after_import(module, guarded(f"capture_install:{module}")(installer))
