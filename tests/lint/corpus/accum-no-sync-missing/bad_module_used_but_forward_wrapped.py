# `model.module` is read only to save a checkpoint; the micro-steps run the DDP model itself, so
# every backward all-reduces and nothing skips the sync.
import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, optimizer, loader, accum, local_rank):
    model = DistributedDataParallel(model, device_ids=[local_rank])
    for step, batch in enumerate(loader):
        loss = model(batch).mean() / accum
        loss.backward()  # expect: accum-no-sync-missing
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            raw = model.module
            torch.save(raw.state_dict(), "ckpt.pt")
