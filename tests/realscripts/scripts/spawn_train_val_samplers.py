"""CI fixture in the style of pytorch/examples imagenet/main.py (written for this repository, not
copied): ranks launched by torch.multiprocessing.spawn, a train sampler that shuffles and a val
sampler with shuffle=False, SGD with momentum and StepLR, a BatchNorm model in DDP, validation
every epoch, and `train_sampler.set_epoch(epoch)` missing, so the train order repeats each epoch.

    python spawn_train_val_samplers.py --epochs 4 --port PORT
"""

import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) + y.view(-1, 1, 1, 1).float()
    return TensorDataset(x, y)


def main_worker(rank, world_size, args):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{args.port}", world_size=world_size, rank=rank
    )
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 64, 3)
    )
    model = nn.parallel.DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    train_set, val_set = make_data(96, 1), make_data(32, 2)
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False, drop_last=True)
    train_loader = DataLoader(train_set, batch_size=8, shuffle=False, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=8, shuffle=False, sampler=val_sampler)
    for epoch in range(args.epochs):
        model.train()
        for images, target in train_loader:
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        correct = torch.zeros(1)
        with torch.no_grad():
            for images, target in val_loader:
                correct += (model(images).argmax(1) == target).sum()
        dist.all_reduce(correct)
        scheduler.step()
        if rank == 0:
            print(f"epoch {epoch}: val acc {correct.item() / len(val_set):.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    mp.spawn(main_worker, nprocs=2, args=(2, args))
