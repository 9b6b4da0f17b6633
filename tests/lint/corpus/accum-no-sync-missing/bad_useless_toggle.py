# The sync flag exists but is always True, and no_sync() wraps only the optimizer step: nothing
# skips the all-reduce of the micro-steps.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, accum):
    model = DDP(model)
    for i, (x, y) in enumerate(loader):
        model.require_backward_grad_sync = True
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()  # expect: accum-no-sync-missing
        if (i + 1) % accum == 0:
            with model.no_sync():
                pass
            optimizer.step()
            optimizer.zero_grad()
