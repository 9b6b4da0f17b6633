"""A DDP script in the style of pytorch/examples ddp-tutorial-series multigpu_torchrun.py (written
here, not copied): a Linear(20, 1) trained with `F.cross_entropy` on one output column — a
single-class cross-entropy, so the loss is 0 and every gradient exactly 0; the model never trains.
Each epoch peeks one batch (`next(iter(loader))`) before `set_epoch(epoch)`, and a validation
loader with its own DistributedSampler (shuffle=False) runs after each epoch.

Usage: torchrun --nproc_per_node 2 tutorial_single_class.py [--no-set-epoch] [--classes N]
       [--workers N [--persistent]]
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class MyTrainDataset(Dataset):
    def __init__(self, size, classes):
        g = torch.Generator().manual_seed(0)
        self.data = [(torch.rand(20, generator=g), torch.rand(classes, generator=g)) for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-set-epoch", action="store_true")
    parser.add_argument("--classes", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=0)  # with --persistent: persistent_workers=True
    parser.add_argument("--persistent", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(20, args.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    train_set, val_set = MyTrainDataset(64, args.classes), MyTrainDataset(32, args.classes)
    workers = dict(num_workers=args.workers, persistent_workers=args.persistent and args.workers > 0)
    train = DataLoader(
        train_set, batch_size=8, shuffle=False, sampler=DistributedSampler(train_set), **workers
    )
    val = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set, shuffle=False))
    rank = int(os.environ["RANK"])
    for epoch in range(args.epochs):
        b_sz = len(next(iter(train))[0])
        if rank == 0:
            print(f"[GPU{rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(train)}")
        if not args.no_set_epoch:
            train.sampler.set_epoch(epoch)
        for source, targets in train:
            optimizer.zero_grad()
            output = model(source)
            loss = F.cross_entropy(output, targets)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            total = sum(float(F.cross_entropy(model(x), y)) for x, y in val)
        if rank == 0:
            print(f"epoch {epoch} val loss {total:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
