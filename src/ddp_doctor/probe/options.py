"""Probe options and the environment variables that carry them from `ddp-doctor run` to each rank.

Kept free of torch so the launcher and the sitecustomize shim stay light.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ENV_RUN_DIR = "DDP_DOCTOR_RUN_DIR"
ENV_LEVEL = "DDP_DOCTOR_LEVEL"
ENV_EVERY = "DDP_DOCTOR_EVERY"
# Comma-separated instruments that must raise inside their hooks: the safety tests use it to prove
# that a failing instrument is disabled and recorded without touching the training results.
ENV_FAULT = "DDP_DOCTOR_PROBE_FAULT"
# Per-parameter equivalence fingerprints for the first K optimizer steps (instruments/fingerprints.py,
# docs/equivalence.md); unset or 0: off. `ddp-doctor equiv` sets it; `run --fingerprints K` too.
ENV_FINGERPRINTS = "DDP_DOCTOR_FINGERPRINTS"
DEFAULT_FINGERPRINT_STEPS = 3
# A `rollup` record every R optimizer steps (instruments/rollup.py, rundir/rollups.py); 0: off.
ENV_ROLLUP_EVERY = "DDP_DOCTOR_ROLLUP_EVERY"
DEFAULT_ROLLUP_EVERY = 100  # rundir.rollups.DEFAULT_EVERY (measured: docs/report.md, "Rollups and scale")

Level = Literal["basic", "full"]
LEVELS: tuple[str, ...] = ("basic", "full")
# Replica checksums and `full` statistics every 50 optimizer steps by default: a checksum costs
# about one pass over the parameters (docs/probe.md, measured facts: ~12 ms for 21M params), so 1/50 of a step is noise.
DEFAULT_EVERY = 50


@dataclass(frozen=True)
class ProbeOptions:
    run_dir: Path
    level: Level = "basic"
    every: int = DEFAULT_EVERY
    fault: str | None = None
    fingerprints: int = 0  # optimizer steps with equivalence fingerprints (0: off)
    rollup_every: int = DEFAULT_ROLLUP_EVERY  # optimizer steps per `rollup` record (0: off)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        if self.every < 1:
            raise ValueError(f"every must be >= 1, got {self.every}")
        if self.fingerprints < 0:
            raise ValueError(f"fingerprints must be >= 0, got {self.fingerprints}")
        if self.rollup_every < 0:
            raise ValueError(f"rollup_every must be >= 0, got {self.rollup_every}")

    @property
    def faults(self) -> tuple[str, ...]:
        return tuple(self.fault.split(",")) if self.fault else ()

    def to_env(self) -> dict[str, str]:
        env = {ENV_RUN_DIR: str(self.run_dir), ENV_LEVEL: self.level, ENV_EVERY: str(self.every)}
        if self.fingerprints:
            env[ENV_FINGERPRINTS] = str(self.fingerprints)
        if self.rollup_every != DEFAULT_ROLLUP_EVERY:
            env[ENV_ROLLUP_EVERY] = str(self.rollup_every)
        return env

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ProbeOptions | None:
        """The options `ddp-doctor run` put in the environment, or None when it did not run us."""
        env = os.environ if environ is None else environ
        if not env.get(ENV_RUN_DIR):
            return None
        return cls(
            run_dir=Path(env[ENV_RUN_DIR]),
            level=env.get(ENV_LEVEL, "basic"),  # type: ignore[arg-type]
            every=int(env.get(ENV_EVERY, DEFAULT_EVERY)),
            fault=env.get(ENV_FAULT) or None,
            fingerprints=_count(env.get(ENV_FINGERPRINTS)),
            rollup_every=rollup_every_from(env),
        )


def _count(text: str | None) -> int:
    """A step count from the environment; anything that is not a non-negative integer is 0 (off)."""
    return int(text) if text is not None and text.strip().isdigit() else 0


def rollup_every_from(env: os._Environ[str] | dict[str, str]) -> int:
    """R from DDP_DOCTOR_ROLLUP_EVERY: unset or not a count means the default; 0 means off."""
    text = env.get(ENV_ROLLUP_EVERY)
    return int(text) if text is not None and text.strip().isdigit() else DEFAULT_ROLLUP_EVERY
