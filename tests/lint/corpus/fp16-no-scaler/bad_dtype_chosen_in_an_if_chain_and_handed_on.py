# 4M-style FSDP trainer: the dtype is picked by an `if`/`elif` chain on `--dtype` (float16 among
# its choices) and handed to the epoch function, whose autocast is switched on by the dtype itself
# (`enabled=dtype != torch.float32`); no (Sharded)GradScaler anywhere. Config-gated by
# `--dtype in ('float16', 'fp16')`.
import argparse

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train_one_epoch(model, loader, optimizer, dtype=torch.float32):
    for x, y in loader:
        with torch.cuda.amp.autocast(dtype=dtype, enabled=dtype != torch.float32):  # expect: fp16-no-scaler
            loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16", choices=["float16", "bfloat16", "float32", "fp16"])
    args = parser.parse_args()
    if args.dtype in ["float16", "fp16"]:
        dtype = torch.float16
    elif args.dtype == "bfloat16":
        dtype = torch.bfloat16
    else:
        dtype = torch.float32
    model = FSDP(torch.nn.Linear(4, 4))
    optimizer = torch.optim.AdamW(model.parameters())
    train_one_epoch(model, [], optimizer, dtype=dtype)
