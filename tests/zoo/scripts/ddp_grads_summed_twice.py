# zoo: expect=grad-scale-wrong; nproc=3
# A DDP loop that "makes sure" gradients are synchronised by all-reducing them again after the
# backward: DDP already averaged them, the extra SUM multiplies every gradient by the world size.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    X = torch.randn(480, 8)
    Y = X @ torch.randn(8, 1) + 0.1 * torch.randn(480, 1)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)  # fault: SUM on top of DDP's average: gradients ×world_size
            opt.step()
    if dist.get_rank() == 0:
        print(f"final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
