"""The loss the script itself logs: what the user looks at, next to what the probe measured.

Sources (docs/probe.md, "Logged loss"): the lines the rank prints (streams.py: `print`, `logging`,
tqdm postfixes, matched by patterns.py) and the logging libraries it calls (loggers.py:
TensorBoard, wandb, HF Trainer, Lightning, Fabric, accelerate). Every value ends in one
`logged_loss` record (sink.py); the analysis (analysis/quantities/logged_loss.py) works out which
form of the loss it is — rank 0's micro-batch loss, a rank-local mean, the all-reduced loss, ... —
for the finding rank0-only-loss-log.

Cost at the basic level: one extra Python call per write to stdout/stderr, and a regular
expression only on the lines that contain "loss"; nothing per training step.
"""

from __future__ import annotations

import os

from ddp_doctor.probe.capture import loggers, sink, streams

# `DDP_DOCTOR_CAPTURE=0` leaves the streams and logging libraries alone (bench/overhead.py's
# `basic-nocapture` arm; a script whose output must not pass through any wrapper).
ENV_CAPTURE = "DDP_DOCTOR_CAPTURE"


def install() -> None:
    if os.environ.get(ENV_CAPTURE, "1") == "0":
        return
    streams.install()
    loggers.install()


def finish() -> None:
    """At exit: record the device values still being copied to the host."""
    sink.flush(wait=True)
