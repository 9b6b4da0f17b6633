"""Text (en/zh through core Text) and JSON of an equivalence comparison (docs/equivalence.md)."""

from __future__ import annotations

import json
import math

from ddp_doctor.core.catalog import FINDINGS, Lang, Text
from ddp_doctor.core.terminal import safe
from ddp_doctor.equiv.stages import MERGED_RANK
from ddp_doctor.equiv.verdict import UNEXPLAINED, DataReason, Equivalence, StageResult

T: dict[str, Text] = {
    "title": Text("ddp-doctor equiv: {a} (world {wa}) vs {b} (world {wb}), steps {steps}",
                  "ddp-doctor equiv：{a}（world {wa}）对比 {b}（world {wb}），步 {steps}"),
    "equivalent": Text("verdict: EQUIVALENT — every stage of every step within the tolerance, same data",
                       "结论：等价 — 每一步的每个阶段都在容差之内，数据相同"),
    "break": Text("verdict: BREAK at step {step}, stage {stage} — {n} of {m} compared differ",
                  "结论：在第 {step} 步的 {stage} 阶段不等价 — {m} 个比较中 {n} 个不同"),
    "undecided": Text("verdict: UNDECIDED — {why}", "结论：无法判定 — {why}"),
    "why_data": Text("the data differs at step {step}: no stage after it is judged",
                     "第 {step} 步的数据不同：之后的阶段不作判断"),
    "why_none": Text("no step carries fingerprints in both runs", "两次运行没有共同的带指纹的步"),
    "tolerance": Text("tolerance (step {step}): {formula}", "容差（第 {step} 步）：{formula}"),
    "data_same": Text("data step {step}: the same global batch ({n} samples by hash) in both runs",
                      "数据 第 {step} 步：两次运行的全局批次相同（按哈希 {n} 个样本）"),
    "data_differs": Text("data step {step}: the global batches differ — {oa} of A's {na} samples not in B, {ob} of B's {nb} not in A",
                         "数据 第 {step} 步：全局批次不同 — A 的 {na} 个样本中 {oa} 个不在 B 中，B 的 {nb} 个中 {ob} 个不在 A 中"),
    "data_subset": Text("data step {step}: the {nb} samples of B's ranks read are all in A's global batch of {na} (a subset: B's other ranks not read)",
                        "数据 第 {step} 步：B 已读取 rank 的 {nb} 个样本都在 A 的 {na} 个样本的全局批次中（子集：B 的其他 rank 未读取）"),
    "data_none": Text("data step {step}: not recorded (no model input seen)", "数据 第 {step} 步：未记录（未看到模型输入）"),
    "data_why": Text("  why the data differs:", "  数据不同的原因："),
    "clip": Text("clip step {step}: {clip}", "裁剪 第 {step} 步：{clip}"),
    "header": Text("step  stage     status        worst/τ     τ          differing", "步    阶段      状态          最大/τ      τ          不同"),
    "ratio": Text("ratio B/A: ×{ratio:.6g}{factor}", "比值 B/A：×{ratio:.6g}{factor}"),
    "causes": Text("catalog causes: {causes}", "目录原因：{causes}"),
    "unexplained": Text("unexplained ratio (no catalog cause matches)", "无法解释的比值（目录中无匹配原因）"),
    "param": Text("  {name}{rank}: {component} {ref:.9g} (A) vs {got:.9g} (B), {rel:.3g} of its scale",
                  "  {name}{rank}：{component} {ref:.9g}（A）对比 {got:.9g}（B），为其尺度的 {rel:.3g}"),
    "sampler": Text(
        "Why the global batch is the same set: DistributedSampler permutes the dataset with one generator "
        "seeded by seed + epoch, whatever the world size, and gives rank r the positions r, r+W, r+2W, … of "
        "that permutation; with the same global batch per step (micro-batch × accum × W), step k consumes "
        "the positions [kB, (k+1)B) at every world size — the same samples, split differently. It stops "
        "being the same set when the dataset length is not a multiple of W (drop_last=False pads by "
        "repeating indices, drop_last=True drops the tail), with a custom or per-rank-seeded sampler, or "
        "when the global batch differs; the sample hashes above check it per step.",
        "为什么全局批次是同一组样本：DistributedSampler 用以 seed + epoch 为种子的同一个生成器打乱数据集，与 world size 无关，"
        "并把该排列的第 r, r+W, r+2W, … 个位置分给 rank r；每步全局批次（micro-batch × accum × W）相同时，第 k 步在任何 "
        "world size 下都消耗排列的 [kB, (k+1)B) 位置 — 同样的样本，只是划分不同。当数据集长度不是 W 的倍数（drop_last=False "
        "会重复索引填充，drop_last=True 会丢弃尾部）、使用自定义或按 rank 设种子的采样器、或全局批次不同时，就不再是同一组；"
        "上面的样本哈希逐步检查了这一点。",
    ),
}  # fmt: skip
# why the global batches differ (verdict.DataReason codes); {run} is "A" or "B"
REASONS: dict[str, Text] = {
    "no_sampler": Text(
        "run {run} (world {world}) iterated no DistributedSampler: its order comes from a custom, per-rank-seeded or plain sampler (a world-1 DataLoader(shuffle=True) permutes with another generator)",
        "运行 {run}（world {world}）没有迭代 DistributedSampler：其顺序来自自定义、按 rank 设种子或普通的采样器（world 1 的 DataLoader(shuffle=True) 用另一个生成器打乱）",
    ),
    "custom_sampler": Text(
        "run {run} uses {type}, a DistributedSampler subclass: its order need not be the base class's",
        "运行 {run} 使用 DistributedSampler 的子类 {type}：其顺序不一定与基类相同",
    ),
    "sampler_setting": Text(
        "the samplers' {setting} differ: A {a}, B {b}", "两个采样器的 {setting} 不同：A {a}，B {b}"
    ),
    "padding": Text(
        "run {run}: the dataset length {n} is not a multiple of W = {w}, and drop_last=False pads each epoch by repeating the first {padded} indices",
        "运行 {run}：数据集长度 {n} 不是 W = {w} 的倍数，drop_last=False 在每个 epoch 重复前 {padded} 个索引来填充",
    ),
    "drop_tail": Text(
        "run {run}: the dataset length {n} is not a multiple of W = {w}, and drop_last=True drops {dropped} samples of each epoch",
        "运行 {run}：数据集长度 {n} 不是 W = {w} 的倍数，drop_last=True 每个 epoch 丢弃 {dropped} 个样本",
    ),
    "epoch_length": Text(
        "an epoch holds {a} samples in A and {b} in B: the epoch boundary (and the next permutation) falls at another step",
        "一个 epoch 在 A 中有 {a} 个样本，在 B 中有 {b} 个：epoch 边界（以及下一个排列）落在不同的步",
    ),
    "repeats": Text(
        "run {run} step {step}: {repeats} sample(s) occur twice in the global batch (padding, or ranks reading overlapping data)",
        "运行 {run} 第 {step} 步：全局批次中有 {repeats} 个样本出现两次（填充，或各 rank 读取了重叠的数据）",
    ),
    "batch_size": Text(
        "the global batches differ in size: A {a}, B {b} samples (set micro-batch × accum × W equal)",
        "全局批次大小不同：A {a}、B {b} 个样本（应使 micro-batch × accum × W 相等）",
    ),
    "unexplained": Text(
        "no sampler setting explains it: per-rank random augmentation, a sampler the probe does not see, or data read outside the sampler",
        "没有采样器设置能解释：按 rank 的随机数据增强、探针看不到的采样器，或不经采样器读取的数据",
    ),
}
STATUS: dict[str, Text] = {
    "equal": Text("equal", "相同"),
    "differs": Text("DIFFERS", "不同"),
    "not recorded": Text("not recorded", "未记录"),
    "not judged": Text("not judged", "未判断"),
}


def _t(key: str, lang: Lang, **values: object) -> str:
    return T[key].get(lang).format(**values)


def _cause(cause: str, lang: Lang) -> str:
    if cause == UNEXPLAINED:
        return T["unexplained"].get(lang)
    spec = FINDINGS.get(cause)
    return f"{cause} ({spec.title.get(lang)})" if spec is not None else cause


def _reason(r: DataReason, lang: Lang) -> str:
    return safe(REASONS[r.code].get(lang).format(run=r.run, **r.values))


def _row(s: StageResult, lang: Lang) -> str:
    ratio = (
        "-"
        if s.status in ("not judged", "not recorded") or not s.tolerance
        else f"{s.worst / s.tolerance:.3g}"
    )
    tau = f"{s.tolerance:.3g}" if s.tolerance else "-"
    differing = f"{s.differing}/{s.compared}" if s.compared else "-"
    return f"{s.step:<5} {s.stage:<9} {STATUS[s.status].get(lang):<13} {ratio:<11} {tau:<10} {differing}"


def summary_lines(e: Equivalence, lang: Lang = "en") -> list[str]:
    """The verdict and, for a break, its stage, ratio, causes and parameters (also `compare`'s section)."""
    lines: list[str] = []
    if e.verdict == "equivalent":
        lines.append(_t("equivalent", lang))
    elif e.verdict == "break" and e.first_break is not None:
        fb = e.first_break
        lines.append(_t("break", lang, step=fb.step, stage=fb.stage, n=fb.differing, m=fb.compared))
    else:
        why = (
            _t("why_data", lang, step=e.data_differs_at)
            if e.data_differs_at is not None
            else _t("why_none", lang)
        )
        lines.append(_t("undecided", lang, why=why))
        if e.data_reasons:
            lines.append(_t("data_why", lang))
            lines += [f"    - {_reason(r, lang)}" for r in e.data_reasons]
    if e.first_break is not None:
        fb = e.first_break
        if fb.note:
            lines.append(f"  {safe(fb.note)}")
        if fb.ratio is not None:
            factor = f" = {', '.join(fb.factor)}" if fb.factor else ""
            lines.append("  " + _t("ratio", lang, ratio=fb.ratio, factor=factor))
        lines.append("  " + _t("causes", lang, causes="; ".join(_cause(c, lang) for c in fb.causes)))
        for diff in fb.shown:
            rank = (
                " [mean over ranks]"
                if diff.rank is None
                else " [shards merged]"
                if diff.rank == MERGED_RANK
                else f" [rank {diff.rank}]"
            )
            lines.append(
                _t("param", lang, name=safe(diff.name), rank=rank, component=diff.component,
                   ref=diff.reference, got=diff.value, rel=diff.relative)
            )  # fmt: skip
    return lines


def render_text(e: Equivalence, lang: Lang = "en") -> str:
    lines = [
        _t("title", lang, a=safe(e.run_a), wa=e.world_a, b=safe(e.run_b), wb=e.world_b,
           steps=", ".join(map(str, e.steps)) or "-"),
    ]  # fmt: skip
    lines += summary_lines(e, lang)
    lines.append("")
    for step in e.steps[:1]:
        lines.append(_t("tolerance", lang, step=step, formula=e.tolerances[step].formula()))
    for d in e.data:
        if d.status == "same":
            lines.append(_t("data_same", lang, step=d.step, n=d.samples_a))
        elif d.status == "differs":
            lines.append(
                _t(
                    "data_differs",
                    lang,
                    step=d.step,
                    oa=d.only_a,
                    na=d.samples_a,
                    ob=d.only_b,
                    nb=d.samples_b,
                )
            )
        elif d.status == "subset":
            lines.append(_t("data_subset", lang, step=d.step, nb=d.samples_b, na=d.samples_a))
        else:
            lines.append(_t("data_none", lang, step=d.step))
    for c in e.clip:
        parts = [
            f"{name} max_norm {v['max_norm']:.4g}, total norm {v['total_norm']:.6g} → coef {v['coef']:.6g}"
            for name, v in (("A", c["a"]), ("B", c["b"]))
            if v is not None
        ]
        lines.append(_t("clip", lang, step=c["step"], clip="; ".join(parts)))
    lines += ["", _t("header", lang)]
    lines += [_row(s, lang) for s in e.stages]
    lines += ["", T["sampler"].get(lang)]
    for p in e.problems:
        lines.append(f"note: {safe(p)}")
    return "\n".join(lines) + "\n"


def render_json(e: Equivalence) -> str:
    return json.dumps(e.to_json(), indent=2, allow_nan=False, default=_default)


def _default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
