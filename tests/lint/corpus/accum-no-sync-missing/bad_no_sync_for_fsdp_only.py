# open_lm: the micro-steps skip the sync only when the model is an FSDP module
# (`if isinstance(model, FSDP) and ...: maybe_no_sync = model.no_sync`); when the same loop runs a
# DDP model the context stays `nullcontext`, so every micro-batch all-reduces.
from contextlib import nullcontext

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel


def build(model, args, device):
    if args.fsdp:
        return FSDP(model)
    return DistributedDataParallel(model, device_ids=[device])


def train_step(model, optimizer, inputs, args):
    per_batch = inputs.shape[0] // args.accum_freq
    for ii in range(args.accum_freq):
        maybe_no_sync = nullcontext
        if isinstance(model, FSDP) and ii != args.accum_freq - 1:
            maybe_no_sync = model.no_sync
        with maybe_no_sync():
            chunk = inputs[ii * per_batch : (ii + 1) * per_batch]
            loss = model(chunk).mean() / args.accum_freq
            loss.backward()  # expect: accum-no-sync-missing
    optimizer.step()
    optimizer.zero_grad()
    return torch.zeros(())
