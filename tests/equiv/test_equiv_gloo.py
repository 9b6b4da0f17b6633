"""`ddp-doctor equiv` on real gloo runs of the reference trainer: clean runs are equivalent at every
stage within the derived tolerance (world sizes 1 vs 2, 1 vs 3; 1 vs 4 slow), each fault breaks at
the stage where it lives, with the cause it maps to, and the probe's fingerprints leave training
bit-identical.

Same global batch everywhere: micro-batch 1 × accumulation (12 / W) × W ranks = 12 samples per step.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import teardown_race
from probe.helpers import DDP_DOCTOR, RUN_TIMEOUT_S, base_env

pytestmark = pytest.mark.distributed

STEPS = 2  # optimizer steps trained and fingerprinted
GLOBAL = 12  # samples per optimizer step at every world size
TRAINER = [
    "-m",
    "ddp_doctor.trainer",
    "--steps",
    str(STEPS),
    "--seq-len",
    "32",
    "--micro-batch",
    "1",
    "--no-progress",
]


def _torchrun(world: int, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
        *TRAINER, "--accum", str(GLOBAL // world), *flags,
    ]  # fmt: skip


def _record(out: Path, world: int, *flags: str) -> Path:
    """`ddp-doctor run --fingerprints STEPS` of the trainer at `world` ranks."""
    command = [
        *DDP_DOCTOR,
        "run",
        "--out",
        str(out),
        "--fingerprints",
        str(STEPS),
        "--",
        *_torchrun(world, *flags),
    ]
    proc = subprocess.run(command, env=base_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if proc.returncode != 0 and not teardown_race.tolerated(proc, out, f"equiv {world} {flags}"):
        raise AssertionError(f"exit {proc.returncode}\n{proc.stderr[-4000:]}")
    return out


TESTS = Path(__file__).resolve().parents[1]


def _record_script(out: Path, world: int, script: Path, *args: str) -> Path:
    """`ddp-doctor run --fingerprints STEPS` of a test script at `world` ranks."""
    command = [*DDP_DOCTOR, "run", "--out", str(out), "--fingerprints", str(STEPS), "--", sys.executable, "-m",
               "torch.distributed.run", "--standalone", f"--nproc_per_node={world}", str(script), *args]  # fmt: skip
    proc = subprocess.run(command, env=base_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if proc.returncode != 0 and not teardown_race.tolerated(proc, out, f"equiv {script.name} {args}"):
        raise AssertionError(f"exit {proc.returncode}\n{proc.stderr[-4000:]}")
    return out


def _equiv(*args: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [*DDP_DOCTOR, "equiv", "--format", "json", *args],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=2 * RUN_TIMEOUT_S,
    )
    assert proc.stdout, proc.stderr[-4000:]
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(tmp_path_factory.mktemp("equiv") / "one", 1)


def _assert_equivalent(code: int, result: dict) -> None:
    assert code == 0, result["first_break"]
    assert result["verdict"] == "equivalent"
    assert len(result["stages"]) == 5 * STEPS
    assert all(s["status"] == "equal" and s["compared"] > 0 for s in result["stages"])
    assert all(s["worst"] <= s["tolerance"] for s in result["stages"])
    assert [d["status"] for d in result["data"]] == ["same"] * STEPS
    assert all(d["samples_a"] == GLOBAL for d in result["data"])
    # the tolerance is derived, not fixed: n = T + A·W + 1 from each run's own split and tokens
    tol = result["tolerances"]["0"]
    assert "n_b = " in tol["formula"] and tol["n_b"] > GLOBAL
    assert tol["grad"] == pytest.approx(
        sum(n * 2.0**-24 / (1 - n * 2.0**-24) for n in (tol["n_a"], tol["n_b"]))
    )


def _metrics(out_dir: Path) -> list[tuple[float, float]]:
    lines = (out_dir / "metrics.jsonl").read_text().splitlines()
    return [(json.loads(line)["loss"], json.loads(line)["grad_norm"]) for line in lines]


def test_equiv_runs_world_1_and_2_and_they_are_equivalent_and_bit_identical_to_a_bare_run(tmp_path):
    """The launching form (`-- SCRIPT`), and the fingerprints change no number of the training run."""
    one, many, bare = tmp_path / "m1", tmp_path / "m2", tmp_path / "bare"
    code, result = _equiv(
        "--out", str(tmp_path / "runs"), "--nproc", "2", "--steps", str(STEPS),
        "--one", f"--accum 12 --out-dir {one}", "--many", f"--accum 6 --out-dir {many}",
        "--", *TRAINER,
    )  # fmt: skip
    _assert_equivalent(code, result)
    assert (result["world_a"], result["world_b"]) == (1, 2)
    proc = teardown_race.run_retrying(
        lambda: subprocess.run(
            [*_torchrun(2, "--out-dir", str(bare))], env=base_env(), capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S,
        ),
        "equiv bare",
        reset=lambda: shutil.rmtree(bare, ignore_errors=True),  # a retry must not append to the first try's metrics
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert _metrics(many) == _metrics(bare)  # float for float: loss and gradient norm of every step


def test_world_1_and_3_are_equivalent(reference, tmp_path):
    _assert_equivalent(*_equiv(str(reference), str(_record(tmp_path / "three", 3))))


def test_ddp_bypassed_breaks_after_the_all_reduce(reference, tmp_path):
    code, result = _equiv(str(reference), str(_record(tmp_path / "bypass", 2, "--fault", "bypass-ddp")))
    assert code == 1 and result["verdict"] == "break"
    first = result["first_break"]
    assert (first["step"], first["stage"]) == (0, "reduced")
    assert first["causes"] == ["ddp-bypassed"] and "disagree" in first["note"]
    # the stages before it held: same data, same parameters, the same local gradients (mean over ranks)
    assert [s["status"] for s in result["stages"][:2]] == ["equal", "equal"]
    # one rank of B read (--ranks 1): its samples are in A's batch, and its own gradient is not A's
    code, one = _equiv("--ranks", "1", str(reference), str(tmp_path / "bypass"))
    assert code == 1 and (one["first_break"]["step"], one["first_break"]["stage"]) == (0, "reduced")
    assert one["data"][0]["status"] == "subset" and one["stages"][1]["status"] == "not judged"


def test_loss_not_divided_by_accumulation_breaks_at_local_with_the_accumulation_factor(reference, tmp_path):
    code, result = _equiv(str(reference), str(_record(tmp_path / "unscaled", 2, "--fault", "loss-unscaled")))
    assert code == 1
    first = result["first_break"]
    assert (first["step"], first["stage"]) == (0, "local")
    assert first["ratio"] == pytest.approx(GLOBAL // 2, rel=1e-3)  # ×accum_B
    assert "accum-loss-unscaled" in first["causes"]


@pytest.mark.slow
def test_world_1_and_4_are_equivalent(reference, tmp_path):
    four = _record(tmp_path / "four", 4)
    _assert_equivalent(*_equiv(str(reference), str(four)))
    # ranks 2-3 of 4 read alone: equivalent at every stage they can judge
    code, part = _equiv("--ranks", "2-3", str(reference), str(four))
    assert code == 0 and part["verdict"] == "equivalent"
    assert {s["status"] for s in part["stages"] if s["stage"] == "local"} == {"not judged"}
    assert all(s["status"] == "equal" for s in part["stages"] if s["stage"] != "local")
    assert [d["status"] for d in part["data"]] == ["subset"] * STEPS


@pytest.mark.slow
def test_sync_every_micro_step_is_equivalent(reference, tmp_path):
    """accum-no-sync-missing wastes bandwidth but is the same arithmetic: no break may be claimed."""
    _assert_equivalent(
        *_equiv(str(reference), str(_record(tmp_path / "every", 2, "--fault", "sync-every-micro")))
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "stage", "cause"),
    [
        ("sync-toggle-after-forward", "reduced", "no-sync-after-forward"),
        ("zero-grad-per-micro", "local", "zero-grad-inside-accum"),
        ("per-microbatch-mean-loss", "local", "loss-normalization-variable-tokens"),
        ("sched-per-micro", "update", "scheduler-per-microstep"),
    ],
)
def test_each_fault_breaks_at_its_stage(reference, tmp_path, fault, stage, cause):
    code, result = _equiv(str(reference), str(_record(tmp_path / fault, 2, "--fault", fault)))
    assert code == 1
    first = result["first_break"]
    assert first["stage"] == stage and cause in first["causes"], first


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "step", "stage", "cause"),
    [
        ("replica-desync", 0, "param", "replica-divergence"),  # the last rank perturbed as step 0 starts
        ("nan-at-step", 0, "local", "nonfinite"),  # rank 0's loss NaN at step 0
        ("lr-too-high", 0, "update", "unexplained"),  # the gradients agree; the note gives both lrs
    ],
)
def test_more_faults_break_at_their_stage(reference, tmp_path, fault, step, stage, cause):
    b = _record(tmp_path / fault, 2, "--fault", fault, "--fault-step", "0")
    code, result = _equiv(str(reference), str(b))
    assert code == 1
    first = result["first_break"]
    assert (first["step"], first["stage"]) == (step, stage) and cause in first["causes"], first
    if fault == "lr-too-high":
        assert first["note"].startswith("lr ") and first["factor"] == []


@pytest.mark.slow
def test_clip_before_unscale_breaks_at_clipped(tmp_path):
    """Both runs fp16 autocast with a GradScaler; B clips the loss-scaled gradients."""
    a = _record(tmp_path / "fp16", 1, "--precision", "fp16")
    b = _record(tmp_path / "cbu", 2, "--fault", "clip-before-unscale")
    code, result = _equiv(str(a), str(b))
    assert code == 1
    first = result["first_break"]
    assert (first["step"], first["stage"]) == (0, "clipped") and first["causes"] == ["clip-before-unscale"]
    assert [s["status"] for s in result["stages"][:3]] == ["equal", "equal", "equal"]


@pytest.mark.slow
def test_no_sampler_is_data_that_differs_with_its_reason(reference, tmp_path):
    """Every rank reads the same samples (DataLoader(shuffle=True), same seed): undecided, not a break."""
    code, result = _equiv(str(reference), str(_record(tmp_path / "nosampler", 2, "--fault", "no-sampler")))
    assert code == 2 and result["verdict"] == "undecided" and result["first_break"] is None
    codes = {(r["code"], r["run"]) for r in result["data_reasons"]}
    assert ("no_sampler", "B") in codes and ("repeats", "B") in codes


@pytest.mark.slow
def test_logging_only_faults_change_no_stage(reference, tmp_path):
    """rank0-loss-log changes what is printed, not a number of the step: equivalent."""
    _assert_equivalent(
        *_equiv(str(reference), str(_record(tmp_path / "log", 2, "--fault", "rank0-loss-log")))
    )


@pytest.mark.slow
def test_an_epoch_boundary_that_falls_elsewhere_is_data_differs_not_a_break(tmp_path):
    """13 documents: at world size 2 DistributedSampler(drop_last=True) keeps 12 per epoch, at world
    size 1 all 13, so step 1 reads another set of samples: undecided at step 1, no false break."""
    one = _record(tmp_path / "one", 1, "--dataset-docs", "13")
    two = _record(tmp_path / "two", 2, "--dataset-docs", "13")
    code, result = _equiv(str(one), str(two))
    assert code == 2 and result["verdict"] == "undecided" and result["first_break"] is None
    assert result["data_differs_at"] == 1
    assert [d["status"] for d in result["data"]] == ["same", "differs"]
    assert all(s["status"] == "equal" for s in result["stages"][:5])
    # and says why: B's sampler drops 1 of 13 per epoch, so its epoch (12) ends where A's (13) does not
    reasons = {(r["code"], r["run"]): r["values"] for r in result["data_reasons"]}
    assert reasons[("drop_tail", "B")] == {"n": 13, "w": 2, "dropped": 1}
    assert reasons[("epoch_length", "")] == {"a": 13, "b": 12}


def test_fsdp2_world_1_and_2_are_equivalent_with_the_shards_merged(tmp_path):
    """FSDP2 fingerprints are of each rank's shard: merged into full tensors they match world 1
    (compared per rank they would not: that was a false replica-divergence)."""
    script = TESTS / "compare" / "scripts" / "policy_mlp.py"
    one = _record_script(tmp_path / "one", 1, script, "fsdp2")
    two = _record_script(tmp_path / "two", 2, script, "fsdp2")
    code, result = _equiv(str(one), str(two))
    assert code == 0 and result["verdict"] == "equivalent", result["first_break"]
    by_stage = {}
    for s in result["stages"]:
        by_stage.setdefault(s["stage"], set()).add(s["status"])
    assert by_stage["local"] == {"not judged"}
    assert all(by_stage[k] == {"equal"} for k in ("param", "reduced", "clipped", "update"))
    assert all(s["worst"] <= s["tolerance"] for s in result["stages"] if s["status"] == "equal")
    assert [d["status"] for d in result["data"]] == ["same"] * STEPS
    assert any("sharded fingerprints (FSDP2)" in p for p in result["problems"])


@pytest.mark.slow
def test_fsdp2_clip_over_local_shards_breaks_at_clipped(tmp_path):
    """Both runs FSDP2 on 2 ranks, same data: a clip over the whole gradient (A) vs over each rank's
    shard (B) — the gradients agree until the clip, then differ."""
    script = TESTS / "probe" / "scripts" / "fsdp2_hand_clip.py"
    a = _record_script(tmp_path / "global", 2, script, "global", "last", str(tmp_path / "a"))
    b = _record_script(tmp_path / "shard", 2, script, "shard", "last", str(tmp_path / "b"))
    code, result = _equiv(str(a), str(b))
    assert code == 1
    first = result["first_break"]
    assert (first["step"], first["stage"]) == (0, "clipped") and "fsdp-clip-wrong" in first["causes"]
    assert [s["status"] for s in result["stages"][:3]] == ["equal", "not judged", "equal"]
