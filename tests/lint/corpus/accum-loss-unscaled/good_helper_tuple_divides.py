# The helper's tuple carries the divided loss first (and the raw one only for logging, in a
# position the caller does not backprop); a tuple whose shape differs between returns is unknown.
import torch


def main(model, criterion, optimizer, loader, accum):
    def compute(x, y):
        raw = criterion(model(x), y)
        return raw / accum, raw

    def uneven(x, y):
        if x is None:
            return criterion(model(x), y)
        return criterion(model(x), y), 0

    for i, (x, y) in enumerate(loader):
        loss, logged = compute(x, y)
        loss.backward()
        extra, _ = uneven(x, y)
        extra.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    return torch.tensor(0)
