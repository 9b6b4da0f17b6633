# open_flamingo style: the float16 autocast sits under `precision == "amp"`, a value the
# `--precision` option's choices leave out, so the branch never runs.
import argparse
from contextlib import suppress

import torch


def get_autocast(precision):
    if precision == "amp":
        return torch.cuda.amp.autocast()
    elif precision == "amp_bf16":
        return lambda: torch.cuda.amp.autocast(dtype=torch.bfloat16)
    return suppress


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", choices=["amp_bf16", "fp32"], default="fp32")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4)
    autocast = get_autocast(args.precision)
    with autocast():
        loss = model(torch.randn(2, 4)).sum()
    loss.backward()
