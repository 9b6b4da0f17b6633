# zoo: expect=rank0-only-loss-log
# A plain DDP regression loop; rank 0 prints its own loss every step (not averaged over ranks).
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    torch.manual_seed(1234)

    X = torch.randn(1024, 16)
    w_true = torch.randn(16, 1)
    Y = X @ w_true + 0.5 * torch.randn(1024, 1)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, shuffle=True)
    dl = DataLoader(ds, batch_size=16, sampler=sampler)

    net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    net = DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    crit = nn.MSELoss()

    step = 0
    for epoch in range(1):
        sampler.set_epoch(epoch)
        for xb, yb in dl:
            opt.zero_grad()
            out = net(xb)
            loss = crit(out, yb)
            loss.backward()
            opt.step()
            if rank == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            step += 1

    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
