"""The zoo (tests/zoo/scripts/): unmodified-style training scripts, each with one fault or none.

Every script runs under `ddp-doctor run` with 2 gloo ranks and is scored by tests/zoo/harness.py against
the findings its `# zoo:` header expects (all detected, no unexpected warning/error, no crash).
CI runs FAST (a rank-0 print, an all-reduced print, a nanoGPT-style fault: ~15 s each); the rest
are slow. `python bench/zoo.py` prints the whole score table (docs/zoo.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddp_doctor.analysis.diagnose import diagnose
from tests.zoo import harness as zoo

ROOT = Path(__file__).resolve().parents[2]


SCRIPTS = sorted(p.name for p in zoo.ZOO.glob("*.py"))
FAST = ("mlp_print_rank0.py", "mlp_allreduce_print.py", "nanogpt_accum_undivided.py")
# Waiting for issue 11 item 4 (another branch): a replica divergence that starts mid-run is not
# confirmed at the default level yet.
PENDING: dict[str, str] = {
    "replica_drift_midrun.py": "issue 11 item 4: replicas are checksummed at step 0 only at the default level",
}


def test_the_zoo_has_twenty_scripts_with_valid_headers():
    headers = {name: zoo.read_header(zoo.ZOO / name) for name in SCRIPTS}
    assert len(headers) >= 20
    clean = [n for n, h in headers.items() if not h.expect]
    assert len(clean) >= 5
    from ddp_doctor.core.catalog import FINDINGS

    for name, header in headers.items():
        for group in header.expect:
            assert any(i in FINDINGS for i in group), f"{name}: {group} names no catalog finding"
        assert all(i in FINDINGS for i in header.allow), name


def _score(name: str, tmp_path: Path) -> zoo.Score:
    score = zoo.score_script(zoo.ZOO / name, tmp_path / Path(name).stem)
    if score.skipped:
        pytest.skip(score.skipped)
    assert score.crash is None, score.crash
    return score


def _rank0_finding(run_dir: Path):
    return next(f for f in diagnose(run_dir).findings if f.id == "rank0-only-loss-log")


@pytest.fixture(scope="module")
def fast_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[zoo.Score, Path]]:
    out = {}
    for name in FAST:
        tmp = tmp_path_factory.mktemp("zoo")
        out[name] = (_score(name, tmp), tmp / Path(name).stem)
    return out


@pytest.mark.parametrize("name", FAST)
def test_fast_zoo_script_is_diagnosed_as_declared(name, fast_runs):
    score, _ = fast_runs[name]
    assert score.detected == len(score.expected), zoo.format_table([score])
    assert not score.false_alarms, zoo.format_table([score])


@pytest.mark.parametrize(
    ("name", "status", "family"),
    [("mlp_print_rank0.py", "confirmed", "rank-local"), ("mlp_allreduce_print.py", "ruled-out", "global")],
)
def test_rank0_print_and_all_reduced_print_are_told_apart(name, status, family, fast_runs):
    """The same loop logging rank 0's own loss (confirmed) or the all-reduced one (ruled out)."""
    f = _rank0_finding(fast_runs[name][1])
    assert f.status == status, f.summary
    assert f.evidence["logged"][0]["source"] == "stdout"
    assert f.evidence["logged"][0]["family"] == family


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SCRIPTS if n not in FAST])
def test_zoo_script_is_diagnosed_as_declared(name, tmp_path):
    if name in PENDING:
        pytest.xfail(PENDING[name])
    score = _score(name, tmp_path)
    assert score.detected == len(score.expected), zoo.format_table([score])
    assert not score.false_alarms, zoo.format_table([score])


@pytest.mark.slow
def test_hf_trainer_logged_loss_is_recognised_as_all_reduced(tmp_path):
    _score("hf_trainer_tiny_llama.py", tmp_path)
    f = _rank0_finding(tmp_path / "hf_trainer_tiny_llama")
    assert f.status == "ruled-out", f.summary
    assert f.evidence["logged"][0]["source"] == "hf_trainer"
