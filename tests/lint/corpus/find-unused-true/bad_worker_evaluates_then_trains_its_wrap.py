import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(gpu, args, build_model, loader, optimizer):
    model = build_model(args)
    model = DDP(model.cuda(), device_ids=[gpu], find_unused_parameters=True)  # expect: find-unused-true
    model.eval()
    for data, label in loader:
        loss = torch.nn.functional.cross_entropy(model(data), label)
        loss.backward()
        optimizer.step()
