"""`ddp-doctor run --set KEY=VALUE`: the forum's "change X and compare" on an unmodified script.

One definition per key (:mod:`.base`), one module per family (`compile`, `adam`, `clip`, `lr`,
`ddp`, `sampler`, `seed`), the list in :mod:`.registry`. This module is the whole public API:

* :func:`parse_sets` validates `KEY=VALUE` strings before anything starts (no torch import);
  :func:`to_env` is the JSON that carries them to every rank in :data:`ENV_VAR`;
* :func:`apply_from_env` runs inside each training process right after torch is imported (the
  probe's import hook) and installs the patches; it never raises into user code;
* :func:`help_text` and :func:`markdown_table` render the registry for `run --help` and
  docs/experiments.md.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from ddp_doctor.probe.interventions.base import EFFECTS, Intervention, guard_name
from ddp_doctor.probe.interventions.registry import INTERVENTIONS
from ddp_doctor.probe.state import guarded

__all__ = [
    "EFFECTS",
    "ENV_VAR",
    "INTERVENTIONS",
    "Intervention",
    "InterventionError",
    "apply_from_env",
    "help_text",
    "markdown_table",
    "parse_sets",
    "parse_value",
    "to_env",
]

# The environment variable through which `run --set` hands interventions to every rank.
ENV_VAR = "DDP_DOCTOR_SET"


class InterventionError(ValueError):
    """A `KEY=VALUE` that is malformed, names an unknown key, or carries a bad value."""


def parse_value(key: str, value: str) -> object:
    """The typed value of one intervention; InterventionError names the key and what is allowed."""
    spec = INTERVENTIONS.get(key)
    if spec is None:
        raise InterventionError(f"unknown intervention key {key!r}; known keys: {', '.join(INTERVENTIONS)}")
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


def help_text() -> str:
    """The `--set` help: every key with its example."""
    examples = ", ".join(i.example for i in INTERVENTIONS.values())
    return f"Apply a forum suggestion without editing the script (repeatable): {examples}. See docs/experiments.md."


def markdown_table() -> str:
    """The interventions table of docs/experiments.md."""
    rows = ["| key | value | what it does |", "|---|---|---|"]
    rows += [f"| `{i.key}` | {i.values} | {i.does.rstrip('.')} |" for i in INTERVENTIONS.values()]
    return "\n".join(rows) + "\n"


# --- inside a training process ------------------------------------------------------------------

# Typed values of the keys applied in this process. A key is entered before its patch is
# installed: installing imports torch, whose import hook (the probe's start-up) calls
# apply_from_env again, and that nested call must see the key as done.
APPLIED: dict[str, object] = {}
# Inner optimizers of a hooked wrapper (ZeroRedundancyOptimizer's `.optim`), held weakly.
_inner: weakref.WeakSet[Any] = weakref.WeakSet()
_hooks_installed = False


def apply_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Apply the interventions of ``DDP_DOCTOR_SET``; return ``{"applied": {...}, "errors": {...}}``.

    ``applied`` maps each key to its typed value; ``errors`` maps a key (or ``DDP_DOCTOR_SET``
    itself) to the reason it was not applied. Applying twice in one process is a no-op.
    """
    env = os.environ if environ is None else environ
    result: dict[str, Any] = {"applied": {}, "errors": {}}
    text = env.get(ENV_VAR)
    if not text:
        return result
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("must be a JSON object KEY -> VALUE")
    except ValueError as err:
        result["errors"][ENV_VAR] = f"{type(err).__name__}: {err}"
        return result
    for key, text_value in raw.items():
        try:
            value = parse_value(str(key), str(text_value))
        except ValueError as err:
            result["errors"][key] = str(err)
            continue
        if key not in APPLIED:
            APPLIED[key] = value
            try:
                spec = INTERVENTIONS[key]
                if spec.apply is not None:
                    spec.apply(value)
                if spec.pre_step is not None or spec.post_step is not None:
                    _install_step_hooks()
            except Exception as err:  # never raise into user code
                del APPLIED[key]
                result["errors"][key] = f"{type(err).__name__}: {err}"
                continue
        result["applied"][key] = APPLIED[key]
    return result


def _guarded_hooks(which: str) -> list[tuple[frozenset[str], Any]]:
    """(keys sharing it, guarded hook) for each distinct step hook, in registry order: a family's
    shared hook runs once per step, guarded under the name of its first key."""
    keys: dict[Any, list[str]] = {}
    for key, spec in INTERVENTIONS.items():
        hook = getattr(spec, which)
        if hook is not None:
            keys.setdefault(hook, []).append(key)
    return [(frozenset(ks), guarded(guard_name(ks[0]), everywhere=True)(hook)) for hook, ks in keys.items()]


_HOOKS = {which: _guarded_hooks(which) for which in ("pre_step", "post_step")}


def _run_step_hooks(optimizer: Any, which: str) -> None:
    for keys, hook in _HOOKS[which]:
        if not keys.isdisjoint(APPLIED):
            hook(optimizer, APPLIED)


def _is_inner(optimizer: Any) -> bool:
    """Is this the inner optimizer of a wrapper whose own step is hooked (ZeroRedundancyOptimizer's
    `optim`)? The wrapper already applied the intervention: scaling again would apply lr.scale²,
    and clipping the inner one would use only this rank's shard of the gradient norm."""
    return optimizer in _inner


@guarded("intervention:pre-step", everywhere=True)
def _pre_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    from torch.optim import Optimizer

    for name in ("optim", "optimizer"):
        inner = getattr(optimizer, name, None)
        if isinstance(inner, Optimizer) and inner is not optimizer:
            _inner.add(inner)
    if not _is_inner(optimizer):
        _run_step_hooks(optimizer, "pre_step")


@guarded("intervention:post-step", everywhere=True)
def _post_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if not _is_inner(optimizer):
        _run_step_hooks(optimizer, "post_step")


def _install_step_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(_pre_step)
    register_optimizer_step_post_hook(_post_step)
    _hooks_installed = True
