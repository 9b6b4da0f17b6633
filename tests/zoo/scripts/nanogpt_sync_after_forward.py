# zoo: expect=no-sync-after-forward; allow=replica-divergence
# nanoGPT-style loop where the sync flag is set after the forward (too late: DDP reads it in
# forward), so the last micro-step does not all-reduce. Loss averaged over ranks before printing.
import math
import os
import time

import torch
import torch.distributed
import torch.nn as nn
from torch.distributed import destroy_process_group, init_process_group
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

block_size = 32
vocab_size = 96
batch_size = 4
gradient_accumulation_steps = 4
max_iters = 24
learning_rate = 3e-3
warmup_iters = 4

ddp_rank = int(os.environ["RANK"])
ddp_world_size = int(os.environ["WORLD_SIZE"])
init_process_group(backend="gloo")
master_process = ddp_rank == 0
torch.manual_seed(1337 + ddp_rank)

data = torch.randint(0, vocab_size, (20000,), generator=torch.Generator().manual_seed(0))


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, 64)
        self.wpe = nn.Embedding(block_size, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.ln_f = nn.LayerNorm(64)
        self.lm_head = nn.Linear(64, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        x = self.ln_f(self.blocks(x, mask=mask, is_causal=True))
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / warmup_iters
    ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    return 0.1 * learning_rate + 0.5 * (1 + math.cos(math.pi * ratio)) * 0.9 * learning_rate


model = DDP(TinyGPT())  # DDP broadcasts rank 0's initial weights
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)

X, Y = get_batch()
t0 = time.time()
for iter_num in range(max_iters):
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        X, Y = get_batch()
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    t1 = time.time()
    dt, t0 = t1 - t0, t1
    lossf = loss.detach() * gradient_accumulation_steps
    torch.distributed.all_reduce(lossf)
    lossf = lossf.item() / ddp_world_size
    if master_process:
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms")

destroy_process_group()
