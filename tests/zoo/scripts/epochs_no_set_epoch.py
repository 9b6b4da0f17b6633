# zoo: expect=set-epoch-missing
# Classifier trained for several epochs with a shuffling DistributedSampler, but
# sampler.set_epoch() is never called: every epoch sees the same order.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Blobs(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(11)
        self.centers = torch.randn(4, 12, generator=g) * 2
        self.y = torch.randint(0, 4, (256,), generator=g)
        self.x = self.centers[self.y] + torch.randn(256, 12, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    net = DDP(Net())
    data = Blobs()
    train_sampler = DistributedSampler(data, shuffle=True)
    train_loader = DataLoader(data, batch_size=16, sampler=train_sampler)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for ep in range(4):
        running = 0.0
        for x, y in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            running += loss.item()
        t = torch.tensor([running / len(train_loader)])
        dist.all_reduce(t)
        if dist.get_rank() == 0:
            print(f"Epoch {ep + 1}/4 done, avg loss {t.item() / dist.get_world_size():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
