"""A non-distributed training loop (no process group, no DDP): cross-entropy under bfloat16
autocast, and one parameter the optimizer holds that never gets a gradient."""

import torch
import torch.nn.functional as F
from toy import FEATURES, make_model

torch.manual_seed(0)
model = torch.nn.Sequential(make_model(), torch.nn.Linear(1, 3))
unused = torch.nn.Linear(2, 2)
optimizer = torch.optim.Adam([*model.parameters(), *unused.parameters()], lr=1e-2)
for step in range(3):
    x = torch.randn(4, FEATURES)
    y = torch.tensor([0, 1, 2, -100])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
