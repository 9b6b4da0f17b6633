"""The catalog's model: bilingual :class:`Text`, a finding's :class:`Threshold`, :class:`FindingSpec`
and :class:`HypothesisSpec`, and the small constructors the spec modules of this package use.

Everything ddp-doctor knows about one finding is on its spec: texts, threshold, whether it is a
harmless fact, a symptom or a cause (and how direct a cause), which findings cause it (its fix names
theirs first), and what an imported log must hold to feed it. Code elsewhere reads these fields
instead of keeping its own tables keyed by finding ID.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")


class Text(str):
    """A string in every supported language: catalog texts, finding and verdict summaries.

    A Text *is* its English string (``str`` subclass), so code that logs, compares or searches a
    summary keeps working; renderers ask for a language with :meth:`get`, which falls back to
    English where no translation was written.
    """

    zh: str

    def __new__(cls, en: str, zh: str = "") -> Text:
        text = super().__new__(cls, en)
        text.zh = zh
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Text, (self.en, self.zh))

    @property
    def en(self) -> str:
        return str.__str__(self)

    def get(self, lang: Lang = "en") -> str:
        return self.zh if lang == "zh" and self.zh else self.en

    def fill(self, **values: Any) -> Text:
        """Both languages formatted with the same ``values`` (``str.format`` would return English)."""
        return Text(self.en.format(**values), self.get("zh").format(**values))

    def joining(self, parts: Iterable[Text], sep: Text) -> Text:
        """``self`` followed by ``parts`` separated by ``sep``, language by language."""
        items = list(parts)
        return Text(
            self.en + sep.en.join(p.en for p in items),
            self.get("zh") + sep.get("zh").join(p.get("zh") for p in items),
        )

    def __add__(self, other: str) -> Text:
        if isinstance(other, Text):
            return Text(self.en + other.en, self.get("zh") + other.get("zh"))
        return Text(self.en + other, self.get("zh") + other)


@dataclass(frozen=True)
class Threshold:
    """When a finding is confirmed: the rule, its source, and the numbers the check uses.

    ``rule`` is a format string over ``values`` ("> {share:.0%} of steps ...") in both languages,
    so the sentence in
    the docs and in a finding's evidence and the constant in the check are one definition:
    checks read the numbers with :func:`limit`.
    """

    rule: Text
    source: str
    values: Mapping[str, float] = field(default_factory=dict)

    def text(self, lang: Lang = "en") -> str:
        return self.rule.get(lang).format(**self.values)


@dataclass(frozen=True)
class FindingSpec:
    """What one finding ID means, which evidence it carries and how to fix it."""

    id: str
    runtime: bool  # produced by `ddp-doctor run` + `report`
    lint: bool  # produced by `ddp-doctor lint`
    severity: Severity  # severity when confirmed
    title: Text
    meaning: Text
    evidence: Text  # which numbers a finding of this ID must carry
    fix: Text
    threshold: Threshold | None = None
    # confirmed but not a cause of instability ("set, but numerically harmless", "this is just
    # noise"): its hypothesis counts it as absent (analysis/diagnose.py verdict)
    harmless: bool = False
    # the logged fields an imported log must hold for this finding (rundir/sources: `imported.fields`);
    # None: only `ddp-doctor run` measures it (analysis/reduced.py)
    log_fields: tuple[str, ...] | None = None
    # why a log cannot feed it, when that is more than "the logs hold only ..."
    not_from_logs: Text | None = None
    # describes the oscillation itself (a spike, a loss above its start), not a cause of it: the
    # report's first line names the causes first (analysis/answer.py)
    symptom: bool = False
    # how directly this finding, confirmed, explains an oscillation, lower first: causes acting on the
    # update (a wrong gradient, replicas apart) ~10-70, a too-large step ~80-120, the data and the loss
    # weighting ~130-180; None: ranked after every ranked one (analysis/answer.py), then catalog order
    cause_rank: int | None = None
    # findings that, confirmed in the same run, cause this one, most direct first: this finding's fix
    # then names their fixes first (analysis/fixes.py)
    caused_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class HypothesisSpec:
    """One guess from the forum thread and the findings that decide it."""

    id: str
    guess: Text
    findings: tuple[str, ...]


def spec(
    id: str,
    kinds: str,
    severity: Severity,
    title: Text,
    meaning: Text,
    evidence: Text,
    fix: Text,
    threshold: Threshold | None = None,
    harmless: bool = False,
    log_fields: tuple[str, ...] | None = None,
    not_from_logs: Text | None = None,
    symptom: bool = False,
    cause_rank: int | None = None,
    caused_by: tuple[str, ...] = (),
) -> FindingSpec:
    """A spec; ``kinds``: "R" runtime, "L" lint, or both."""
    return FindingSpec(
        id=id,
        runtime="R" in kinds,
        lint="L" in kinds,
        severity=severity,
        title=title,
        meaning=meaning,
        evidence=evidence,
        fix=fix,
        threshold=threshold,
        harmless=harmless,
        log_fields=log_fields,
        not_from_logs=not_from_logs,
        symptom=symptom,
        cause_rank=cause_rank,
        caused_by=caused_by,
    )


def rule(rule: Text, source: str, **values: float) -> Threshold:
    """A threshold: its rule in both languages (format strings over ``values``) and its source."""
    return Threshold(rule, source, values)


def hypothesis(id: str, guess: Text, findings: str) -> HypothesisSpec:
    """A hypothesis from its guess and the comma-separated IDs of the findings deciding it."""
    ids = tuple(f.strip() for f in findings.split(","))
    return HypothesisSpec(id=id, guess=guess, findings=ids)
