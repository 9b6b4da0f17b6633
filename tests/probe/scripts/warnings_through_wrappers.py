"""Torch warnings with stacklevel=2 from functions the probe wraps (no probe code): each must name
the line below that calls the function, as it does without the probe."""

import torch
import torch.nn.functional as F

scaler = torch.amp.GradScaler("cuda")  # WARNS-HERE-1 (CUDA is not available: disabled)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = F.mse_loss(model(torch.randn(8, 4)), torch.randn(8))  # WARNS-HERE-2 (broadcast)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
