"""DDP + GradScaler (fp32 gradients on CPU) with unscale_ then clipping; one step overflows."""

import contextlib
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, LR, make_dataset, make_model, save_params

OVERFLOW_STEP = 1  # the loss of this optimizer step's first micro-batch is made infinite
MAX_NORM = 5.0

dist.init_process_group("gloo")
model = DDP(make_model())
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=100)

step = 0
for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % ACCUM == 0
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.mse_loss(model(x), y) / ACCUM
            if step == OVERFLOW_STEP and i % ACCUM == 0:
                loss = loss * float("inf")
            scaler.scale(loss).backward()
        if last:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            step += 1

if dist.get_rank() == 0 and len(sys.argv) > 1:
    save_params(model.module, sys.argv[1])
dist.destroy_process_group()
