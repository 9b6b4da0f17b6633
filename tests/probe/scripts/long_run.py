"""Many small DDP steps: the SIGKILL test kills it while it runs."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from toy import FEATURES, make_model

STEPS = 100_000

dist.init_process_group("gloo")
model = DDP(make_model())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(4, FEATURES)
for step in range(STEPS):
    loss = F.mse_loss(model(x), x.sum(1, keepdim=True))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
