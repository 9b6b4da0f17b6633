# The forward already ran inside no_sync(): the second no_sync around backward is redundant, not late.
import torch

def train(model, loader, opt, accum):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for i, (x, y) in enumerate(loader):
        if (i + 1) % accum != 0:
            with model.no_sync():
                loss = model(x, y) / accum
            with model.no_sync():
                loss.backward()
        else:
            loss = model(x, y) / accum
            loss.backward()
            opt.step()
            opt.zero_grad()
