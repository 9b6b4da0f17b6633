"""The log sources' common result: named scalar series by step, and the key mapping onto fields.

A log names its scalars freely (``loss``, ``train/loss``, ``train_loss`` …). :data:`ALIASES` maps
the common names of HF Trainer, its TensorBoard/W&B callbacks, Lightning and plain scripts onto
the fields a reduced run has; ``--key FIELD=NAME`` overrides pick any other name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Fields of a reduced run, in the order their aliases are tried (first present name wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "loss": ("loss", "train/loss", "train_loss", "train_loss_step", "train/loss_step", "loss/train", "Loss"),
    "grad_norm": ("grad_norm", "train/grad_norm", "gradient_norm", "grad_norm/total", "train/gradient_norm"),
    "lr": ("learning_rate", "train/learning_rate", "lr", "train/lr", "lr-AdamW", "lr-Adam", "lr-SGD"),
    "loss_scale": ("loss_scale", "train/loss_scale", "scaler/scale", "grad_scale", "train/grad_scale"),
    "epoch": ("epoch", "train/epoch"),
}
FIELDS = tuple(ALIASES)


class KeyError_(ValueError):
    """A `--key` override that is not FIELD=NAME with a known field."""


def parse_keys(pairs: list[str] | None) -> dict[str, str]:
    """``["loss=my/loss"]`` → ``{"loss": "my/loss"}`` (fields: :data:`FIELDS`)."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, key = pair.partition("=")
        name = name.strip()
        if not sep or not key or name not in ALIASES:
            raise KeyError_(f"--key expects FIELD=NAME with FIELD one of {', '.join(FIELDS)}; got {pair!r}")
        out[name] = key
    return out


@dataclass
class ImportOptions:
    """What the logs cannot say, from flags; and key overrides."""

    keys: dict[str, str] = field(default_factory=dict)
    world_size: int | None = None
    micro_batch: int | None = None  # samples per rank per micro-step
    accum: int | None = None  # micro-steps per optimizer step
    tokens_per_sample: int | None = None
    max_norm: float | None = None  # the clip threshold the run used
    # run directories: how the rank files are read (rundir/reader.py ROLLUP_MODES) and the step
    # ranges the rollup path reads raw (`report --rollups`, `--steps`)
    rollups: str = "auto"
    steps: tuple[tuple[int, int], ...] = ()

    def global_batch(self) -> int | None:
        """Samples per optimizer step over all ranks, when every factor is known."""
        if self.micro_batch is None or self.world_size is None:
            return None
        return self.micro_batch * (self.accum or 1) * self.world_size


@dataclass
class LogSeries:
    """Scalar series read from a log: ``scalars[name] = [(step, value), …]`` in log order."""

    source: str  # "trainer_state" | "tensorboard" | "wandb"
    path: str
    scalars: dict[str, list[tuple[int, float]]]
    problems: list[str] = field(default_factory=list)
    # Facts the log itself states (e.g. HF trainer_state.json's train_batch_size); flags win.
    facts: dict[str, float | int] = field(default_factory=dict)
    step_base: int = 0  # first optimizer step's number in the log (HF counts from 1)

    def mapped(self, overrides: dict[str, str]) -> dict[str, str]:
        """Field → the log's key for it (overrides first, then :data:`ALIASES`)."""
        out: dict[str, str] = {}
        for fld, names in ALIASES.items():
            if fld in overrides:
                if overrides[fld] in self.scalars:
                    out[fld] = overrides[fld]
                else:
                    self.problems.append(
                        f"--key {fld}={overrides[fld]}: no such scalar in the log "
                        f"(available: {', '.join(sorted(self.scalars)[:20])})"
                    )
                continue
            for name in names:
                if self.scalars.get(name):
                    out[fld] = name
                    break
        return out


def finite_or_nan(value: object) -> float:
    """A logged value as a float; what is not a number becomes nan (the run-format's convention)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return x
