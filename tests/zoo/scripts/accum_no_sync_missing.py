# zoo: expect=accum-no-sync-missing
# Epoch-based loop with gradient accumulation, but every micro-batch all-reduces (no no_sync):
# correct numerics, wasted communication. Epoch loss logged with `logging`, all-reduced.
import logging

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")

ACCUM = 4


def make_data(n=1024):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, 20, generator=g)
    labels = (x[:, :5].sum(1) > 0).long()
    return TensorDataset(x, labels)


def run():
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 48), nn.Tanh(), nn.Linear(48, 2))
    model = nn.parallel.DistributedDataParallel(model)
    ds = make_data()
    sampler = DistributedSampler(ds, seed=5)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)
    optim = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(2):
        sampler.set_epoch(epoch)
        total = torch.zeros(())
        for i, (inputs, targets) in enumerate(loader):
            loss = loss_fn(model(inputs), targets) / ACCUM
            loss.backward()
            total += loss.detach()
            if (i + 1) % ACCUM == 0:
                optim.step()
                optim.zero_grad()
        dist.all_reduce(total)
        if dist.get_rank() == 0:
            log.info("epoch %d mean loss per step %.4f", epoch, total.item() / world / (len(loader) / ACCUM))
    dist.destroy_process_group()


if __name__ == "__main__":
    run()
