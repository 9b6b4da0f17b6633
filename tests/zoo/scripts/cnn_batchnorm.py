# zoo: expect=batchnorm-unsynced
# Small CNN with BatchNorm2d wrapped in DDP without convert_sync_batchnorm: each rank normalises
# with its own tiny micro-batch statistics. Metrics go through an all-reduce before printing.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(conv_block(1, 8), conv_block(8, 16))
        self.head = nn.Linear(16 * 4 * 4, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(SmallCNN())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    images = torch.randn(320, 1, 16, 16, generator=g)
    labels = torch.randint(0, 10, (320,), generator=g)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for it, start in enumerate(range(0, 320, 8)):
        x, y = images[start : start + 8], labels[start : start + 8]
        out = model(x)
        loss = criterion(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if it % 5 == 0:
            stats = torch.tensor([loss.item(), (out.argmax(1) == y).float().mean().item()])
            dist.all_reduce(stats)
            stats /= world
            if rank == 0:
                print(f"it={it} loss={stats[0]:.4f} acc={stats[1]:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
