# The same shapes without the bug: an `if` chain that offers bfloat16 and float32 only, handed to
# an autocast switched on by the dtype itself; and a float16 choice next to a GradScaler enabled
# for float16.
import argparse

import torch


def train_one_epoch(model, loader, optimizer, dtype):
    for x, y in loader:
        with torch.cuda.amp.autocast(dtype=dtype, enabled=dtype != torch.float32):
            loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    args = parser.parse_args()
    if args.dtype == "bfloat16":
        dtype = torch.bfloat16
    else:
        dtype = torch.float32
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    train_one_epoch(model, [], optimizer, dtype=dtype)
