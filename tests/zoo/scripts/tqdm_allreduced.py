# zoo: expect=none
# Iteration-based loop with a tqdm progress bar on rank 0; the postfix shows the loss after an
# all-reduce (the mean over ranks).
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 12)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
total_iters = 30
bar = tqdm(range(total_iters), disable=rank != 0, mininterval=0)
for it in bar:
    batch = torch.randn(16, 12, generator=g)
    recon = model(batch)
    loss = nn.functional.smooth_l1_loss(recon, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    shown = loss.detach().clone()
    dist.all_reduce(shown)
    bar.set_postfix(loss=f"{shown.item() / world:.4f}")
bar.close()
dist.destroy_process_group()
