"""A DDP training loop with gradient accumulation, done right — copy this into your own script.

    torchrun --nproc_per_node 4 examples/ddp_done_right.py

Plain PyTorch + Hugging Face, no ddp-doctor import; the model and data are stand-ins (a tiny
random LLaMA, random variable-length byte documents) so the file runs anywhere. Every line that
forum threads get wrong is marked `# RIGHT:` with the reason.
"""

from __future__ import annotations

import contextlib
import math
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from transformers import LlamaConfig, LlamaForCausalLM

MICRO_BATCH, ACCUM, SEQ, STEPS, EPOCHS = 2, 8, 128, 10, 2
LR, WARMUP, MIN_LR_RATIO, CLIP = 3e-4, 3, 0.1, 1.0
IGNORE = -100


def make_data(n: int = 512) -> TensorDataset:
    g = torch.Generator().manual_seed(0)  # RIGHT: identical dataset on every rank
    ids = torch.randint(32, 96, (n, SEQ + 1), generator=g)
    lengths = torch.randint(16, SEQ + 2, (n,), generator=g)
    labels = ids[:, 1:].clone()
    labels[torch.arange(SEQ)[None, :] >= (lengths[:, None] - 1)] = IGNORE  # padding does not count
    return TensorDataset(ids[:, :-1], labels)


def lr_at(step: int) -> float:
    if step < WARMUP:
        return (step + 1) / WARMUP
    t = min(1.0, (step - WARMUP) / max(1, STEPS - WARMUP))
    return MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * t))


def main() -> None:
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = (
        torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        if torch.cuda.is_available()
        else torch.device("cpu")
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=256,
            hidden_size=128,
            intermediate_size=352,
            num_hidden_layers=4,
            num_attention_heads=4,
            attn_implementation="sdpa",
        )
    ).to(device)
    ddp = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    data = make_data()
    sampler = DistributedSampler(data, shuffle=True, seed=0, drop_last=True)  # RIGHT: each rank its own shard
    loader = DataLoader(data, batch_size=MICRO_BATCH, sampler=sampler, drop_last=True)

    step = 0
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)  # RIGHT: a new shuffle every epoch
        batches = iter(loader)
        while step < STEPS:
            micro = [next(batches, None) for _ in range(ACCUM)]
            if micro[-1] is None:
                break
            optimizer.zero_grad(set_to_none=True)  # RIGHT: once per optimizer step, not per micro-batch
            # RIGHT: normalise by the valid tokens of the WHOLE step (all micro-batches, all ranks),
            # so short documents do not get extra weight; x world because DDP averages over ranks.
            tokens = torch.stack([(y != IGNORE).sum() for _, y in micro]).sum().float().to(device)
            dist.all_reduce(tokens)
            ce_total = torch.zeros((), device=device)
            for i, (x, y) in enumerate(micro):
                x, y = x.to(device), y.to(device)
                last = i == ACCUM - 1
                # RIGHT: no_sync wraps forward AND backward of non-final micro-steps.
                with ddp.no_sync() if not last else contextlib.nullcontext():
                    logits = ddp(input_ids=x).logits  # RIGHT: through the DDP wrapper, never model(...)
                    ce = F.cross_entropy(
                        logits.float().flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum"
                    )
                    (ce * world / tokens).backward()
                ce_total += ce.detach()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)  # (with fp16: scaler.unscale_ first)
            optimizer.step()
            scheduler.step()  # RIGHT: once per optimizer step
            dist.all_reduce(ce_total)  # RIGHT: log the global loss, not rank 0's
            if rank == 0:
                print(f"step {step} loss {float(ce_total / tokens):.4f} lr {scheduler.get_last_lr()[0]:.2e}")
            step += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
