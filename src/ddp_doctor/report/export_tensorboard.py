"""`--export tensorboard[=DIR]`: the diagnosis' curves and findings as a TensorBoard run.

Written with ``torch.utils.tensorboard.SummaryWriter`` (needs the ``tensorboard`` package:
``pip install 'ddp-doctor[import]'``) into DIR, so pointing TensorBoard at the parent of DIR and
the user's own log dir shows them side by side. Tags: :mod:`ddp_doctor.report.curves`; the
verdicts and findings go to the text tab under ``ddp_doctor/findings``.
"""

from __future__ import annotations

import math
from pathlib import Path

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.report.curves import PREFIX, curves, findings_markdown


class ExportError(Exception):
    """The exporter's library is missing or the target cannot be written; the message says which."""


def export_tensorboard(diag: Diagnosis, out_dir: Path | str) -> Path:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ExportError(
            f"--export tensorboard needs the tensorboard package ({exc}): pip install 'ddp-doctor[import]'"
        ) from None
    out = Path(out_dir)
    if out.is_symlink():
        raise ExportError(f"{out}: is a symlink; not writing through it")
    c = curves(diag)
    try:  # a read-only or missing parent, a file where the directory goes: a message, not a traceback
        writer = SummaryWriter(log_dir=str(out))
        try:
            for tag, values in c.series.items():
                for step, value in zip(c.steps.tolist(), values.tolist()):
                    if math.isfinite(value):
                        writer.add_scalar(tag, value, global_step=int(step))
            writer.add_text(f"{PREFIX}/findings", findings_markdown(diag), global_step=0)
        finally:
            writer.close()
    except OSError as exc:
        raise ExportError(f"{out}: cannot write the TensorBoard log ({exc.strerror or exc})") from None
    return out
