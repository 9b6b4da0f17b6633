import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, batches, accum):
    ddp_model = DDP(model)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for micro, batch in enumerate(batches):
        last = micro == accum - 1
        with contextlib.nullcontext() if last else ddp_model.no_sync():
            loss = ddp_model(batch).mean() / accum
            loss.backward()
    opt.step()
    opt.zero_grad()
