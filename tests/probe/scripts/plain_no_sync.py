"""Plain DDP loop with gradient accumulation through `no_sync()` (gloo, CPU)."""

import contextlib
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, LR, make_dataset, make_model, save_params

dist.init_process_group("gloo")
model = DDP(make_model())
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % ACCUM == 0
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.mse_loss(model(x), y) / ACCUM
            loss.backward()
        if last:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()

if dist.get_rank() == 0 and len(sys.argv) > 1:
    save_params(model.module, sys.argv[1])
dist.destroy_process_group()
