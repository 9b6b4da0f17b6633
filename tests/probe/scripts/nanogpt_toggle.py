"""nanoGPT-style loop: `model.require_backward_grad_sync` toggled before each forward, AdamW,
warmup via LambdaLR, clip_grad_norm_ before the step, a DataLoader worker process."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, make_dataset, make_model, save_params

WARMUP = 2
MAX_NORM = 1.0

dist.init_process_group("gloo")
model = DDP(make_model())
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, eps=1e-8, betas=(0.9, 0.95), weight_decay=0.1)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / WARMUP))

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        model.require_backward_grad_sync = (i + 1) % ACCUM == 0
        loss = F.mse_loss(model(x), y) / ACCUM
        loss.backward()
        if (i + 1) % ACCUM == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)

if dist.get_rank() == 0 and len(sys.argv) > 1:
    save_params(model.module, sys.argv[1])
dist.destroy_process_group()
