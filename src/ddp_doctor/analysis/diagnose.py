"""Run every check on a run directory and give every hypothesis of the catalog its verdict.

Verdict of a hypothesis from its findings (docs/report.md):
* ``confirmed`` — a finding under it is confirmed, except the informational facts in
  :data:`NOT_A_CAUSE` (they say "set, but numerically harmless" or "this is just noise");
* ``ruled-out`` — every finding under it was measured and is absent (or is one of those facts);
* ``not-measured`` — none could be measured (the summary says what to enable);
* ``inconclusive`` — anything in between (some absent, some not measured or inconclusive).

Findings with status ``observed`` (facts such as the DDP bucket settings) count as absent.
Every runtime "ruled out" carries a ``coverage`` (what it covered): checks that cover part of
the run set their own; the rest covered every recorded optimizer step, and say so.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddp_doctor.analysis.answer import oscillation_answer
from ddp_doctor.analysis.bulk import (
    FROM_SAMPLE,
    UNDECIDED_MARGIN,
    WIDER_SAMPLE,
    sample_context,
    undecided,
    whole_run_gns,
    widen,
)
from ddp_doctor.analysis.checks import (
    accumulation,
    batch_size,
    batchnorm,
    compile,
    data_order,
    ddp_config,
    fsdp,
    gradient_sync,
    instability,
    loss_logging,
    loss_normalization,
    lr_schedule,
    optimizer,
    precision,
    progress,
    spikes_clipping,
)
from ddp_doctor.analysis.context import Context, build_context
from ddp_doctor.analysis.failure import failure_info, mark_findings, mark_verdict
from ddp_doctor.analysis.fixes import refine_fixes
from ddp_doctor.analysis.make import coverage, with_coverage
from ddp_doctor.analysis.precedence import resolve
from ddp_doctor.analysis.reduced import fed, reduced_run_info, restrict
from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES, NOT_A_CAUSE, UI, Text
from ddp_doctor.core.findings import Finding, HypothesisVerdict, Verdict, jsonable, sort_findings, text_fields
from ddp_doctor.core.redact import redact_argv, redact_value
from ddp_doctor.rundir.reader import RunData, read_run
from ddp_doctor.rundir.teardown import ExitStatus, classify_run

CHECKS = (
    compile,
    accumulation,
    batch_size,
    optimizer,
    data_order,
    loss_logging,
    lr_schedule,
    spikes_clipping,
    instability,
    precision,
    ddp_config,
    batchnorm,
    loss_normalization,
    fsdp,
    gradient_sync,
    progress,
)

_CONFIG_KINDS = (
    "dist",
    "ddp",
    "fsdp",
    "zero",
    "optimizer",
    "scaler",
    "autocast",
    "compile",
    "scheduler",
    "sampler",
)


@dataclass
class Diagnosis:
    run_info: dict[str, Any]
    findings: list[Finding]
    hypotheses: list[HypothesisVerdict]
    context: Context

    def run_json(self) -> dict[str, Any]:
        """``run_info`` as the report's JSON ``run`` object: the failure's and the oscillation
        answer's ``summary`` (a :class:`Text`) become ``summary`` and ``summary_zh``."""
        out = dict(self.run_info)
        for key in ("failure", "oscillation"):
            if isinstance(out.get(key), dict):
                out[key] = text_fields(out[key], "summary")
        return dict(jsonable(out))


def _check_all(ctx: Context, fed: set[str] | None) -> dict[str, Finding]:
    """Every check's findings on ``ctx``, one per catalog ID (the first producer wins for shared IDs),
    each "ruled out" with what it covered."""
    seen: dict[str, Finding] = {}
    # The checks read per-step series; with no step record (a run polled before its first
    # optimizer step, or one whose step instrument failed) there is nothing to measure yet.
    no_steps = ctx.optimizer_steps == 0
    for module in () if no_steps else CHECKS:
        if fed is not None and not fed.intersection(module.FINDS):
            continue
        try:
            found = list(module.check(ctx))
        except Exception as exc:  # noqa: BLE001 - damaged input gives a report with a note, never a traceback
            name = module.__name__.rsplit(".", 1)[-1]
            ctx.run.problems.append(
                f"check {name!r} could not run on this data ({type(exc).__name__}: {str(exc)[:200]}); "
                "its findings are not measured"
            )
            continue
        for f in found:
            seen.setdefault(f.id, f)
    n = ctx.optimizer_steps
    for f in seen.values():
        if f.status == "ruled-out" and f.coverage is None and n > 0:
            with_coverage(f, coverage(n, n, Text("", "")))
    return seen


def run_findings(ctx: Context, fed: set[str] | None = None, sample: Context | None = None) -> list[Finding]:
    """All checks' findings, one per catalog ID.

    ``fed``: the IDs the data can feed (a reduced run from logs: :func:`analysis.reduced.fed`);
    a check none of whose findings (its ``FINDS``) is fed is not run. None: every check runs.
    ``sample``: on the rollup path, the context of the even sample's windows alone; the findings
    that are statistics over steps (analysis/bulk.py FROM_SAMPLE) are decided on it.
    """
    no_steps = ctx.optimizer_steps == 0
    every = set(fed) if fed is not None else set(FINDINGS)
    # with a sample, a check that finds only statistics over steps runs on the sample alone
    seen = _check_all(ctx, every - FROM_SAMPLE if sample is not None else fed)
    widen(list(seen.values()), ctx)  # the rollup path: over the whole run (analysis/bulk.py)
    if sample is not None:
        sampled = _check_all(sample, every & FROM_SAMPLE)
        widen(list(sampled.values()), sample, sampled_from=True)
        seen.update({fid: f for fid, f in sampled.items() if fid in FROM_SAMPLE})
    for fid in FINDINGS:  # the contract: every ID gets a status
        if fid not in seen:
            seen[fid] = Finding(
                id=fid,
                status="not-measured",
                severity="info",
                summary=Text(
                    "No optimizer step was recorded: nothing to measure yet.",
                    "没有记录到任何优化步：尚无可测量的数据。",
                )
                if no_steps
                else Text("No runtime measurement exists for this finding.", "该发现没有运行时测量。"),
            )
    return sort_findings(resolve(refine_fixes(list(seen.values()))))


def verdict(hid: str, by_id: dict[str, Finding]) -> HypothesisVerdict:
    ids = list(HYPOTHESES[hid].findings)
    fs = [by_id[i] for i in ids]
    causes = [f for f in fs if f.status == "confirmed" and f.id not in NOT_A_CAUSE]
    absent = [
        f
        for f in fs
        if f.status in ("ruled-out", "observed") or (f.status == "confirmed" and f.id in NOT_A_CAUSE)
    ]
    unmeasured = [f for f in fs if f.status == "not-measured"]
    sep = Text(" | ", " | ")
    if causes:
        v: Verdict = "confirmed"
        summary = Text("", "").joining((_labelled(f) for f in causes), sep)
    elif len(absent) == len(fs):
        v = "ruled-out"
        summary = Text("All measured, none present. ", "全部已测量，均不存在。").joining(
            map(_labelled, fs), sep
        )
    elif len(unmeasured) == len(fs):
        v = "not-measured"
        summary = Text("Not measured. ", "未测量。").joining(map(_labelled, fs), sep)
    else:
        v = "inconclusive"
        summary = Text("", "").joining(
            (_labelled(f, status=True) for f in fs if f not in absent), sep
        ) + Text(
            " — absent or harmless: " + (", ".join(f.id for f in absent) or "none"),
            " — 不存在或无害：" + ("、".join(f.id for f in absent) or "无"),
        )
    return HypothesisVerdict(id=hid, verdict=v, findings=ids, summary=summary)


def _labelled(f: Finding, status: bool = False) -> Text:
    """``id: summary`` (with the status in brackets when asked), in both languages."""
    if status:
        return Text(
            f"{f.id} ({UI[f.status].en}): {f.summary.en}",
            f"{f.id}（{UI[f.status].zh}）：{f.summary.get('zh')}",
        )
    return Text(f"{f.id}: {f.summary.en}", f"{f.id}：{f.summary.get('zh')}")


def downgrade(v: HypothesisVerdict, damage: list[str]) -> HypothesisVerdict:
    """On damaged data (corrupt lines, wrong types, duplicates, ...: ``RunData.damage``) nothing is
    ruled out: a "ruled-out" verdict becomes "inconclusive", and the summary says why."""
    if not damage or v.verdict != "ruled-out":
        return v
    n = len(damage)
    return HypothesisVerdict(
        id=v.id,
        verdict="inconclusive",
        findings=v.findings,
        summary=Text(
            f"Would be ruled out, but {n} data-quality problem(s) make the data doubtful (see data quality). ",
            f"本可排除，但有 {n} 个数据质量问题使数据存疑（见数据质量）。",
        )
        + v.summary,
    )


def _strip(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: v for k, v in rec.items() if k not in ("kind", "what", "step")}


def _redacted_command(command: Any) -> Any:
    if isinstance(command, list):
        return redact_argv(command)
    return redact_value(command) if isinstance(command, str) else command


def _exit_status(run: RunData) -> ExitStatus:
    if run.exit_status is not None:
        return run.exit_status
    code = run.manifest.get("exit_code")
    return classify_run(run.path, code if isinstance(code, int) and not isinstance(code, bool) else None)


def nodes(run: RunData) -> list[dict[str, Any]]:
    """Which ranks ran where: one entry per node (the header's `node`, else its host), in rank order."""
    by_node: dict[str, dict[str, Any]] = {}
    for rank in sorted(run.ranks):
        header = run.ranks[rank].header or {}
        host = header.get("host") if isinstance(header.get("host"), str) else None
        node = header.get("node") if isinstance(header.get("node"), str) else None
        key = node or host or "?"
        entry = by_node.setdefault(key, {"node": node, "host": host, "ranks": []})
        entry["ranks"].append(rank)
    return list(by_node.values())


def run_info(ctx: Context) -> dict[str, Any]:
    run: RunData = ctx.run
    m = run.manifest
    status = _exit_status(run)
    info: dict[str, Any] = {
        "path": str(run.path),
        "world_size": ctx.world_size,
        "ranks_present": sorted(run.ranks),
        "missing_ranks": run.missing_ranks,
        "nodes": nodes(run),
        "optimizer_steps": ctx.steps_total,
        "micro_steps_per_optimizer_step": ctx.batch.micro_steps,
        "effective_batch": {
            "samples": ctx.batch.samples,
            "tokens": ctx.batch.tokens,
            "samples_range": [ctx.batch.samples_min, ctx.batch.samples_max],
            "tokens_range": [ctx.batch.tokens_min, ctx.batch.tokens_max],
            "per_rank_samples": ctx.batch.per_rank_samples,
            "estimated": ctx.batch.estimated,
            "reason": ctx.batch.reason,
        },
        "settings": {k: _strip(run.config(k)) for k in _CONFIG_KINDS if run.config(k) is not None},
        "level": ctx.level,
        "every": m.get("every"),
        # redacted again: a run directory from an older version or written by hand may hold secrets
        "command": _redacted_command(m.get("command")),
        "start": m.get("start"),
        "end": m.get("end"),
        "exit_code": m.get("exit_code"),
        # completed-or-crashed, with the teardown-abort note when it applies (ddp_doctor.rundir.teardown)
        "exit_status": status.to_json(),
        # which rank failed, how and where, said first by every renderer (analysis/failure.py)
        "failure": failure_info(status),
        "in_progress": run.in_progress,
        "versions": m.get("versions"),
        "interventions": m.get("interventions"),
        "loss_source": ctx.series.loss_source,
        "gradient_noise_scale": ctx.gns.to_json(),
        "noise_band": ctx.noise.to_json(),
        "grad_norm_source": ctx.grad_norm_source,
        "problems": list(run.problems),
        "damaged": bool(run.damage),
        # how the rank files were read: null (every step raw) or the rollup path's windows (rundir/rollup_read.py)
        "rollups": run.rollups.to_json() if run.rollups is not None else None,
    }
    if run.stopped is not None:  # `ddp-doctor watch --stop-on` stopped the job (docs/watch.md)
        info["stopped"] = dict(run.stopped)
        failure = info.get("failure")
        if failure:  # the ranks "failed" because they were stopped: say why first
            reason = str(run.stopped.get("reason", ""))[:300]
            failure["summary"] = (
                Text(f"Stopped by ddp-doctor watch: {reason} ", f"由 ddp-doctor watch 停止：{reason} ")
                + failure["summary"]
            )
    return info


def diagnose_run(run: RunData) -> Diagnosis:
    """Every check on ``run``. On the rollup path (rundir/rollup_read.py), a statistic that the windows
    read raw leave too close to its threshold (analysis/bulk.py ``undecided``) makes the report read
    WIDER_SAMPLE times more windows and decide on those, and say so."""
    diag = _diagnose_once(run)
    view = run.rollups
    close = undecided(diag.context)
    if view is None or not close or len(view.selected) >= view.windows:
        return diag
    wider = read_run(run.path, rollups="on", steps=view.requested, sample=view.sample * WIDER_SAMPLE)
    if wider.rollups is not None:
        wider.rollups.notes.append(
            f"{', '.join(close)}: within {UNDECIDED_MARGIN:.0%} of the threshold on {len(view.selected)} "
            f"windows read raw; decided on {len(wider.rollups.selected)}"
        )
        wider.problems.append(wider.rollups.notes[-1])
    return _diagnose_once(wider)


def _diagnose_once(run: RunData) -> Diagnosis:
    # Steps that no rank recorded (gaps, missing ranks, a run in progress) are all-nan columns;
    # numpy warns "Mean of empty slice" and returns nan, which every quantity handles as missing.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ctx = build_context(run)
        # the rollup path: statistics over steps from the even sample (analysis/bulk.py)
        sample = sample_context(run, ctx)
        if sample is not None:
            sample.gns = whole_run_gns(ctx, sample.gns)
            ctx = dataclasses.replace(
                ctx, batch=sample.batch, gns=sample.gns, noise=sample.noise, oscillation=sample.oscillation
            )
        imported = run.manifest.get("imported")
        # a reduced run from logs (analysis/reduced.py, docs/import.md): only the checks it can feed
        findings = run_findings(ctx, fed(imported) if isinstance(imported, dict) else None, sample)
    info = run_info(ctx)
    if isinstance(imported, dict):
        findings = restrict(findings, imported)
        info = reduced_run_info(info, imported)
    mark_findings(findings, info.get("failure"))  # "over 5 of 5 steps" says the run stopped there
    by_id = {f.id: f for f in findings}
    hyps = [mark_verdict(downgrade(verdict(h, by_id), run.damage), info.get("failure")) for h in HYPOTHESES]
    try:
        info["oscillation"] = oscillation_answer(ctx, findings)
    except Exception as exc:  # noqa: BLE001 - damaged input gives a report with a note, never a traceback
        run.problems.append(f"the oscillation answer could not be computed ({type(exc).__name__})")
    return Diagnosis(run_info=info, findings=findings, hypotheses=hyps, context=ctx)


def diagnose(path: Path | str) -> Diagnosis:
    """Read the run directory at ``path`` and diagnose it (raises RunDirError for a non-run)."""
    return diagnose_run(read_run(path))
