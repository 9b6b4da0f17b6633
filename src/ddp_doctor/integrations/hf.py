"""``DdpDoctorCallback`` for the HF ``Trainer`` (``transformers.TrainerCallback``).

    trainer = Trainer(..., callbacks=[DdpDoctorCallback()])

* ``on_init_end`` (end of ``Trainer.__init__``, before ``train()`` wraps the model in DDP) attaches
  the probe, so the DDP comm hook and the sampler are seen; ``on_train_begin`` attaches too (no-op
  when already attached) for a callback added later with ``add_callback`` — then the DDP-level
  measurements of that run are missing (the wrapper already exists).
* ``on_log`` records the ``loss`` the Trainer logs (rank 0; ``state.global_step - 1`` is the
  0-based optimizer step; the value is the mean over ``logging_steps`` steps, gathered over ranks).
* ``on_train_end`` (rank 0) diagnoses the run directory, writes report.json/report.html there
  and prints the summary.

Run directory: ``run_dir`` if given, else the one ``ddp-doctor run`` set, else
``<output_dir>/ddp-doctor``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ddp_doctor.integrations.common import LossLog, safe, start, summarise


class DdpDoctorCallback(TrainerCallback):
    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        level: str | None = None,
        every: int | None = None,
        summary: bool = True,
    ) -> None:
        self.run_dir_option = run_dir
        self.level, self.every, self.summary = level, every, summary
        self.run_dir: Path | None = None
        self.loss_log = LossLog()

    def _attach(self, args: Any, state: Any) -> None:
        if self.run_dir is None:
            self.run_dir = start(self.run_dir_option, args.output_dir, level=self.level, every=self.every)
            self.loss_log.open(self.run_dir, 0 if state.is_world_process_zero else 1)

    @safe
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._attach(args, state)

    @safe
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._attach(args, state)

    @safe
    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if logs and "loss" in logs:
            self.loss_log.write(
                state.global_step - 1, logs["loss"], mean_of_steps=int(args.logging_steps or 1)
            )

    @safe
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.summary and state.is_world_process_zero:
            text = summarise(self.run_dir)
            if text:
                print(text, flush=True)
