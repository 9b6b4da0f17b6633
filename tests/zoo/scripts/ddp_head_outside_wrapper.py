# zoo: expect=grads-not-synced
# An encoder wrapped in DDP and a classification head built next to it but never wrapped: the
# optimizer trains both, so the head's gradients stay rank-local and its replicas drift apart.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    X = torch.randn(512, 12)
    y = (X[:, :3].sum(dim=1) > 0).long()
    ds = TensorDataset(X, y)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)

    encoder = DDP(nn.Sequential(nn.Linear(12, 32), nn.Tanh()))
    head = nn.Linear(32, 2)  # fault: not inside the DDP wrapper, so DDP never reduces its gradients
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = F.cross_entropy(head(encoder(xb)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    if dist.get_rank() == 0:
        print(f"final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
