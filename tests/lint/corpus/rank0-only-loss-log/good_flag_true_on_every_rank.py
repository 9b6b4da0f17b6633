# A logging flag that is `True` on every rank unless an option narrows it: not a rank-0 test.
import torch
import torch.distributed as dist


def train(model, loader, optimizer, quiet):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    is_logger = True
    if quiet:
        is_logger = dist.get_rank() == 0
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        if is_logger:
            print(loss.item())
