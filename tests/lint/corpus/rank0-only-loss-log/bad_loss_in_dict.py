import torch
import torch.nn.functional as F

def train(rank, model, loader, optimizer, writer):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stats = {}
        stats["loss"] = loss.item()
        if rank == 0:
            writer.add_scalars("train", stats, step)  # expect: rank0-only-loss-log
