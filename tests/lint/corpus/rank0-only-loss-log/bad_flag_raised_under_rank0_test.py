# vilbert `train_tasks.py` style: a flag starts False and is raised only inside `if rank == 0:`
# (and in the single-process `else` of `if local_rank != -1:`): `if default_gpu:` is a rank-0 test.
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, model, loader, optimizer):
    default_gpu = False
    if dist.is_available() and args.local_rank != -1:
        rank = dist.get_rank()
        if rank == 0:
            default_gpu = True
    else:
        default_gpu = True
    model = DDP(model)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        if default_gpu:
            print(float(loss))  # expect: rank0-only-loss-log
