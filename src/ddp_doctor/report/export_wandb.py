"""`--export wandb`: the diagnosis' curves and findings into the active W&B run, else a new one.

Curves are logged against their own x-axis ``ddp_doctor/step`` (``define_metric``), so they can
go into a run that is already at a later step (W&B drops rows logged at an earlier ``step=``).
Without an active run a new one is started in offline mode unless ``WANDB_MODE`` says otherwise
(``wandb sync`` uploads it later). The findings are a ``wandb.Table`` and the verdicts go to the
run summary under ``ddp_doctor/verdict/<hypothesis>``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.report.curves import PREFIX, curves
from ddp_doctor.report.export_tensorboard import ExportError

STEP_KEY = f"{PREFIX}/step"


def export_wandb(diag: Diagnosis, directory: Path | str | None = None, project: str = "ddp-doctor") -> str:
    """Log into ``wandb.run`` or a new (offline by default) run; return the run's local dir."""
    try:
        import wandb
    except ImportError:
        raise ExportError(
            "--export wandb needs the wandb package: pip install 'ddp-doctor[import]'"
        ) from None
    own = wandb.run is None
    run = (
        wandb.init(
            project=project,
            job_type="ddp-doctor",
            dir=str(directory) if directory is not None else None,
            mode=os.environ.get("WANDB_MODE", "offline"),  # type: ignore[arg-type]
            config={"ddp_doctor_source": str(diag.run_info.get("path"))},
        )
        if own
        else wandb.run
    )
    assert run is not None  # (wandb.run was set when not own)
    try:
        run.define_metric(STEP_KEY)
        run.define_metric(f"{PREFIX}/*", step_metric=STEP_KEY)
        c = curves(diag)
        for i, step in enumerate(c.steps.tolist()):
            row = {tag: v[i] for tag, v in c.series.items() if math.isfinite(v[i])}
            if row:
                run.log({STEP_KEY: int(step), **row})
        table = wandb.Table(columns=["id", "status", "severity", "summary"])
        for f in diag.findings:
            table.add_data(f.id, f.status, f.severity, f.summary)
        run.log({f"{PREFIX}/findings": table})
        for h in diag.hypotheses:
            run.summary[f"{PREFIX}/verdict/{h.id}"] = h.verdict
        return str(run.dir)
    finally:
        if own:
            run.finish()
