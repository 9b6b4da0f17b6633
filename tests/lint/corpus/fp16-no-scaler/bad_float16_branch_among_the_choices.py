# The same helper with "amp" among the choices: the float16 branch runs with no scaler.
import argparse
from contextlib import suppress

import torch


def get_autocast(precision):
    if precision == "amp":
        return torch.cuda.amp.autocast()  # expect: fp16-no-scaler
    elif precision == "amp_bf16":
        return lambda: torch.cuda.amp.autocast(dtype=torch.bfloat16)
    return suppress


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", choices=["amp", "amp_bf16", "fp32"], default="fp32")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4)
    autocast = get_autocast(args.precision)
    with autocast():
        loss = model(torch.randn(2, 4)).sum()
    loss.backward()
