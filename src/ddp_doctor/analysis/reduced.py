"""A reduced run (imported logs, docs/import.md): keep only the findings its fields support.

An imported run has one stream (the job's logged loss) and a few scalars; the checks run on it
unchanged, but most of them would judge absent data ("no scheduler was stepped", "world size 1").
So only the checks with a finding the log's fields can feed run (:func:`fed`; the others are
skipped), and every finding whose inputs the log cannot hold becomes *not measured: needs
`ddp-doctor run`*, and a supported finding that was ruled out with too few logged points to judge
becomes not measured with the reason. What each finding needs is its catalog spec's
``log_fields`` (:data:`NEEDS`), why a log cannot feed it its ``not_from_logs``:

* loss-spike, nonfinite — the loss; warmup-short — loss and lr; grad-spike — the gradient norm;
  clip-saturated — the gradient norm and ``--max-norm``; fp16-overflow — the loss scale;
  training-not-progressing — the loss (and the gradient norm and lr where logged).
* oscillation-within-noise and batch-below-noise-scale are *not* supported: the minibatch-noise
  band needs the spread of per-micro-batch losses within a step and B_simple local and global
  gradient norms; a log has one number per step.
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.analysis.make import not_measured
from ddp_doctor.analysis.quantities.spikes import MIN_HISTORY, WINDOW
from ddp_doctor.core.catalog import FINDINGS, Text
from ddp_doctor.core.findings import Finding, sort_findings

# What each finding needs from a log: its catalog spec's `log_fields` (None: `ddp-doctor run` only).
NEEDS: dict[str, tuple[str, ...]] = {
    fid: spec.log_fields for fid, spec in FINDINGS.items() if spec.log_fields
}
# The spike rule needs MIN_HISTORY values in its WINDOW-step trailing window: logs sparser than
# this cannot rule a spike out (a spike they show is still one).
MAX_SPIKE_INTERVAL = WINDOW // MIN_HISTORY
SPIKE_BASED = ("loss-spike", "grad-spike", "warmup-short")


def _not_from_logs(fid: str, imported: dict[str, Any]) -> Finding:
    src = imported.get("source_name", "imported logs")
    fields = ", ".join(imported.get("fields") or []) or "none"
    why = (FINDINGS[fid].not_from_logs if fid in FINDINGS else None) or Text(
        f"the logs hold only {fields}", f"日志只包含 {fields}"
    )
    return not_measured(
        fid,
        Text(
            f"Not measured from {src}: {why.en}. Needs `ddp-doctor run`.",
            f"无法从导入的日志（{src}）测量：{why.zh}。需要 `ddp-doctor run`。",
        ),
        imported_fields=imported.get("fields"),
        needs="ddp-doctor run",
    )


def fed(imported: dict[str, Any]) -> set[str]:
    """The finding IDs whose :data:`NEEDS` the log's fields cover (diagnose runs only their checks)."""
    have = set(imported.get("fields") or [])
    return {fid for fid, needs in NEEDS.items() if set(needs) <= have}


def restrict(findings: list[Finding], imported: dict[str, Any]) -> list[Finding]:
    """The findings of a reduced run: unsupported ones replaced by not-measured (see module doc)."""
    have = set(imported.get("fields") or [])
    interval = int(imported.get("log_interval") or 1)
    out = []
    for f in findings:
        needs = NEEDS.get(f.id)
        if needs is None or not set(needs) <= have:
            out.append(_not_from_logs(f.id, imported))
            continue
        if f.id in SPIKE_BASED and f.status == "ruled-out" and interval > MAX_SPIKE_INTERVAL:
            out.append(
                not_measured(
                    f.id,
                    Text(
                        f"Logged every {interval} steps: the spike rule needs ≥ {MIN_HISTORY} values in "
                        f"{WINDOW} steps (log every ≤ {MAX_SPIKE_INTERVAL} steps), so no spike can be ruled out.",
                        f"每 {interval} 步记录一次：尖峰规则需要 {WINDOW} 步内至少 {MIN_HISTORY} 个值"
                        f"（记录间隔 ≤ {MAX_SPIKE_INTERVAL} 步），因此无法排除尖峰。",
                    ),
                    log_interval=interval,
                    **f.evidence,
                )
            )
            continue
        if f.id == "nonfinite" and f.status == "ruled-out":
            what = "loss and gradient norm" if "grad_norm" in have else "loss"
            f.summary = Text(
                f"No NaN/Inf in the {imported.get('steps')} logged values of the {what}.",
                f"{imported.get('steps')} 个记录的{what}值中没有 NaN/Inf。",
            )
        out.append(f)
    return sort_findings(out)


def reduced_run_info(info: dict[str, Any], imported: dict[str, Any]) -> dict[str, Any]:
    """run_info of a reduced run: the log's path, the job's world size, where the series came from."""
    keys = imported.get("keys") or {}
    info = dict(info)
    info["path"] = imported.get("path", info["path"])
    info["world_size"] = imported.get("world_size")
    info["ranks_present"] = []
    info["missing_ranks"] = []
    last = imported.get("last_step")
    info["optimizer_steps"] = last + 1 if isinstance(last, int) else info["optimizer_steps"]
    info["micro_steps_per_optimizer_step"] = imported.get("accum")
    micro, accum = imported.get("micro_batch"), imported.get("accum") or 1
    # the one stream stands for the whole job: its samples are the global batch, not one rank's
    info["effective_batch"] = {
        **info["effective_batch"],
        "per_rank_samples": micro * accum if isinstance(micro, int) else None,
    }
    info["loss_source"] = f"logged {keys.get('loss')!r} ({imported.get('source_name')})"
    info["grad_norm_source"] = f"logged {keys['grad_norm']!r}" if "grad_norm" in keys else None
    info["imported"] = imported
    info["problems"] = [*imported.get("problems", []), *info["problems"]]
    return info
