"""A trivial single-process script for ablate's CLI test: SGD on a noisy linear regression."""

import torch

torch.manual_seed(0)
w_true = torch.randn(8, 1)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(20):
    x = torch.randn(16, 8)
    loss = torch.nn.functional.mse_loss(model(x), x @ w_true + 0.1 * torch.randn(16, 1))
    loss.backward()
    opt.step()
    opt.zero_grad()
