"""rank0-only-loss-log: one canonical bug (a rank-local loss printed under a rank-0 test), varied one
dimension at a time — the rank test, the loss's name, how the value flows to the log, the log call —
and every value flow crossed with every log call. Each variant is the same bug."""

BASE = """\
import os
import logging
import numpy as np
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.utils.tensorboard import SummaryWriter
import wandb
from tqdm import tqdm

logger = logging.getLogger(__name__)


class AverageMeter:
    def __init__(self):
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def main(args, dataset, net):
    dist.init_process_group("nccl")
{RANKDEF}
    model = DDP(net.cuda(), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    writer = SummaryWriter("runs")
    meter = AverageMeter()
    running = 0.0
    losses = []
    pbar = tqdm(loader)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            out = model(x.cuda())
            {LOSS} = criterion(out, y.cuda())
            optimizer.zero_grad()
            {LOSS}.backward()
            optimizer.step()
{FLOW}
            if {GUARD}:
                {SINK}
"""
RANKDEFS = {
    "get_rank": ("    rank = dist.get_rank()\n    local_rank = int(os.environ['LOCAL_RANK'])", "rank == 0"),
    "dist_call": ("    local_rank = int(os.environ['LOCAL_RANK'])", "dist.get_rank() == 0"),
    "local_rank": ("    local_rank = int(os.environ['LOCAL_RANK'])", "local_rank == 0"),
    "args_local_rank_in": ("    local_rank = args.local_rank", "args.local_rank in [-1, 0]"),
    "not_rank": ("    rank = dist.get_rank()\n    local_rank = rank % 8", "not rank"),
    "master_flag": (
        "    local_rank = int(os.environ['LOCAL_RANK'])\n    master_process = dist.get_rank() == 0",
        "master_process",
    ),
    "env_rank": ("    local_rank = int(os.environ['LOCAL_RANK'])", "int(os.environ['RANK']) == 0"),
    "gpu": ("    gpu = int(os.environ['LOCAL_RANK'])\n    local_rank = gpu", "gpu == 0"),
    "is_main": ("    local_rank = int(os.environ['LOCAL_RANK'])", "is_main_process()"),
    "rank_in_tuple": ("    rank = dist.get_rank()\n    local_rank = rank", "rank in (0, -1)"),
    "args_rank": ("    args.rank = dist.get_rank()\n    local_rank = args.rank", "args.rank == 0"),
    "step_and_rank": ("    rank = dist.get_rank()\n    local_rank = rank", "step % 10 == 0 and rank == 0"),
}
LOSSES = [
    "loss",
    "total_loss",
    "train_loss",
    "l",
    "loss_val",
    "batch_loss",
    "cur_loss",
    "objective",
    "cost",
    "nll",
    "ce_loss",
    "lossv",
    "loss_total",
    "tr_loss",
    "acc_loss",
    "accumulated_loss",
    "loss_sum",
    "mse",
    "loss_value",
]
FLOWS = {
    "item": ("            v = {LOSS}.item()", "v"),
    "float": ("            v = float({LOSS})", "v"),
    "detach": ("            v = {LOSS}.detach()", "v"),
    "direct_item": ("", "{LOSS}.item()"),
    "direct": ("", "{LOSS}"),
    "data": ("            v = {LOSS}.data", "v"),
    "meter": ("            meter.update({LOSS}.item(), x.size(0))", "meter.avg"),
    "running": ("            running += {LOSS}.item()", "running / (step + 1)"),
    "list_mean": ("            losses.append({LOSS}.item())", "np.mean(losses)"),
    "dict": ("            logs = {{'loss': {LOSS}.item()}}", "logs"),
    "cpu_numpy": ("            v = {LOSS}.detach().cpu().numpy()", "v"),
    "round": ("            v = round({LOSS}.item(), 4)", "v"),
}
SINKS = {
    "print_f": "print(f'epoch {epoch} step {step} loss {@V@:.4f}')",
    "print_args": "print('loss', @V@)",
    "print_format": "print('loss: {:.4f}'.format(@V@))",
    "print_pct": "print('loss: %.4f' % @V@)",
    "logger_info": "logger.info(f'loss {@V@}')",
    "logger_pct": "logger.info('loss %.4f', @V@)",
    "logging_info": "logging.info('step %d loss %s', step, @V@)",
    "writer": "writer.add_scalar('train/loss', @V@, step)",
    "wandb": "wandb.log({'train/loss': @V@}, step=step)",
    "pbar_postfix": "pbar.set_postfix(loss=@V@)",
    "pbar_desc": "pbar.set_description(f'loss {@V@:.3f}')",
}
CANON = ("get_rank", "loss", "item", "print_f")


def render(rd, loss, flow, sink):
    rdef, guard = RANKDEFS[rd]
    fl, v = FLOWS[flow]
    fl = fl.format(LOSS=loss)
    v = v.format(LOSS=loss)
    if flow == "dict" and sink not in ("wandb",):
        v = 'logs["loss"]'
    if flow == "dict" and sink == "wandb":
        s = "wandb.log(logs, step=step)"
    else:
        s = SINKS[sink].replace("@V@", v)
    src = (
        BASE.replace("{RANKDEF}", rdef)
        .replace("{LOSS}", loss)
        .replace("{FLOW}", fl)
        .replace("{GUARD}", guard)
        .replace("{SINK}", s)
    )
    if rd == "is_main":
        src += "\n\ndef is_main_process():\n    return dist.get_rank() == 0\n"
    return src


def _cases() -> dict[str, tuple[str, bool, dict[str, str], str]]:
    rd, loss, flow, sink = CANON
    picks = [(f"guard-{x}", (x, loss, flow, sink)) for x in RANKDEFS]
    picks += [(f"loss-{x}", (rd, x, flow, sink)) for x in LOSSES]
    picks += [(f"flow-{x}-sink-{y}", (rd, loss, x, y)) for x in FLOWS for y in SINKS]
    out = {
        name: ("rank0-only-loss-log", True, {"train.py": render(*args)}, "train.py") for name, args in picks
    }
    # the name that holds the value on its way to the log (``accumulated_loss = loss.item()``)
    for held in HELD:
        source = render(rd, loss, "item", sink).replace("v = loss.item()", f"{held} = loss.item()")
        source = source.replace("{v:", "{" + held + ":")
        out[f"held-{held}"] = ("rank0-only-loss-log", True, {"train.py": source}, "train.py")
    return out


HELD = [
    "lossv",
    "running_loss",
    "accumulated_loss",
    "accum_loss",
    "acc_loss",
    "avg_loss",
    "total_loss",
    "epoch_loss",
    "batch_loss",
    "train_loss",
    "cur_loss",
    "loss_value",
    "l",
]


C = _cases()
