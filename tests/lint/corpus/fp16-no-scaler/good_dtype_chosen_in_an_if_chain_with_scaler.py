# A float16 choice in an `if` chain, scaled by a GradScaler that is on exactly when the dtype is
# float16 (4M's DDP trainer through its NativeScaler).
import argparse

import torch


def train_one_epoch(model, loader, optimizer, scaler, dtype):
    for x, y in loader:
        with torch.cuda.amp.autocast(dtype=dtype, enabled=dtype != torch.float32):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args()
    if args.dtype == "float16":
        dtype = torch.float16
    else:
        dtype = torch.bfloat16
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.cuda.amp.GradScaler(enabled=dtype == torch.float16)
    train_one_epoch(model, [], optimizer, scaler, dtype=dtype)
