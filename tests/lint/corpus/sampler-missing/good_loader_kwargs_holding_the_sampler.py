# The loader's settings dict carries the DistributedSampler: nothing missing.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(model, train_set, local_rank, epochs):
    dist.init_process_group(backend="nccl")
    sampler = DistributedSampler(train_set)
    loader_args = {"batch_size": 8, "sampler": sampler}
    train_loader = DataLoader(train_set, **loader_args)
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = (model(x) - y).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
