"""A failed run, said first: which rank failed, how, where, and what the verdicts then cover.

`ddp_doctor.rundir.teardown.classify_run` finds the failed ranks (launcher reports, `end` records,
missing files); this module turns them into the report's first lines (`run.failure` in the JSON,
docs/report.md "Failed runs") and marks every verdict built on the steps before the failure as
covering only them: a "ruled out over 5 of 5 optimizer steps" of a run whose rank 1 raised in
step 5 says so, so nobody reads it as "ruled out for the whole training".
"""

from __future__ import annotations

from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.core.findings import Finding, HypothesisVerdict
from ddp_doctor.rundir.teardown import ExitStatus, RankFailure


def _how(f: RankFailure) -> Text:
    if f.stopped and f.signal is not None:
        return Text(f"was stopped by the launcher ({f.signal})", f"被启动器停止（{f.signal}）")
    if f.signal is not None:
        return Text(f"was killed by {f.signal}", f"被 {f.signal} 终止")
    if f.exit_code is not None:
        return Text(f"exited with code {f.exit_code}", f"以退出码 {f.exit_code} 退出")
    if f.exception is not None:
        return Text("raised an unhandled exception", "抛出了未处理的异常")
    if f.steps is None:
        return Text("wrote no step record (no exit code reported)", "没有写下任何步记录（未报告退出码）")
    return Text(
        "did not finish (no `end` record, no exit code reported)", "未完成（无 `end` 记录，未报告退出码）"
    )


def _where(f: RankFailure) -> Text:
    if not f.steps:
        return Text("before its first optimizer step", "在第一个优化步之前")
    last = f.steps - 1
    return Text(
        f"in step {f.steps} (steps 0–{last} recorded)" if last else "in step 1 (step 0 recorded)",
        f"在第 {f.steps} 步（已记录第 0–{last} 步）" if last else "在第 1 步（已记录第 0 步）",
    )


# A rank the launcher stopped usually raised only because its peer went ("Connection closed by
# peer"): its exception is shown shorter than the first failure's.
CONSEQUENCE_CHARS = 120


def _rank_text(f: RankFailure) -> Text:
    text = Text(f"rank {f.rank} ", f"rank {f.rank} ") + _how(f) + Text(" ", "，") + _where(f)
    if not f.exception:
        return text
    shown = f.exception
    if f.stopped and len(shown) > CONSEQUENCE_CHARS:
        shown = shown[: CONSEQUENCE_CHARS - 1] + "…"
    return text + Text(f": {shown}", f"：{shown}")


def failure_info(status: ExitStatus) -> dict[str, Any] | None:
    """`run.failure`: the failed ranks (the first cause first) and the sentence that says it; None
    for a run that did not fail (exit 0, a teardown abort after complete training, in progress)."""
    if not status.failed:
        return None
    first, rest = status.failed[0], status.failed[1:]
    summary = Text("The run failed: ", "运行失败：") + _rank_text(first) + Text(".", "。")
    if rest:
        others = Text("", "").joining(map(_rank_text, rest), Text("; ", "；"))
        summary += Text(" Then: ", "随后：") + others + Text(".", "。")
    if first.steps:
        summary += Text(
            f" Every verdict below covers only the {first.steps} optimizer step(s) before the failure.",
            f"下面的每个结论只覆盖失败之前的 {first.steps} 个优化步。",
        )
    return {
        "summary": summary,  # the JSON writes "summary" and "summary_zh" (Diagnosis.run_json)
        "exit_code": status.code,
        "stopped_at": {
            "rank": first.rank,
            "step": first.steps,
            "exit_code": first.exit_code,
            "signal": first.signal,
        },
        "ranks": [f.to_json() for f in status.failed],
    }


def _stopped_text(failure: dict[str, Any]) -> Text:
    at = failure["stopped_at"]
    step = at["step"] if at["step"] is not None else 0
    how = at["signal"] or (f"exit code {at['exit_code']}" if at["exit_code"] is not None else "failed")
    how_zh = at["signal"] or (f"退出码 {at['exit_code']}" if at["exit_code"] is not None else "失败")
    return Text(
        f"the run stopped at step {step} on rank {at['rank']} ({how}), so this covers only the steps before",
        f"运行在 rank {at['rank']} 的第 {step} 步停止（{how_zh}），因此只覆盖此前的步",
    )


def mark_findings(findings: list[Finding], failure: dict[str, Any] | None) -> None:
    """Every finding with a coverage (every runtime "ruled out", partial checks) gets the stop point
    in its coverage (`stopped_at`) and its summary."""
    if failure is None:
        return
    tail = _stopped_text(failure)
    for f in findings:
        if f.coverage is None:
            continue
        f.coverage = {**f.coverage, "stopped_at": dict(failure["stopped_at"])}
        f.summary = Text(
            f"{f.summary.en.rstrip('.')}; {tail.en}.",
            f"{f.summary.get('zh').rstrip('。')}；{tail.get('zh')}。",
        )


def mark_verdict(v: HypothesisVerdict, failure: dict[str, Any] | None) -> HypothesisVerdict:
    """A "ruled out" or "inconclusive" of a failed run starts with how far the run got: the
    absence was shown only for the steps before the failure."""
    if failure is None or v.verdict not in ("ruled-out", "inconclusive"):
        return v
    at = failure["stopped_at"]
    step = at["step"] if at["step"] is not None else 0
    prefix = Text(
        f"Only up to step {step}: rank {at['rank']} failed there. ",
        f"只到第 {step} 步：rank {at['rank']} 在此失败。",
    )
    return HypothesisVerdict(id=v.id, verdict=v.verdict, findings=v.findings, summary=prefix + v.summary)
