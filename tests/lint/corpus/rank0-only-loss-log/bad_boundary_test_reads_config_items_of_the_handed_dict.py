# CosyVoice/wenet style: the step's `info_dict` carries the loss dict and the configuration; a log on
# the accumulation boundary (`info_dict["train_engine"] == ...`) is periodic, not an alarm on the loss.
import torch
from torch.utils.tensorboard import SummaryWriter


def log_per_step(writer, info_dict):
    loss_dict = info_dict["loss_dict"]
    if writer is not None:
        if info_dict["train_engine"] == "torch_ddp" and (info_dict["batch_idx"] + 1) % info_dict["accum_grad"] == 0:
            for k, v in loss_dict.items():
                writer.add_scalar(k, v, info_dict["step"])  # expect: rank0-only-loss-log


def train(model, loader, optimizer, info_dict):
    torch.distributed.init_process_group("nccl")
    writer = SummaryWriter() if torch.distributed.get_rank() == 0 else None
    model = torch.nn.parallel.DistributedDataParallel(model)
    for batch_idx, x in enumerate(loader):
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        info_dict["batch_idx"] = batch_idx
        info_dict["loss_dict"] = {"loss": loss.item()}
        log_per_step(writer, info_dict)
