"""Per-step series aligned across ranks: what every other quantity is computed from.

Rank ``r``'s loss at optimizer step ``t`` is the loss-function output of its micro-batches,
weighted by their valid-token counts where known:

    L_r(t) = sum_i n_i * l_i / sum_i n_i          (i over the micro-steps of step t on rank r)

falling back to the plain mean of ``l_i`` (no token counts) and then to the sum of backward roots
(no loss-function record). The global loss weights ranks the same way:
``L(t) = sum_r N_r(t) L_r(t) / sum_r N_r(t)`` — the value an all-reduced, token-normalised loss
would log, whatever the script itself logs. Where no rank's weight is known (samples and tokens
unrecorded), the plain mean over ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddp_doctor.rundir.reader import RunData, StepColumns


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values[offsets[i]:offsets[i+1]]`` for each i (empty segments give 0).

    By differences of one running sum (one pass for all segments). A nan or inf stays in its own
    segment: the running sum skips non-finite values and they are added to their segment after, so
    one damaged value does not turn every later segment into nan."""
    finite = np.isfinite(values)
    clean = values if finite.all() else np.where(finite, values, 0.0)
    csum = np.zeros(len(values) + 1)
    np.cumsum(clean, dtype=np.float64, out=csum[1:])
    out: np.ndarray = csum[offsets[1:]] - csum[offsets[:-1]]
    if clean is not values:
        at = np.flatnonzero(~finite)
        np.add.at(out, np.searchsorted(offsets, at, side="right") - 1, values[at])
    return out


def segment_nansum(values: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count of the finite values of each segment."""
    ok = np.isfinite(values)
    return segment_sum(np.where(ok, values, 0.0), offsets), segment_sum(ok.astype(np.float64), offsets)


@dataclass
class Series:
    """Rank × step matrices (nan where a rank has no record for a step)."""

    ranks: list[int]  # row order
    # the step number of each column: 0..T-1, or on the rollup path (RunData.rollups) the steps read
    # raw, in order, with gaps between the windows read (:meth:`pos` maps step numbers to columns)
    steps: np.ndarray
    local_loss: np.ndarray  # [R, T]
    weight: np.ndarray  # [R, T] tokens (or samples) behind local_loss
    samples: np.ndarray  # [R, T] samples per optimizer step
    tokens: np.ndarray  # [R, T] valid tokens per optimizer step (nan unknown)
    micro: np.ndarray  # [R, T] micro-steps per optimizer step
    gsq_local: np.ndarray  # [R, T] ||local grad||^2 at the last micro-step
    gsq_global: np.ndarray  # [R, T] ||global grad||^2 at the last micro-step
    lr: np.ndarray  # [T] lr of group 0 (lowest rank that has it)
    skipped: np.ndarray  # [T] bool
    scale: np.ndarray  # [T]
    global_loss: np.ndarray  # [T]
    loss_source: str  # "loss_fn (token-weighted)", "loss_fn", "backward root"

    @property
    def n_steps(self) -> int:
        return int(self.steps.shape[0])

    def row(self, rank: int) -> int:
        return self.ranks.index(rank)

    @property
    def dense(self) -> bool:
        """Whether column t is step t (every step read raw)."""
        return self.n_steps == 0 or int(self.steps[-1]) == self.n_steps - 1

    def pos(self, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(columns, on_axis) of step numbers: where each lies on the step axis, and whether it
        does (a step not read, or out of range: False, its column 0)."""
        steps = np.asarray(steps, dtype=np.int64)
        if self.dense:
            ok = (steps >= 0) & (steps < self.n_steps)
            return np.where(ok, steps, 0), ok
        at = np.minimum(np.searchsorted(self.steps, steps), max(self.n_steps - 1, 0))
        ok = (self.steps[at] == steps) if self.n_steps else np.zeros(len(steps), dtype=bool)
        return np.where(ok, at, 0), ok

    def step_of(self, column: int) -> int:
        """The step number of a column."""
        return int(self.steps[column]) if 0 <= column < self.n_steps else int(column)


def _local_loss(cols: StepColumns) -> tuple[np.ndarray, np.ndarray, str]:
    """Per-step local loss and its weight for one rank (see module docstring)."""
    off = cols.offsets
    value = cols.fn_value
    n = cols.fn_n_valid
    if value.size and np.isfinite(value).any():
        # a "sum"-reduced loss-function output is a token sum: turn it into a mean first
        mean = (
            np.where(cols.fn_sum, value / np.where(n > 0, n, np.nan), value) if cols.fn_sum.any() else value
        )
        finite = np.isfinite(mean)
        nonfinite = segment_sum((~finite).astype(float), off) > 0
        n_ok = np.isfinite(n)
        if n_ok.any():
            # the finite parts of Σ n·m and Σ n (segment_nansum's sums, without its unused counts)
            mn = mean * n
            num = segment_sum(np.where(np.isfinite(mn), mn, 0.0), off)
            den = segment_sum(np.where(finite & n_ok, n, 0.0), off)
            with np.errstate(invalid="ignore", divide="ignore"):
                loss = num / den
            loss[nonfinite] = np.nan
            return loss, den, "loss_fn (token-weighted)"
        s, c = segment_nansum(mean, off)
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = s / c
        loss[nonfinite] = np.nan
        return loss, segment_sum(cols.samples, off), "loss_fn"
    return segment_sum(cols.losses, off), segment_sum(cols.samples, off), "backward root"


def build_series(run: RunData) -> Series:
    steps = {r: d.steps for r, d in run.ranks.items() if d.steps is not None and len(d.steps)}
    ranks = sorted(steps)
    T = 0
    for r in ranks:
        T = max(T, int(steps[r].step.max()) + 1)
    axis = np.arange(T)
    if run.rollups is not None and ranks:  # only the windows read raw: one column per step read
        axis = np.unique(np.concatenate([steps[r].step[steps[r].step >= 0] for r in ranks]))
        T = len(axis)
    R = len(ranks)
    shape = (R, T)
    mats = {
        k: np.full(shape, np.nan)
        for k in ("local_loss", "weight", "samples", "tokens", "micro", "gsq_local", "gsq_global")
    }
    lr = np.full(T, np.nan)
    skipped = np.zeros(T, dtype=bool)
    scale = np.full(T, np.nan)
    source = "backward root"
    dense = T == 0 or int(axis[-1]) == T - 1
    for i, r in enumerate(ranks):
        cols = steps[r]
        idx = cols.step
        if dense:
            ok = (idx >= 0) & (idx < T)
        else:
            at = np.minimum(np.searchsorted(axis, idx), T - 1)
            ok = axis[at] == idx
            idx = at
        idx = idx[ok]
        loss, weight, source = _local_loss(cols)
        mats["local_loss"][i, idx] = loss[ok]
        mats["weight"][i, idx] = weight[ok]
        mats["samples"][i, idx] = segment_sum(cols.samples, cols.offsets)[ok]
        tok, cnt = segment_nansum(cols.tokens, cols.offsets)
        mats["tokens"][i, idx] = np.where(cnt == cols.micro_steps, tok, np.nan)[ok]
        mats["micro"][i, idx] = cols.micro_steps[ok]
        last = cols.last_micro_index()
        has = last >= 0
        gl = np.full(len(cols), np.nan)
        gg = np.full(len(cols), np.nan)
        gl[has] = cols.grad_sq_local[last[has]]
        gg[has] = cols.grad_sq_global[last[has]]
        mats["gsq_local"][i, idx] = gl[ok]
        mats["gsq_global"][i, idx] = gg[ok]
        fill = np.isnan(lr[idx])
        lr[idx[fill]] = cols.lr[ok][fill]
        skipped[idx] |= cols.skipped[ok]
        sfill = np.isnan(scale[idx])
        scale[idx[sfill]] = cols.scale[ok][sfill]
    w = mats["weight"]
    with np.errstate(invalid="ignore", divide="ignore"):
        wl = np.where(np.isfinite(mats["local_loss"]) & np.isfinite(w), w * mats["local_loss"], 0.0)
        present = np.isfinite(mats["local_loss"]) & np.isfinite(w)
        global_loss = wl.sum(axis=0) / np.where(present, w, 0.0).sum(axis=0)
        # no rank has a weight (samples and tokens unrecorded, or an imported log): plain mean
        finite = np.isfinite(mats["local_loss"])
        unweighted = ~present.any(axis=0) & finite.any(axis=0)
        plain = np.where(finite, mats["local_loss"], 0.0).sum(axis=0) / np.maximum(finite.sum(axis=0), 1)
        global_loss[unweighted] = plain[unweighted]
        # a nan on any rank makes the all-reduced loss nan, as it would in training
        anynan = (np.isnan(mats["local_loss"]) & ~np.isnan(mats["micro"])).any(axis=0)
        global_loss[anynan] = np.nan
    return Series(
        ranks=ranks,
        steps=axis,
        lr=lr,
        skipped=skipped,
        scale=scale,
        global_loss=global_loss,
        loss_source=source,
        **mats,
    )
