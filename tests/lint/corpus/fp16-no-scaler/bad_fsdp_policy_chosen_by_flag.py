# LlamaGen-style FSDP1 trainer: the float16 policy and the float16 autocast are chosen from tables
# keyed by `--mixed-precision`; no (Sharded)GradScaler. Config-gated by `--mixed-precision == 'fp16'`.
import argparse
import contextlib

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision


def setup(model, args):
    return FSDP(
        model,
        mixed_precision=MixedPrecision(  # expect: fp16-no-scaler
            param_dtype={"fp32": torch.float, "bf16": torch.bfloat16, "fp16": torch.float16}[args.mixed_precision],
        ),
    )


def train(model, loader, optimizer, args):
    for x, y in loader:
        optimizer.zero_grad()
        with {
            "bf16": torch.cuda.amp.autocast(dtype=torch.bfloat16),
            "fp16": torch.cuda.amp.autocast(dtype=torch.float16),  # expect: fp16-no-scaler
            "fp32": contextlib.nullcontext(),
        }[args.mixed_precision]:
            loss = model(x, y)
        loss.backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()


parser = argparse.ArgumentParser()
parser.add_argument("--mixed-precision", choices=["fp32", "bf16", "fp16"], default="bf16")
