"""The probe's per-process state, and `guarded`: the one rule that keeps hooks from hurting training.

Every hook body runs through `guarded(instrument)`: an exception disables that instrument for the
rest of the run, is written once as a `probe_error` record, and never reaches user code. Patched
torch functions always call the original outside the guard, so the user's own errors propagate
unchanged and a disabled instrument leaves plain PyTorch behaviour.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ddp_doctor.probe.afterimport import AfterImport
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.recorder import RankRecorder
from ddp_doctor.rundir.records import RANK_SCHEMA

if TYPE_CHECKING:  # the probe imports torch only once the program has
    from torch import nn

F = TypeVar("F", bound=Callable[..., Any])
ENV_RESTART_COUNT = "TORCHELASTIC_RESTART_COUNT"  # set by torchrun's agent in every worker


class Probe:
    """Everything one training process knows about itself; a single instance lives in `PROBE`."""

    def __init__(self) -> None:
        self.options: ProbeOptions | None = None
        self.recorder: RankRecorder | None = None
        self.owner_pid = -1
        self.disabled: set[str] = set()
        self.errors_written: set[str] = set()
        # Models whose gradients we watch: DDP wrappers and FSDP2 roots, by weak reference.
        self.models: list[weakref.ref[nn.Module]] = []
        self.fsdp = False
        self.param_names: dict[int, str] = {}
        self.steps: Any = None  # steps.StepAccumulator, set by attach
        self.on_open: Callable[[int], None] | None = None  # explicit attach(): rank 0 writes a manifest
        # called with every record after it is written (instruments/rollup.py); each one guarded
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    @property
    def active(self) -> bool:
        # A forked DataLoader worker inherits this object: only the process that attached records.
        return self.options is not None and os.getpid() == self.owner_pid

    def start(self, options: ProbeOptions) -> None:
        self.options = options
        self.recorder = RankRecorder(options.run_dir)
        self.owner_pid = os.getpid()

    # --- writing -------------------------------------------------------------------------------
    def emit(self, record: dict[str, Any], *, training: bool = False) -> None:
        """Write a record; `training=True` marks an event only a training rank produces (opens the file)."""
        if not self.active or self.recorder is None:
            return
        if training:
            self.mark_training()
        self.recorder.write(record)
        for listener in self.listeners:
            listener(record)

    def mark_training(self) -> None:
        """This process is a training rank: create its file (header first, then early records)."""
        poll_imports()  # a library that was half-initialised when torch finished importing
        if (
            self.active
            and self.recorder is not None
            and not self.recorder.is_open
            and self.recorder.error is None  # a rank file that hit a full disk is not reopened
            and not _in_dataloader_worker()
        ):
            rank, header = self._header()
            self.recorder.open(rank, header)
            if self.on_open is not None:
                try:
                    self.on_open(rank)
                except Exception as error:  # noqa: BLE001
                    self.fail("manifest", error)

    def _header(self) -> tuple[int, dict[str, Any]]:
        import torch
        import torch.distributed as dist

        from ddp_doctor.probe.launch_env import placement

        where = placement()  # RANK/WORLD_SIZE..., else Slurm's or Open MPI's variables
        if dist.is_available() and dist.is_initialized():
            rank, world, backend = dist.get_rank(), dist.get_world_size(), str(dist.get_backend())
        else:
            rank, world, backend = where.rank, where.world_size, None
        local_rank = where.local_rank
        assert self.options is not None
        header = {
            "kind": "header",
            "schema": RANK_SCHEMA,
            "rank": rank,
            "world_size": world,
            "local_rank": local_rank,
            "local_world_size": where.local_world_size,
            "host": socket.gethostname(),
            "node": where.node,
            "pid": os.getpid(),
            "time": time.time(),
            "level": self.options.level,
            "every": self.options.every,
            "torch": torch.__version__.split("+")[0],
            "backend": backend,
            "device": f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu",
        }
        restart = os.environ.get(ENV_RESTART_COUNT, "")
        if restart.isdigit():  # torchrun's attempt: a restarted worker must not mix with the last
            header["restart"] = int(restart)
        return rank, header

    def fail(self, instrument: str, error: BaseException) -> None:
        self.disabled.add(instrument)
        if instrument in self.errors_written:
            return
        self.errors_written.add(instrument)
        try:  # noqa: SIM105 - a plain try reads clearer in the one place that must never raise
            from ddp_doctor.core.redact import redact_recorded

            self.emit(
                {
                    "kind": "probe_error",
                    "instrument": instrument,
                    "step": self.step_index(),
                    "error": redact_recorded(f"{type(error).__name__}: {error}"),
                    "traceback": redact_recorded("".join(traceback.format_exception(error)))[-4000:],
                }
            )
        except Exception:  # noqa: BLE001 - the error report itself must never raise either
            pass

    def step_index(self) -> int:
        return self.steps.step if self.steps is not None else 0

    def enabled(self, instrument: str) -> bool:
        return self.active and instrument not in self.disabled

    def watched_models(self) -> list[nn.Module]:
        return [m for m in (ref() for ref in self.models) if m is not None]


PROBE = Probe()


def _in_dataloader_worker() -> bool:
    from torch.utils.data import get_worker_info

    return get_worker_info() is not None


def guarded(instrument: str, default: Any = None, *, everywhere: bool = False) -> Callable[[F], F]:
    """Run the decorated hook body only while `instrument` is enabled; never let it raise.

    By default the body runs only in the process that attached the probe. ``everywhere=True`` is
    for interventions (`run --set`): they change what torch does, so they act in every process that
    inherited the patch (forked DataLoader workers) and before the probe started; a failure still
    disables the body for the rest of the process and is recorded once where the probe records.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if instrument in PROBE.disabled or not (everywhere or PROBE.active):
                return default
            try:
                if PROBE.options is not None and instrument in PROBE.options.faults:
                    raise RuntimeError(
                        f"fault injected into instrument {instrument!r} (DDP_DOCTOR_PROBE_FAULT)"
                    )
                return fn(*args, **kwargs)
            except Exception as error:  # noqa: BLE001 - any failure disables the instrument only
                PROBE.fail(instrument, error)
                return default

        return wrapper  # type: ignore[return-value]

    return decorate


class Nesting:
    """Per-thread call depth of a patched function: only its outermost call is an event.

    (Reentrant checkpointing calls backward inside backward; SequentialLR steps inner schedulers;
    `AcceleratedOptimizer.zero_grad` calls the inner optimizer's.)
    """

    def __init__(self) -> None:
        self._local = threading.local()

    @contextlib.contextmanager
    def enter(self) -> Iterator[bool]:
        depth = getattr(self._local, "value", 0)
        self._local.value = depth + 1
        try:
            yield depth == 0
        finally:
            self._local.value = depth


def _after_import_failed(name: str, error: BaseException) -> None:
    PROBE.fail(f"after_import:{name}", error)


_AFTER_IMPORT = AfterImport(_after_import_failed)


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Run `callback` now if `name` is fully imported, else right after the program imports it.

    Keeps heavy optional modules (torch.distributed.fsdp: ~3 s per rank on this machine) out
    of runs that never use them. "Fully": a module still running its top-level code (importing
    lightning before torch leaves `lightning.fabric.fabric` half-initialised when torch is done)
    waits until it has finished (probe/afterimport.py).
    """
    _AFTER_IMPORT.add(name, callback)


def poll_imports() -> None:
    """Run after-import callbacks whose module finished initialising (cheap when none waits)."""
    if _AFTER_IMPORT.waiting:
        _AFTER_IMPORT.poll()


def patch(
    owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]], *, tag: str = "probe"
) -> None:
    """Replace `owner.name` by `make(original)`, once per tag; keeps the original reachable for tests.

    The instruments patch with the default tag, interventions with theirs: an intervention's
    wrapper of, say, `DistributedDataParallel.__init__` does not stop the instrument from
    wrapping it too, while a second patch with the same tag (a nested or repeated start) is a
    no-op anywhere in the chain of wrappers.
    """
    original = getattr(owner, name)
    layer: Any = original
    while layer is not None:
        if getattr(layer, "__ddp_doctor_tag__", None) == tag:
            return
        layer = getattr(layer, "__ddp_doctor_original__", None)
    replacement = make(original)
    functools.update_wrapper(replacement, original)
    replacement.__ddp_doctor_original__ = original  # type: ignore[attr-defined]
    replacement.__ddp_doctor_tag__ = tag  # type: ignore[attr-defined]
    setattr(owner, name, replacement)
