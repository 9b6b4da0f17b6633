"""The likely causes of a difference between two runs: one spec per cause (docs/compare.md, "Causes").

A spec names its key (the compare JSON's ``causes[].key``), the catalog hypothesis it belongs to
(``core.catalog.HYPOTHESES``: what to read in the report of the run it points at), its score (the
rank: higher is listed first; :data:`SERIOUS_SCORE` or more makes the difference "not explained"),
the rule in one sentence (docs/compare.md's table is generated from it) and the function that
finds it in two run summaries. A setting that differs is one small spec: its function is
:func:`setting_differs` (compared as it is) or :func:`setting_factor` (a number off by a factor). The table :data:`CAUSES` is in rank order; ties keep that order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddp_doctor.compare.policy import LABELS, MIXED_PRECISION, STORED
from ddp_doctor.core.catalog import Lang, Text, hypotheses_of
from ddp_doctor.core.findings import SEVERITY_ORDER, jsonable, text_fields

if TYPE_CHECKING:
    from ddp_doctor.compare.analysis import RunSummary

# A cause scored this or more means the difference is not explained by the batch size alone.
SERIOUS_SCORE = 35
# Settings that differ by more than this factor are listed as a possible cause.
SETTING_FACTOR = 1.5
# A finding confirmed in one run: ruled out in the other scores the spec's score; not measured (or
# inconclusive) there scores this much less (it may affect both runs); + this per severity level.
NOT_RULED_OUT_LESS = 40
PER_SEVERITY = 10
AXIS = {"samples": Text("samples", "样本"), "tokens": Text("tokens", "token"), "steps": Text("steps", "步")}


@dataclass
class Cause:
    """A likely cause of the difference, said in both languages (the JSON's ``summary``/``summary_zh``)."""

    key: str
    score: int
    summary: Text
    evidence: dict[str, Any] = field(default_factory=dict)
    hypothesis: str = ""  # the catalog hypothesis (set from the spec)

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "score": self.score, "hypothesis": self.hypothesis, "summary": self.summary}
        return {**text_fields(out, "summary"), "evidence": jsonable(self.evidence)}


@dataclass(frozen=True)
class Pair:
    """What the cause functions read: the two run summaries and the comparison's own verdicts."""

    a: RunSummary
    b: RunSummary
    axis: str  # "samples" | "tokens" | "steps"
    noise_explained: bool | None
    ratio: dict[str, Any]  # observed / predicted / batch_only noise ratios, log_se
    same_order: bool | None
    order_compared: int


@dataclass(frozen=True)
class CauseSpec:
    key: str
    hypothesis: str  # a catalog hypothesis ID; "" for finding causes (they take their finding's)
    score: int
    rule: str  # when it is listed, for people (docs/compare.md)
    find: Callable[[Pair, CauseSpec], list[Cause]]


def _v(x: float | None) -> str:
    return "?" if x is None else f"{x:.6g}"


def _factor(va: float | None, vb: float | None) -> float | None:
    if va is None or vb is None or va <= 0 or vb <= 0:
        return None
    return max(va / vb, vb / va)


def setting_differs(
    attr: str, says: Text, unset: Text | None = None
) -> Callable[[Pair, CauseSpec], list[Cause]]:
    """The cause function of a setting compared as it is: listed when ``attr`` of the two run summaries
    differs. ``says`` is a format over ``{a}`` and ``{b}`` in both languages (the values; a false one
    shown as ``unset``'s word in that language); the evidence is ``{"a": ..., "b": ...}``."""

    def find(p: Pair, spec: CauseSpec) -> list[Cause]:
        va, vb = getattr(p.a, attr), getattr(p.b, attr)
        if va == vb:
            return []

        def shown(v: Any, lang: Lang) -> Any:
            return unset.get(lang) if unset is not None and not v else v

        return [
            Cause(
                spec.key,
                spec.score,
                Text(
                    says.en.format(a=shown(va, "en"), b=shown(vb, "en")),
                    says.get("zh").format(a=shown(va, "zh"), b=shown(vb, "zh")),
                ),
                {"a": va, "b": vb},
            )
        ]

    return find


def policy_differs(keys: tuple[str, ...], head: Text) -> Callable[[Pair, CauseSpec], list[Cause]]:
    """The cause function of a group of policy settings (compare/policy.py): listed when any of
    ``keys`` is known in both runs and differs; ``head`` starts the list of what differs, each as
    "<label> A <a>, B <b>". Settings a run did not record are not compared."""

    def find(p: Pair, spec: CauseSpec) -> list[Cause]:
        differs = {
            k: (p.a.policy.get(k), p.b.policy.get(k))
            for k in keys
            if None not in (p.a.policy.get(k), p.b.policy.get(k)) and p.a.policy.get(k) != p.b.policy.get(k)
        }
        if not differs:
            return []
        return [
            Cause(
                spec.key,
                spec.score,
                Text(
                    head.en + "; ".join(f"{LABELS[k].en} A {a}, B {b}" for k, (a, b) in differs.items()),
                    head.get("zh")
                    + "；".join(f"{LABELS[k].get('zh')}：A {a}，B {b}" for k, (a, b) in differs.items()),
                ),
                {k: {"a": a, "b": b} for k, (a, b) in differs.items()},
            )
        ]

    return find


def setting_factor(attr: str, says: Text) -> Callable[[Pair, CauseSpec], list[Cause]]:
    """The cause function of a positive number: listed when run A's and B's ``attr`` differ by a factor
    of at least :data:`SETTING_FACTOR`. ``says`` is a format over ``{a}``, ``{b}`` and the factor
    ``{f}`` in both languages; the evidence is the three and the threshold."""

    def find(p: Pair, spec: CauseSpec) -> list[Cause]:
        va, vb = getattr(p.a, attr), getattr(p.b, attr)
        f = _factor(va, vb)
        if f is None or f < SETTING_FACTOR:
            return []
        return [
            Cause(
                spec.key,
                spec.score,
                says.fill(a=va, b=vb, f=f),
                {"a": va, "b": vb, "factor": f, "threshold": SETTING_FACTOR},
            )
        ]

    return find


def _findings(p: Pair, spec: CauseSpec) -> list[Cause]:
    a, b = p.a, p.b
    out = []
    for fid in sorted(set(a.confirmed) ^ set(b.confirmed)):
        where = "b" if fid in b.confirmed else "a"
        sev = (b.confirmed | a.confirmed)[fid]
        run, other = (b, a) if where == "b" else (a, b)
        other_status = other.statuses.get(fid)
        if other_status == "ruled-out":
            score, en_tail, zh_tail = spec.score, f"ruled out in {other.label}", f"在 {other.label} 中已排除"
        else:  # not measured (or inconclusive) in the other run: it may be present in both
            score = spec.score - NOT_RULED_OUT_LESS
            en_tail = f"{other_status or 'absent'} in {other.label}, so it may affect both runs"
            zh_tail = f"在 {other.label} 中为 {other_status or '缺失'}，可能两个运行都受影响"
        hyps = hypotheses_of(fid)
        out.append(
            Cause(
                f"finding:{fid}",
                score + PER_SEVERITY * (2 - SEVERITY_ORDER[sev]),
                Text(
                    f"{fid} ({sev}) is confirmed in run {where.upper()} ({run.label}); {en_tail}",
                    f"{fid}（{sev}）在运行 {where.upper()}（{run.label}）中被确认；{zh_tail}",
                ),
                {"finding": fid, "run": where, "severity": sev, "other_run_status": other_status},
                hypothesis=hyps[0] if hyps else "",
            )
        )
    return out


def _warmup(p: Pair, spec: CauseSpec) -> list[Cause]:
    # The schedule itself differs when its warmup differs in optimizer steps; the same schedule per
    # optimizer step covers more data per step with a larger batch — that part is the batch change.
    a, b, axis = p.a, p.b, p.axis
    f = _factor(a.warmup_steps, b.warmup_steps)
    no_warmup = {a.warmup_steps, b.warmup_steps} >= {0} and a.warmup_steps != b.warmup_steps
    if not (
        (f is not None and f >= SETTING_FACTOR)
        or (no_warmup and None not in (a.warmup_steps, b.warmup_steps))
    ):
        return []
    return [
        Cause(
            spec.key,
            spec.score,
            Text(
                f"the lr warmup ends after {a.warmup_steps} optimizer steps in A and {b.warmup_steps} in B "
                f"({_v(a.warmup_samples)} vs {_v(b.warmup_samples)} {axis} consumed)",
                f"学习率预热在 A 中于 {a.warmup_steps} 个优化步后结束，在 B 中于 {b.warmup_steps} 个"
                f"（已消耗{AXIS[axis].zh} {_v(a.warmup_samples)} 与 {_v(b.warmup_samples)}）",
            ),
            {
                "a_steps": a.warmup_steps,
                "b_steps": b.warmup_steps,
                f"a_{axis}": a.warmup_samples,
                f"b_{axis}": b.warmup_samples,
                "threshold": SETTING_FACTOR,
            },
        )
    ]


def _optimizer(p: Pair, spec: CauseSpec) -> list[Cause]:
    a, b = p.a, p.b
    if not (a.optimizer and b.optimizer and a.optimizer != b.optimizer):
        return []
    keys = [k for k in a.optimizer if a.optimizer.get(k) != b.optimizer.get(k)]
    return [
        Cause(
            spec.key,
            spec.score,
            Text(
                "optimizer settings differ: "
                + ", ".join(f"{k} {a.optimizer.get(k)} vs {b.optimizer.get(k)}" for k in keys),
                "优化器设置不同："
                + "，".join(f"{k} {a.optimizer.get(k)} 与 {b.optimizer.get(k)}" for k in keys),
            ),
            {"a": a.optimizer, "b": b.optimizer},
        )
    ]


def _noise_unexplained(p: Pair, spec: CauseSpec) -> list[Cause]:
    if p.noise_explained is not False:
        return []
    ratio = p.ratio
    return [
        Cause(
            spec.key,
            spec.score,
            Text(
                f"run B is {ratio['observed']:.3g}× as noisy as A from step to step; its batch and measured "
                f"per-sample variance predict {ratio['predicted']:.3g}×",
                f"B 的逐步噪声是 A 的 {ratio['observed']:.3g} 倍；按批量和实测单样本方差预测为 {ratio['predicted']:.3g} 倍",
            ),
            ratio,
        )
    ]


def _batch_size(p: Pair, spec: CauseSpec) -> list[Cause]:
    a, b = p.a, p.b
    f = _factor(a.batch_samples, b.batch_samples)
    if f is None or f < 1 + 1e-9 or p.noise_explained is False:
        return []
    return [
        Cause(
            spec.key,
            spec.score,
            Text(
                f"the global batch differs {f:.3g}× (A {a.batch_samples:g}, B {b.batch_samples:g} samples per "
                "optimizer step): a different noise level, fewer optimizer steps per sample and a schedule "
                "stretched over more samples are expected",
                f"全局批量相差 {f:.3g} 倍（每个优化步 A {a.batch_samples:g}、B {b.batch_samples:g} 个样本）："
                "噪声水平不同、每个样本对应的优化步更少、调度覆盖更多样本，这是预期的",
            ),
            {"a": a.batch_samples, "b": b.batch_samples, "factor": f},
        )
    ]


def _data_order(p: Pair, spec: CauseSpec) -> list[Cause]:
    if p.same_order is not False:
        return []
    n = p.order_compared
    return [
        Cause(
            spec.key,
            spec.score,
            Text(
                f"the runs see a different sample order (first {n} indices of the first epoch differ)",
                f"两个运行的样本顺序不同（第一个 epoch 的前 {n} 个索引不同）",
            ),
            {"indices_compared": n},
        )
    ]


_F = f"{SETTING_FACTOR:g}×"
CAUSES: tuple[CauseSpec, ...] = (
    CauseSpec(
        "finding:<id>",
        "",
        100,
        f"a warning/error finding confirmed in one run and ruled out in the other; not measured there: "
        f"{NOT_RULED_OUT_LESS} less (it may affect both); + {PER_SEVERITY} per severity level",
        _findings,
    ),
    CauseSpec(
        "scheduler-steps",
        "lr-schedule",
        90,
        f"scheduler steps per optimizer step differ ≥ {_F}",
        setting_factor(
            "sched_per_step",
            Text(
                "the lr scheduler steps {a:g}× per optimizer step in A and {b:g}× in B: the schedule runs "
                "{f:.3g}× faster in one run",
                "学习率调度器每个优化步在 A 中步进 {a:g} 次，在 B 中 {b:g} 次：其中一个运行的调度快 {f:.3g} 倍",
            ),
        ),
    ),
    CauseSpec(
        "warmup", "lr-schedule", 80, f"warmup differs ≥ {_F} in optimizer steps, or one run has none", _warmup
    ),
    CauseSpec(
        "lr-peak",
        "lr-schedule",
        75,
        f"peak lr differs ≥ {_F}",
        setting_factor(
            "lr_peak",
            Text(
                "peak lr {a:.3g} in A and {b:.3g} in B ({f:.3g}×)",
                "峰值学习率 A 为 {a:.3g}，B 为 {b:.3g}（{f:.3g} 倍）",
            ),
        ),
    ),
    CauseSpec(
        "loss-normalization",
        "loss-normalization",
        70,
        "the loss is normalised differently",
        setting_differs(
            "loss_source",
            Text("the loss is normalised differently: A {a}, B {b}", "损失的归一化方式不同：A {a}，B {b}"),
        ),
    ),
    CauseSpec("optimizer", "optimizer", 60, "optimizer settings differ", _optimizer),
    CauseSpec(
        "precision",
        "precision",
        50,
        "precision (autocast dtype, GradScaler) differs",
        setting_differs("precision", Text("precision differs: A {a}, B {b}", "精度设置不同：A {a}，B {b}")),
    ),
    CauseSpec(
        "mixed-precision",
        "precision",
        50,
        "the mixed-precision policy differs: the dtype parameters are computed in or gradients are "
        "averaged in (FSDP1 MixedPrecision, FSDP2 MixedPrecisionPolicy, DDP mixed precision or a "
        "compression comm hook, DeepSpeed fp16/bf16), FSDP2 output_dtype / cast_forward_inputs",
        policy_differs(MIXED_PRECISION, Text("the mixed-precision policy differs: ", "混合精度策略不同：")),
    ),
    CauseSpec(
        "dtypes",
        "precision",
        50,
        "the dtypes parameters, optimizer tensors, gradients or buffers are stored in differ "
        "(a model cast to bfloat16, fp32 master copies, upcast gradients)",
        policy_differs(STORED, Text("stored dtypes differ: ", "存储类型不同：")),
    ),
    CauseSpec(
        "sharding",
        "ddp-config",
        25,
        "the sharding differs (DDP or one process, FSDP1 strategy, FSDP2 reshard_after_forward, "
        "DeepSpeed ZeRO stage): the same arithmetic up to the reduction order, named so a precision "
        "setting that comes with it is not missed",
        policy_differs(("sharding",), Text("", "")),
    ),
    CauseSpec(
        "compile",
        "compile",
        35,
        "torch.compile on in one run only, or differently",
        setting_differs(
            "compiled",
            Text("torch.compile differs: A {a}, B {b}", "torch.compile 不同：A {a}，B {b}"),
            Text("off", "关"),
        ),
    ),
    CauseSpec(
        "clipping",
        "spikes-clipping",
        40,
        "the clipping threshold max_norm differs",
        setting_differs(
            "clip_max_norm",
            Text("gradient clipping differs: max_norm A {a}, B {b}", "梯度裁剪不同：max_norm A {a}，B {b}"),
        ),
    ),
    CauseSpec(
        "noise-unexplained",
        "batch-size",
        45,
        "step-to-step noise not explained by the batch sizes",
        _noise_unexplained,
    ),
    CauseSpec(
        "batch-size",
        "batch-size",
        20,
        "the global batch differs (and the noise is as it predicts): a different noise level, fewer "
        "optimizer steps per sample, a schedule stretched over more samples are expected",
        _batch_size,
    ),
    CauseSpec("data-order", "data-order", 15, "a different sample order in the first epoch", _data_order),
)


def find_causes(pair: Pair) -> list[Cause]:
    """Every cause the specs find for ``pair``, highest score first (ties in :data:`CAUSES` order)."""
    causes: list[Cause] = []
    for spec in CAUSES:
        for cause in spec.find(pair, spec):
            if spec.hypothesis:
                cause.hypothesis = spec.hypothesis
            causes.append(cause)
    causes.sort(key=lambda c: -c.score)
    return causes


def markdown_table() -> str:
    """docs/compare.md's cause table (gendocs)."""
    lines = ["| key | hypothesis | score | listed when |", "|---|---|---|---|"]
    for spec in sorted(CAUSES, key=lambda s: -s.score):
        lines.append(f"| `{spec.key}` | {spec.hypothesis or 'the finding’s'} | {spec.score} | {spec.rule} |")
    return "\n".join(lines) + "\n"
