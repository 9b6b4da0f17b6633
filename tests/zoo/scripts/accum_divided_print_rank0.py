# zoo: expect=rank0-only-loss-log
# Accumulation with no_sync, correct numerics; rank 0 prints loss.item() after the division by
# the accumulation count (a value 4x smaller than the loss, and rank 0's alone).
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

ACC = 4
dist.init_process_group("gloo")
r = dist.get_rank()
torch.manual_seed(0)
m = DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.Adam(m.parameters(), lr=2e-3)
gen = torch.Generator().manual_seed(31 + r)
proj = torch.randn(8, 3, generator=torch.Generator().manual_seed(2))
for it in range(20):
    for k in range(ACC):
        xb = torch.randn(6, 8, generator=gen)
        yb = (xb @ proj).argmax(-1)
        if k < ACC - 1:
            with m.no_sync():
                loss = nn.CrossEntropyLoss()(m(xb), yb) / ACC
                loss.backward()
        else:
            loss = nn.CrossEntropyLoss()(m(xb), yb) / ACC
            loss.backward()
    opt.step()
    opt.zero_grad()
    if r == 0:
        print(f"it {it} loss={loss.item():.5f}")
dist.destroy_process_group()
