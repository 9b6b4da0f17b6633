"""Real Lightning runs, unmodified, under `ddp-doctor run` (issue 22).

* `Trainer(strategy="ddp", devices=2, accumulate_grad_batches=4, gradient_clip_val=1.0)`:
  automatic optimisation runs the last micro-batch's forward, backward and clipping inside
  `optimizer.step(closure)`. Before the fix: `sync [1,0,0,0]` per step and a false
  `no-sync-after-forward` ranked first cause; `F.nll_loss` was not seen.
* A Fabric loop that imports lightning before torch (a probe_error before the fix: the capture
  installer ran on a half-initialised `lightning.fabric.fabric`) and clips by value every step
  (`clip-saturated` said "No gradient clipping was called").

Lightning's start-up is slow (~10 s per process here): all three runs are marked slow. In CI the
mechanisms are covered without Lightning: test_import_hook.py (a half-initialised module),
test_engine_steps.py (closures, value clipping, a Lightning-style batch).
"""

from __future__ import annotations

import sys

import pytest

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.rundir.reader import read_run
from probe.helpers import SCRIPTS, kind, read_rank, run_probe

pytest.importorskip("lightning")


def _findings(out):
    return {f.id: f for f in diagnose_run(read_run(out)).findings}


def _fabric(tmp_path, devices):
    out = tmp_path / "run"
    run_probe(out, [sys.executable, str(SCRIPTS / "fabric_clip_value.py"), str(devices)], "--every", "1")
    for rank in range(devices):
        records = read_rank(out, rank)
        assert not kind(records, "probe_error"), kind(records, "probe_error")
        steps = kind(records, "step")
        assert len(steps) == 12
        for s in steps:
            (clip,) = s["clip"]
            assert clip["max_norm"] is None and clip["clip_value"] == 0.05
            assert clip["max_abs"] > 0.05 and clip["clipped_norm"] < clip["total_norm"]
            assert s["loss_fn"][0]["reduction"] == "mean"  # F.mse_loss
        if rank == 0:
            assert len(kind(records, "logged_loss")) == 12  # fabric.log captured (Fabric.log_dict)
    found = _findings(out)
    saturated = found["clip-saturated"]
    assert saturated.evidence["clip_value"] == 0.05 and saturated.evidence["clipped_by_value"] == 12
    return found


@pytest.mark.slow  # ~10 s of Lightning start-up; the mechanism is covered by test_import_hook.py
def test_fabric_lightning_first_and_clip_by_value_one_device(tmp_path):
    _fabric(tmp_path, 1)


@pytest.mark.slow
@pytest.mark.distributed
def test_fabric_ddp_two_ranks(tmp_path):
    found = _fabric(tmp_path, 2)
    assert found["no-sync-after-forward"].status != "confirmed"


@pytest.mark.slow
@pytest.mark.distributed
def test_lightning_trainer_ddp_accumulation_closure_steps(tmp_path):
    out = tmp_path / "run"
    run_probe(out, [sys.executable, str(SCRIPTS / "lightning_trainer.py")], "--every", "1")
    for rank in (0, 1):
        records = read_rank(out, rank)
        assert not kind(records, "probe_error"), kind(records, "probe_error")
        steps = kind(records, "step")
        assert len(steps) == 12
        for s in steps:
            assert s["micro_steps"] == 4
            assert s["sync"][:3] == [0, 0, 0] and s["sync"][3] > 0
            assert len(s["clip"]) == 1 and s["clip"][0]["max_norm"] == 1.0  # clipped inside the step
            assert [f["n_valid"] for f in s["loss_fn"]] == [8, 8, 8, 8]  # F.nll_loss, batch 8
            assert s["samples"] == [8, 8, 8, 8] and all(s["input_hashes"])  # x inside (batch, idx)
    found = _findings(out)
    assert found["no-sync-after-forward"].status == "ruled-out"
    assert found["loss-unstable"].status != "confirmed"
    assert found["sampler-missing"].status == "ruled-out"
