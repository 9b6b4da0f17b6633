"""CI fixture in the style of the pytorch/examples DDP tutorial series (written for this repository,
not copied): a Trainer class, torchrun environment, DistributedSampler, a batch-size peek with
next(iter(loader)) before set_epoch, and the tutorial's one-column cross_entropy, which makes the
loss exactly 0 so the model never trains.

    torchrun --nproc_per_node 2 tutorial_snapshot_trainer.py EPOCHS SAVE_EVERY
"""

import argparse
import os

import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RandomPairs(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(3)
        self.x = torch.rand(n, 16, generator=g)
        self.y = torch.rand(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Trainer:
    def __init__(self, model, loader, optimizer, save_every, snapshot):
        self.rank = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model)
        self.loader = loader
        self.optimizer = optimizer
        self.save_every = save_every
        self.snapshot = snapshot

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        out = self.model(source)
        loss = F.cross_entropy(out, targets)  # one output column: log_softmax is 0, so is the loss
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.loader))[0])
        print(f"[rank{self.rank}] epoch {epoch} | batch {b_sz} | steps {len(self.loader)}")
        self.loader.sampler.set_epoch(epoch)
        for source, targets in self.loader:
            self._run_batch(source, targets)

    def train(self, epochs):
        for epoch in range(epochs):
            self._run_epoch(epoch)
            if self.rank == 0 and epoch % self.save_every == 0:
                torch.save({"model": self.model.module.state_dict(), "epoch": epoch}, self.snapshot)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("epochs", type=int)
    parser.add_argument("save_every", type=int)
    parser.add_argument("--batch_size", type=int, default=16)
    args = parser.parse_args()
    init_process_group(backend="gloo")
    data = RandomPairs(256)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False, sampler=DistributedSampler(data))
    model = torch.nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    Trainer(model, loader, optimizer, args.save_every, "snapshot.pt").train(args.epochs)
    destroy_process_group()


if __name__ == "__main__":
    main()
