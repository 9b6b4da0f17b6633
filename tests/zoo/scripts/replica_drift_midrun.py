# zoo: expect=replica-divergence; allow=grad-spike
# From step 10 on, rank 1 applies an extra in-place "weight decay" to its own copy of the model
# (a rank-conditional code path gone wrong): the replicas drift apart while DDP keeps syncing grads.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = DDP(nn.Sequential(nn.Linear(24, 48), nn.SiLU(), nn.Linear(48, 1)))
opt = torch.optim.SGD(net.parameters(), lr=0.02)
gen = torch.Generator().manual_seed(rank + 7)
w = torch.randn(24, 1, generator=torch.Generator().manual_seed(1))
for step in range(40):
    x = torch.randn(16, 24, generator=gen)
    y = x @ w
    loss = nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 1 and step >= 10:
        with torch.no_grad():
            for p in net.module.parameters():
                p.mul_(1 - 1e-3)
    if step % 10 == 0:
        lv = loss.detach()
        dist.all_reduce(lv)
        if rank == 0:
            print(f"[{step}] loss: {lv.item() / dist.get_world_size():.5f}")
dist.destroy_process_group()
