# A flag that starts False and is raised by a test that is not about the rank (a logging interval),
# or raised on every rank in the distributed branch too: every rank logs its own loss.
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, model, loader, optimizer):
    verbose = False
    if args.log_every > 0:
        verbose = True
    chatty = False
    if dist.is_available() and args.local_rank != -1:
        chatty = True
    else:
        chatty = True
    model = DDP(model)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        if verbose:
            print(float(loss))
        if chatty:
            print(float(loss))
