"""FSDP2 (`fully_shard`) on gloo CPU with accumulation through `set_requires_gradient_sync`."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, LR, make_dataset, make_model

dist.init_process_group("gloo")
model = make_model()
fully_shard(model[0])
fully_shard(model[2])
fully_shard(model)
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % ACCUM == 0
        model.set_requires_gradient_sync(last)
        loss = F.mse_loss(model(x), y) / ACCUM
        loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()

full = {name: p.full_tensor().detach().clone() for name, p in model.named_parameters()}
if dist.get_rank() == 0 and len(sys.argv) > 1:
    torch.save(full, sys.argv[1])
dist.destroy_process_group()
