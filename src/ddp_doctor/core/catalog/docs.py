"""Generated documentation from the catalog: docs/catalog.md and the thresholds table of docs/report.md."""

from __future__ import annotations

import sys

from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES, NOT_A_CAUSE
from ddp_doctor.core.catalog.model import FindingSpec


def _kinds(spec: FindingSpec) -> str:
    return "+".join(k for k, on in (("runtime", spec.runtime), ("lint", spec.lint)) if on)


def markdown() -> str:
    """docs/catalog.md: every hypothesis and finding, in English and Chinese."""
    out = [
        "# Catalog: hypotheses and findings / 目录：假设与发现",
        "",
        "Generated from `src/ddp_doctor/core/catalog/` by `python -m ddp_doctor.core.catalog --markdown` (the IDs "
        "are a public contract: never renamed). Thresholds and their sources are explained in "
        "[report.md](report.md). Severity applies when a finding is confirmed; ruled-out / not-measured / "
        "inconclusive findings are `info`.",
        "",
        "本页由 `src/ddp_doctor/core/catalog/` 生成（ID 是公开契约，不会改名）。阈值及其出处见 [report.md](report.md)。",
        "",
        "## Hypotheses / 假设",
        "",
        "| id | guess | 猜测 | findings |",
        "|---|---|---|---|",
    ]
    for h in HYPOTHESES.values():
        fids = ", ".join(f"`{f}`" for f in h.findings)
        out.append(f"| `{h.id}` | {h.guess.en} | {h.guess.zh} | {fids} |")
    harmless = ", ".join(f for f in FINDINGS if f in NOT_A_CAUSE)
    out += [
        "",
        "Verdicts: `confirmed` (a finding that can cause instability is confirmed), `ruled-out` (every "
        f"finding measured and absent, or confirmed but harmless: {harmless}), `not-measured` (nothing "
        "measurable: the summary says what to enable), `inconclusive` (in between).",
        "",
        "结论：`confirmed`（某个可能导致不稳定的发现已确认）、`ruled-out`（全部已测量且不存在，或已确认但无害）、"
        "`not-measured`（无法测量，摘要说明需要开启什么）、`inconclusive`（介于两者之间）。",
        "",
        "## Findings / 发现",
    ]
    for spec in FINDINGS.values():
        threshold = spec.threshold
        out += [
            "",
            f"### `{spec.id}` — {spec.title.en} / {spec.title.zh}",
            "",
            f"*{_kinds(spec)}, severity `{spec.severity}`*",
            "",
            f"- **Meaning**: {spec.meaning.en}",
            f"- **Evidence**: {spec.evidence.en}",
        ]
        if threshold is not None:
            out.append(f"- **Threshold**: {threshold.text('en')} (source: {threshold.source})")
        out += [
            f"- **Fix**: {spec.fix.en}",
            f"- **含义**：{spec.meaning.zh}",
            f"- **证据**：{spec.evidence.zh}",
        ]
        if threshold is not None:
            out.append(f"- **阈值**：{threshold.text('zh')}")
        out.append(f"- **修复**：{spec.fix.zh}")
    return "\n".join(out) + "\n"


def thresholds_markdown() -> str:
    """The thresholds table of docs/report.md (runtime findings)."""
    rows = ["| finding | threshold | source |", "|---|---|---|"]
    for spec in FINDINGS.values():
        if spec.runtime and spec.threshold is not None:
            rows.append(f"| {spec.id} | {spec.threshold.text('en')} | {spec.threshold.source} |")
    return "\n".join(rows) + "\n"


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ddp_doctor.core.catalog", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--markdown", action="store_true", help="print docs/catalog.md")
    group.add_argument(
        "--thresholds", action="store_true", help="print the thresholds table of docs/report.md"
    )
    args = parser.parse_args(argv)
    sys.stdout.write(markdown() if args.markdown else thresholds_markdown())
    return 0
