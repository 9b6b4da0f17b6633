"""Start the probe in this process: patch torch once, write records to the run directory.

`ddp-doctor run` reaches every rank through `inject/sitecustomize.py`, which calls
`attach_from_env()` right after `import torch`. Launchers that drop the environment (ssh/pdsh
multi-node, `mpirun` without `-x`, `python -I/-E/-S`) need the explicit form at the top of the
training script: `import ddp_doctor; ddp_doctor.attach(run_dir=..., level=..., every=...)`.
Interventions (`run --set`) are applied here, where torch is first patched.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ddp_doctor.probe.interventions import ENV_VAR
from ddp_doctor.probe.options import DEFAULT_EVERY, ENV_FAULT, ProbeOptions, rollup_every_from
from ddp_doctor.probe.state import PROBE, after_import, guarded

DEFAULT_ATTACH_DIR = "ddp-doctor-run"


def attach(
    run_dir: str | os.PathLike[str] | None = None, level: str | None = None, every: int | None = None
) -> None:
    """Start the probe explicitly; options default to those `ddp-doctor run` passed, if any.

    Idempotent. Without `ddp-doctor run` there is no launcher to write the manifest, so rank 0
    writes a minimal one (command, level, start) when it opens its file.
    """
    from_env = ProbeOptions.from_env()
    options = ProbeOptions(
        run_dir=Path(run_dir)
        if run_dir is not None
        else (from_env.run_dir if from_env else Path(DEFAULT_ATTACH_DIR)),
        level=level or (from_env.level if from_env else "basic"),  # type: ignore[arg-type]
        every=every or (from_env.every if from_env else DEFAULT_EVERY),
        fault=os.environ.get(ENV_FAULT) or None,
        fingerprints=from_env.fingerprints if from_env else 0,
        rollup_every=from_env.rollup_every if from_env else rollup_every_from(os.environ),
    )
    _start(options, write_manifest=from_env is None)


def attach_from_env() -> None:
    """Called by the sitecustomize shim once torch is imported; does nothing outside `ddp-doctor run`."""
    options = ProbeOptions.from_env()
    if options is not None:
        _start(options, write_manifest=False)


def _start(options: ProbeOptions, write_manifest: bool) -> None:
    if PROBE.active:
        return
    from ddp_doctor.probe.steps import StepAccumulator

    first = PROBE.owner_pid == -1  # else a forked child attaching again: torch is patched already
    PROBE.start(options)
    PROBE.steps = StepAccumulator()
    if write_manifest:
        PROBE.on_open = _write_own_manifest
    if first:
        _relay_warnings()  # torch warnings raised through our wrappers name the program's line
        _apply_interventions()  # before the instruments, so their records show the effective values
        _install_all()
        atexit.register(_at_exit)
    from ddp_doctor.probe.instruments import config

    config.dist_ready()  # the process group may predate an explicit attach()


@guarded("warnings")
def _relay_warnings() -> None:
    from ddp_doctor.probe import warnings_relay

    warnings_relay.install()


@guarded("interventions")
def _apply_interventions() -> None:
    """`run --set KEY=VALUE` (ddp_doctor.probe.interventions): patched in here, at torch import."""
    if not os.environ.get(ENV_VAR):
        return
    from ddp_doctor.probe.interventions import apply_from_env

    result = apply_from_env()
    PROBE.emit({"kind": "config", "what": "interventions", "step": 0, **result})


def _intervention_effects() -> dict[str, int] | None:
    if not os.environ.get(ENV_VAR):
        return None
    from ddp_doctor.probe.interventions import EFFECTS

    return dict(EFFECTS)


def _install_all() -> None:
    from ddp_doctor.probe.instruments import (
        backward,
        clip,
        compile,
        compile_check,
        config,
        data,
        ddp,
        destroy,
        fingerprints,
        lossfn,
        optimizer,
        rollup,
        scaler,
        scheduler,
    )

    for instrument in (
        backward,
        ddp,
        optimizer,
        scaler,
        scheduler,
        clip,
        data,
        lossfn,
        config,
        compile,
        compile_check,
        destroy,  # dist.destroy_process_group: the pending step, then the final checksum (replicas)
        fingerprints,  # opt-in (ProbeOptions.fingerprints): installs nothing otherwise
        rollup,  # a `rollup` record every R steps (ProbeOptions.rollup_every; 0: installs nothing)
    ):
        _install(instrument)
    from ddp_doctor.probe import capture

    _install(capture)  # the loss the script logs: stdout/stderr and logging libraries
    after_import("torch.distributed.fsdp", _install_fsdp)
    after_import("deepspeed.runtime.engine", _install_deepspeed)


@guarded("fsdp")
def _install_fsdp() -> None:
    from ddp_doctor.probe.instruments import fsdp, fsdp1

    _install(fsdp)
    _install(fsdp1)  # FullyShardedDataParallel (FSDP1) and HSDP


@guarded("deepspeed")
def _install_deepspeed() -> None:
    from ddp_doctor.probe.instruments import deepspeed

    _install(deepspeed)  # DeepSpeedEngine: backward, step, loss scale, ZeRO stage


def _install(module: Any) -> None:
    name = module.__name__.rsplit(".", 1)[-1]

    @guarded(name)
    def install() -> None:
        module.install()

    install()


def _at_exit() -> None:
    """Write the last step and `end`, then drop every reference the probe still holds.

    Registered right after `import torch` finishes, so it runs before the atexit handlers torch
    registered while importing (atexit runs last-registered first) and long before interpreter
    finalization, where the known gloo teardown race happens (docs/probe.md, "Teardown aborts").
    """
    try:
        _write_end()
    finally:
        _release()


@guarded("exit")
def _write_end() -> None:
    from ddp_doctor.core.redact import redact_recorded
    from ddp_doctor.probe.instruments.optimizer import finish_step, primary
    from ddp_doctor.probe.instruments.replicas import final_checksum

    finish_step(primary())
    final_checksum(primary())  # no-op when destroy_process_group already wrote it
    _finish_capture()
    _finish_rollup()
    if PROBE.recorder is not None and PROBE.recorder.is_open:
        end = {"kind": "end", "time": time.time(), "steps": PROBE.steps.step, "reason": "exit"}
        # An unhandled exception ended the program (Python sets sys.last_value before atexit):
        # this `end` then does not mean "training completed" (ddp_doctor.rundir.teardown).
        error = getattr(sys, "last_value", None)
        if isinstance(error, BaseException):  # redacted: the message may quote a key or a URL password
            end["exception"] = redact_recorded(f"{type(error).__name__}: {error}")[:500]
        effects = _intervention_effects()
        if effects is not None:
            end["interventions"] = effects
        PROBE.emit(end)
        PROBE.recorder.close()


@guarded("release")
def _release() -> None:
    """Tensors of an unfinished window, cached multipliers, weak model lists: all let go here, while
    the interpreter is whole, so nothing of ours is left for finalization to destroy."""
    import gc

    from ddp_doctor.probe.instruments import (
        compile,
        data,
        fingerprints,
        full,
        gradsync,
        rollup,
        scaler,
        stepgrads,
    )

    for module in (compile, data, fingerprints, full, gradsync, rollup, scaler, stepgrads):
        module.release()
    if PROBE.steps is not None:
        PROBE.steps.release()
    PROBE.models.clear()
    PROBE.param_names.clear()
    gc.collect()


def _finish_rollup() -> None:
    from ddp_doctor.probe.instruments import rollup

    rollup.finish()  # guarded itself


@guarded("capture")
def _finish_capture() -> None:
    from ddp_doctor.probe import capture

    capture.finish()


def _write_own_manifest(rank: int) -> None:
    from ddp_doctor.core.redact import redact_argv
    from ddp_doctor.rundir.records import RUN_SCHEMA, manifest_path

    assert PROBE.options is not None
    path = manifest_path(PROBE.options.run_dir)
    if rank != 0 or path.exists():
        return
    manifest = {
        "schema": RUN_SCHEMA,
        "command": redact_argv([sys.executable, *sys.argv]),
        "cwd": os.getcwd(),
        "level": PROBE.options.level,
        "every": PROBE.options.every,
        "interventions": {},
        "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "attached": True,
    }
    from ddp_doctor.core.safe_io import PRIVATE_FILE, write_text

    write_text(path, json.dumps(manifest, indent=2), mode=PRIVATE_FILE)
