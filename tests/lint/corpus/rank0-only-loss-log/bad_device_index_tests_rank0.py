import os

import torch
from tqdm import tqdm


def train(model, loader, optimizer):
    # the GPU index a process drives is its local rank: ``device == 0`` is rank 0
    device = int(os.environ["LOCAL_RANK"])
    model = torch.nn.parallel.DistributedDataParallel(model.to(device), device_ids=[device])
    with tqdm(loader, disable=(device != 0)) as bar:
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            bar.set_postfix(loss=loss.item())  # expect: rank0-only-loss-log
