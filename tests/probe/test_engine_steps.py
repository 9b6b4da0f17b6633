"""Step boundaries as engines run them (issue 22): closures, LBFGS, value clipping, loss functions.

`scripts/engine_steps.py` writes out by hand what Lightning's automatic optimisation does with
`accumulate_grad_batches=4`: three micro-steps under no_sync outside the step, the last one's
forward, backward and (value) clipping inside `optimizer.step(closure)`. Before the fix each
step's synced backward was filed as micro-step 0 of the next step (`sync [1,0,0,0]`), giving a
false `no-sync-after-forward`. The real Lightning and Fabric runs are in test_lightning_engines.py.
"""

from __future__ import annotations

import sys

import pytest
import torch

from ddp_doctor.analysis.diagnose import diagnose_run
from ddp_doctor.rundir.reader import read_run
from probe.helpers import SCRIPTS, base_env, kind, read_rank, run_plain, run_probe, torchrun

SCRIPT = "engine_steps.py"


def _steps(records):
    return [r for r in kind(records, "step")]


def _single(tmp_path, mode):
    out = tmp_path / mode
    run_probe(
        out,
        [sys.executable, str(SCRIPTS / SCRIPT), mode],
        "--every",
        "1",
        env=base_env(PYTHONPATH=str(SCRIPTS)),
    )
    records = read_rank(out, 0)
    assert not kind(records, "probe_error")
    return out, records


@pytest.fixture(scope="module")
def closure_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("closure")
    run_probe(base / "run", torchrun(SCRIPT, "closure", str(base / "probed.pt")), "--every", "1")
    return base


@pytest.mark.distributed
def test_closure_step_files_the_last_backward_and_the_clip_in_its_own_step(closure_run):
    for rank in (0, 1):
        records = read_rank(closure_run / "run", rank)
        assert not kind(records, "probe_error")
        steps = _steps(records)
        assert [s["step"] for s in steps] == [0, 1, 2]
        for s in steps:
            assert s["micro_steps"] == 4
            assert s["sync"][:3] == [0, 0, 0] and s["sync"][3] > 0  # synced last micro-step only
            assert [f["reduction"] for f in s["loss_fn"]] == ["mean"] * 4  # F.nll_loss
            assert [f["n_valid"] for f in s["loss_fn"]] == [4] * 4
            (clip,) = s["clip"]
            assert clip["max_norm"] is None and clip["clip_value"] == 0.05
            assert clip["max_abs"] > clip["clip_value"]  # the call changed the gradient
            assert 0 < clip["clipped_norm"] < clip["total_norm"]


@pytest.mark.distributed
def test_closure_run_report_has_no_false_accumulation_alarm(closure_run):
    diagnosis = diagnose_run(read_run(closure_run / "run"))
    by_id = {f.id: f for f in diagnosis.findings}
    assert by_id["no-sync-after-forward"].status == "ruled-out"
    saturated = by_id["clip-saturated"]
    assert saturated.evidence["clipped_by_value"] == 3 and saturated.evidence["clip_value"] == 0.05
    assert "No clip_grad_norm_" not in saturated.summary


@pytest.mark.distributed
def test_closure_wrapping_leaves_parameters_and_buffers_bit_identical(closure_run):
    plain = closure_run / "plain.pt"
    run_plain(torchrun(SCRIPT, "closure", str(plain)))
    probed, bare = torch.load(closure_run / "probed.pt"), torch.load(plain)
    assert probed.keys() == bare.keys()
    assert all(torch.equal(probed[k], bare[k]) for k in bare)


def test_lbfgs_reevaluations_inside_one_step_are_not_micro_steps(tmp_path):
    _, records = _single(tmp_path, "lbfgs")
    steps = _steps(records)
    assert [s["step"] for s in steps] == [0, 1, 2]
    # max_iter=4 calls the closure up to 4 times per step: only its first call is the micro-step
    assert [s["micro_steps"] for s in steps] == [1, 1, 1]
    assert all(s["losses"][0] == s["loss_fn"][0]["value"] for s in steps)


def test_every_common_loss_function_is_seen_and_a_sum_of_two_is_not_one_of_them(tmp_path):
    _, records = _single(tmp_path, "losses")
    fns = [s["loss_fn"][0] for s in _steps(records)]
    assert [f and f["reduction"] for f in fns] == ["mean", "mean", "mean", "mean", "batchmean", "sum", None]
    assert fns[0]["n_valid"] == 4  # nll_loss: targets != ignore_index
    assert fns[5]["n_valid"] == 4  # smooth_l1 with reduction="sum": the terms it added
    assert all(f["n_valid"] is None for f in fns[1:5])


def test_warnings_raised_through_our_wrappers_name_the_scripts_line(tmp_path):
    script = SCRIPTS / "warnings_through_wrappers.py"
    lines = script.read_text().splitlines()
    expected = {f"{script}:{i + 1}: UserWarning" for i, text in enumerate(lines) if "WARNS-HERE" in text}
    proc = run_probe(tmp_path / "run", [sys.executable, str(script)])
    shown = {
        line.split(": UserWarning")[0] + ": UserWarning"
        for line in proc.stderr.splitlines()
        if "UserWarning" in line
    }
    assert shown == expected, proc.stderr[-2000:]
    assert "ddp_doctor" not in proc.stderr.replace("ddp-doctor", "")


def test_loss_function_wrappers_trace_into_one_graph_under_compile(monkeypatch):
    """fullgraph=True fails on any graph break: the wrappers step aside while compiling."""
    import torch.nn.functional as F

    from ddp_doctor.probe.instruments import lossfn

    for name in lossfn.LOSS_FUNCTIONS:
        monkeypatch.setattr(F, name, getattr(F, name))  # restored after the test
    lossfn.install()
    assert all(hasattr(getattr(F, name), "__ddp_doctor_original__") for name in lossfn.LOSS_FUNCTIONS)

    def losses(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(x, dim=1)
        return (
            F.cross_entropy(x, y)
            + F.nll_loss(logp, y)
            + F.mse_loss(x, logp)
            + F.binary_cross_entropy_with_logits(x, torch.sigmoid(x))
            + F.kl_div(logp, logp, log_target=True, reduction="batchmean")
            + F.smooth_l1_loss(x, logp)
        )

    x, y = torch.randn(4, 3, requires_grad=True), torch.tensor([0, 1, 2, 1])
    compiled = torch.compile(losses, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(x, y), losses(x, y))


def test_model_input_is_found_inside_a_lightning_style_batch():
    """Lightning calls its DDP wrapper with (batch, batch_idx): without looking inside the batch
    there were no samples and no input hashes (sampler-missing, noise band not measured)."""
    from ddp_doctor.probe.instruments.data import NESTED_DEPTH, _model_input

    x, y = torch.ones(3, 2), torch.zeros(3)
    assert _model_input(([x, y], 0), {}) is x
    assert _model_input(({"image": x, "label": y}, 7), {}) is x
    assert _model_input((y,), {"x": x}) is x  # a named input still comes first
    assert _model_input((1, "text"), {}) is None
    deep: object = x
    for _ in range(NESTED_DEPTH + 1):
        deep = [deep]
    assert _model_input((deep,), {}) is None  # bounded search
