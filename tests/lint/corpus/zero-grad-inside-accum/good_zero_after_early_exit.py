# A loop that skips to the next micro-batch unless this is the last one: the step and the
# zero_grad after the `continue` run once per accumulation window, not on every micro-step.
import torch


def train(model, loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum != 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
