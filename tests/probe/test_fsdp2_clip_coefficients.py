"""fsdp-clip-wrong on FSDP2: each rank's clip coefficient is measured, not inferred from a clip call.

A clip written by hand over `p.grad.to_local()` scales each rank by max_norm / ‖its shard‖ and
calls no clip function the probe could name; the same clip over the whole gradient (the shard
norms² all-reduced first) scales every rank by one factor (tests/probe/scripts/fsdp2_hand_clip.py,
which writes the coefficients it applied). The probe's coefficients √(sq_step / sq_reduced) must
equal those, per rank and step; the finding is confirmed for the first and ruled out for the second.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ddp_doctor.analysis.diagnose import diagnose
from probe.helpers import kind, read_rank, run_probe, torchrun

pytestmark = pytest.mark.distributed
WORLD = 2


def _finding(out: Path) -> dict:
    (finding,) = [f for f in diagnose(out).findings if f.id == "fsdp-clip-wrong"]
    return finding.to_report_json()


def _run(tmp_path, mode: str, sync: str) -> tuple[Path, dict, list[list[dict]]]:
    out, prefix = tmp_path / f"{mode}-{sync}", tmp_path / f"direct-{mode}-{sync}"
    run_probe(out, torchrun("fsdp2_hand_clip.py", mode, sync, str(prefix)))
    for r in range(WORLD):
        assert kind(read_rank(out, r), "probe_error") == []
    direct = [json.loads((tmp_path / f"{prefix.name}.{r}.json").read_text()) for r in range(WORLD)]
    return out, _finding(out), direct


def _as_an_older_probe(out: Path) -> None:
    """Drop `sq_reduced` from the gradsync records, as a probe before it wrote them."""
    for path in (out / "ranks").glob("rank-*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            rec.pop("sq_reduced", None)
            lines.append(json.dumps(rec))
        path.write_text("\n".join(lines) + "\n")


def _assert_measured_equals_applied(ev: dict, direct: list[list[dict]]) -> None:
    step = ev["step"]
    for r in range(WORLD):
        assert math.isclose(ev["rank_coefficients"][str(r)], direct[r][step]["coef"], rel_tol=1e-4)
        assert math.isclose(ev["rank_shard_norms"][str(r)], direct[r][step]["shard_norm"], rel_tol=1e-5)


def test_a_clip_over_local_shards_is_confirmed_with_each_ranks_coefficient(tmp_path):
    """Synced on every micro-step: the shard is the sum of two reduce-scatter outputs (sq_reduced)."""
    out, f, direct = _run(tmp_path, "shard", "every")
    ev = f["evidence"]
    assert f["status"] == "confirmed" and f["severity"] == "error", f["summary"]
    assert ev["norm_source"] == "sq_reduced" and ev["steps_measured"] == [0, 1]
    assert ev["coefficient_spread"] > 0.5
    _assert_measured_equals_applied(ev, direct)
    # every rank's shard ends at max_norm: the signature of a clip by the shard's own norm
    assert ev["per_shard_max_norm"] == pytest.approx(0.05, rel=1e-4)
    assert "rank 0" in f["summary"] and "to_local" in f["summary"]
    # without sq_reduced the step record's shard norm is the sum of two reduce-scatter outputs: not
    # a norm of the accumulated shard, so the coefficients are not measured (never guessed)
    _as_an_older_probe(out)
    assert _finding(out)["status"] == "not-measured"


def test_the_same_clip_over_the_whole_gradient_is_ruled_out_with_one_coefficient(tmp_path):
    out, f, direct = _run(tmp_path, "global", "last")
    ev = f["evidence"]
    assert f["status"] == "ruled-out", f["summary"]
    assert ev["coefficient_spread"] < 1e-5 and ev["norm_source"] == "sq_reduced"
    _assert_measured_equals_applied(ev, direct)
    assert direct[0][ev["step"]]["coef"] < 0.5  # the clip acted: agreement is a measurement, not a default
    # one synced micro-step per step: an older run's step-record shard norm gives the same answer
    _as_an_older_probe(out)
    older = _finding(out)
    assert older["status"] == "ruled-out" and older["evidence"]["norm_source"] == "grad_sq_global"
    _assert_measured_equals_applied(older["evidence"], direct)
