# minimind: float16 whenever --dtype is anything but "bfloat16", and nothing scales the loss; the
# gate names the option's value (--dtype != 'bfloat16'), not "--dtype false".
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", type=str, default="bfloat16")
args = parser.parse_args()
dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float16
autocast_ctx = torch.cuda.amp.autocast(dtype=dtype)  # expect: fp16-no-scaler


def train(model, loader, optimizer):
    for x, y in loader:
        with autocast_ctx:
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
