"""``DdpDoctorCallback`` for Lightning (``lightning.pytorch`` or ``pytorch_lightning``).

    trainer = L.Trainer(..., callbacks=[DdpDoctorCallback()])

* ``setup`` (after the process group exists, before the strategy wraps the model in DDP) attaches
  the probe.
* ``on_train_batch_end`` records the loss the module logs (``self.log("train_loss", …)``: the first
  of ``loss_keys`` found in ``trainer.callback_metrics``; else the ``loss`` the training step
  returned) on global rank 0, at 0-based optimizer step ``trainer.global_step - 1``.
* ``on_fit_end`` (global rank 0) diagnoses the run directory, writes report.json/report.html and
  prints the summary.

Run directory: ``run_dir`` if given, else the one ``ddp-doctor run`` set, else
``<default_root_dir>/ddp-doctor``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the standalone package
    from pytorch_lightning.callbacks import Callback  # type: ignore[assignment]  # the same class

from ddp_doctor.integrations.common import LossLog, safe, start, summarise

LOSS_KEYS = ("train_loss", "loss", "train/loss", "train_loss_step")


class DdpDoctorCallback(Callback):
    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        level: str | None = None,
        every: int | None = None,
        loss_keys: tuple[str, ...] = LOSS_KEYS,
        summary: bool = True,
    ) -> None:
        self.run_dir_option = run_dir
        self.level, self.every, self.loss_keys, self.summary = level, every, loss_keys, summary
        self.run_dir: Path | None = None
        self.loss_log = LossLog()

    @safe
    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if self.run_dir is None:
            self.run_dir = start(
                self.run_dir_option, trainer.default_root_dir, level=self.level, every=self.every
            )
            self.loss_log.open(self.run_dir, trainer.global_rank)

    @safe
    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        metrics = trainer.callback_metrics
        loss = next((metrics[k] for k in self.loss_keys if k in metrics), None)
        if loss is None and isinstance(outputs, dict):
            loss = outputs.get("loss")
        if loss is not None:
            self.loss_log.write(trainer.global_step - 1, loss)

    @safe
    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        if self.summary and trainer.is_global_zero:
            text = summarise(self.run_dir)
            if text:
                print(text, flush=True)
