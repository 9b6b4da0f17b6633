"""Which interventions `ddp-doctor run --set KEY=VALUE` knows, and is a given `KEY=VALUE` valid?

An intervention is one of the forum's "turn X off / change Y and compare" suggestions, applied
to an unmodified script by the probe at torch import time (ddp_doctor.probe.interventions). This
module is the spec: the known keys, what each does, and the parser that turns command-line
strings into the `interventions` object of the manifest (docs/run-format.md) and the JSON of the
`DDP_DOCTOR_SET` environment variable that carries it into every rank.

It imports neither torch nor anything heavy: `run --set` validates before starting anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

# The environment variable through which `run --set` hands interventions to every rank.
ENV_VAR = "DDP_DOCTOR_SET"


class InterventionError(ValueError):
    """A `KEY=VALUE` that is malformed, names an unknown key, or carries a bad value."""


def _positive_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError("must be a finite number > 0")
    return value


def _open_unit_float(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError("must be a number strictly between 0 and 1")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be an integer >= 1")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if not 0 <= value < 2**63:
        raise ValueError("must be an integer in [0, 2**63)")
    return value


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return word

    return parse


def _bool_word(text: str) -> bool:
    word = text.strip().lower()
    if word in ("false", "0", "off", "no"):
        return False
    if word in ("true", "1", "on", "yes"):
        return True
    raise ValueError("must be true or false")


@dataclass(frozen=True)
class InterventionSpec:
    """One known key: how its value is parsed and what the probe does with it."""

    key: str
    parse: Callable[[str], object]
    does: str  # one sentence, shown by `ddp-doctor run --help` and docs/experiments.md
    example: str


SPECS: dict[str, InterventionSpec] = {
    s.key: s
    for s in (
        InterventionSpec(
            "compile",
            _choice("off"),
            "torch.compile and nn.Module.compile become identity: the model runs eager.",
            "compile=off",
        ),
        InterventionSpec(
            "adam.eps",
            _positive_float,
            "every Adam/AdamW-style optimizer (any whose param groups have `eps`) uses this eps.",
            "adam.eps=1e-10",
        ),
        InterventionSpec(
            "adam.beta2",
            _open_unit_float,
            "every Adam/AdamW-style optimizer (param groups with `betas`) uses this beta2.",
            "adam.beta2=0.95",
        ),
        InterventionSpec(
            "lr.scale",
            _positive_float,
            "each optimizer step runs with lr × scale; the lr is restored after the step, "
            "so schedulers keep their own state.",
            "lr.scale=0.1",
        ),
        InterventionSpec(
            "clip",
            _positive_float,
            "before each optimizer step, clip the total gradient norm of the optimizer's "
            "parameters to this value (after GradScaler unscaling).",
            "clip=1.0",
        ),
        InterventionSpec(
            "warmup",
            _positive_int,
            "linear lr warmup: optimizer step k runs with lr × min(1, (k+1)/N).",
            "warmup=100",
        ),
        InterventionSpec(
            "ddp.bucket_cap_mb",
            _positive_float,
            "DistributedDataParallel is built with this bucket_cap_mb.",
            "ddp.bucket_cap_mb=100",
        ),
        InterventionSpec(
            "ddp.find_unused",
            _bool_word,
            "DistributedDataParallel is built with find_unused_parameters set to this.",
            "ddp.find_unused=false",
        ),
        InterventionSpec(
            "sampler.set_epoch",
            _choice("auto"),
            "a DistributedSampler iterated again without set_epoch advances its epoch "
            "itself, so each epoch gets a new order.",
            "sampler.set_epoch=auto",
        ),
        InterventionSpec(
            "seed",
            _seed,
            "seeds torch/random/numpy at start and mixes this seed into every later "
            "torch.manual_seed call of the script, so runs differ only by this seed.",
            "seed=1",
        ),
    )
}


def parse_value(key: str, value: str) -> object:
    """The typed value of one intervention; InterventionError names the key and what is allowed."""
    spec = SPECS.get(key)
    if spec is None:
        raise InterventionError(f"unknown intervention key {key!r}; known keys: {', '.join(SPECS)}")
    try:
        return spec.parse(value)
    except ValueError as err:
        detail = str(err) if "must" in str(err) else "is not a valid value"
        raise InterventionError(
            f"bad value for {key}: {value!r} {detail} (example: {spec.example})"
        ) from None


def parse_sets(items: Iterable[str]) -> dict[str, str]:
    """Validate `KEY=VALUE` strings into the manifest's `interventions` object (KEY → VALUE text).

    Values are kept as the user wrote them (stripped), so the manifest and the run's name show
    exactly what was asked for; the probe parses them again with :func:`parse_value`.
    A key given twice is an error rather than "last one wins": it is almost always a typo.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InterventionError(f"expected KEY=VALUE, got {item!r} (example: adam.eps=1e-10)")
        parse_value(key, value)
        if key in out:
            raise InterventionError(f"intervention {key} given twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


def to_env(sets: Mapping[str, str]) -> str:
    """The `DDP_DOCTOR_SET` value for these interventions (a JSON object, keys sorted)."""
    return json.dumps(dict(sorted(sets.items())))
