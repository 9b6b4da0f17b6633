"""`--export tensorboard` / `--export wandb`: the curves and findings, read back with the libraries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from .conftest import clean_env, need


def test_tensorboard_export_has_the_curves_and_findings(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    need("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator as ea

    from ddp_doctor.analysis.diagnose import diagnose
    from ddp_doctor.report.export_tensorboard import export_tensorboard

    run = make_run(steps=120, faults=("loss-spike",))
    diag = diagnose(run)
    out = export_tensorboard(diag, tmp_path / "tb")
    acc = ea.EventAccumulator(str(out), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    acc.Reload()
    tags = set(acc.Tags()[ea.SCALARS])
    for tag in (
        "ddp_doctor/loss/global",
        "ddp_doctor/loss/rank0",
        "ddp_doctor/grad_norm/global",
        "ddp_doctor/grad_norm/local_rank0",
        "ddp_doctor/lr",
        "ddp_doctor/b_simple",
        "ddp_doctor/noise_band/upper",
        "ddp_doctor/noise_band/lower",
    ):
        assert tag in tags, tag
    loss = acc.Scalars("ddp_doctor/loss/global")
    assert [e.step for e in loss] == list(range(1, 121))  # 1-based, as HF's global_step
    np.testing.assert_allclose(
        [e.value for e in loss], diag.context.series.global_loss.astype(np.float32), rtol=1e-6
    )
    (text,) = acc.Tensors("ddp_doctor/findings/text_summary")
    body = text.tensor_proto.string_val[0].decode()
    assert "| loss-spike | confirmed | warning |" in body


def test_cli_exports_an_imported_log_beside_it(tmp_path: Path) -> None:
    need("tensorboard")
    from torch.utils.tensorboard import SummaryWriter
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    w = SummaryWriter(str(tmp_path / "logs" / "mine"))
    for t in range(40):
        w.add_scalar("loss", 3.0 - 0.01 * t, t)
    w.close()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "logs" / "mine"), "--export", "tensorboard"])
    assert res.exit_code == 0, res.output
    assert list((tmp_path / "logs" / "mine" / "ddp-doctor").glob("events.out.tfevents.*"))


def test_tensorboard_export_that_cannot_be_written_is_an_input_error(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    """Found by tests/hostile/: a read-only parent gave a PermissionError traceback (exit 1).
    A file where the directory's parent goes fails the same way for root too."""
    need("tensorboard")
    from typer.testing import CliRunner

    from ddp_doctor.cli import app

    run = make_run(steps=20)
    (tmp_path / "afile").write_text("x")
    res = CliRunner().invoke(
        app, ["report", str(run), "--export", f"tensorboard={tmp_path / 'afile' / 'tb'}"]
    )
    assert res.exit_code == 2 and "cannot write the TensorBoard log" in res.output, res.output


def test_wandb_export_into_an_offline_run_reads_back(
    make_run: Callable[..., Path], tmp_path: Path, monkeypatch
) -> None:
    need("wandb")
    for k, v in clean_env(tmp_path).items():
        if k.startswith("WANDB_"):
            monkeypatch.setenv(k, v)
    from ddp_doctor.analysis.diagnose import diagnose
    from ddp_doctor.report.export_wandb import export_wandb
    from ddp_doctor.rundir.sources.wandb_offline import read_wandb_offline

    diag = diagnose(make_run(steps=60))
    run_files = Path(export_wandb(diag, tmp_path))
    series = read_wandb_offline(run_files.parent)
    loss = series.scalars["ddp_doctor/loss/global"]
    assert len(loss) == 60
    np.testing.assert_allclose([v for _, v in loss], diag.context.series.global_loss, rtol=1e-9)


@pytest.mark.slow  # ~20 s (a probed run); test_cli_exports_an_imported_log_beside_it covers the exporter
def test_run_export_tensorboard_writes_beside_the_run(tmp_path: Path) -> None:
    need("tensorboard")
    import subprocess
    import sys

    from tensorboard.backend.event_processing import event_accumulator as ea

    script = Path(__file__).resolve().parents[1] / "probe" / "scripts" / "single_process.py"
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--export", "tensorboard"]
    proc = subprocess.run(
        [*cmd, "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "exported to tensorboard" in proc.stderr
    acc = ea.EventAccumulator(str(out / "tensorboard"), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    assert "ddp_doctor/loss/global" in acc.Tags()[ea.SCALARS]
