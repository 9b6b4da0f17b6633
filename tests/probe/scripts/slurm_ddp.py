"""A DDP loop written for `srun python slurm_ddp.py`: rank and world size from Slurm's variables
(SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), rendezvous from MASTER_ADDR/MASTER_PORT (as users set
them in the sbatch script). RANK and WORLD_SIZE are not set."""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from toy import FEATURES, make_model

rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
local_rank = int(os.environ["SLURM_LOCALID"])
optimizer_lr = 0.05
model = make_model()  # built before the process group: the probe's first events come earlier
dist.init_process_group("gloo", rank=rank, world_size=world)
model = DDP(model)
optimizer = torch.optim.SGD(model.parameters(), lr=optimizer_lr)
gen = torch.Generator().manual_seed(rank)
for step in range(3):
    x = torch.randn(4, FEATURES, generator=gen)
    loss = F.mse_loss(model(x), x.sum(dim=1, keepdim=True))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
