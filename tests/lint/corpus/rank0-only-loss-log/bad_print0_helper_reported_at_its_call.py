# modded-nanogpt style: `print0` prints (and appends to the log file) on the master only; the loss is
# reported where it is handed to `print0`, not again inside `print0`'s body.
import os

import torch

master_process = int(os.environ.get("RANK", 0)) == 0
logfile = "log.txt"


def print0(s, logonly=False):
    if master_process:
        with open(logfile, "a") as f:
            if not logonly:
                print(s)
            f.write(s + "\n")


def train(model, loader, optimizer):
    torch.distributed.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step, x in enumerate(loader):
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        train_loss = loss.detach()
        print0(f"step:{step} train_loss:{train_loss.item():.4f}")  # expect: rank0-only-loss-log
