"""What changed between two diagnoses of a growing run, and when an undecided check will decide.

The watcher diagnoses the run again after every refresh that read new records; :class:`Tracker`
keeps the last status of every finding, the last verdict of every hypothesis and the last answer
to "bug or noise?", and turns each difference into a :class:`Change` with the optimizer step it
was seen at. Nothing is shown silently: a confirmed finding that stops being confirmed, or a
verdict that goes back, is a change like any other (``flip``).

Early verdicts say when they will decide (:func:`decides_at`) for the checks that wait for a
number of steps — the numbers are those of the checks themselves, not copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ddp_doctor.analysis.checks.instability import MIN_STEPS as UNSTABLE_MIN_STEPS
from ddp_doctor.analysis.checks.spikes_clipping import MIN_JUDGED_STEPS as CLIP_MIN_STEPS
from ddp_doctor.analysis.diagnose import Diagnosis
from ddp_doctor.analysis.quantities.spikes import MIN_HISTORY as SPIKE_MIN_HISTORY
from ddp_doctor.core.findings import Finding

Kind = Literal["answer", "hypothesis", "finding"]
# The order in which a hypothesis verdict is reached; going back down is a flip too.
UNDECIDED = ("not-measured", "inconclusive")


@dataclass
class Change:
    """One new or changed verdict, status or answer, seen at optimizer step ``step``."""

    kind: Kind
    id: str
    old: str | None  # None: the first verdict seen (before it, everything is not measured)
    new: str
    step: int | None
    summary: str
    severity: str | None = None
    finding: Finding | None = None

    @property
    def flip(self) -> bool:
        """A decided verdict that changed (confirmed → ruled out, noise → not noise, ...)."""
        return self.old is not None and self.old not in UNDECIDED and self.old != "undecided"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "status": self.new,
            "previous": self.old,
            "step": self.step,
            "flip": self.flip,
            "summary": self.summary,
        }
        if self.finding is not None:
            out["finding"] = self.finding.to_report_json()
        return out


def last_step(diag: Diagnosis) -> int | None:
    """The highest optimizer step any rank recorded."""
    steps = [
        int(d.steps.step.max())
        for d in diag.context.run.ranks.values()
        if d.steps is not None and len(d.steps)
    ]
    return max(steps) if steps else None


def decides_at(f: Finding, step: int | None, every: int | None) -> int | None:
    """The step at which an undecided finding that waits for steps will decide (``~``: the steps
    still to come must have a finite loss / clip record like the ones so far); None when its
    decision does not wait for a known number of steps."""
    if f.status not in UNDECIDED or step is None:
        return None
    ev = f.evidence
    if f.id == "loss-unstable" and isinstance(ev.get("steps"), int):
        return step + max(UNSTABLE_MIN_STEPS - int(ev["steps"]), 1)
    if f.id == "clip-saturated" and isinstance(ev.get("judged_steps"), int):
        return step + max(CLIP_MIN_STEPS - int(ev["judged_steps"]), 1)
    if f.id == "loss-spike" and step < SPIKE_MIN_HISTORY:
        return SPIKE_MIN_HISTORY
    if f.id == "replica-divergence" and every:  # the next replica checksum
        return (step // every + 1) * every
    return None


def answer_decides_at(answer: dict[str, Any], step: int | None) -> int | None:
    """ "Bug or noise?" undecided: the run length at which the same ratio would decide."""
    needed = answer.get("steps_needed")
    if answer.get("answer") == "undecided" and isinstance(needed, int) and step is not None:
        return max(needed, step + 1)
    return None


@dataclass
class Tracker:
    """The last verdicts seen, and every change so far (in order)."""

    findings: dict[str, str] = field(default_factory=dict)
    hypotheses: dict[str, str] = field(default_factory=dict)
    answer: str | None = None
    changes: list[Change] = field(default_factory=list)
    confirmed_at: dict[str, int | None] = field(default_factory=dict)  # finding → step first confirmed

    def update(self, diag: Diagnosis) -> list[Change]:
        """The changes since the last diagnosis: the answer, every hypothesis whose verdict is new
        or changed, and every finding that became confirmed or stopped being confirmed."""
        step = last_step(diag)
        new: list[Change] = []
        ans = diag.run_info.get("oscillation") or {}
        a = str(ans.get("answer", "not-measured"))
        if a != (self.answer or "not-measured"):  # everything starts not measured: no line for that
            new.append(Change("answer", "bug-or-noise", self.answer, a, step, str(ans.get("summary", ""))))
            self.answer = a
        for h in diag.hypotheses:
            old = self.hypotheses.get(h.id)
            if h.verdict != (old or "not-measured"):
                new.append(Change("hypothesis", h.id, old, h.verdict, step, h.summary.en))
                self.hypotheses[h.id] = h.verdict
        for f in diag.findings:
            old = self.findings.get(f.id, "not-measured")
            self.findings[f.id] = f.status
            if f.status == old or "confirmed" not in (f.status, old):
                continue  # only confirmations and their reversals are announced (and alerted)
            if f.status == "confirmed" and f.id not in self.confirmed_at:
                self.confirmed_at[f.id] = step
            new.append(Change("finding", f.id, old, f.status, step, f.summary.en, f.severity, f))
        self.changes.extend(new)
        return new
