"""CI fixture in the style of nanoGPT's train.py (written for this repository, not copied):
module-level config, torchrun, gradient accumulation with `require_backward_grad_sync` set before
each forward, AdamW(0.9, 0.95) with a linear warmup and cosine decay, clipping, and the loss printed
by the master process only: rank 0's last micro-batch loss times the accumulation count.
"""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

vocab, block, batch_size = 32, 16, 4
grad_accum = 4
max_iters, warmup_iters, lr_max, lr_min = 40, 40, 3e-3, 3e-4

init_process_group(backend="gloo")
rank = int(os.environ["RANK"])
master = rank == 0
torch.manual_seed(1337 + rank)

tokens = (torch.arange(20_000) % vocab).long()
noise = torch.randint(0, vocab, tokens.shape)
tokens = torch.where(torch.rand(tokens.shape) < 0.2, noise, tokens)


def get_batch():
    ix = torch.randint(len(tokens) - block - 1, (batch_size,))
    x = torch.stack([tokens[i : i + block] for i in ix])
    y = torch.stack([tokens[i + 1 : i + 1 + block] for i in ix])
    return x, y


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(vocab, 32)
        self.mix = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
        self.head = nn.Linear(32, vocab)

    def forward(self, x, y):
        h = self.emb(x)
        logits = self.head(h + self.mix(h))
        return F.cross_entropy(logits.view(-1, vocab), y.view(-1))


model = DDP(TinyLM())
optimizer = torch.optim.AdamW(model.parameters(), lr=lr_max, betas=(0.9, 0.95), weight_decay=0.1)


def get_lr(it):
    if it < warmup_iters:
        return lr_max * (it + 1) / warmup_iters
    ratio = (it - warmup_iters) / max(1, max_iters - warmup_iters)
    return lr_min + 0.5 * (1 + math.cos(math.pi * ratio)) * (lr_max - lr_min)


for it in range(max_iters):
    for group in optimizer.param_groups:
        group["lr"] = get_lr(it)
    for micro in range(grad_accum):
        model.require_backward_grad_sync = micro == grad_accum - 1
        x, y = get_batch()
        loss = model(x, y) / grad_accum
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if master:
        lossf = loss.item() * grad_accum
        print(f"iter {it}: loss {lossf:.4f}")

destroy_process_group()
