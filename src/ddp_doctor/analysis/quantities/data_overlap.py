"""Cross-rank data overlap: per optimizer step, how many micro-batches equal the lowest rank's.

The probe hashes every micro-batch's input tensor (rank files, ``input_hashes``). With sharded data
two ranks' hashes at the same (step, micro-step) never coincide; without a DistributedSampler every
rank reads the same batches, so they all do (docs/probe.md, "data"). Used by the `sampler-missing`
check and by the HTML report's overlap chart.
"""

from __future__ import annotations

import numpy as np

from ddp_doctor.analysis.quantities.series import Series
from ddp_doctor.rundir.reader import RunData

# A key packs (step, micro-step) into one integer; micro-steps per step stay far below this.
_MICRO_SLOTS = 65536


def _keyed_hashes(run: RunData, rank: int) -> tuple[np.ndarray, np.ndarray]:
    c = run.ranks[rank].steps
    assert c is not None
    step_of = np.repeat(c.step, c.micro_steps)
    micro_idx = np.arange(step_of.size) - np.repeat(c.offsets[:-1], c.micro_steps)
    keys = step_of * _MICRO_SLOTS + micro_idx
    return keys, c.input_hashes


def overlap_by_step(run: RunData, series: Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Per optimizer step (the columns of ``series``): micro-batches identical to the lowest rank's,
    and micro-batches compared.

    Returns (identical[T], compared[T], ranks with hashes)."""
    T = series.n_steps
    same, total = np.zeros(T), np.zeros(T)
    ranks = []
    for r in sorted(run.ranks):
        steps = run.ranks[r].steps
        if steps is not None and (steps.input_hashes != b"").any():
            ranks.append(r)
    if len(ranks) < 2:
        return same, total, len(ranks)
    k0, h0 = _keyed_hashes(run, ranks[0])
    sorted0 = bool(np.all(k0[1:] > k0[:-1]))
    step0, valid0 = k0 // _MICRO_SLOTS, h0 != b""
    for r in ranks[1:]:
        k, h = _keyed_hashes(run, r)
        if sorted0 and np.array_equal(k0, k):  # the usual case: the same steps and micro-steps
            a, b, step, ok = h0, h, step0, valid0 & (h != b"")  # intersect1d's answer, without its sort
        else:
            _, i0, i = np.intersect1d(k0, k, assume_unique=True, return_indices=True)
            a, b, step, ok = h0[i0], h[i], step0[i0], valid0[i0] & (h[i] != b"")
        step, on_axis = series.pos(step)
        ok &= on_axis
        same_micro = (a == b).astype(float)
        if not ok.all():
            step, same_micro = step[ok], same_micro[ok]
        same += np.bincount(step, weights=same_micro, minlength=T)[:T]
        total += np.bincount(step, minlength=T)[:T]
    return same, total, len(ranks)
