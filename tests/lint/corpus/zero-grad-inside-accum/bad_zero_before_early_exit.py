# The zero_grad runs before the early exit, so on every micro-step: each micro-batch wipes the
# gradients of the previous ones and the step sees only the last.
import torch


def train(model, loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()  # expect: zero-grad-inside-accum
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum != 0:
            continue
        optimizer.step()
