import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def am_first():
    return torch.distributed.get_rank() == 0


def main_worker(gpu, args, model, loader, optimizer, writer):
    model = DDP(model, device_ids=[gpu])
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if gpu == 0:
            print("loss", loss.item())  # expect: rank0-only-loss-log
        if am_first():
            writer.add_scalar("loss", loss.item())  # expect: rank0-only-loss-log
        if args.rank != 0:
            continue
        print(f"loss {loss.item():.3f}")  # expect: rank0-only-loss-log
