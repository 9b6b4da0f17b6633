"""rank0-only-loss-log from the captured logged loss: each classic form is recognised by its values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ddp_doctor.analysis.checks.loss_logging import check
from ddp_doctor.analysis.context import build_context
from ddp_doctor.analysis.quantities.logged_loss import GLOBAL, LOCAL, is_eval_key, logged_loss
from ddp_doctor.analysis.quantities.series import build_series
from ddp_doctor.rundir.reader import read_run

STEPS, ACCUM, WORLD = 16, 4, 2


def micro_losses(seed: int = 0) -> np.ndarray:
    """[rank, step, micro] loss-function values, different on every rank."""
    rng = np.random.default_rng(seed)
    return 2.0 + 0.3 * rng.standard_normal((WORLD, STEPS, ACCUM))


def write(tmp: Path, u: np.ndarray, logged: dict[int, list[dict]]) -> Path:
    (tmp / "ranks").mkdir(parents=True)
    (tmp / "manifest.json").write_text(json.dumps({"schema": "ddp-doctor.run/1", "end": "x", "exit_code": 0}))
    for r in range(WORLD):
        lines = [{"kind": "header", "schema": "ddp-doctor.rank/1", "rank": r, "world_size": WORLD}]
        for t in range(STEPS):
            vals = [float(x) for x in u[r, t]]
            lines.append(
                {
                    "kind": "step",
                    "step": t,
                    "micro_steps": ACCUM,
                    "losses": [v / ACCUM for v in vals],
                    "loss_fn": [{"value": v, "reduction": "mean", "n_valid": None} for v in vals],
                    "samples": [4] * ACCUM,
                    "sync": [0, 0, 0, 1],
                }
            )
        lines += logged.get(r, [])
        lines.append({"kind": "end", "steps": STEPS})
        (tmp / "ranks" / f"rank-{r:05d}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp


def rec(step: int, value: float, key: str = "loss", source: str = "stdout", micro: int = 0, digits: int = 4):
    value = round(value, digits)
    return {
        "kind": "logged_loss",
        "step": step,
        "micro": micro,
        "source": source,
        "key": key,
        "value": value,
        "resolution": 0.5 * 10.0**-digits,
        "rank": 0,
    }


def finding(run_dir: Path):
    (f,) = check(build_context(read_run(run_dir)))
    return f


def main_form(run_dir: Path):
    run = read_run(run_dir)
    return logged_loss(run, build_series(run)).main


def test_rank0_last_micro_batch_loss_printed_after_the_step_is_confirmed(tmp_path):
    u = micro_losses()
    logged = [rec(t + 1, u[0, t, -1]) for t in range(STEPS)]  # nanoGPT: loss.item() * accum
    f = finding(write(tmp_path, u, {0: logged}))
    assert f.status == "confirmed"
    assert "rank 0's micro-batch loss" in f.summary and "step-to-step noise" in f.summary
    main = f.evidence["logged"][0]
    assert main["family"] == LOCAL and main["matched"] == STEPS and main["noise_ratio_vs_global"] > 1


def test_loss_already_divided_by_the_accumulation_count_is_recognised(tmp_path):
    u = micro_losses()
    logged = [rec(t + 1, u[0, t, -1] / ACCUM, digits=5) for t in range(STEPS)]
    main = main_form(write(tmp_path, u, {0: logged}))
    assert main.recognised and main.best.name == "micro-batch loss ÷ accumulation"


def test_micro_batch_loss_printed_inside_the_accumulation_loop_is_aligned_by_micro_step(tmp_path):
    u = micro_losses()
    logged = [rec(t, u[0, t, i], micro=i + 1) for t in range(STEPS) for i in range(ACCUM - 1)]
    main = main_form(write(tmp_path, u, {0: logged}))
    assert main.recognised and main.best.name == "micro-batch loss" and main.best.alignment == "after"


def test_rank_local_running_mean_since_the_previous_print(tmp_path):
    u = micro_losses()
    step_loss = u[0].mean(axis=1)
    logged = [rec(t + 1, step_loss[t - 3 : t + 1].mean(), digits=3) for t in range(3, STEPS, 4)]
    main = main_form(write(tmp_path, u, {0: logged}))
    assert main.recognised and main.best.name == "mean since the previous logged value"
    assert main.best.family == LOCAL


def test_all_reduced_step_loss_is_ruled_out(tmp_path):
    u = micro_losses()
    glob = u.mean(axis=(0, 2))
    logged = [rec(t + 1, glob[t], source="hf_trainer") for t in range(STEPS)]
    f = finding(write(tmp_path, u, {0: logged}))
    assert f.status == "ruled-out"
    assert f.evidence["logged"][0]["family"] == GLOBAL


def test_identical_losses_on_every_rank_are_inconclusive(tmp_path):
    u = micro_losses()
    u[1] = u[0]  # same data on every rank: rank 0's loss is the global loss
    logged = [rec(t + 1, u[0, t, -1]) for t in range(STEPS)]
    assert finding(write(tmp_path, u, {0: logged})).status == "inconclusive"


def test_nothing_logged_says_where_it_looked(tmp_path):
    f = finding(write(tmp_path, micro_losses(), {}))
    assert f.status == "not-measured"
    assert "No logged training loss found" in f.summary and "TensorBoard" in f.summary


def test_a_series_matching_no_form_is_not_measured_with_its_best_attempt(tmp_path):
    logged = [rec(t + 1, 100.0 + t) for t in range(STEPS)]
    f = finding(write(tmp_path, micro_losses(), {0: logged}))
    assert f.status == "not-measured" and "matches none of the forms" in f.summary


def test_eval_keys_are_not_taken_for_the_training_loss(tmp_path):
    u = micro_losses()
    logged = [rec(t + 1, 5.0, key="val_loss") for t in range(STEPS)]
    f = finding(write(tmp_path, u, {0: logged}))
    assert f.status == "not-measured" and "val_loss" in f.summary
    assert is_eval_key("eval/loss") and is_eval_key("val loss") and not is_eval_key("train/loss")


@pytest.mark.parametrize("bad", [{"kind": "logged_loss"}, {"kind": "logged_loss", "step": "x", "value": 1}])
def test_damaged_logged_records_are_skipped(tmp_path, bad):
    u = micro_losses()
    logged = [bad] + [rec(t + 1, u[0, t, -1]) for t in range(STEPS)]
    assert finding(write(tmp_path, u, {0: logged})).status == "confirmed"


def test_mean_since_the_start_of_the_epoch_uses_the_sampler_epochs(tmp_path):
    u = micro_losses()
    step_loss = u[0].mean(axis=1)
    epoch_start = [0, 8]  # a DistributedSampler iterated at steps 0 and 8
    logged = [rec(t + 1, step_loss[(0 if t < 8 else 8) : t + 1].mean()) for t in range(STEPS)]
    run_dir = write(tmp_path, u, {0: logged})
    for r in range(WORLD):
        with (run_dir / "ranks" / f"rank-{r:05d}.jsonl").open("a") as f:
            for s in epoch_start:
                f.write(json.dumps({"kind": "sampler", "step": s, "epoch": s // 8, "n": 64}) + "\n")
    main = main_form(run_dir)
    assert main.recognised and main.best.name == "mean since the start of the epoch"
    assert main.best.family == LOCAL


def test_all_reduced_loss_logged_one_step_late_is_ruled_out(tmp_path):
    """HF Trainer: the value logged after step s is the all-reduced loss of step s−1 (issue 22,
    run_clm.py: 40/40 at s−1, 0/40 at s) — recognised as the global loss, so ruled out."""
    u = micro_losses()
    glob = u.mean(axis=(0, 2))
    logged = [rec(t + 2, glob[t], source="hf_trainer") for t in range(STEPS - 1)]
    f = finding(write(tmp_path, u, {0: logged}))
    assert f.status == "ruled-out", f.summary
    main = f.evidence["logged"][0]
    assert main["family"] == GLOBAL and main["alignment"] == "one step late"
    assert main["matched"] == STEPS - 1


def test_rank0_loss_logged_one_step_late_is_still_rank_local(tmp_path):
    u = micro_losses()
    logged = [rec(t + 2, u[0, t].mean()) for t in range(STEPS - 1)]
    f = finding(write(tmp_path, u, {0: logged}))
    assert f.status == "confirmed", f.summary
    assert f.evidence["logged"][0]["family"] == LOCAL
