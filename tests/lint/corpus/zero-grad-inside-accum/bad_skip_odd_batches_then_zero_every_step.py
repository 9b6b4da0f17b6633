# A batch of the wrong size is skipped with `continue`; that `%` is no accumulation guard, so the
# zero_grad after it still runs on every micro-step of the accumulation.
import torch


def train(model, loader, accum, world_size):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        if x.size(0) % world_size != 0:
            continue
        optimizer.zero_grad()  # expect: zero-grad-inside-accum
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
