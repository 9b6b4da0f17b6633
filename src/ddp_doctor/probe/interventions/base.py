"""What an intervention is: one definition per `run --set` key, and the parsers its value uses.

An :class:`Intervention` says everything about one key in one place: how its value is parsed and
documented, what it does (the sentence shown by `ddp-doctor run --help` and docs/experiments.md),
the patch it installs once at torch import (``apply``) and, optionally, what it does around every
optimizer step (``pre_step``/``post_step``, run by the shared optimizer-step hooks of
:mod:`ddp_doctor.probe.interventions.runner`). Patches go through ``probe.state.patch`` with the
tag :data:`TAG`, and every patched body through ``probe.state.guarded(..., everywhere=True)``: an
intervention must act in every process that inherited the patch (forked DataLoader workers
included), and a failing one disables itself (a `probe_error` record) without touching training.

Nothing here imports torch: `run --set` validates values before anything starts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# `probe.state.patch` tag of every intervention patch (the instruments patch the same functions
# after it with their own tag: both wrappers stay, each once).
TAG = "intervention"

# How often each intervention took effect in this process (key → count). The probe writes it
# into each rank's `end` record, so `ablate` can tell "had no effect" from "made no difference".
EFFECTS: Counter[str] = Counter()

# A step hook: (optimizer, the typed values of every applied key) -> None.
StepHook = Callable[[Any, Mapping[str, object]], None]


@dataclass(frozen=True)
class Intervention:
    """One `run --set KEY=VALUE` key.

    ``apply(value)`` installs its patches (once per process; called again it must be a no-op,
    which ``state.patch`` guarantees). Keys of one family that share a step hook pass the same
    function object: the runner calls each distinct hook once per optimizer step.
    """

    key: str
    values: str  # the accepted values, for help and docs ("float > 0", "off", ...)
    parse: Callable[[str], object]
    does: str  # one sentence: `ddp-doctor run --help`, docs/experiments.md
    example: str  # KEY=VALUE, parsed by a test
    apply: Callable[[object], None] | None = None
    pre_step: StepHook | None = None
    post_step: StepHook | None = None


def guard_name(key: str) -> str:
    """The `state.guarded` instrument name of an intervention (what a `probe_error` record names)."""
    return f"intervention:{key}"


# --- value parsers: raise ValueError("must ...") with what is allowed ----------------------------


def positive_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError("must be a finite number > 0")
    return value


def open_unit_float(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError("must be a number strictly between 0 and 1")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be an integer >= 1")
    return value


def seed_int(text: str) -> int:
    value = int(text)
    if not 0 <= value < 2**63:
        raise ValueError("must be an integer in [0, 2**63)")
    return value


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return word

    return parse


def bool_word(text: str) -> bool:
    word = text.strip().lower()
    if word in ("false", "0", "off", "no"):
        return False
    if word in ("true", "1", "on", "yes"):
        return True
    raise ValueError("must be true or false")
