import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(model, dataset, other, epochs, resume):
    torch.distributed.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    data_loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: sampler-missing
    if resume:
        # rebound on one path only: the plain loader still reaches the loop on the other
        sampler = DistributedSampler(other, shuffle=False)
        data_loader = DataLoader(other, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        for x in data_loader:
            model(x).sum().backward()
