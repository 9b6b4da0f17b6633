"""Two runs of the user's script: aligned by data consumed, compared, and why they differ.

"One GPU was stable, four GPUs oscillate": the two runs differ in world size, micro-batch or
accumulation, so optimizer step k of one is not step k of the other. Everything here is put on the
axis of **samples consumed** (tokens too where both runs know them) and compared there.

Formulas (docs/compare.md has the derivations and sources):

* Alignment. ``x(t) = Σ_{s≤t} S(s)`` with ``S(s)`` the global samples of optimizer step ``s``.
  The run with the larger global batch (the *coarse* run) gives the grid; each coarse step ``k``
  covers ``(x_c(k−1), x_c(k)]``, and the fine run's steps whose ``x`` falls in that interval are
  averaged (a bin is used only when the fine run covers it completely).
* Curve band. Each aligned point carries the predicted minibatch standard deviation of its loss
  (quantities/noise_band.py: ``σ_pred(t) = sqrt(σ̂²_unit(t) / K(t))``; a mean over ``m`` fine steps
  has ``sqrt(Σσ²)/m``). The difference ``d_k = L_B(k) − L_A(k)`` *leaves the band* at the first
  of :data:`PERSIST` consecutive bins with ``|d_k| > Z_BAND · sqrt(σ_A² + σ_B²)``.
* Step-to-step noise of one run: the second difference ``r(t) = L(t) − (L(t−1) + L(t+1)) / 2``
  cancels any locally linear trend; for independent noise ``Var r = 1.5 σ²``, so
  ``σ_obs = std(r) / sqrt(1.5)``. Its sampling error: ``se(log σ_obs) ≈ sqrt(1.94 / (2n))`` —
  1/(2n) is the large-sample variance of log s for a normal sample, and 1.94 = 1 + 2(ρ₁² + ρ₂²) the
  variance inflation of the MA(2) residual (ρ₁ = −2/3, ρ₂ = 1/6). The plain (not robust) std is
  used on purpose: a spike is part of what makes one run noisier than the other.
* Noise explained by the batch size: the predicted ratio of the two runs' noise is
  ``median σ_pred,B / median σ_pred,A`` (per-unit variance and batch sizes both measured); the
  observed ratio is ``σ_obs,B / σ_obs,A``. Explained when they agree within
  :data:`EXPLAINED_FACTOR` or within :data:`Z_RATIO` combined standard errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.analysis.quantities.noise_band import WITHIN_NOISE_RATIO
from ddp_doctor.compare.causes import SERIOUS_SCORE, Cause, Pair, find_causes
from ddp_doctor.compare.policy import POLICY_KEYS, policy_of
from ddp_doctor.core.catalog import NOT_A_CAUSE, Text
from ddp_doctor.core.findings import jsonable, text_fields
from ddp_doctor.equiv.verdict import Equivalence

COMPARE_SCHEMA = "ddp-doctor.compare/1"

# A difference is outside the combined minibatch band at Z_BAND standard deviations (3σ: a 0.27 %
# two-sided false-alarm rate per point for normal noise) ...
Z_BAND = 3.0
# ... for PERSIST consecutive aligned points (one outlier per few hundred points is expected).
PERSIST = 3
# Observed and predicted noise ratios agree within this factor: the same tolerance the report uses
# for "oscillation within noise" (noise_band.WITHIN_NOISE_RATIO).
EXPLAINED_FACTOR = WITHIN_NOISE_RATIO
# ... or within this many combined standard errors of log(ratio) (two-sided 95 %).
Z_RATIO = 2.0
# Variance of log(s) × n for a normal sample, and the MA(2) inflation of the residual.
LOG_STD_VAR_N = 0.5
RESID_INFLATION = 1.94
# The noise verdict is given only when the ratio is resolved to within a factor of RESOLVE_FACTOR
# (Z_RATIO × se of log(ratio) ≤ log RESOLVE_FACTOR); with se² ≈ 0.97 (1/n_A + 1/n_B) that needs
# about 17 usable steps in each run.
RESOLVE_FACTOR = 2.0
# Fewer residuals than this: the step-to-step noise of a run is not estimated.
MIN_NOISE_POINTS = 8
# lr warmup ends where the lr first reaches this fraction of its peak.
WARMUP_REACHED = 0.95
# --assert-equal defaults: fp32 DDP vs one process at the same global batch agree to ~1e-6
# relative per step (docs/trainer.md); losses after tens of steps to ~1e-5. rtol 1e-4 leaves room.
DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-6

TEXT: dict[str, Text] = {
    "equivalent": Text("equivalent within noise", "在噪声范围内等价"),
    "explained": Text(
        "different, explained by the batch size (not a bug)",
        "不同，但可由批量大小解释（不是 bug）",
    ),
    "not-explained": Text("different, not explained by the batch size", "不同，无法由批量大小解释"),
    "undecided": Text("not enough data to decide", "数据不足，无法判断"),
}


@dataclass
class RunSummary:
    """The per-run quantities the comparison needs, measured from one diagnosis."""

    label: str
    path: str
    world_size: int
    micro_batch: float | None  # samples per rank per micro-step (median)
    accumulation: float | None  # micro-steps per optimizer step (median)
    batch_samples: float | None  # global samples per optimizer step (median)
    batch_tokens: float | None
    steps: int
    step_samples: np.ndarray  # [T] global samples of each optimizer step (nan when unknown)
    step_tokens: np.ndarray  # [T] global valid tokens of each optimizer step (nan when unknown)
    loss: np.ndarray  # [T] global loss
    sigma_pred: np.ndarray  # [T] predicted minibatch std of the global loss
    lr: np.ndarray  # [T]
    noise_obs: float | None
    noise_pred: float | None
    noise_n: int
    lr_peak: float | None
    warmup_steps: int | None  # optimizer steps until the lr first reaches WARMUP_REACHED × peak; 0: none
    lr_final_over_peak: float | None
    sched_per_step: float | None
    optimizer: dict[str, Any] | None
    precision: dict[str, Any]
    compiled: str | None
    clip_max_norm: float | None
    clip_rate: float | None
    loss_source: str
    order_prefix: list[int]  # global sample order of epoch 0, reconstructed from sampler records
    confirmed: dict[str, str]  # finding id -> severity, confirmed and a possible cause
    statuses: dict[str, str]  # finding id -> status, every finding of the run
    warmup_samples: float | None = None  # warmup length on the comparison's axis (set by compare)
    # mixed-precision and sharding policy (compare/policy.py): one value per POLICY_KEYS, None unknown
    policy: dict[str, str | None] = field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        return {
            "world_size": self.world_size,
            "micro_batch": self.micro_batch,
            "accumulation": self.accumulation,
            "batch_samples": self.batch_samples,
            "batch_tokens": self.batch_tokens,
            "optimizer_steps": self.steps,
            "samples_seen": _total(self.step_samples),
            "tokens_seen": _total(self.step_tokens),
            "lr_peak": self.lr_peak,
            "warmup_steps": self.warmup_steps,
            "warmup_on_axis": self.warmup_samples,
            "lr_final_over_peak": self.lr_final_over_peak,
            "scheduler_steps_per_optimizer_step": self.sched_per_step,
            "optimizer": self.optimizer,
            "precision": self.precision,
            "compile": self.compiled,
            "clip_max_norm": self.clip_max_norm,
            "clip_rate": self.clip_rate,
            "loss_normalization": self.loss_source,
            **{key: self.policy.get(key) for key in POLICY_KEYS},
            "noise_observed": self.noise_obs,
            "noise_predicted": self.noise_pred,
            "noise_points": self.noise_n,
        }


@dataclass
class Aligned:
    """Both loss curves on the coarse run's grid of samples consumed."""

    samples: np.ndarray  # [K]
    loss_a: np.ndarray
    loss_b: np.ndarray
    sigma_a: np.ndarray
    sigma_b: np.ndarray
    coarse: str  # "a" or "b"
    fine_steps_per_point: float | None
    axis: str = "samples"  # "samples", "tokens" or "steps"

    @property
    def diff(self) -> np.ndarray:
        diff: np.ndarray = self.loss_b - self.loss_a
        return diff

    @property
    def band(self) -> np.ndarray:
        band: np.ndarray = Z_BAND * np.sqrt(self.sigma_a**2 + self.sigma_b**2)
        return band

    @property
    def band_around_a(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper): run A's curve ± the combined band, where B is expected to lie."""
        return self.loss_a - self.band, self.loss_a + self.band


@dataclass
class Comparison:
    a: RunSummary
    b: RunSummary
    aligned: Aligned
    conclusion: str  # a key of TEXT
    leaves_band_at: float | None  # samples consumed at the first persistent excursion
    max_abs_diff: float | None
    noise_ratio_observed: float | None  # σ_obs,B / σ_obs,A
    noise_ratio_predicted: float | None  # σ_pred,B / σ_pred,A
    noise_ratio_batch_only: float | None  # sqrt(K_A / K_B)
    noise_ratio_se: float | None  # of log(observed ratio)
    noise_explained: bool | None
    same_data_order: bool | None
    order_compared: int
    differing_findings: list[dict[str, Any]]
    causes: list[Cause]
    notes: list[str]
    # both runs carry equivalence fingerprints (docs/equivalence.md): the stage-by-stage verdict
    equivalence: Equivalence | None = None

    def headline(self) -> Text:
        head = TEXT[self.conclusion]
        if self.conclusion == "not-explained" and self.causes:
            head = head + Text("; most likely: ", "；最可能的原因：") + self.causes[0].summary
        return head

    def assert_equal(self, rtol: float, atol: float) -> tuple[bool, dict[str, Any]]:
        """Do the aligned curves agree: |L_B − L_A| ≤ atol + rtol·|L_A| at every aligned point?"""
        al = self.aligned
        ok = np.isfinite(al.loss_a) & np.isfinite(al.loss_b)
        if not ok.any():
            return False, {"points": 0, "reason": "no aligned points"}
        d = np.abs(al.diff[ok])
        tol = atol + rtol * np.abs(al.loss_a[ok])
        bad = d > tol
        worst = int(np.argmax(d - tol))
        return (not bad.any()), {
            "points": int(ok.sum()),
            "failing_points": int(bad.sum()),
            "max_abs_diff": float(d.max()),
            "max_rel_diff": float(np.max(d / np.maximum(np.abs(al.loss_a[ok]), 1e-30))),
            f"worst_at_{al.axis}": float(al.samples[ok][worst]),
            "rtol": rtol,
            "atol": atol,
        }

    def to_json(self) -> dict[str, Any]:
        al = self.aligned
        out: dict[str, Any] = jsonable(
            {
                "schema": COMPARE_SCHEMA,
                "conclusion": self.conclusion,
                **text_fields({"headline": self.headline()}, "headline"),
                "runs": {
                    "a": {"label": self.a.label, "path": self.a.path, "settings": self.a.settings()},
                    "b": {"label": self.b.label, "path": self.b.path, "settings": self.b.settings()},
                },
                "settings_diff": settings_diff(self.a, self.b),
                "curves": {
                    "axis": al.axis,
                    "coarse_run": al.coarse,
                    "fine_steps_per_point": al.fine_steps_per_point,
                    "x": al.samples.tolist(),
                    "loss_a": al.loss_a.tolist(),
                    "loss_b": al.loss_b.tolist(),
                    "sigma_a": al.sigma_a.tolist(),
                    "sigma_b": al.sigma_b.tolist(),
                    "band_z": Z_BAND,
                    "persist": PERSIST,
                    "leaves_band_at_samples": self.leaves_band_at,
                    "max_abs_diff": self.max_abs_diff,
                },
                "noise": {
                    "observed_ratio": self.noise_ratio_observed,
                    "predicted_ratio": self.noise_ratio_predicted,
                    "batch_only_ratio": self.noise_ratio_batch_only,
                    "log_ratio_se": self.noise_ratio_se,
                    "explained": self.noise_explained,
                    "explained_factor": EXPLAINED_FACTOR,
                },
                "data_order": {"same": self.same_data_order, "indices_compared": self.order_compared},
                "differing_findings": self.differing_findings,
                "causes": [c.to_json() for c in self.causes],
                "notes": self.notes,
            }
        )
        if self.equivalence is not None:  # only when both runs carry fingerprints: else unchanged
            out["equivalence"] = self.equivalence.to_json()
        return out


def _total(x: np.ndarray) -> float | None:
    return float(x.sum()) if x.size and np.isfinite(x).all() else None


def _median(x: np.ndarray) -> float | None:
    ok = x[np.isfinite(x)]
    return float(np.median(ok)) if ok.size else None


def step_noise(loss: np.ndarray) -> tuple[float | None, int]:
    """Step-to-step noise σ_obs from the trend-free second difference (module docstring)."""
    r = loss[1:-1] - 0.5 * (loss[:-2] + loss[2:])
    r = r[np.isfinite(r)]
    if r.size < MIN_NOISE_POINTS:
        return None, int(r.size)
    return float(np.std(r, ddof=1)) / math.sqrt(1.5), int(r.size)


def _log_se(n: int) -> float:
    return math.sqrt(LOG_STD_VAR_N * RESID_INFLATION / max(n, 1))


def _order_prefix(diag: Diagnosis) -> list[int]:
    """The global sample order of the first epoch seen, from every rank's sampler `head`.

    DistributedSampler gives rank r the indices perm[r::W] of one permutation, so interleaving the
    ranks' first indices rebuilds the prefix of perm that all ranks together consume.
    """
    run = diag.context.run
    heads: dict[int, list[int]] = {}
    epoch0: int | None = None
    for rank, data in run.ranks.items():
        for rec in data.sampler:
            epoch = rec.get("epoch")
            head = rec.get("head")
            if not isinstance(head, list) or not isinstance(epoch, int):
                continue
            if epoch0 is None or epoch < epoch0:
                epoch0, heads = epoch, {}
            if epoch == epoch0 and rank not in heads:
                heads[rank] = [int(i) for i in head if isinstance(i, int)]
            break
    world = run.world_size
    if not heads or sorted(heads) != list(range(world)):
        return []
    n = min(len(h) for h in heads.values())
    return [heads[r][i] for i in range(n) for r in range(world)]


def _per_step(mat: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Sum over the ranks that recorded a step; nan where a recording rank lacks the value."""
    if not mat.size:
        return np.zeros(mat.shape[1] if mat.ndim == 2 else 0)
    missing = present & ~np.isfinite(mat)
    out: np.ndarray = np.where(np.isfinite(mat), mat, 0.0).sum(axis=0)
    out[missing.any(axis=0) | ~present.any(axis=0)] = np.nan
    return out


def summarize(diag: Diagnosis, label: str, batch_samples: float | None = None) -> RunSummary:
    """The run's quantities; ``batch_samples`` supplies the global samples per optimizer step when
    the probe could not see them (a single-process script without a DDP/FSDP wrapper)."""
    ctx = diag.context
    s = ctx.series
    present = np.isfinite(s.micro)
    step_samples = _per_step(s.samples, present)
    step_tokens = _per_step(s.tokens, present)
    if batch_samples is not None and not np.isfinite(step_samples).all():
        step_samples = np.full(s.n_steps, float(batch_samples))
    loss = np.where(s.skipped, np.nan, s.global_loss)
    noise_obs, noise_n = step_noise(loss)
    pred = ctx.noise.predicted_trace
    noise_pred = _median(pred) if pred.size else None
    with np.errstate(invalid="ignore", divide="ignore"):
        micro_batch = _median((s.samples / s.micro).ravel())
    lr = s.lr
    peak = float(np.nanmax(lr)) if np.isfinite(lr).any() else None
    warm = final = None
    if peak and peak > 0:
        reached = np.flatnonzero(np.nan_to_num(lr, nan=-1.0) >= WARMUP_REACHED * peak)
        first = lr[np.isfinite(lr)][0]
        warm = int(reached[0]) + 1 if reached.size and first < 0.5 * peak else 0
        final = float(lr[np.isfinite(lr)][-1] / peak)
    sched = None
    for data in ctx.run.ranks.values():
        if data.steps is not None and len(data.steps):
            v = data.steps.sched_steps[data.steps.sched_steps >= 0]
            sched = float(np.median(v)) if v.size else None
            break
    opt = ctx.config("optimizer")
    optimizer = None
    if opt is not None:
        groups = opt.get("groups") if isinstance(opt.get("groups"), list) else []
        g0 = groups[0] if groups and isinstance(groups[0], dict) else {}
        optimizer = {"type": opt.get("type"), **{k: g0.get(k) for k in ("eps", "betas", "weight_decay")}}
    scaler = ctx.config("scaler")
    autocast = ctx.config("autocast")
    precision = {
        "autocast": (autocast or {}).get("dtype"),
        "grad_scaler": bool(scaler and scaler.get("enabled", True)),
    }
    comp = ctx.config("compile")
    clip_max = clip_rate = None
    for data in ctx.run.ranks.values():
        c = data.steps
        if c is not None and c.clip.shape[0]:
            mx = c.clip[:, 0]
            tot = c.clip[:, 1]
            clip_max = _median(mx)
            ok = np.isfinite(mx) & np.isfinite(tot)
            clip_rate = float((tot[ok] > mx[ok]).mean()) if ok.any() else None
            break
    confirmed: dict[str, str] = {
        f.id: f.severity
        for f in diag.findings
        if f.status == "confirmed" and f.id not in NOT_A_CAUSE and f.severity in ("error", "warning")
    }
    return RunSummary(
        label=label,
        path=str(ctx.run.path),
        world_size=ctx.world_size,
        micro_batch=micro_batch,
        accumulation=_median(s.micro.ravel()) if s.ranks else None,
        batch_samples=_median(step_samples),
        batch_tokens=_median(step_tokens) if step_tokens.size else None,
        steps=s.n_steps,
        step_samples=step_samples,
        step_tokens=step_tokens,
        loss=loss,
        sigma_pred=pred if pred.size == loss.size else np.full(loss.size, np.nan),
        lr=lr,
        noise_obs=noise_obs,
        noise_pred=noise_pred,
        noise_n=noise_n,
        lr_peak=peak,
        warmup_steps=warm,
        lr_final_over_peak=final,
        sched_per_step=sched,
        optimizer=optimizer,
        precision=precision,
        compiled=(comp or {}).get("order"),
        clip_max_norm=clip_max,
        clip_rate=clip_rate,
        loss_source=s.loss_source,
        order_prefix=_order_prefix(diag),
        confirmed=confirmed,
        statuses={f.id: f.status for f in diag.findings},
        policy=policy_of(ctx.run),
    )


def choose_axis(a: RunSummary, b: RunSummary) -> str:
    """Samples when both runs know them at every step, else tokens, else optimizer steps."""
    for axis in ("samples", "tokens"):
        xa, xb = _units(a, axis), _units(b, axis)
        if (
            xa.size
            and xb.size
            and np.isfinite(xa).all()
            and np.isfinite(xb).all()
            and xa.min() > 0
            and xb.min() > 0
        ):
            return axis
    return "steps"


def _units(r: RunSummary, axis: str) -> np.ndarray:
    if axis == "samples":
        return r.step_samples
    if axis == "tokens":
        return r.step_tokens
    return np.ones(r.steps)


def align(a: RunSummary, b: RunSummary, axis: str) -> Aligned:
    """Both curves on the grid of the run with the larger global batch (module docstring)."""
    ua, ub = _units(a, axis), _units(b, axis)
    coarse_is_b = bool(ub.size and ua.size and np.median(ub) > np.median(ua))
    (c, uc), (f, uf) = ((b, ub), (a, ua)) if coarse_is_b else ((a, ua), (b, ub))
    xc, xf = np.cumsum(uc), np.cumsum(uf)
    K = xc.size
    lf = np.full(K, np.nan)
    sf = np.full(K, np.nan)
    counts = []
    if K and xf.size:
        # fine step t belongs to coarse bin k when x_c(k-1) < x_f(t) <= x_c(k); a bin is used only
        # when the fine run reaches its right edge
        bins = np.searchsorted(xc, xf, side="left")
        for k in range(K):
            sel = bins == k
            if not sel.any() or xf[-1] < xc[k]:
                continue
            vals = f.loss[sel]
            if not np.isfinite(vals).all():
                continue
            lf[k] = float(vals.mean())
            sig = f.sigma_pred[sel]
            sf[k] = float(np.sqrt(np.sum(sig**2)) / sel.sum()) if np.isfinite(sig).all() else np.nan
            counts.append(int(sel.sum()))
    lc, sc = c.loss.copy(), c.sigma_pred.copy()
    per_point = float(np.median(counts)) if counts else None
    x = xc.astype(float)
    if coarse_is_b:
        return Aligned(x, lf, lc, sf, sc, "b", per_point, axis)
    return Aligned(x, lc, lf, sc, sf, "a", per_point, axis)


def leaves_band(al: Aligned) -> float | None:
    """Samples consumed at the first of PERSIST consecutive points outside the combined band."""
    out = np.abs(al.diff) > al.band
    out &= np.isfinite(al.diff) & np.isfinite(al.band)
    run = 0
    for k, o in enumerate(out):
        run = run + 1 if o else 0
        if run == PERSIST:
            return float(al.samples[k - PERSIST + 1])
    return None


def settings_diff(a: RunSummary, b: RunSummary) -> list[dict[str, Any]]:
    sa, sb = a.settings(), b.settings()
    rows = []
    for key in sa:
        if key.startswith("noise_"):
            continue
        va, vb = sa[key], sb[key]
        rows.append({"setting": key, "a": va, "b": vb, "same": _same(va, vb)})
    return rows


def _same(va: Any, vb: Any) -> bool:
    if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and not isinstance(va, bool):
        return math.isclose(float(va), float(vb), rel_tol=1e-6, abs_tol=1e-12)
    return bool(va == vb)


def compare(  # noqa: PLR0915 - the comparison's steps in order, each with its note; split, the conclusion would lose them
    a_diag: Diagnosis,
    b_diag: Diagnosis,
    labels: tuple[str, str] = ("A", "B"),
    batch_samples: tuple[float | None, float | None] = (None, None),
) -> Comparison:
    """Compare run B with run A (A is the reference, e.g. the stable one-GPU run)."""
    a = summarize(a_diag, labels[0], batch_samples[0])
    b = summarize(b_diag, labels[1], batch_samples[1])
    axis = choose_axis(a, b)
    for r in (a, b):
        if r.warmup_steps is not None:
            r.warmup_samples = (
                float(np.cumsum(_units(r, axis))[r.warmup_steps - 1]) if r.warmup_steps else 0.0
            )
    al = align(a, b, axis)
    notes: list[str] = []
    if axis != "samples":
        notes.append(
            f"aligned by {axis}: samples per step are unknown in "
            + " and ".join(r.label for r in (a, b) if not np.isfinite(r.step_samples).all())
            + " (no DDP/FSDP wrapper seen; pass --batch-a/--batch-b)"
        )
    at = leaves_band(al)
    ok = np.isfinite(al.diff)
    max_abs = float(np.max(np.abs(al.diff[ok]))) if ok.any() else None
    if not ok.any():
        notes.append("the runs share no aligned point (no steps, or no overlap in samples consumed)")
    if not np.isfinite(al.band).any():
        notes.append(
            "no minibatch band: needs ≥ 2 micro-batches per optimizer step with a recorded loss value"
        )
    obs_ratio = pred_ratio = batch_ratio = se = None
    explained: bool | None = None
    if a.noise_obs and b.noise_obs:
        obs_ratio = b.noise_obs / a.noise_obs
        se = math.hypot(_log_se(a.noise_n), _log_se(b.noise_n))
        if a.noise_pred and b.noise_pred:
            pred_ratio = b.noise_pred / a.noise_pred
            gap = abs(math.log(obs_ratio / pred_ratio))
            if gap <= math.log(EXPLAINED_FACTOR):
                explained = True
            elif Z_RATIO * se > math.log(RESOLVE_FACTOR):
                need = (
                    math.ceil(LOG_STD_VAR_N * RESID_INFLATION * 2 * (Z_RATIO / math.log(RESOLVE_FACTOR)) ** 2)
                    + 2
                )
                notes.append(
                    f"step-to-step noise differs from the batch-size prediction ({obs_ratio:.3g}× vs {pred_ratio:.3g}×) "
                    f"but {a.noise_n} and {b.noise_n} steps cannot resolve it (±{math.exp(Z_RATIO * se):.3g}×); "
                    f"about {need} steps in each run would"
                )
            else:
                explained = gap <= Z_RATIO * se
        else:
            notes.append("predicted noise unknown for one run: the noise difference is not judged")
    else:
        notes.append(f"step-to-step noise needs ≥ {MIN_NOISE_POINTS + 2} finite steps in each run")
    ua, ub = _median(_units(a, axis)), _median(_units(b, axis))
    if axis != "steps" and ua and ub:
        batch_ratio = math.sqrt(ua / ub)  # σ ∝ 1/sqrt(batch) at equal per-unit variance
    ratio = {"observed": obs_ratio, "predicted": pred_ratio, "batch_only": batch_ratio, "log_se": se}
    same_order: bool | None = None
    n_order = min(len(a.order_prefix), len(b.order_prefix))
    if n_order:
        same_order = a.order_prefix[:n_order] == b.order_prefix[:n_order]
    causes = find_causes(Pair(a, b, axis, explained, ratio, same_order, n_order))
    differing = []
    fa = {f.id: f for f in a_diag.findings}
    fb = {f.id: f for f in b_diag.findings}
    for fid in sorted(set(fa) | set(fb)):
        sa = fa[fid].status if fid in fa else None
        sb = fb[fid].status if fid in fb else None
        # the severity of the run where it is confirmed (absent findings carry "info")
        severity = (fb[fid] if sb == "confirmed" else fa.get(fid) or fb[fid]).severity
        if sa != sb and "confirmed" in (sa, sb) and severity != "info":
            differing.append({"id": fid, "a": sa, "b": sb, "severity": severity})
    serious = [c for c in causes if c.score >= SERIOUS_SCORE]
    if not ok.any() or (explained is None and at is not None):
        conclusion = "undecided" if not serious else "not-explained"
    elif serious:
        conclusion = "not-explained"
    elif at is None and (
        explained is None
        or (obs_ratio is not None and abs(math.log(obs_ratio)) <= math.log(EXPLAINED_FACTOR))
    ):
        conclusion = "equivalent"
    else:
        conclusion = "explained"
    return Comparison(
        a=a,
        b=b,
        aligned=al,
        conclusion=conclusion,
        leaves_band_at=at,
        max_abs_diff=max_abs,
        noise_ratio_observed=obs_ratio,
        noise_ratio_predicted=pred_ratio,
        noise_ratio_batch_only=batch_ratio,
        noise_ratio_se=se,
        noise_explained=explained,
        same_data_order=same_order,
        order_compared=n_order,
        differing_findings=differing,
        causes=causes,
        notes=notes,
        equivalence=fingerprint_verdict(a_diag, b_diag),
    )


def fingerprint_verdict(a_diag: Diagnosis, b_diag: Diagnosis) -> Equivalence | None:
    """`equiv`'s stage-by-stage comparison when both runs recorded fingerprints, else None."""
    from ddp_doctor.equiv import stages, verdict  # deferred: most compared runs carry none

    runs = [d.context.run for d in (a_diag, b_diag)]
    if not all(any(r.records.get("fingerprint") for r in run.ranks.values()) for run in runs):
        return None
    return verdict.compare(stages.from_run(runs[0]), stages.from_run(runs[1]))
