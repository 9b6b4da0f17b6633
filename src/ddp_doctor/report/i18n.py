"""Report words beyond the catalog's shared UI words, in English and Chinese."""

from __future__ import annotations

from ddp_doctor.analysis.figures import NOISE_BAND_SIGMAS
from ddp_doctor.core.catalog import UI, Lang, Text

WORDS: dict[str, Text] = {
    **UI,
    "title": Text("ddp-doctor report", "ddp-doctor 诊断报告"),
    "run": Text("Run", "运行"),
    "world_size": Text("World size", "进程数"),
    "nodes": Text("Nodes", "节点"),
    "optimizer_steps": Text("Optimizer steps", "优化步数"),
    "micro_steps": Text("Micro-steps per optimizer step", "每个优化步的微步数"),
    "effective_batch": Text("Effective batch (measured)", "有效批量（实测）"),
    "interventions": Text("Interventions (--set)", "干预（--set）"),
    "rollups": Text("Read raw (rollup path)", "按原始记录读取（汇总路径）"),
    # windows read in part: their first steps (the even sample), last (a spike's history) or the
    # steps around a spike's marks
    "in_part": Text(
        "{head} read for their first steps (the even sample), {tail} for their last (a spike's history), "
        "{span} for the steps around a spike's marks",
        "{head} 个只读前若干步（均匀样本），{tail} 个只读末尾若干步（尖峰的历史），{span} 个只读尖峰标记前后的步",
    ),
    "samples": Text("samples", "样本"),
    "tokens": Text("tokens", "token"),
    "gns": Text("Gradient noise scale B_simple", "梯度噪声尺度 B_simple"),
    "noise_band": Text("Loss noise: observed / predicted std", "损失噪声：观测 / 预测标准差"),
    "problems": Text("Data quality (problems met while reading)", "数据质量（读取时发现的问题）"),
    "in_progress": Text("run still in progress (or launcher killed)", "运行仍在进行（或启动器被终止）"),
    "exit_code": Text("Exit code", "退出码"),
    "stopped_by": Text("Stopped by", "停止者"),
    "status": Text("Status", "状态"),
    "severity": Text("Severity", "严重程度"),
    "guess": Text("The guess", "猜测"),
    "confirmed_findings": Text("Confirmed findings", "已确认的发现"),
    "other_findings": Text("Measured and absent, or not measured", "已测量但不存在，或未测量"),
    "none_confirmed": Text("No finding confirmed.", "没有已确认的发现。"),
    "plots": Text("Plots", "图表"),
    "plot_loss": Text(
        "Loss: global (all-reduced) vs per-rank local, spikes and noise band",
        "损失：全局（all-reduce 后）与各 rank 本地损失、尖峰与噪声带",
    ),
    "plot_lr": Text("Learning rate", "学习率"),
    "plot_scale": Text("GradScaler loss scale", "GradScaler 损失缩放系数"),
    "plot_grad": Text(
        "Gradient norm: local (mean over ranks) vs global", "梯度范数：本地（各 rank 平均）与全局"
    ),
    "plot_gns": Text(
        "B_simple over time (50-step window) and the effective batch",
        "B_simple 随时间变化（50 步窗口）与有效批量",
    ),
    "plot_ratio": Text("Update / parameter norm ratio per layer group", "各层组的更新量 / 参数范数之比"),
    "plot_overlap": Text(
        "Data overlap: share of micro-batches identical across ranks",
        "数据重叠：各 rank 之间相同微批次的比例",
    ),
    "no_data": Text("not recorded", "未记录"),
    "global": Text("global", "全局"),
    "rank": Text("rank", "rank"),
    "spike": Text("spike", "尖峰"),
    "band": Text(f"trend ± {NOISE_BAND_SIGMAS:g}σ predicted", f"趋势 ± {NOISE_BAND_SIGMAS:g}σ（预测）"),
    "local": Text("local", "本地"),
    "local_rms": Text("local (RMS over ranks)", "本地（各 rank 均方根）"),
    "show_all": Text("Show ruled-out and not-measured findings", "显示已排除和未测量的发现"),
    "step": Text("optimizer step", "优化步"),
    "steps": Text("steps", "步"),
    "effective_batch_line": Text("effective batch", "有效批量"),
}


def w(key: str, lang: Lang) -> str:
    return WORDS[key].get(lang)
